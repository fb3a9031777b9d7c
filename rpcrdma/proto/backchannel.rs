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

use super::continuation::Span;
use super::inline::{Direction, Thresholds, TooBig};
use super::reply::ChunkUse;
use super::xdr::chunk::ChunkLists;
use super::xdr::error::ErrorKind;
use super::xdr::header::{ErrorBody, Flags, MsgKind, MsgSpec, Protocol};
use super::xdr::{v1, v2, Result as XdrResult};

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

/// How to send (a piece of) the reply to a reverse-direction Call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReplyPlan {
    /// Header version (the connection's).
    pub protocol: Protocol,
    /// The `rdma_credit` word.
    pub credit: u32,
    /// Length of the header [`msg_spec`](Self::msg_spec) encodes to.
    pub hdr_len: u32,
    /// Bytes `span.offset..span.offset + span.len` of the RPC Reply follow
    /// the header: the whole Reply when it fits inline, else one piece of
    /// it (version 2 only, [`reply_pieces`]); `span.more` sets `F_MORE`.
    pub span: Span,
}

impl ReplyPlan {
    /// The header: `RDMA_MSG` / `RDMA2_MSG` with three empty chunk lists,
    /// `F_RESPONSE` in v2 (the XID was generated by the receiver of this
    /// message, -00 §6.3.2) and `F_MORE` on all but the last piece of a
    /// continued reply, the Call's XID (host order). The span of the RPC
    /// Reply follows it in the same Send.
    pub fn msg_spec(&self, xid: u32) -> MsgSpec<'static> {
        MsgSpec {
            xid,
            credit: self.credit,
            kind: MsgKind::Msg,
            flags: match (self.protocol, self.span.more) {
                (Protocol::V1, _) => Flags::NONE,
                (Protocol::V2, false) => Flags::RESPONSE,
                (Protocol::V2, true) => Flags::RESPONSE.with(Flags::MORE),
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

/// The `RDMA2_ERROR` that answers a reverse-direction Call whose header
/// carries the chunk lists in `used`, or `None` when it can be served.
///
/// We read no chunks in the reverse direction and write none (the C
/// client registers no memory for callbacks), so, as -00 §6.4.3 tells a
/// responder:
///
/// * Read chunks (including a Position-Zero Read, a Long Call):
///   `RDMA2_ERR_READ_CHUNKS` with `rdma_max_chunks` 0 ("If the responder
///   implementation cannot handle any Read chunks for a request, it MUST
///   set the rdma_max_chunks to zero");
/// * Write chunks: `RDMA2_ERR_REPLY_RESOURCE` ("If the responder
///   implementation cannot handle any Write chunks for a request, it MUST
///   return a response of RDMA2_ERR_REPLY_RESOURCE"), with
///   `rdma_length_needed` 0: the Reply has not been formed, so its length
///   is unknown;
/// * a Reply chunk only: served; the reply goes inline or continued (a
///   responder "MAY use the provided Reply chunk or decide to use another
///   means", -00 §6.5).
pub fn error_for_chunks(used: ChunkUse) -> Option<ErrorBody> {
    if used.read_list {
        Some(ErrorBody::ReadChunks { max_chunks: 0 })
    } else if used.write_list {
        Some(ErrorBody::ReplyResource { length_needed: 0 })
    } else {
        None
    }
}

/// The `RDMA2_ERROR` that answers a version 2 message in the peer's XID
/// space (`F_RESPONSE` clear) whose header does not decode with `kind`
/// (-00 §6.3.2.2, §6.4.3):
///
/// * an unknown header type, and flags we do not recognise on a known one
///   (reserved bits): `RDMA2_ERR_INVAL_HTYPE`;
/// * `F_MORE` on a header type other than `RDMA2_MSG` and
///   `RDMA2_CONNPROP`, or with chunk lists: `RDMA2_ERR_INVAL_FLAG`;
/// * anything else that does not parse (including a property value that
///   does not match its typedef): `RDMA2_ERR_BAD_XDR`.
pub fn error_for_decode(kind: ErrorKind) -> ErrorBody {
    match kind {
        ErrorKind::UnknownHtype(_) | ErrorKind::ReservedFlags(_) => ErrorBody::InvalHtype,
        ErrorKind::MoreNotAllowed(_) | ErrorKind::MoreWithChunks => ErrorBody::InvalFlag,
        _ => ErrorBody::BadXdr,
    }
}

/// An `RDMA2_ERROR` we send as the responder of the reverse direction
/// (for [`super::reply::Cause::ReverseError`]). -00 §6.4.3 forbids a
/// requester to send one; here we answer the peer's Call, so we are its
/// responder. It carries the Call's XID and version (2), `F_RESPONSE`
/// set, and counts as one of our messages in the credit budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorReply {
    /// The Call's XID.
    pub xid: u32,
    /// The error.
    pub body: ErrorBody,
}

impl ErrorReply {
    /// Encodes the message with credit word `credit` into `buf`; returns
    /// its length.
    pub fn encode(&self, buf: &mut [u8], credit: u32) -> XdrResult<usize> {
        v2::encode_error(buf, self.xid, credit, &self.body)
    }
}

/// What to do with one piece of a continued reverse-direction Call
/// ([`CallAssembly::piece`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallStep {
    /// Copy the piece's payload at `offset` of the backchannel buffer of
    /// Call `xid`; more pieces follow.
    Append {
        /// The Call (the peer's XID).
        xid: u32,
        /// Where the payload goes.
        offset: u32,
    },
    /// Copy the last piece at `offset`; the Call is complete, `len` bytes:
    /// check and serve it as an inline one ([`check_call`]).
    Last {
        /// The Call.
        xid: u32,
        /// Where the payload goes.
        offset: u32,
        /// The whole Call's length.
        len: u32,
    },
    /// Drop the message (and what was assembled of the sequence it
    /// interrupts or belongs to); answer `xid` with `RDMA2_ERROR` `body`
    /// if `answer`.
    Refuse {
        /// The XID of the message refused.
        xid: u32,
        /// The error.
        body: ErrorBody,
        /// Send it (false for later pieces of a sequence already
        /// refused: one error per sequence).
        answer: bool,
    },
}

/// The largest reverse-direction Call reassembled from continued pieces
/// ([`CallAssembly`]): the backchannel receive buffer of the smallest
/// page size (a kernel backchannel request's buffer is one page).
pub const MAX_CALL: u32 = 4096;

/// Reassembly of a reverse-direction Call continued over several
/// `RDMA2_MSG` pieces (-00 §4.5.2, §6.3.2). We advertise Reverse Request
/// Support `INLINE`, which covers continued messages (they are inline
/// messages, Sends); -00 §6.3.2 gives the rules: the pieces are
/// consecutive, with one XID and header type (else
/// `RDMA2_ERR_INVAL_FLAG`). A Call longer than the backchannel buffer is
/// refused with `RDMA2_ERR_SYSTEM` (no other code describes it) and the
/// rest of its sequence dropped. `Copy`, no allocation: the transport
/// copies each piece into the Call's buffer at the offset given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallAssembly {
    /// The sequence in progress: XID, bytes so far; or being discarded.
    state: Option<(u32, u32, bool)>,
}

impl CallAssembly {
    /// No sequence in progress.
    pub const fn new() -> Self {
        Self { state: None }
    }

    /// True while a sequence is assembled or discarded.
    pub const fn in_sequence(&self) -> bool {
        self.state.is_some()
    }

    /// One `RDMA2_MSG` with `F_RESPONSE` clear: `xid`, `F_MORE`, its
    /// payload length; `buf_size` is the backchannel buffer. Call it for
    /// every such message while [`in_sequence`](Self::in_sequence), and
    /// for the first piece (`more`) of a new one; any other message that
    /// arrives in a sequence interrupts it: [`interrupt`](Self::interrupt).
    pub fn piece(&mut self, xid: u32, more: bool, len: u32, buf_size: u32) -> CallStep {
        let (offset, discarding) = match self.state {
            Some((x, at, discarding)) if x == xid => (at, discarding),
            Some(_) => return self.interrupt(xid),
            None => (0, false),
        };
        if discarding {
            if !more {
                self.state = None;
            }
            return CallStep::Refuse {
                xid,
                body: ErrorBody::System,
                answer: false,
            };
        }
        let end = match offset.checked_add(len) {
            Some(end) if end <= buf_size => end,
            _ => {
                self.state = more.then_some((xid, 0, true));
                return CallStep::Refuse {
                    xid,
                    body: ErrorBody::System,
                    answer: true,
                };
            }
        };
        if more {
            self.state = Some((xid, end, false));
            CallStep::Append { xid, offset }
        } else {
            self.state = None;
            CallStep::Last {
                xid,
                offset,
                len: end,
            }
        }
    }

    /// A piece of Call `xid` (`more`: `F_MORE`) that cannot be served
    /// (it carries chunk lists: `body`, [`error_for_chunks`]): answered
    /// with `body` once, and the rest of its sequence dropped.
    pub fn refuse(&mut self, xid: u32, more: bool, body: ErrorBody) -> CallStep {
        match self.state {
            Some((x, _, _)) if x != xid => return self.interrupt(xid),
            Some((_, _, true)) => {
                if !more {
                    self.state = None;
                }
                return CallStep::Refuse {
                    xid,
                    body,
                    answer: false,
                };
            }
            _ => {}
        }
        self.state = more.then_some((xid, 0, true));
        CallStep::Refuse {
            xid,
            body,
            answer: true,
        }
    }

    /// A message that is not the next piece (another XID, another header
    /// type) arrived in a sequence: -00 §6.3.2 "the receiver MUST respond
    /// with an RDMA2_ERROR message with the rdma_err field set to
    /// RDMA2_ERR_INVAL_FLAG" (with the XID of the message that broke the
    /// rule, §6.4.3); the sequence is dropped.
    pub fn interrupt(&mut self, xid: u32) -> CallStep {
        self.state = None;
        CallStep::Refuse {
            xid,
            body: ErrorBody::InvalFlag,
            answer: true,
        }
    }
}

/// The RDMA2_MSG pieces a reverse-direction reply of `len` bytes is sent
/// in under thresholds `t`: 1 when it fits inline; more when it does not
/// and the connection is version 2 (-00 §6.5: a responder "SHOULD use
/// Message Continuation" for a reply that neither inline nor the offered
/// chunks can convey, and a reverse-direction Call offers none); `None`
/// in version 1, which cannot continue a message (the reply is not sent,
/// [`ReplyError::TooBig`]). Each piece carries
/// [`super::continuation::piece_room`] bytes of the reply and takes one
/// credit; [`super::continuation::split`] gives the spans.
pub fn reply_pieces(t: &Thresholds, protocol: Protocol, len: u32) -> Option<u32> {
    if fit_reply(t, protocol, len).is_ok() {
        return Some(1);
    }
    match protocol {
        Protocol::V1 => None,
        Protocol::V2 => {
            let room = super::continuation::piece_room(t.send);
            (room > 0).then(|| super::continuation::pieces(len, room))
        }
    }
}
