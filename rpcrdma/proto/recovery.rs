// SPDX-License-Identifier: GPL-2.0

//! Recovery from a responder's transport errors (draft -00 §6.4.3 and
//! §6.5), as a pure decision.
//!
//! [`decide`] takes the `RDMA2_ERROR` body that answered one transmission
//! of an RPC, how that transmission was sent ([`Sent`]) and what was
//! already tried for the RPC ([`State`]), and says whether to send the
//! RPC again (same XID) with planning [`Hints`] or to fail it:
//!
//! | error                              | recovery                                          |
//! |------------------------------------|---------------------------------------------------|
//! | `RDMA2_ERR_READ_CHUNKS`            | resend as a Long Call (Position-Zero Read); fail if it was one |
//! | `RDMA2_ERR_WRITE_CHUNKS`           | resend without Write chunks, with a Reply chunk   |
//! | `RDMA2_ERR_SEGMENTS` (max)         | resend with at most max segments per chunk        |
//! | `RDMA2_ERR_WRITE_RESOURCE` (index, needed) | resend with a Reply chunk of at least needed bytes, if the receive buffer holds that |
//! | `RDMA2_ERR_REPLY_RESOURCE` (needed)| resend with a Reply chunk of at least needed bytes, if the receive buffer holds that |
//! | `SYSTEM`, `BAD_XDR`, `INVAL_HTYPE`, `INVAL_FLAG`, unknown codes, any v1 `RDMA_ERROR` | fail (`-EIO`) |
//!
//! Every recovery is bounded: each [`Kind`] is tried at most once per RPC
//! (a second error of the same kind fails it), so an RPC is sent at most
//! `1 + Kind::ALL.len()` times because of transport errors. Hints
//! accumulate: an RPC resent as a Long Call and then refused for its
//! Write chunk is sent a third time as a Long Call with a Reply chunk.
//!
//! A report that contradicts what was sent (a Write-chunk error for a
//! Call without Write chunks, a segment limit the chunks already kept, a
//! length the offered chunk already had) fails the RPC with `-EIO`; a
//! length larger than the RPC's receive buffer fails it with `-EMSGSIZE`
//! (the upper layer cannot take such a reply whatever the transport
//! does). `ERR_VERS` is negotiation's ([`super::negotiate`]) and never
//! reaches here on a working path; it fails like the permanent errors.

use core::fmt;

use super::chunks::{CallForm, ChunkPlan, ReplyForm, Rpc};
use super::errno::Errno;
use super::xdr::header::{ErrorBody, Protocol};

/// What chunk planning must do on a resend ([`super::chunks::plan_with`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    /// Send the Call as a Long Call: `RDMA2_NOMSG` with a Position-Zero
    /// Read chunk (`RDMA2_ERR_READ_CHUNKS`).
    pub position_zero: bool,
    /// Offer no Write chunk and a Reply chunk, even for a Reply that
    /// would fit inline (`RDMA2_ERR_WRITE_CHUNKS`, the resource errors).
    pub reply_chunk: bool,
    /// The Reply chunk must cover at least this many bytes (the
    /// `rdma_length_needed` of a resource error; 0: no minimum).
    pub reply_min: u32,
    /// At most this many segments per chunk (`RDMA2_ERR_SEGMENTS`); a
    /// Reply chunk over more is cut to a prefix of the receive buffer
    /// (covering at least `reply_min`). `Some(0)`: no chunks at all.
    pub max_segs: Option<u32>,
}

impl Hints {
    /// Plan as usual.
    pub const NONE: Hints = Hints {
        position_zero: false,
        reply_chunk: false,
        reply_min: 0,
        max_segs: None,
    };

    /// True if planning is not changed.
    pub const fn is_none(&self) -> bool {
        !self.position_zero && !self.reply_chunk && self.reply_min == 0 && self.max_segs.is_none()
    }

    /// These hints with the segment limit lowered to `cap` (the
    /// connection's, learned from an earlier `RDMA2_ERR_SEGMENTS`).
    pub const fn capped(self, cap: Option<u32>) -> Hints {
        let max_segs = match (self.max_segs, cap) {
            (Some(a), Some(b)) => Some(if a < b { a } else { b }),
            (Some(a), None) => Some(a),
            (None, c) => c,
        };
        Hints { max_segs, ..self }
    }
}

impl fmt::Display for Hints {
    /// `none`, or the hints that apply separated by `,`
    /// (`position_zero,reply_chunk,reply_min=N,max_segs=N`): the
    /// `rpcrdma2_marshal` tracepoint's `hints` field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        let mut sep = "";
        let mut item = |f: &mut fmt::Formatter<'_>, a: fmt::Arguments<'_>| {
            let r = write!(f, "{sep}{a}");
            sep = ",";
            r
        };
        if self.position_zero {
            item(f, format_args!("position_zero"))?;
        }
        if self.reply_chunk {
            item(f, format_args!("reply_chunk"))?;
        }
        if self.reply_min != 0 {
            item(f, format_args!("reply_min={}", self.reply_min))?;
        }
        if let Some(n) = self.max_segs {
            item(f, format_args!("max_segs={n}"))?;
        }
        Ok(())
    }
}

/// A kind of recovery (one per recoverable error code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `RDMA2_ERR_READ_CHUNKS`: resent as a Long Call.
    PositionZero,
    /// `RDMA2_ERR_WRITE_CHUNKS`: resent without Write chunks, with a
    /// Reply chunk.
    ReplyChunk,
    /// `RDMA2_ERR_SEGMENTS`: resent with fewer segments per chunk.
    Segments,
    /// `RDMA2_ERR_WRITE_RESOURCE`: resent with a Reply chunk large
    /// enough for the result.
    WriteResource,
    /// `RDMA2_ERR_REPLY_RESOURCE`: resent with a large enough Reply
    /// chunk.
    ReplyResource,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 5] = [
        Kind::PositionZero,
        Kind::ReplyChunk,
        Kind::Segments,
        Kind::WriteResource,
        Kind::ReplyResource,
    ];

    const fn bit(self) -> u8 {
        match self {
            Kind::PositionZero => 1,
            Kind::ReplyChunk => 2,
            Kind::Segments => 4,
            Kind::WriteResource => 8,
            Kind::ReplyResource => 16,
        }
    }

    /// A short name (tracepoints, counters).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::PositionZero => "position_zero",
            Kind::ReplyChunk => "reply_chunk",
            Kind::Segments => "segments",
            Kind::WriteResource => "write_resource",
            Kind::ReplyResource => "reply_resource",
        }
    }

    /// What the resend does, for the log.
    pub const fn action(self) -> &'static str {
        match self {
            Kind::PositionZero => "resending it as a Long Call (Position-Zero Read chunk)",
            Kind::ReplyChunk => "resending it without Write chunks, with a Reply chunk",
            Kind::Segments => "resending it with fewer segments per chunk",
            Kind::WriteResource | Kind::ReplyResource => {
                "resending it with a Reply chunk of the size needed"
            }
        }
    }
}

/// What was tried for one RPC, and the hints of its next transmission.
/// [`State::NEW`] for an RPC not refused yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    hints: Hints,
    tried: u8,
}

impl State {
    /// Nothing tried.
    pub const NEW: State = State {
        hints: Hints::NONE,
        tried: 0,
    };

    /// The hints for the RPC's next transmission.
    pub const fn hints(&self) -> Hints {
        self.hints
    }

    /// True if recovery `k` was done for this RPC.
    pub const fn tried(&self, k: Kind) -> bool {
        self.tried & k.bit() != 0
    }

    /// Resends done so far.
    pub const fn resends(&self) -> u32 {
        self.tried.count_ones()
    }

    const fn with(self, k: Kind, hints: Hints) -> State {
        State {
            hints,
            tried: self.tried | k.bit(),
        }
    }
}

/// How the refused transmission was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sent {
    /// The Call's form.
    pub call: CallForm,
    /// The Reply's form.
    pub reply: ReplyForm,
    /// Bytes of the Write chunk offered (0: none).
    pub write_len: u32,
    /// Bytes of the Reply chunk offered (0: none).
    pub reply_chunk_len: u32,
    /// Segments of the largest chunk sent (0: no chunks).
    pub max_chunk_segs: u32,
    /// The most a Reply chunk can cover: the RPC's receive buffer (head,
    /// pages and tail of `rq_rcv_buf`).
    pub reply_capacity: u32,
    /// The connection can use chunks (FRWR and `max_segs` > 0).
    pub chunks: bool,
}

impl Sent {
    /// The transmission planned as `plan` (`None`: inline, nothing
    /// registered) for `rpc`; `chunks`: the connection can use chunks.
    pub fn of(plan: Option<&ChunkPlan>, rpc: &Rpc, chunks: bool) -> Sent {
        let bytes =
            |r: &[super::chunks::Range]| r.iter().fold(0u32, |a, x| a.saturating_add(x.len));
        let n = |r: &[super::chunks::Range]| u32::try_from(r.len()).unwrap_or(u32::MAX);
        let reply_capacity = rpc.reply.len().unwrap_or(u32::MAX);
        match plan {
            Some(p) => Sent {
                call: p.call(),
                reply: p.reply(),
                write_len: bytes(p.write_ranges()),
                reply_chunk_len: bytes(p.reply_ranges()),
                max_chunk_segs: n(p.read_ranges())
                    .max(n(p.write_ranges()))
                    .max(n(p.reply_ranges())),
                reply_capacity,
                chunks,
            },
            None => Sent {
                call: CallForm::Inline,
                reply: ReplyForm::Inline,
                write_len: 0,
                reply_chunk_len: 0,
                max_chunk_segs: 0,
                reply_capacity,
                chunks,
            },
        }
    }
}

/// Why an RPC is failed instead of sent again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Why {
    /// The code admits no recovery: `RDMA2_ERR_SYSTEM` ("a permanent
    /// error"), `BAD_XDR`, `INVAL_HTYPE`, `INVAL_FLAG`, `ERR_VERS` on a
    /// settled connection, a code -00 does not define, or any version 1
    /// `RDMA_ERROR`.
    Permanent,
    /// `RDMA2_ERR_READ_CHUNKS` for a Call that was a Position-Zero Read
    /// (-00: "the requester MUST terminate the transaction with an
    /// error").
    PositionZero,
    /// This recovery was already done for the RPC.
    Repeated(Kind),
    /// The connection cannot use chunks, which the recovery needs.
    NoChunks,
    /// The report contradicts what was sent.
    Inconsistent,
    /// A resource error with a zero length: the responder could not say
    /// what it needs (-00's example of when to terminate).
    Unspecified,
    /// The responder needs more than the RPC's receive buffer holds.
    TooLarge {
        /// `rdma_length_needed`.
        needed: u32,
        /// [`Sent::reply_capacity`].
        capacity: u32,
    },
}

impl Why {
    /// The RPC's error: `-EMSGSIZE` for [`Why::TooLarge`], `-EIO` (as
    /// the C client for every `RDMA_ERROR`) otherwise.
    pub const fn errno(&self) -> Errno {
        match self {
            Why::TooLarge { .. } => Errno::EMSGSIZE,
            _ => Errno::EIO,
        }
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Why::Permanent => f.write_str("the error is permanent"),
            Why::PositionZero => {
                f.write_str("the Call was already a Position-Zero Read (-00: terminate the RPC)")
            }
            Why::Repeated(k) => write!(f, "the same error after the {} recovery", k.name()),
            Why::NoChunks => f.write_str("recovering needs chunks, which this connection lacks"),
            Why::Inconsistent => f.write_str("the error contradicts what the Call offered"),
            Why::Unspecified => f.write_str("the server did not say what it needs"),
            Why::TooLarge { needed, capacity } => write!(
                f,
                "the server needs {needed} bytes, the RPC's receive buffer holds {capacity}"
            ),
        }
    }
}

/// The decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recovery {
    /// Send the RPC again (same XID) on this connection, planned with
    /// `state.hints()`; keep `state` with the RPC for its next error.
    Resend {
        /// The recovery done.
        kind: Kind,
        /// The RPC's new state.
        state: State,
    },
    /// Fail the RPC with `errno`.
    Fail {
        /// Kernel errno.
        errno: Errno,
        /// Why.
        why: Why,
    },
}

impl Recovery {
    const fn fail(why: Why) -> Recovery {
        Recovery::Fail {
            errno: why.errno(),
            why,
        }
    }
}

/// Decides what to do with RPC whose transmission `sent` was answered by
/// an `RDMA_ERROR` / `RDMA2_ERROR` of version `protocol` with `body`;
/// `state` is what was tried for it before ([`State::NEW`] the first
/// time).
pub fn decide(protocol: Protocol, body: &ErrorBody, sent: &Sent, state: &State) -> Recovery {
    if protocol != Protocol::V2 {
        return Recovery::fail(Why::Permanent);
    }
    let h = state.hints;
    let (kind, hints) = match *body {
        ErrorBody::ReadChunks { .. } => {
            if sent.call == CallForm::Long {
                return Recovery::fail(Why::PositionZero);
            }
            (
                Kind::PositionZero,
                Hints {
                    position_zero: true,
                    ..h
                },
            )
        }
        ErrorBody::WriteChunks { .. } => {
            if sent.reply == ReplyForm::Long {
                // No Write chunk was offered, and a Reply chunk was.
                return Recovery::fail(Why::Inconsistent);
            }
            (
                Kind::ReplyChunk,
                Hints {
                    reply_chunk: true,
                    ..h
                },
            )
        }
        ErrorBody::Segments { max_segments } => {
            if sent.max_chunk_segs <= max_segments {
                return Recovery::fail(Why::Inconsistent);
            }
            (
                Kind::Segments,
                Hints {
                    max_segs: Some(max_segments),
                    ..h
                }
                .capped(h.max_segs),
            )
        }
        ErrorBody::WriteResource {
            chunk_index,
            length_needed,
        } => {
            // We offer at most one Write chunk (index 1); 0 is "unknown".
            if sent.reply != ReplyForm::Write || chunk_index > 1 {
                return Recovery::fail(Why::Inconsistent);
            }
            match resource(sent, length_needed, sent.write_len) {
                Some(why) => return Recovery::fail(why),
                None => (
                    Kind::WriteResource,
                    Hints {
                        reply_chunk: true,
                        reply_min: h.reply_min.max(length_needed),
                        ..h
                    },
                ),
            }
        }
        ErrorBody::ReplyResource { length_needed } => {
            match resource(sent, length_needed, sent.reply_chunk_len) {
                Some(why) => return Recovery::fail(why),
                None => (
                    Kind::ReplyResource,
                    Hints {
                        reply_chunk: true,
                        reply_min: h.reply_min.max(length_needed),
                        ..h
                    },
                ),
            }
        }
        ErrorBody::Vers { .. }
        | ErrorBody::BadXdr
        | ErrorBody::InvalHtype
        | ErrorBody::InvalFlag
        | ErrorBody::System
        | ErrorBody::Other(_) => return Recovery::fail(Why::Permanent),
    };
    if state.tried(kind) {
        return Recovery::fail(Why::Repeated(kind));
    }
    let needs_chunks = match kind {
        Kind::Segments => false,
        Kind::PositionZero | Kind::ReplyChunk | Kind::WriteResource | Kind::ReplyResource => true,
    };
    if needs_chunks && (!sent.chunks || hints.max_segs == Some(0)) {
        return Recovery::fail(Why::NoChunks);
    }
    Recovery::Resend {
        kind,
        state: state.with(kind, hints),
    }
}

/// The checks of a resource error's `needed` against the chunk that was
/// offered (`offered` bytes) and the receive buffer.
fn resource(sent: &Sent, needed: u32, offered: u32) -> Option<Why> {
    if needed == 0 {
        Some(Why::Unspecified)
    } else if needed <= offered {
        Some(Why::Inconsistent)
    } else if needed > sent.reply_capacity {
        Some(Why::TooLarge {
            needed,
            capacity: sent.reply_capacity,
        })
    } else {
        None
    }
}

/// Recovery counters (part of [`super::Stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counters {
    /// RPCs resent as Long Calls (`RDMA2_ERR_READ_CHUNKS`).
    pub position_zero: u64,
    /// RPCs resent without Write chunks, with a Reply chunk
    /// (`RDMA2_ERR_WRITE_CHUNKS`).
    pub reply_chunk: u64,
    /// RPCs resent with fewer segments (`RDMA2_ERR_SEGMENTS`).
    pub segments: u64,
    /// RPCs resent with a Reply chunk for a result that did not fit its
    /// Write chunk (`RDMA2_ERR_WRITE_RESOURCE`).
    pub write_resource: u64,
    /// RPCs resent with a larger Reply chunk
    /// (`RDMA2_ERR_REPLY_RESOURCE`).
    pub reply_resource: u64,
    /// RPCs failed because of a transport error (any code, both
    /// versions).
    pub failed: u64,
}

impl Counters {
    /// Counts decision `r`.
    pub fn count(&mut self, r: &Recovery) {
        let c = match *r {
            Recovery::Resend { kind, .. } => match kind {
                Kind::PositionZero => &mut self.position_zero,
                Kind::ReplyChunk => &mut self.reply_chunk,
                Kind::Segments => &mut self.segments,
                Kind::WriteResource => &mut self.write_resource,
                Kind::ReplyResource => &mut self.reply_resource,
            },
            Recovery::Fail { .. } => &mut self.failed,
        };
        *c = c.wrapping_add(1);
    }

    /// Resends of every kind.
    pub const fn resends(&self) -> u64 {
        self.position_zero
            .wrapping_add(self.reply_chunk)
            .wrapping_add(self.segments)
            .wrapping_add(self.write_resource)
            .wrapping_add(self.reply_resource)
    }
}

// The self tests (host: tests/recovery.rs; module: KUnit suite
// rpcrdma2_recovery), on the host and in the module's KUnit variant.
#[cfg(any(not(CONFIG_RUST), rpcrdma2_kunit))]
pub mod selftest;
