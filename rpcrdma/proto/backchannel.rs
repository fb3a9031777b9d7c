// SPDX-License-Identifier: GPL-2.0

//! Reverse-direction RPC (the NFSv4.1 backchannel) on the requester's
//! side: the decisions, without I/O.
//!
//! # Version 1 (RFC 8167)
//!
//! The server sends a reverse-direction Call as an `RDMA_MSG` whose RPC
//! message has `msg_type` CALL and an XID the server generated
//! ([`super::reply::classify`] returns [`super::Reply::ReverseCall`]). We
//! answer with an `RDMA_MSG` carrying the RPC Reply inline, on the same
//! connection (RFC 8167 §4.2):
//!
//! * **No chunks.** Neither direction of the backchannel uses chunks
//!   here, as in the C client: a Call that does not fit our backchannel
//!   buffer is dropped ([`CallVerdict::TooBig`]; the server's session
//!   layer retries or gives up), a Reply that does not fit the call
//!   inline threshold is refused with [`ReplyError::TooBig`] and never
//!   sent (RFC 8167 §5: a reverse-direction message larger than the
//!   inline threshold cannot be conveyed without chunks; the NFS layer
//!   keeps callbacks below [`max_payload`], which it advertises in
//!   CREATE_SESSION, so this is the peer's error).
//! * **Credits.** The credit word of a reverse-direction Call is the
//!   server's backchannel grant, not a grant for our Calls: it must not
//!   change our forward window (the C client returns before
//!   `rpcrdma_update_cwnd` for a backchannel Call, rpc_rdma.c). Our reply
//!   carries the number of backchannel requests we serve
//!   ([`super::Config::bc_requests`], C: `rb_bc_srv_max_requests`), which
//!   svcrdma clamps and uses as its backchannel window.
//! * **Receives.** Every Call the server may send us, and the Receive its
//!   companion reply occupies, needs a posted Receive of ours beyond
//!   those that back our forward credits: the replenishment rule already
//!   keeps `window + 2 * bc_requests` posted ([`super::credits`]), as the
//!   C client does with `rb_bc_srv_max_requests << 1`.
//! * **Overflow.** At most [`MAX_OUTSTANDING`] Calls are being served at
//!   once (C: `RPCRDMA_BACKWARD_WRS`); one more means the server ignores
//!   the slot count we offered: the C client then disconnects, and so do
//!   we ([`CallVerdict::Overflow`]).
//!
//! # Version 2 (draft -00)
//!
//! A reverse-direction Call is an `RDMA2_MSG` with `F_RESPONSE` clear
//! (the same `Reply::ReverseCall`); our reply is an `RDMA2_MSG` with
//! `F_RESPONSE` set ([`ReplyPlan::msg_spec`]) and counts as one of our
//! messages in the v2 budget (rule 2 of [`super::credits`]). What remains
//! for v2 is the Reverse Request Support property (-00 §5.2.5) in our
//! CONNPROP and honouring the peer's; the glue serves v2 Calls through the
//! same path.

use super::inline::{Direction, Thresholds, TooBig};
use super::xdr::chunk::ChunkLists;
use super::xdr::header::{Flags, MsgKind, MsgSpec, Protocol};
use super::xdr::{v1, v2};

/// Backchannel slots offered to the upper layer (`bc_num_slots`; the
/// C client's `RPCRDMA_BACKWARD_WRS >> 1`) and the backchannel requests
/// whose Receives are provisioned ([`super::Config::bc_requests`]).
pub const SLOTS: u32 = 16;

/// Most reverse-direction Calls served at once (C: `RPCRDMA_BACKWARD_WRS`).
pub const MAX_OUTSTANDING: u32 = 2 * SLOTS;

/// Largest reverse-direction RPC message (Call or Reply) the upper layer
/// may use (`bc_maxpayload`): the smaller inline threshold, at most
/// `page_size`, less the minimal header of the largest version we speak
/// (the 36-byte `RDMA2_MSG` header; the C client, which speaks only
/// version 1, subtracts 28 in `xprt_rdma_bc_maxpayload`).
///
/// The value is advertised once, in CREATE_SESSION, and must stay true
/// for the session's life, across reconnections that may settle on the
/// other version: so it does not depend on the current one. A reply of
/// this size fits inline in either version ([`fit_reply`]).
pub fn max_payload(t: &Thresholds, page_size: u32) -> u32 {
    t.send
        .min(t.recv)
        .min(page_size)
        .saturating_sub(header_len(Protocol::V1).max(header_len(Protocol::V2)))
}

/// What to do with a reverse-direction Call that arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallVerdict {
    /// Hand it to the callback service.
    Serve,
    /// No callback service (no NFSv4.1 session asked for a backchannel):
    /// drop it.
    NoService,
    /// It does not fit a backchannel buffer: drop it.
    TooBig {
        /// Its length.
        len: u32,
        /// The buffer size.
        limit: u32,
    },
    /// More than [`MAX_OUTSTANDING`] Calls outstanding: drop it and
    /// disconnect (the server does not honour our slot count).
    Overflow,
}

/// Decides what to do with a reverse-direction Call of `len` bytes (the
/// RPC message) when `outstanding` Calls are being served, `buf_size` is
/// the size of a backchannel receive buffer and `service` says whether a
/// callback service is attached to the transport.
pub fn check_call(len: usize, buf_size: u32, outstanding: u32, service: bool) -> CallVerdict {
    if !service {
        return CallVerdict::NoService;
    }
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    if len > buf_size {
        return CallVerdict::TooBig {
            len,
            limit: buf_size,
        };
    }
    if outstanding >= MAX_OUTSTANDING {
        return CallVerdict::Overflow;
    }
    CallVerdict::Serve
}

/// How to send the reply to a reverse-direction Call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplyPlan {
    /// Header version (the connection's).
    pub protocol: Protocol,
    /// The `rdma_credit` word.
    pub credit: u32,
    /// Length of the header [`msg_spec`](Self::msg_spec) encodes to.
    pub hdr_len: u32,
}

impl ReplyPlan {
    /// The header: `RDMA_MSG` / `RDMA2_MSG` with three empty chunk lists,
    /// `F_RESPONSE` in v2 (the XID was generated by the receiver of this
    /// message, -00 §6.3.2), the Call's XID (host order). The RPC Reply
    /// follows it in the same Send.
    pub fn msg_spec(&self, xid: u32) -> MsgSpec<'static> {
        MsgSpec {
            xid,
            credit: self.credit,
            kind: MsgKind::Msg,
            flags: match self.protocol {
                Protocol::V1 => Flags::NONE,
                Protocol::V2 => Flags::RESPONSE,
            },
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        }
    }
}

/// Why a reverse-direction reply cannot be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplyError {
    /// No established connection (`-ENOTCONN`: SUNRPC reconnects and
    /// sends it again).
    NotConnected,
    /// The v2 message budget is exhausted: wait for buffer space.
    NoCredits,
    /// The reply does not fit inline (`-EMSGSIZE`; not sent).
    TooBig(TooBig),
}

/// The header length of a reverse-direction reply in `protocol`.
pub fn header_len(protocol: Protocol) -> u32 {
    let n = match protocol {
        Protocol::V1 => v1::MIN_MSG_HDR_LEN,
        Protocol::V2 => v2::MIN_MSG_HDR_LEN,
    };
    // 28 or 36: always in range.
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Checks that a reply of `len` bytes fits inline under `t` in
/// `protocol`.
pub fn fit_reply(t: &Thresholds, protocol: Protocol, len: u32) -> Result<(), TooBig> {
    let limit = t.send.saturating_sub(header_len(protocol));
    if len > limit {
        return Err(TooBig {
            direction: Direction::Call,
            len,
            limit,
        });
    }
    Ok(())
}
