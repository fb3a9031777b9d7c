// SPDX-License-Identifier: GPL-2.0

//! The receive side of [`Transport`]: what one received message means
//! ([`Transport::receive`], which returns an [`Outcome`]): version
//! negotiation, credit grants, the reassembly of continued replies and of
//! a continued `RDMA2_CONNPROP`, messages that do not decode.

use super::super::backchannel::{self, CallAssembly, CallStep, MAX_CALL};
use super::super::connprop;
use super::super::continuation::{Fault, Piece, Step};
use super::super::credits::{CreditUpdate, Grant};
use super::super::negotiate::{Phase, Verdict};
use super::super::reply::{classify, Cause, ChunkUse, Control, Reply};
use super::super::xdr::header::{self, Body, Header, Protocol};
use super::super::xdr::props::{TransportProperties, RVREQSUP_NONE};
use super::super::xdr::v2;
use super::Transport;

/// Everything the transport does after one successful Receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// What to do with the message.
    pub reply: Reply<'a>,
    /// The credit window changed: set `rb_credits` and `xprt->cwnd`.
    pub credits: Option<CreditUpdate>,
    /// The v2 message budget reopened: `xprt_write_space`.
    pub wake_senders: bool,
    /// Post this many Receives now (already counted as posted; report a
    /// shortfall with [`Transport::receives_unposted`]).
    pub post_receives: u32,
    /// An asynchronous credit grant is due (-00 §6.4.2): the responder
    /// has used half the credits we advertised since our last message and
    /// may be waiting for them (for example in the middle of a continued
    /// reply). With a Send buffer at hand, call
    /// [`Transport::prepare_grant`] and send what it returns.
    pub grant_due: bool,
}

impl Transport {
    /// Handles one successful Receive: `buf` is exactly the received
    /// bytes (`wc->byte_len`).
    pub fn receive<'a>(&mut self, buf: &'a [u8]) -> Outcome<'a> {
        self.credits.on_receive();
        let (reply, grant) = match self.last_connprop_piece(buf) {
            Some(r) => r,
            None => match header::decode(buf) {
                Ok(h) => self.on_header(&h),
                Err(e) => self.on_decode_error(buf, e),
            },
        };
        let mut out = Outcome {
            reply,
            credits: None,
            wake_senders: false,
            post_receives: 0,
            grant_due: false,
        };
        if let Some(g) = grant {
            if matches!(
                g,
                Grant::Ignored
                    | Grant::V2 {
                        answers_call: true,
                        ..
                    }
            ) {
                self.unanswered = self.unanswered.saturating_sub(1);
            }
            let effect = self.credits.on_grant(g);
            out.credits = effect.update;
            out.wake_senders = effect.wake;
            if effect.bad_word {
                self.stats.bad_credit = self.stats.bad_credit.wrapping_add(1);
            }
            if effect.total_reading {
                self.stats.credit_total_reading = self.stats.credit_total_reading.wrapping_add(1);
            }
        }
        if out.reply == Reply::Control(Control::Fallback) {
            // Version 1 counts no messages: whoever waited may send.
            out.wake_senders = true;
        }
        self.count(&out.reply);
        if self.neg.phase() != Phase::Down {
            out.post_receives = self.credits.replenish();
        }
        out.grant_due = self.grant_due();
        out
    }

    /// The transport could not place a piece of continued Reply `xid`
    /// ([`Reply::Piece`]): the rest of its sequence is dropped.
    pub fn abandon_continuation(&mut self, xid: u32) {
        self.cont.abandon(xid);
    }

    /// A Receive completed with an error (the connection is going away):
    /// it is no longer posted.
    pub fn receive_flushed(&mut self) {
        self.credits.on_receive();
    }

    /// `n` of the Receives asked for were not posted.
    pub fn receives_unposted(&mut self, n: u32) {
        self.credits.unposted(n);
    }

    /// Runs a version 2 message through the reassembly of continued
    /// replies; `None` when it is not part of a sequence.
    fn continued<'a>(
        &mut self,
        p: &Piece<'a>,
        h: &Header<'a>,
    ) -> Option<(Reply<'a>, Option<Grant>)> {
        let step = self.cont.on_message(p);
        let answers_call = step.answers_call();
        let reply = match step {
            Step::Single => return None,
            Step::Append {
                xid,
                offset,
                payload,
            } => Reply::Piece {
                xid,
                offset,
                payload,
                last: None,
            },
            // A reduced Reply whose last piece names the chunks (-00
            // §4.5.3): checked against the RPC's registration once it is
            // reassembled, where chunks are offered; without chunks the
            // RPC offered none, so they are the peer's error.
            Step::Last {
                len, chunks: true, ..
            } if self.config.max_segs > 0 => Reply::LastChunkedPiece { len, header: *h },
            Step::Last {
                xid, chunks: true, ..
            } => Reply::fail_with(xid, Cause::Continuation(Fault::ChunksOnLast)),
            Step::Last {
                xid,
                offset,
                payload,
                len,
                chunks: false,
            } => Reply::Piece {
                xid,
                offset,
                payload,
                last: Some(len),
            },
            Step::Fail { xid, fault, .. } => Reply::fail_with(xid, Cause::Continuation(fault)),
            Step::Drop { fault, .. } => Reply::Drop(Cause::Continuation(fault)),
        };
        let grant = match h.body {
            // An RDMA2_ERROR's credit word is ignored (§6.4.3); it returns
            // a credit only if it answers the Call (credit rule 3).
            Body::Error(_) => answers_call.then_some(Grant::Ignored),
            _ => Some(Grant::V2 {
                credits: h.credits(),
                answers_call,
                credit_grant: false,
            }),
        };
        Some((reply, grant))
    }

    /// Takes the peer's property set `p` (from one `RDMA2_CONNPROP` or
    /// reassembled): the thresholds follow it at once, chunk planning
    /// from the next Call ([`Self::limits`]).
    ///
    /// Only the first set of a connection counts. -00 §6.4.4: properties
    /// not included "are to be treated by the peer endpoint as having the
    /// default value and are not allowed to change subsequently", and "the
    /// peer should not request changes": a later set is counted
    /// (`connprop_repeated`) and ignored, whatever it says. Returns
    /// whether `p` was applied.
    fn set_props(&mut self, p: TransportProperties) -> bool {
        if self.props.is_some() {
            self.stats.connprop_repeated = self.stats.connprop_repeated.wrapping_add(1);
            return false;
        }
        self.stats.connprop_applied = self.stats.connprop_applied.wrapping_add(1);
        self.props = Some(p);
        self.refresh_thresholds();
        true
    }

    /// A piece of a continued reverse-direction Call (`RDMA2_MSG` with
    /// `F_RESPONSE` clear: the peer's XID space, -00 §6.3.2) on a version
    /// 2 connection: the first (`F_MORE`), or any such message while one
    /// is being reassembled ([`CallAssembly`]). `None` for every other
    /// message, which is handled as usual: a Call in one message, and
    /// whatever interrupts a sequence that is not a reverse-direction
    /// Call (the sequence is dropped then, counted in
    /// `reverse_calls_interrupted`: no `RDMA2_ERROR` answers it, as the
    /// message that broke the sequence is not the peer's Call).
    fn reverse_piece<'a>(&mut self, h: &Header<'a>) -> Option<(Reply<'a>, Option<Grant>)> {
        let m = match h.body {
            Body::Msg(ref m) if !h.flags.is_response() && h.xid != 0 => m,
            _ => {
                if self.rcall.in_sequence() {
                    self.rcall = CallAssembly::new();
                    self.stats.reverse_calls_interrupted =
                        self.stats.reverse_calls_interrupted.wrapping_add(1);
                }
                return None;
            }
        };
        let more = h.flags.has_more();
        if !more && !self.rcall.in_sequence() {
            return None;
        }
        // Like every reverse-direction message, a piece grants credits
        // for our Calls and answers none of them.
        let grant = Some(Grant::V2 {
            credits: h.credits(),
            answers_call: false,
            credit_grant: false,
        });
        if self.refuses_reverse_calls() {
            // -00 §5.2.5, as for a Call in one message.
            self.rcall = CallAssembly::new();
            self.stats.reverse_refused = self.stats.reverse_refused.wrapping_add(1);
            return Some((Reply::Drop(Cause::ReverseRefused), grant));
        }
        let len = u32::try_from(m.payload.len()).unwrap_or(u32::MAX);
        let step = match backchannel::error_for_chunks(ChunkUse::of(&m.chunks, false)) {
            // Chunk lists (the last piece's: F_MORE with chunks does not
            // decode): the Call would need them read or written.
            Some(body) => self.rcall.refuse(h.xid, more, body),
            // None, or only a Reply chunk (we may reply by other means,
            // -00 §6.5): an inline piece.
            None => self.rcall.piece(h.xid, more, len, MAX_CALL),
        };
        let reply = match step {
            CallStep::Append { xid, offset } => Reply::ReverseCallPiece {
                xid,
                offset,
                payload: m.payload,
                last: None,
            },
            CallStep::Last { xid, offset, len } => Reply::ReverseCallPiece {
                xid,
                offset,
                payload: m.payload,
                last: Some(len),
            },
            CallStep::Refuse {
                xid,
                body,
                answer: true,
            } => Reply::Drop(Cause::ReverseError { xid, body }),
            CallStep::Refuse { .. } => Reply::Drop(Cause::Continuation(Fault::ReverseCall)),
        };
        Some((reply, grant))
    }

    /// The peer announced `RVREQSUP_NONE` (-00 §5.2.5).
    fn refuses_reverse_calls(&self) -> bool {
        self.props
            .is_some_and(|p| p.reverse_request_support == RVREQSUP_NONE)
    }

    /// Feeds one piece of a continued `RDMA2_CONNPROP` to the reassembly;
    /// returns the complete set once the last piece is in.
    fn connprop_piece(&mut self, xid: u32, body: &[u8], more: bool) -> Option<TransportProperties> {
        if more && self.props_asm.xid().is_some_and(|x| x != xid) {
            // A new set starts before the previous one ended.
            self.stats.connprop_bad = self.stats.connprop_bad.wrapping_add(1);
        }
        match self.props_asm.piece(xid, body, more) {
            connprop::Step::Pending => None,
            connprop::Step::Done(p) => Some(p),
            connprop::Step::Failed(_) => {
                self.stats.connprop_bad = self.stats.connprop_bad.wrapping_add(1);
                None
            }
        }
    }

    /// The last piece (no `F_MORE`) of a continued `RDMA2_CONNPROP` being
    /// reassembled on a version 2 connection: its body is not a property
    /// set of its own, so it does not go through the header decoder.
    /// `None` for every other message.
    fn last_connprop_piece<'a>(&mut self, buf: &[u8]) -> Option<(Reply<'a>, Option<Grant>)> {
        let xid = self.props_asm.xid()?;
        if self.neg.protocol() != Some(Protocol::V2) {
            return None;
        }
        let (p, body) = v2::decode_prefix(buf).ok()?;
        if p.htype != v2::RDMA2_CONNPROP || p.flags.has_more() || p.xid != xid {
            return None;
        }
        let grant = Some(Grant::V2 {
            credits: header::Credits::from_word(p.credit),
            answers_call: false,
            credit_grant: false,
        });
        let reply = match self.connprop_piece(xid, body, false) {
            Some(props) if self.set_props(props) => Reply::Control(Control::Properties(props)),
            Some(_) => Reply::Control(Control::PropertiesPart),
            None => Reply::Control(Control::PropertiesPart),
        };
        Some((reply, grant))
    }

    fn on_header<'a>(&mut self, h: &Header<'a>) -> (Reply<'a>, Option<Grant>) {
        // Version 2 messages go through the reassembly first: pieces of a
        // sequence, and whatever interrupts one.
        let v2_conn = h.protocol == Protocol::V2 && self.neg.protocol() == Some(Protocol::V2);
        // Pieces of a continued reverse-direction Call, unless a
        // continued reply is in progress (which such a piece interrupts).
        if v2_conn && !self.cont.in_sequence() {
            if let Some(r) = self.reverse_piece(h) {
                return r;
            }
        }
        let seen = v2_conn && self.cont.in_sequence();
        if seen {
            if let Some(r) = self.continued(&piece_of(h), h) {
                return r;
            }
        }
        let phase = self.neg.phase();
        match self.neg.on_header(h, &mut self.memory) {
            Verdict::NotConnected => (Reply::Drop(Cause::NotConnected), None),
            Verdict::VersionMismatch { got } => {
                (Reply::Disconnect(Cause::VersionMismatch { got }), None)
            }
            Verdict::StrayErrVers => (Reply::Drop(Cause::StrayErrVers), None),
            Verdict::Resend { xid } => {
                self.credits.set_protocol(Protocol::V1);
                self.refresh_thresholds();
                if xid == connprop::PROBE_XID && phase == (Phase::Probing { probe: Some(xid) }) {
                    // Our CONNPROP was the probe: no RPC to send again.
                    return (Reply::Control(Control::Fallback), Some(Grant::Ignored));
                }
                (Reply::Resend { xid }, Some(Grant::Ignored))
            }
            Verdict::ErrVers {
                xid,
                low,
                high,
                rejected,
                settled,
            } => {
                let cause = Cause::ErrVers {
                    low,
                    high,
                    rejected,
                    settled,
                };
                let reply = Reply::Fail {
                    xid,
                    errno: cause.errno(),
                    cause,
                };
                (reply, Some(Grant::Ignored))
            }
            Verdict::Accept => {
                if phase != self.neg.phase() {
                    // The probe was answered: settled on v2.
                    self.refresh_thresholds();
                }
                if h.protocol == Protocol::V2 && !seen {
                    if let Some(r) = self.continued(&piece_of(h), h) {
                        return r;
                    }
                }
                let mut reply = classify(h);
                if let Reply::Fail {
                    cause: Cause::Chunks(_),
                    xid,
                    ..
                } = reply
                {
                    if self.config.max_segs > 0 {
                        // Chunks are offered: the transport checks the
                        // reply against what the RPC registered.
                        reply = Reply::Chunked { xid, header: *h };
                    }
                }
                match reply {
                    Reply::Control(Control::Properties(p)) => {
                        self.props_asm.reset();
                        if !self.set_props(p) {
                            // A repeated set: received, not applied.
                            reply = Reply::Control(Control::PropertiesPart);
                        }
                    }
                    Reply::Control(Control::PropertiesPart) => {
                        if let Body::ConnPropPart(body) = h.body {
                            self.connprop_piece(h.xid, body, true);
                        }
                    }
                    Reply::ReverseCall { .. } if self.refuses_reverse_calls() => {
                        // -00 §5.2.5: the peer said it sends no
                        // reverse-direction requests (so it takes no
                        // replies): do not answer one.
                        self.stats.reverse_refused = self.stats.reverse_refused.wrapping_add(1);
                        reply = Reply::Drop(Cause::ReverseRefused);
                    }
                    _ => {}
                }
                // The answer to our CONNPROP probe returns its credit
                // whatever its credit word says (rule 3 of
                // super::credits: it answers the probe).
                let answers_probe = phase
                    == (Phase::Probing {
                        probe: Some(connprop::PROBE_XID),
                    })
                    && self.neg.phase() == Phase::Settled(Protocol::V2);
                let grant = match (h.protocol, &h.body) {
                    // A v1 reverse-direction Call carries the server's
                    // backchannel grant, not one for our Calls (RFC 8167;
                    // the C client ignores it too).
                    (Protocol::V1, _) if matches!(reply, Reply::ReverseCall { .. }) => {
                        return (reply, None);
                    }
                    // v1 errors too, as the C client does.
                    (Protocol::V1, _) => Grant::V1(h.credit),
                    (Protocol::V2, Body::Error(_)) => Grant::Ignored,
                    (Protocol::V2, _) => Grant::V2 {
                        credits: h.credits(),
                        answers_call: reply.answers_call() || answers_probe,
                        credit_grant: reply == Reply::Control(Control::CreditGrant),
                    },
                };
                (reply, Some(grant))
            }
        }
    }

    fn on_decode_error<'a>(
        &mut self,
        buf: &'a [u8],
        e: super::super::xdr::Error,
    ) -> (Reply<'a>, Option<Grant>) {
        let Ok(c) = header::peek(buf) else {
            return (Reply::Drop(Cause::Malformed(e)), None);
        };
        if c.vers == v2::VERSION
            && self.neg.protocol() == Some(Protocol::V2)
            && self.cont.in_sequence()
        {
            // A message that does not decode interrupts a sequence (or
            // ends one being discarded). Its credit word is not trusted.
            let flags = buf
                .get(16..)
                .and_then(|b| b.first_chunk::<4>())
                .map_or(0, |w| u32::from_be_bytes(*w));
            let p = Piece {
                xid: c.xid,
                htype: c.htype,
                more: flags & v2::F_MORE != 0,
                response: flags & v2::F_RESPONSE != 0,
                chunks: false,
                valid: false,
                payload: &[],
            };
            let step = self.cont.on_message(&p);
            let grant = step.answers_call().then_some(Grant::Ignored);
            match step {
                Step::Fail { xid, fault, .. } => {
                    return (Reply::fail_with(xid, Cause::Continuation(fault)), grant);
                }
                Step::Drop { .. } => return (Reply::Drop(Cause::Malformed(e)), grant),
                _ => {}
            }
        }
        let settled_v2 = self.neg.phase() == Phase::Settled(Protocol::V2);
        match self.neg.on_malformed(c.xid, c.vers) {
            // A malformed version 2 message that answers no Call: a
            // CONNPROP, or any message with XID 0 (-00 §6.4.2). Counted
            // and dropped; it must not fail the RPC that has XID 0.
            Verdict::Accept
                if c.vers == v2::VERSION && (c.xid == 0 || c.htype == v2::RDMA2_CONNPROP) =>
            {
                (Reply::Drop(Cause::Malformed(e)), None)
            }
            // A malformed version 2 message in the peer's XID space
            // (F_RESPONSE clear, -00 §6.3.2.1): a reverse-direction Call
            // we cannot parse. It names none of our Calls; we answer it
            // as its responder.
            Verdict::Accept
                if settled_v2 && c.vers == v2::VERSION && !response_flag(buf).unwrap_or(true) =>
            {
                (
                    Reply::Drop(Cause::ReverseError {
                        xid: c.xid,
                        body: super::super::backchannel::error_for_decode(e.kind),
                    }),
                    None,
                )
            }
            Verdict::Accept => {
                let grant = if c.xid != 0 {
                    Some(Grant::Ignored)
                } else {
                    None
                };
                let cause = Cause::Malformed(e);
                let reply = Reply::Fail {
                    xid: c.xid,
                    errno: cause.errno(),
                    cause,
                };
                (reply, grant)
            }
            Verdict::VersionMismatch { got } => {
                (Reply::Disconnect(Cause::VersionMismatch { got }), None)
            }
            _ => (Reply::Drop(Cause::NotConnected), None),
        }
    }
}

/// `F_RESPONSE` of a version 2 message, if its flags word is there.
fn response_flag(buf: &[u8]) -> Option<bool> {
    let w = buf.get(16..)?.first_chunk::<4>()?;
    Some(u32::from_be_bytes(*w) & v2::F_RESPONSE != 0)
}

/// The facts the reassembly needs about a decoded version 2 header.
fn piece_of<'a>(h: &Header<'a>) -> Piece<'a> {
    let (htype, chunks, payload) = match h.body {
        Body::Msg(ref m) => (v2::RDMA2_MSG, !m.chunks.is_empty(), m.payload),
        Body::NoMsg(ref n) => (v2::RDMA2_NOMSG, !n.chunks.is_empty(), &[][..]),
        Body::Error(_) => (v2::RDMA2_ERROR, false, &[][..]),
        Body::ConnProp(_) | Body::ConnPropPart(_) => (v2::RDMA2_CONNPROP, false, &[][..]),
    };
    Piece {
        xid: h.xid,
        htype,
        more: h.flags.has_more(),
        response: h.flags.is_response(),
        chunks,
        valid: true,
        payload,
    }
}
