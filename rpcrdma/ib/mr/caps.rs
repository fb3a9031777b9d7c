// SPDX-License-Identifier: GPL-2.0

//! What a device offers for FRWR ([`FrwrCaps`], sized as the C client's
//! `frwr_query_device()` does) and the segment limits of an RPC.

use super::super::Device;
use crate::bindings;
use kernel::prelude::*;

/// `RPCRDMA_MAX_DATA_SEGS` for 4 KiB pages: a 1 MiB payload at any offset.
pub const MAX_DATA_SEGS: u32 = 257;
/// `RPCRDMA_MAX_HDR_SEGS`: chunk segments per RPC-over-RDMA header.
pub const MAX_HDR_SEGS: u32 = 16;
/// `RPCRDMA_MAX_SEGS`: data pages plus head and tail.
pub const MAX_SEGS: u32 = MAX_DATA_SEGS + 3;

/// What a device offers for FRWR, sized as `frwr_query_device()` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrwrCaps {
    /// Pages per MR (`re_max_fr_depth`): `max_sge_rd` when it is larger
    /// than [`MAX_HDR_SEGS`] (a quirk for devices that perform best with
    /// small MRs), else `max_fast_reg_page_list_len`; at most
    /// [`MAX_DATA_SEGS`].
    pub depth: u32,
    /// `IB_MR_TYPE_SG_GAPS` (`IBK_SG_GAPS_REG`): segments need not be
    /// page-contiguous.
    pub sg_gaps: bool,
    /// MRs one RPC may need (`re_max_rdma_segs`): ⌈[`MAX_DATA_SEGS`] /
    /// depth⌉ + 2 (head and tail of a Reply chunk), at most
    /// [`MAX_HDR_SEGS`].
    pub max_segs: u32,
    /// Send-queue WRs one RPC may need: the Send, a REG_MR and a
    /// LOCAL_INV for head and tail, and for each MR of the page list
    /// (7 + 2n, as the C client counts).
    pub send_wrs_per_rpc: u32,
}

impl FrwrCaps {
    /// Checks that `dev` can do FRWR for NFS and sizes the MRs.
    ///
    /// Fails with `EINVAL` without `IB_DEVICE_MEM_MGT_EXTENSIONS` and
    /// `ENOMEM` when `max_segs * depth` cannot cover [`MAX_SEGS`] pages.
    pub fn query(dev: &Device) -> Result<FrwrCaps> {
        // SAFETY: the device is registered (the caller borrows it); its
        // `attrs` are set before registration and not changed after.
        let attrs = unsafe { &(*dev.as_ptr()).attrs };
        let mem_mgt = attrs.device_cap_flags
            & (bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64)
            != 0;
        if !mem_mgt || attrs.max_fast_reg_page_list_len == 0 {
            pr_err!("FRWR is not supported by device {} (-EINVAL)\n", dev.name());
            return Err(EINVAL);
        }
        let sg_gaps =
            attrs.kernel_cap_flags & (bindings::ib_kernel_cap_flags_IBK_SG_GAPS_REG as u64) != 0;
        let sge_rd = attrs.max_sge_rd.max(0) as u32;
        let depth = if sge_rd > MAX_HDR_SEGS {
            sge_rd
        } else {
            attrs.max_fast_reg_page_list_len
        }
        .min(MAX_DATA_SEGS);
        Self::from_limits(depth, sg_gaps).inspect_err(|_| {
            pr_err!(
                "device {}: FRWR depth {} cannot register {} pages per RPC (-ENOMEM)\n",
                dev.name(),
                depth,
                MAX_SEGS
            )
        })
    }

    /// The sizing arithmetic of [`FrwrCaps::query`] for a given depth.
    pub fn from_limits(depth: u32, sg_gaps: bool) -> Result<FrwrCaps> {
        if depth == 0 {
            return Err(EINVAL);
        }
        let depth = depth.min(MAX_DATA_SEGS);
        let mut wrs = 7;
        if depth < MAX_DATA_SEGS {
            let mut delta = (MAX_DATA_SEGS - depth) as i64;
            while delta > 0 {
                wrs += 2;
                delta -= i64::from(depth);
            }
        }
        let max_segs = (MAX_DATA_SEGS.div_ceil(depth) + 2).min(MAX_HDR_SEGS);
        if max_segs * depth < MAX_SEGS {
            return Err(ENOMEM);
        }
        Ok(FrwrCaps {
            depth,
            sg_gaps,
            max_segs,
            send_wrs_per_rpc: wrs,
        })
    }
}
