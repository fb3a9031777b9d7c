// SPDX-License-Identifier: GPL-2.0

//! How a transport sizes its FRWR memory registration for chunks
//! ([`FrwrSizing`]), as the C client's `frwr_query_device()` does
//! (frwr_ops.c): the depth of an MR from what the device offers and the
//! MRs one RPC may need. (The C client also counts the Send-queue WRs of
//! one RPC there; rpcrdma2 sizes its Send queue from the MRs per RPC, in
//! `conn/establish.rs`.)
//!
//! The glue reads the device's numbers (`ib::mr::caps::FastRegCaps`) and
//! hands them to [`FrwrSizing::for_device`]; the result sizes the MR pool,
//! [`Limits::max_mr_pages`](super::Limits::max_mr_pages) and, through
//! [`Limits::segs_for_depth`](super::Limits::segs_for_depth),
//! `Config::max_segs`.

use super::super::config::MAX_HDR_SEGS;

/// `RPCRDMA_MAX_DATA_SEGS` for 4 KiB pages: a 1 MiB payload at any offset.
pub const MAX_DATA_SEGS: u32 = 257;
/// `RPCRDMA_MAX_SEGS`: data pages plus head and tail.
pub const MAX_SEGS: u32 = MAX_DATA_SEGS + 3;

/// Why a device cannot be used for chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizingError {
    /// Depth 0: the device maps no page per MR (C: `-EINVAL`).
    NoDepth,
    /// `max_segs` MRs of `depth` pages cannot cover [`MAX_SEGS`] pages
    /// (C: `-ENOMEM`).
    TooShallow {
        /// The depth chosen (pages per MR).
        depth: u32,
    },
}

/// How FRWR is sized for a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrwrSizing {
    /// Pages per MR (C: `re_max_fr_depth`), at most [`MAX_DATA_SEGS`]. See
    /// [`FrwrSizing::depth_for`] for the choice.
    pub depth: u32,
    /// MRs one RPC may need (C: `re_max_rdma_segs`): ⌈[`MAX_DATA_SEGS`] /
    /// depth⌉ + 2 (head and tail of a Reply chunk), at most
    /// [`MAX_HDR_SEGS`].
    pub max_segs: u32,
}

impl FrwrSizing {
    /// The depth `frwr_query_device()` chooses for a device whose MRs map
    /// at most `max_page_list_len` pages (`max_fast_reg_page_list_len`)
    /// and whose RDMA Reads take at most `max_sge_rd` SGEs: `max_sge_rd`
    /// when it is larger than [`MAX_HDR_SEGS`] (the C client's quirk for
    /// devices that perform best with small MRs), else
    /// `max_page_list_len`; at most [`MAX_DATA_SEGS`].
    pub const fn depth_for(max_page_list_len: u32, max_sge_rd: u32) -> u32 {
        let depth = if max_sge_rd > MAX_HDR_SEGS {
            max_sge_rd
        } else {
            max_page_list_len
        };
        if depth > MAX_DATA_SEGS {
            MAX_DATA_SEGS
        } else {
            depth
        }
    }

    /// The sizing for a device: [`FrwrSizing::for_depth`] of
    /// [`FrwrSizing::depth_for`].
    pub const fn for_device(
        max_page_list_len: u32,
        max_sge_rd: u32,
    ) -> Result<FrwrSizing, SizingError> {
        Self::for_depth(Self::depth_for(max_page_list_len, max_sge_rd))
    }

    /// The sizing for MRs of `depth` pages (at most [`MAX_DATA_SEGS`] are
    /// used). Fails when `depth` is 0 ([`SizingError::NoDepth`]) or when
    /// `max_segs * depth` cannot cover [`MAX_SEGS`] pages
    /// ([`SizingError::TooShallow`]).
    pub const fn for_depth(depth: u32) -> Result<FrwrSizing, SizingError> {
        if depth == 0 {
            return Err(SizingError::NoDepth);
        }
        let depth = if depth > MAX_DATA_SEGS {
            MAX_DATA_SEGS
        } else {
            depth
        };
        let segs = MAX_DATA_SEGS.div_ceil(depth).saturating_add(2);
        let max_segs = if segs > MAX_HDR_SEGS {
            MAX_HDR_SEGS
        } else {
            segs
        };
        if max_segs.saturating_mul(depth) < MAX_SEGS {
            return Err(SizingError::TooShallow { depth });
        }
        Ok(FrwrSizing { depth, max_segs })
    }
}
