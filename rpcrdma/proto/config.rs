// SPDX-License-Identifier: GPL-2.0

//! Per-transport settings: what the module parameters and the mount give a
//! transport when it is created. They do not change for the life of the
//! transport (`rpc_xprt`); [`Config::validated`] clamps every field into
//! the range the rest of `proto` relies on.

use super::xdr::pvtdata::{self, PrivateData};

/// Which protocol version a new connection starts with (module parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VersionPolicy {
    /// Probe for RPC-over-RDMA version 2 on each new connection (draft -00
    /// §4.3.3) and fall back to version 1 if the server answers `ERR_VERS`.
    /// The default.
    #[default]
    TryV2,
    /// Speak RPC-over-RDMA version 1 (RFC 8166) only; never send a v2
    /// header.
    ForceV1,
}

impl VersionPolicy {
    /// The policy for a boolean "force version 1" module parameter.
    #[inline]
    pub const fn from_force_v1(force_v1: bool) -> Self {
        if force_v1 {
            Self::ForceV1
        } else {
            Self::TryV2
        }
    }
}

/// Fewest RPC slots / credits a transport requests (C client:
/// `RPCRDMA_MIN_SLOT_TABLE`).
pub const MIN_REQUESTS: u32 = 4;
/// Default number of RPC slots / credits requested (C client:
/// `RPCRDMA_DEF_SLOT_TABLE`, the `rdma_slot_table_entries` sysctl).
pub const DEF_REQUESTS: u32 = 128;
/// Most RPC slots / credits a transport requests (C client:
/// `RPCRDMA_MAX_SLOT_TABLE`; below the 16-bit limit of a v2 credit half).
pub const MAX_REQUESTS: u32 = 16384;
/// Most backchannel (reverse-direction) requests a transport serves.
pub const MAX_BC_REQUESTS: u32 = 64;
/// Smallest inline threshold (RFC 8166 §3.3.3, RFC 8797 §4.2).
pub const MIN_INLINE: u32 = 1024;
/// Default inline threshold in each direction (C client:
/// `rdma_max_inline_read` / `rdma_max_inline_write`).
pub const DEF_INLINE: u32 = 4096;
/// Largest configurable inline threshold (C client: `RPCRDMA_MAX_INLINE`).
pub const MAX_INLINE: u32 = 65536;
/// Most RDMA segments per chunk list the header-size computation allows
/// for (C client: `RPCRDMA_MAX_HDR_SEGS`).
pub const MAX_HDR_SEGS: u32 = 16;
/// Most pieces a version 2 Reply may be continued over in place of a
/// Reply chunk ([`Config::cont_reply_pieces`]): the 4 MiB bound of a
/// continued sequence ([`super::continuation::MAX_SEQUENCE_LEN`]) in
/// pieces of 4 KiB.
pub const MAX_CONT_REPLY_PIECES: u32 = 1024;
/// The module's default for [`Config::cont_reply_pieces`]: as many pieces
/// as the default number of credits we ask for ([`DEF_REQUESTS`]), 128
/// pieces of 4060 bytes (about 507 KiB) with 4 KiB Receives.
pub const DEF_CONT_REPLY_PIECES: u32 = DEF_REQUESTS;
/// Receives posted beyond what is needed, so that replenishing happens in
/// batches (C client: `RPCRDMA_MAX_RECV_BATCH`).
pub const RECV_BATCH: u32 = 7;

/// Settings of one transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Try version 2 or speak version 1 only.
    pub policy: VersionPolicy,
    /// Credits we ask for: the number of RPCs this transport may have
    /// outstanding (`xprt->max_reqs`). Clamped to
    /// [`MIN_REQUESTS`]`..=`[`MAX_REQUESTS`].
    pub max_requests: u32,
    /// Backchannel requests we serve (0 until the backchannel exists).
    /// Clamped to `..=`[`MAX_BC_REQUESTS`].
    pub bc_requests: u32,
    /// Largest Send we post (`rdma_max_inline_write`), in bytes: our call
    /// inline threshold before the peer's limits apply. Clamped to
    /// [`MIN_INLINE`]`..=`[`MAX_INLINE`] and rounded down to a multiple of
    /// 1024 (the RFC 8797 encoding).
    pub inline_send: u32,
    /// Size of each Receive buffer we post (`rdma_max_inline_read`):
    /// our reply inline threshold before the peer's limits apply. Same
    /// range and rounding as `inline_send`.
    pub inline_recv: u32,
    /// We accept remote invalidation (the R bit of our private data).
    pub remote_invalidate: bool,
    /// RDMA segments a chunk list may carry, for the worst-case header
    /// sizes (C client: `re_max_rdma_segs`). 0 means the inline-only data
    /// path: headers never carry chunks. Clamped to `..=`[`MAX_HDR_SEGS`].
    pub max_segs: u32,
    /// Version 2 with chunks: a Reply whose receive buffer
    /// (`rq_rcv_buf.buflen`) exceeds the reply inline threshold but fits
    /// in this many continued pieces (-00 §4.5.2, §6.3.3.1) is planned
    /// without a Reply chunk (see [`super::chunks::Limits::cont_reply`]).
    /// 0: always a Reply chunk, as in version 1. Clamped to
    /// `..=`[`MAX_CONT_REPLY_PIECES`], and never more than `max_requests`
    /// (the credits we ask for).
    pub cont_reply_pieces: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Clamps `v` into `lo..=hi` (`lo <= hi`).
#[inline]
pub(super) const fn clamp_u32(v: u32, lo: u32, hi: u32) -> u32 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// The smaller of `a` and `b` (`const`).
const fn min_u32(a: u32, b: u32) -> u32 {
    if a < b {
        a
    } else {
        b
    }
}

/// Clamps an inline size and rounds it down to a multiple of 1024.
const fn inline_size(v: u32) -> u32 {
    let v = clamp_u32(v, MIN_INLINE, MAX_INLINE);
    v & !1023
}

impl Config {
    /// The defaults: try v2, 128 credits, no backchannel, 4096-byte inline
    /// thresholds, remote invalidation accepted, inline-only headers, no
    /// continued Replies in place of Reply chunks (the module turns them
    /// on: [`DEF_CONT_REPLY_PIECES`]).
    pub const DEFAULT: Config = Config {
        policy: VersionPolicy::TryV2,
        max_requests: DEF_REQUESTS,
        bc_requests: 0,
        inline_send: DEF_INLINE,
        inline_recv: DEF_INLINE,
        remote_invalidate: true,
        max_segs: 0,
        cont_reply_pieces: 0,
    };

    /// The same settings with every field clamped into its valid range.
    pub const fn validated(self) -> Config {
        Config {
            policy: self.policy,
            max_requests: clamp_u32(self.max_requests, MIN_REQUESTS, MAX_REQUESTS),
            bc_requests: clamp_u32(self.bc_requests, 0, MAX_BC_REQUESTS),
            inline_send: inline_size(self.inline_send),
            inline_recv: inline_size(self.inline_recv),
            remote_invalidate: self.remote_invalidate,
            max_segs: clamp_u32(self.max_segs, 0, MAX_HDR_SEGS),
            cont_reply_pieces: clamp_u32(
                self.cont_reply_pieces,
                0,
                min_u32(
                    MAX_CONT_REPLY_PIECES,
                    clamp_u32(self.max_requests, MIN_REQUESTS, MAX_REQUESTS),
                ),
            ),
        }
    }

    /// Our RFC 8797 private data, sent on every connect (v1 and v2).
    pub const fn private_data(&self) -> PrivateData {
        PrivateData {
            remote_invalidate: self.remote_invalidate,
            send_size: inline_size(self.inline_send),
            recv_size: inline_size(self.inline_recv),
        }
    }

    /// Our private data as the 8 bytes to put in `rdma_conn_param`.
    pub fn private_data_bytes(&self) -> [u8; pvtdata::LEN] {
        // Sizes from `inline_size` are always representable; the fallback
        // (the v1 defaults, all sizes 1024) is never used.
        self.private_data()
            .to_bytes()
            .unwrap_or([0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 0])
    }

    /// Size in bytes of each Receive buffer to post. Receives are posted
    /// before the peer's private data is known, so they have our full
    /// configured size.
    #[inline]
    pub const fn recv_buffer_size(&self) -> u32 {
        inline_size(self.inline_recv)
    }

    /// The most Receives [`super::Transport`] can ask to have posted at
    /// once: size the Receive Queue (`max_recv_wr`) at least this large.
    pub const fn recv_queue_depth(&self) -> u32 {
        // window (<= max_requests) + 2 * bc + 1 async-grant reserve,
        // then a batch on top. All terms are clamped small: no overflow.
        let max = clamp_u32(self.max_requests, MIN_REQUESTS, MAX_REQUESTS);
        let bc = clamp_u32(self.bc_requests, 0, MAX_BC_REQUESTS);
        max.saturating_add(bc.saturating_mul(2))
            .saturating_add(1)
            .saturating_add(RECV_BATCH)
    }
}
