// SPDX-License-Identifier: GPL-2.0

//! What a device offers for fast registration ([`FastRegCaps`]), read
//! from its `ib_device_attr`, and the shape of the MRs made with it
//! ([`MrShape`]). How deep the MRs of a given use should be is the
//! user's choice.

use super::super::Device;
use crate::bindings;

/// What a device offers for fast registration (FRWR: `IB_WR_REG_MR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastRegCaps {
    /// `max_fast_reg_page_list_len`: most pages one MR can map (not 0).
    pub max_page_list_len: u32,
    /// `max_sge_rd`: most scatter/gather entries the device takes for the
    /// target of an RDMA Read (0 if the device reports a negative value).
    pub max_sge_rd: u32,
    /// `IBK_SG_GAPS_REG`: the device registers `IB_MR_TYPE_SG_GAPS` MRs,
    /// whose segments need not be page-contiguous.
    pub sg_gaps: bool,
}

impl FastRegCaps {
    /// What `dev` offers for fast registration; `None` when it has none:
    /// no `IB_DEVICE_MEM_MGT_EXTENSIONS`, or a `max_fast_reg_page_list_len`
    /// of 0.
    pub fn query(dev: &Device) -> Option<FastRegCaps> {
        // SAFETY: the device is registered (the caller borrows it); its
        // `attrs` are set before registration and not changed after.
        let attrs = unsafe { &(*dev.as_ptr()).attrs };
        let mem_mgt = attrs.device_cap_flags
            & (bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64)
            != 0;
        if !mem_mgt || attrs.max_fast_reg_page_list_len == 0 {
            return None;
        }
        Some(FastRegCaps {
            max_page_list_len: attrs.max_fast_reg_page_list_len,
            max_sge_rd: crate::compat::ib::attr_u32(attrs.max_sge_rd),
            sg_gaps: attrs.kernel_cap_flags
                & u64::from(bindings::ib_kernel_cap_flags_IBK_SG_GAPS_REG)
                != 0,
        })
    }

    /// The shape of MRs of `depth` pages on this device: `IB_MR_TYPE_SG_GAPS`
    /// when the device offers it.
    pub fn shape(&self, depth: u32) -> MrShape {
        MrShape {
            depth,
            sg_gaps: self.sg_gaps,
        }
    }
}

/// How an MR is allocated ([`Mr::new`](super::Mr::new)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrShape {
    /// Pages the MR maps at most (its scatterlist's length and
    /// `ib_alloc_mr()`'s `max_num_sg`); 0 is taken as 1. Meant to be at
    /// most the device's [`FastRegCaps::max_page_list_len`]: what the
    /// device does with more is its driver's choice (it may refuse).
    pub depth: u32,
    /// `IB_MR_TYPE_SG_GAPS` rather than `IB_MR_TYPE_MEM_REG`.
    pub sg_gaps: bool,
}
