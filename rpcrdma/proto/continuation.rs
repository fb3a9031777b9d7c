// SPDX-License-Identifier: GPL-2.0

//! Message Continuation (draft -00 §4.5.2, §6.3.2): reassembling continued
//! replies and splitting Calls into pieces.
//!
//! -00 §6.3.2:
//!
//! > When the RPCRDMA2_F_MORE flag is asserted, the receiver is to
//! > concatenate the data payload of the next received message to the end
//! > of the data payload of the current received message. The sender
//! > clears the RPCRDMA2_F_MORE flag in the final message in the sequence.
//! > All RPC-over-RDMA messages in such a sequence MUST have the same
//! > values in the rdma_start.rdma_xid and rdma_start.rdma_htype fields.
//! > [...] When the RPCRDMA2_F_MORE flag is set in an individual message,
//! > that message's chunk lists MUST be empty. [...] If the sender exhausts
//! > the receiver's credit grant before the final message is sent, the
//! > sender MUST wait for a further credit grant from the receiver before
//! > continuing to send messages.
//!
//! # Receiving: [`Reassembly`]
//!
//! A small state machine, one per connection, that sees every version 2
//! message the negotiation accepted and says what to do with it
//! ([`Step`]): nothing special ([`Step::Single`]: not part of a sequence),
//! copy a piece's payload at an offset of the RPC's receive buffer
//! ([`Step::Append`]), copy the last piece and complete the RPC with the
//! total length ([`Step::Last`]), fail the RPC ([`Step::Fail`]) or drop
//! the message ([`Step::Drop`]). It keeps no payload: the transport copies
//! each piece straight into `rq_rcv_buf` at the offset given, so there is
//! no extra buffer; only the first 8 bytes are remembered, to check that
//! the reassembled message is the Reply it claims to be (its XID and
//! `msg_type` REPLY, as an inline reply is checked).
//!
//! Rules, as we read -00 (Documentation/design-proto.rst has the table):
//!
//! 1. **Consecutive.** The pieces of a sequence are consecutive messages.
//!    A message that is not the next piece (another XID, another header
//!    type, `F_RESPONSE` differing, or a message that does not decode)
//!    interrupts the sequence: its RPC fails with `-EIO`
//!    ([`Fault::Interrupted`], counted as a bad reply). -00 says the
//!    receiver "MUST respond with an RDMA2_ERROR message with the rdma_err
//!    field set to RDMA2_ERR_INVAL_FLAG", but a requester never sends
//!    `RDMA2_ERROR` (-00 §6.4.3 defines it as the responder's answer to a
//!    Call; the bracketed editor's note after the rule admits the text
//!    does not fit a requester), so we fail the RPC instead, which is what
//!    the error would have achieved. The interrupting message is dropped
//!    too (it cannot be trusted), and if it has `F_MORE` the rest of its
//!    own sequence is discarded.
//!
//!    One exception: an asynchronous credit grant (`RDMA2_NOMSG`, XID 0,
//!    three empty chunk lists, §6.4.2) between two pieces does not
//!    interrupt the sequence. It carries no payload to concatenate, and
//!    forbidding it would deadlock two peers that are both in the middle of
//!    a sequence and out of each other's credits, the very case §6.3.2
//!    tells the receiver to solve with a credit grant.
//! 2. **Chunks only on the last piece.** A piece with `F_MORE` and chunk
//!    lists does not decode (the codec's `MoreWithChunks`): it interrupts
//!    the sequence or, alone, fails as a malformed reply. A last piece
//!    with chunk lists (-00 §4.5.3) ends the sequence normally:
//!    [`Step::Last`] with `chunks` set, the reassembled bytes being the
//!    reduced Reply. [`super::Transport::receive`] hands it to the
//!    transport as [`super::Reply::LastChunkedPiece`] where chunks are
//!    offered, and fails it ([`Fault::ChunksOnLast`], `-EIO`, counted as
//!    unsupported) where they are not.
//! 3. **Replies only.** Every piece must have `F_RESPONSE` set and a
//!    non-zero XID. Pieces of a reverse-direction Call ([`Fault::ReverseCall`])
//!    and with XID 0 ([`Fault::NoXid`]) are dropped with the rest of their
//!    sequence.
//! 4. **Bounded.** A sequence longer than [`MAX_SEQUENCE_LEN`] fails its
//!    RPC with [`Fault::TooLong`] (`-EMSGSIZE`); the transport applies the
//!    RPC's own bound, `rq_rcv_buf.buflen`, when it copies a piece, and on
//!    failure calls [`Reassembly::abandon`]. Either way the rest of the
//!    sequence is dropped.
//! 5. **Credits per piece.** Every piece is one message: it consumed one
//!    of our Receives and its credit word counts (see [`super::credits`]).
//!    Only the message that ends a sequence answers the Call (rule 3 of
//!    the credit reading: it returns at least one credit); [`Step`]'s
//!    `answers` says so for failures and drops, so that no Call's credit
//!    is returned twice, whatever is discarded.
//!
//! # Sending: [`split`]
//!
//! A Call larger than the call inline threshold on a connection without
//! chunks goes as a sequence of `RDMA2_MSG` pieces, `F_MORE` on all but
//! the last. Each piece holds as many bytes as fit the threshold after
//! the 36-byte header, rounded down to a multiple of 4. Each piece takes
//! one credit of the message budget; when the budget is exhausted the
//! transport stops, remembers the offset, and resumes when credits return.

use super::xdr::v2;

/// The longest sequence accepted, whatever the RPC: no RPC of ours has a
/// larger receive buffer (SUNRPC's `max_payload` is 257 pages plus the
/// RPC header), so this only bounds a sequence nothing waits for.
pub const MAX_SEQUENCE_LEN: u32 = 4 << 20;

/// Bytes of the Reply checked at the end (XID and `msg_type`).
const HEAD: usize = 8;
/// RPC `msg_type` REPLY.
const RPC_REPLY: u32 = 1;

/// Why a continued message is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The next message was not the next piece of the sequence (another
    /// XID or header type, `F_RESPONSE` differing, or it did not decode).
    Interrupted,
    /// The last piece carries chunk lists (allowed by -00 §4.5.3; the
    /// transport cannot deliver such a Reply yet).
    ChunksOnLast,
    /// A piece of a reverse-direction Call (`F_RESPONSE` clear).
    ReverseCall,
    /// A piece with XID 0, which answers no Call.
    NoXid,
    /// Longer than [`MAX_SEQUENCE_LEN`] or the RPC's receive buffer.
    TooLong,
    /// The reassembled message does not begin with the XID and REPLY.
    BadRpcHeader,
    /// A later piece of a sequence already refused or abandoned.
    Discarded,
}

impl Fault {
    /// True when the responder broke the protocol (counted as a bad
    /// reply); false for what we choose not to support and for the rest
    /// of a refused sequence.
    pub const fn is_bad_reply(&self) -> bool {
        matches!(
            self,
            Self::Interrupted | Self::NoXid | Self::TooLong | Self::BadRpcHeader
        )
    }
}

/// The facts about one received version 2 message the state machine
/// needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece<'a> {
    /// `rdma_xid`.
    pub xid: u32,
    /// `rdma_htype`.
    pub htype: u32,
    /// `F_MORE`.
    pub more: bool,
    /// `F_RESPONSE`.
    pub response: bool,
    /// Some chunk list is not empty.
    pub chunks: bool,
    /// The header decoded.
    pub valid: bool,
    /// The payload after an `RDMA2_MSG` header (empty otherwise).
    pub payload: &'a [u8],
}

impl Piece<'_> {
    /// An asynchronous credit grant (-00 §6.4.2).
    const fn is_grant(&self) -> bool {
        self.valid && self.htype == v2::RDMA2_NOMSG && self.xid == 0 && !self.chunks
    }
}

/// What to do with a received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    /// Not part of a sequence: handle the message as usual.
    Single,
    /// A piece: copy `payload` at `offset` of RPC `xid`'s receive buffer;
    /// more pieces follow.
    Append {
        /// The RPC.
        xid: u32,
        /// Where the payload goes in the Reply.
        offset: u32,
        /// The piece's payload.
        payload: &'a [u8],
    },
    /// The last piece: copy `payload` at `offset`, then complete RPC `xid`
    /// with a Reply of `len` bytes.
    Last {
        /// The RPC.
        xid: u32,
        /// Where the payload goes in the Reply.
        offset: u32,
        /// The piece's payload.
        payload: &'a [u8],
        /// The whole Reply's length (of the reduced Reply when `chunks`).
        len: u32,
        /// The last piece carries chunk lists (-00 §4.5.3: "Chunks for a
        /// chained message may be conveyed in the final message in the
        /// sequence"): the `len` bytes are the reduced Reply, and the
        /// piece's chunk lists say where its reduced items are, to be
        /// checked against the RPC's registration like those of a single
        /// message ([`super::ChunkPlan::check_reply`]).
        chunks: bool,
    },
    /// Fail RPC `xid` (if one waits) and drop the message.
    Fail {
        /// The RPC.
        xid: u32,
        /// Why.
        fault: Fault,
        /// This message ends a sequence of `xid`: it answers the Call
        /// (credit rule 3).
        answers: bool,
    },
    /// Drop the message.
    Drop {
        /// Why.
        fault: Fault,
        /// This message ends a sequence: it answers a Call.
        answers: bool,
    },
}

impl Step<'_> {
    /// True if the message answers one of our Calls (it returns at least
    /// that Call's credit).
    pub const fn answers_call(&self) -> bool {
        match *self {
            Self::Last { .. } => true,
            Self::Fail { answers, .. } | Self::Drop { answers, .. } => answers,
            Self::Single | Self::Append { .. } => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Sequence {
    xid: u32,
    htype: u32,
    /// Payload bytes so far.
    len: u32,
    /// The first bytes of the Reply.
    head: [u8; HEAD],
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum State {
    /// No sequence in progress.
    #[default]
    Idle,
    /// Reassembling.
    Receiving(Sequence),
    /// Dropping the rest of the sequence of `xid`; its last piece answers
    /// one of our Calls if `answers` (not for a reverse-direction Call or
    /// XID 0).
    Discarding { xid: u32, answers: bool },
}

/// Reassembly of continued replies on one connection. `Copy`, no
/// allocation; reset with [`Reassembly::new`] on every new connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reassembly {
    state: State,
}

impl Reassembly {
    /// No sequence in progress.
    pub const fn new() -> Self {
        Self { state: State::Idle }
    }

    /// The XID of the sequence being reassembled, if any.
    pub const fn receiving(&self) -> Option<u32> {
        match self.state {
            State::Receiving(s) => Some(s.xid),
            State::Idle | State::Discarding { .. } => None,
        }
    }

    /// True while a sequence is reassembled or discarded.
    pub const fn in_sequence(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    /// The transport could not place a piece of `xid` (no request waits
    /// for it, or it exceeds the RPC's receive buffer): drop the rest of
    /// the sequence. Nothing happens if `xid` is not being reassembled.
    pub fn abandon(&mut self, xid: u32) {
        if self.receiving() == Some(xid) {
            self.state = State::Discarding { xid, answers: true };
        }
    }

    /// Decides what to do with one received version 2 message.
    pub fn on_message<'a>(&mut self, m: &Piece<'a>) -> Step<'a> {
        match self.state {
            State::Idle => self.start(m),
            State::Discarding { xid, answers } => {
                if m.is_grant() {
                    return Step::Single;
                }
                if m.xid == xid && m.htype == v2::RDMA2_MSG {
                    if !m.more {
                        self.state = State::Idle;
                    }
                    return Step::Drop {
                        fault: Fault::Discarded,
                        answers: answers && !m.more,
                    };
                }
                self.state = State::Idle;
                self.start(m)
            }
            State::Receiving(seq) => {
                if m.is_grant() {
                    return Step::Single;
                }
                let same = m.valid && m.xid == seq.xid && m.htype == seq.htype && m.response;
                if !same {
                    // The interrupting message is dropped; the rest of its
                    // own sequence, if it starts one, too.
                    self.state = if m.more {
                        State::Discarding {
                            xid: m.xid,
                            // The rest of our Call's Reply answers it; a
                            // new sequence must be a Reply to be ours.
                            answers: m.xid != 0 && (m.xid == seq.xid || m.response),
                        }
                    } else {
                        State::Idle
                    };
                    return Step::Fail {
                        xid: seq.xid,
                        fault: Fault::Interrupted,
                        answers: m.xid == seq.xid && !m.more,
                    };
                }
                self.append(seq, m)
            }
        }
    }

    /// The first message after [`State::Idle`].
    fn start<'a>(&mut self, m: &Piece<'a>) -> Step<'a> {
        if !m.more || !m.valid || m.htype != v2::RDMA2_MSG {
            // Not a continued reply (CONNPROP pieces and malformed
            // messages are the caller's).
            return Step::Single;
        }
        let refuse = if m.xid == 0 {
            Some(Fault::NoXid)
        } else if !m.response {
            Some(Fault::ReverseCall)
        } else {
            None
        };
        if let Some(fault) = refuse {
            self.state = State::Discarding {
                xid: m.xid,
                answers: false,
            };
            return Step::Drop {
                fault,
                answers: false,
            };
        }
        let seq = Sequence {
            xid: m.xid,
            htype: m.htype,
            len: 0,
            head: [0; HEAD],
        };
        self.append(seq, m)
    }

    /// Appends the payload of `m`, a piece of `seq`.
    fn append<'a>(&mut self, mut seq: Sequence, m: &Piece<'a>) -> Step<'a> {
        let xid = seq.xid;
        let fail = |this: &mut Self, fault| {
            this.state = if m.more {
                State::Discarding { xid, answers: true }
            } else {
                State::Idle
            };
            Step::Fail {
                xid,
                fault,
                answers: !m.more,
            }
        };
        // Only a last piece gets here with chunks (the codec refuses them
        // with F_MORE); -00 §4.5.3 allows them there: `Step::Last` says so.
        let offset = seq.len;
        let Some(len) = u32::try_from(m.payload.len())
            .ok()
            .and_then(|n| offset.checked_add(n))
            .filter(|&n| n <= MAX_SEQUENCE_LEN)
        else {
            return fail(self, Fault::TooLong);
        };
        // Remember the Reply's first bytes, then check them as soon as
        // they are all there.
        let at = usize::try_from(offset).unwrap_or(usize::MAX);
        if let Some(dst) = seq.head.get_mut(at..) {
            for (d, s) in dst.iter_mut().zip(m.payload) {
                *d = *s;
            }
        }
        seq.len = len;
        let have = usize::try_from(len).unwrap_or(usize::MAX);
        if (have >= HEAD || !m.more) && !head_ok(&seq.head, have, xid) {
            return fail(self, Fault::BadRpcHeader);
        }
        if m.more {
            self.state = State::Receiving(seq);
            Step::Append {
                xid,
                offset,
                payload: m.payload,
            }
        } else {
            self.state = State::Idle;
            Step::Last {
                xid,
                offset,
                payload: m.payload,
                len,
                chunks: m.chunks,
            }
        }
    }
}

/// True if the first `have` bytes in `head` begin an RPC Reply with `xid`.
fn head_ok(head: &[u8; HEAD], have: usize, xid: u32) -> bool {
    let [a, b, c, d, e, f, g, h] = *head;
    have >= HEAD
        && u32::from_be_bytes([a, b, c, d]) == xid
        && u32::from_be_bytes([e, f, g, h]) == RPC_REPLY
}

/// One piece of a continued Call: bytes `offset..offset + len` of the RPC
/// Call, `more` on all but the last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// Where the piece starts in the Call.
    pub offset: u32,
    /// Its length.
    pub len: u32,
    /// Set `F_MORE`: another piece follows.
    pub more: bool,
}

/// The payload bytes one piece may carry under a call threshold of `send`
/// bytes: what follows the 36-byte `RDMA2_MSG` header, rounded down to a
/// multiple of 4 (pieces may split anywhere, -00 §4.5.2; whole XDR words
/// keep them easy to read in a trace). 0 if not even a word fits.
pub const fn piece_room(send: u32) -> u32 {
    send.saturating_sub(MSG_HDR) & !3
}

/// `v2::MIN_MSG_HDR_LEN` as a `u32`.
const MSG_HDR: u32 = 36;
const _: () = assert!(v2::MIN_MSG_HDR_LEN == 36);

/// The piece of a `call_len`-byte Call that starts at `offset`, with
/// `room` bytes per piece ([`piece_room`]); `None` when `offset` is at or
/// past the end, or `room` is 0.
pub fn split(call_len: u32, offset: u32, room: u32) -> Option<Span> {
    let left = call_len.checked_sub(offset).filter(|&n| n > 0)?;
    if room == 0 {
        return None;
    }
    let len = left.min(room);
    Some(Span {
        offset,
        len,
        more: len < left,
    })
}

/// How many pieces a `call_len`-byte Call needs with `room` bytes each.
pub fn pieces(call_len: u32, room: u32) -> u32 {
    if room == 0 {
        return 0;
    }
    call_len.div_ceil(room).max(1)
}
