// SPDX-License-Identifier: GPL-2.0

//! What a received message means ([`ConnProto::on_receive`]): version
//! settlement, decoding, reassembly of continued Calls, and admission of a
//! Call against our limits and fault switches.

use rpcrdma_xdr::header::{self, Body, ErrorBody, Protocol};
use rpcrdma_xdr::props::PropSet;
use rpcrdma_xdr::v2;

use super::call::Call;
use super::errors::err_body;
use super::reverse::ReverseReply;
use super::{log, Action, ConnProto};
use crate::stats::{Expect, Stats};

/// The longest continued property set taken from the client.
const MAX_CONNPROP: usize = 64 * 1024;

/// `rdma_htype` of a decoded header (for the log).
fn header_type(b: &Body<'_>) -> u32 {
    match b {
        Body::Msg(_) => v2::RDMA2_MSG,
        Body::NoMsg(_) => v2::RDMA2_NOMSG,
        Body::Error(_) => v2::RDMA2_ERROR,
        Body::ConnProp(_) | Body::ConnPropPart(_) => v2::RDMA2_CONNPROP,
    }
}

impl ConnProto {
    /// The last piece (no `F_MORE`) of a continued `RDMA2_CONNPROP` from
    /// the client: its body is the end of the property set, not a set of
    /// its own, so it is taken before the header decoder sees it. The
    /// reassembled set is applied as a whole one is (-00 §6.4.4), or
    /// answered with `RDMA2_ERR_BAD_XDR` if it does not parse. `None` for
    /// every other message.
    fn connprop_last_piece(&mut self, buf: &[u8], stats: &mut Stats) -> Option<Vec<Action>> {
        let (xid, _) = self.connprop_cont.as_ref()?;
        let xid = *xid;
        if self.version != Some(Protocol::V2) {
            return None;
        }
        let (p, body) = v2::decode_prefix(buf).ok()?;
        if p.htype != v2::RDMA2_CONNPROP || p.flags.has_more() || p.xid != xid {
            return None;
        }
        self.client_credit(p.credit);
        stats.connprop_received += 1;
        let (_, mut set) = self.connprop_cont.take()?;
        set.extend_from_slice(body);
        match PropSet::parse(&set) {
            Ok(props) => {
                let v = props.values();
                stats.connprop_reassembled += 1;
                log::info(format_args!(
                    "client properties (xid {xid:#x}, continued): max send {} recv buffer {} reverse requests {}",
                    v.max_send_size, v.recv_buf_size, v.reverse_request_support
                ));
                self.client_props = Some(v);
                Some(vec![Action::Nothing])
            }
            Err(e) => {
                stats.malformed += 1;
                log::warn(format_args!(
                    "continued CONNPROP (xid {xid:#x}) does not parse: {e}"
                ));
                Some(vec![Action::Send(self.error(xid, v2::ERR_BAD_XDR, stats))])
            }
        }
    }

    /// Handles one received message. May return several actions (our
    /// CONNPROP, then the Call).
    pub fn on_receive(&mut self, buf: &[u8], stats: &mut Stats) -> Vec<Action> {
        let mut out = self.on_receive_inner(buf, stats);
        if self.connprop_due {
            // Built after the message was admitted, so that its credit
            // word does not return the credit the reply will return.
            self.connprop_due = false;
            let mut pieces = self.connprop_pieces();
            stats.connprop_sent += 1;
            if self.opts.connprop_twice {
                // -00 §6.4.4: the client keeps what the first one said.
                pieces.push(self.second_connprop());
                stats.connprop_sent += 1;
            }
            out.splice(0..0, pieces.into_iter().map(Action::Send));
        }
        let call = out.iter().position(|a| matches!(a, Action::Call(_)));
        if let Some(i) = call {
            let xid = match &out[i] {
                Action::Call(c) => c.xid,
                _ => 0,
            };
            if let Some(m) = self.unknown_htype_call(xid) {
                stats.unknown_htype_sent += 1;
                out.insert(i, Action::Send(m));
            }
        }
        out.extend(self.grants_due());
        out
    }

    fn on_receive_inner(&mut self, buf: &[u8], stats: &mut Stats) -> Vec<Action> {
        if self.overruns_our_credits(buf) {
            stats.credit_overruns += 1;
            log::warn(format_args!(
                "the client sent a message beyond our credit limit ({} unreturned, {} granted)",
                self.unreturned,
                self.opts.credits.max(1)
            ));
        }
        self.unreturned = self.unreturned.saturating_add(1);
        stats.msgs_received += 1;
        let Ok(common) = header::peek(buf) else {
            log::warn(format_args!(
                "dropping a {}-byte message: too short",
                buf.len()
            ));
            stats.malformed += 1;
            return vec![Action::Nothing];
        };
        let mut out = Vec::new();
        // Version settlement: the first message decides.
        match (self.version, common.vers) {
            (None, 2) if !self.opts.v1_only => {
                self.version = Some(Protocol::V2);
                stats.conn_v2 += 1;
                log::info(format_args!(
                    "connection settled on RPC-over-RDMA version 2"
                ));
                self.connprop_due = !self.opts.no_connprop;
            }
            (None, 1) => {
                self.version = Some(Protocol::V1);
                stats.conn_v1 += 1;
                log::info(format_args!(
                    "connection settled on RPC-over-RDMA version 1"
                ));
            }
            (None, v) => {
                // svcrdma behaviour: ERR_VERS in v1 layout with the Call's
                // version word; the connection stays unsettled.
                log::info(format_args!(
                    "ERR_VERS to a version {v} message (xid {:#x})",
                    common.xid
                ));
                return vec![Action::Send(self.svcrdma_err_vers(common.xid, v, stats))];
            }
            (Some(p), v) if p.vers() != v => {
                log::warn(format_args!(
                    "version {v} message on a version {} connection",
                    p.vers()
                ));
                stats.malformed += 1;
                if v == 1 || v == 2 {
                    // Framed in the version of the message it answers.
                    let framing = if v == 1 { Protocol::V1 } else { Protocol::V2 };
                    return vec![Action::Send(self.error_in(
                        framing,
                        common.xid,
                        v2::ERR_VERS,
                        stats,
                    ))];
                }
                return vec![Action::Send(self.svcrdma_err_vers(common.xid, v, stats))];
            }
            _ => {}
        }
        if let Some(out) = self.connprop_last_piece(buf, stats) {
            return out;
        }
        let h = match header::decode(buf) {
            Ok(h) => h,
            Err(e) => {
                stats.malformed += 1;
                let code = match self.version {
                    Some(Protocol::V2) => e.rdma2_err().unwrap_or(v2::ERR_BAD_XDR),
                    _ => v2::ERR_BAD_XDR,
                };
                log::warn(format_args!(
                    "malformed message (xid {:#x}): {e}",
                    common.xid
                ));
                // XID 0 too: -00 §6.4.3 copies the XID, whatever it is.
                out.push(Action::Send(self.error(common.xid, code, stats)));
                return out;
            }
        };
        let v2 = h.protocol == Protocol::V2;
        if v2 && !matches!(h.body, Body::Error(_)) {
            self.client_credit(h.credit);
        }
        // The client's answers to the messages our fault switches plant:
        // counted right or wrong, and logged; the first that is one ends
        // the message (each looks only once, as it forgets its XID).
        type Answer = fn(&mut ConnProto, &header::Header<'_>) -> Option<bool>;
        let planted = [
            (
                Self::continued_reverse_call_answer as Answer,
                "continued reverse-direction Call",
                "a successful reply",
                &mut stats.continued_reverse_call_answered,
                &mut stats.continued_reverse_call_wrong,
            ),
            (
                Self::unknown_htype_answer as Answer,
                "unknown header type",
                "RDMA2_ERR_INVAL_HTYPE",
                &mut stats.unknown_htype_answered,
                &mut stats.unknown_htype_wrong,
            ),
            (
                Self::bad_call_answer as Answer,
                "bad reverse-direction Call",
                "RDMA2_ERR_REPLY_RESOURCE",
                &mut stats.bad_reverse_call_answered,
                &mut stats.bad_reverse_call_wrong,
            ),
        ];
        for (answer, what, expected, right, wrong) in planted {
            let Some(ok) = answer(self, &h) else { continue };
            if ok {
                *right += 1;
                log::info(format_args!(
                    "the client answered our {what} (xid {:#x}) with {expected}",
                    h.xid
                ));
            } else {
                *wrong += 1;
                log::warn(format_args!(
                    "the client answered our {what} (xid {:#x}) with {:?} ({:?}), not {expected} with F_RESPONSE",
                    h.xid, h.body, h.flags
                ));
            }
            return vec![Action::Nothing];
        }
        let reply = match self.reverse_reply(&h, stats) {
            ReverseReply::NotOne => None,
            ReverseReply::Piece => return vec![Action::Nothing],
            ReverseReply::Whole(r) => Some(r),
        };
        if let Some(reply) = reply {
            if let Some(i) = self.probes.iter().position(|&x| x == h.xid) {
                self.probes.swap_remove(i);
                if crate::nfs::reply_ok(&reply, false) {
                    stats.cb_null_replies += 1;
                } else {
                    stats.cb_null_failed += 1;
                    log::warn(format_args!(
                        "the client refused our CB_NULL probe (xid {:#x})",
                        h.xid
                    ));
                }
                return vec![Action::Nothing];
            }
            stats.reverse_replies += 1;
            return vec![Action::ToNfsd(reply)];
        }
        if v2 && h.flags.is_response() {
            // A reply to a reverse-direction Call we did not send.
            stats.malformed += 1;
            log::warn(format_args!(
                "unexpected F_RESPONSE message (xid {:#x})",
                h.xid
            ));
            out.push(Action::Nothing);
            return out;
        }
        if v2 && self.cont.is_some() {
            // -00 §6.3.2: every message of a sequence has its XID and
            // header type. A credit grant may come between two pieces.
            let grant = matches!(h.body, Body::NoMsg(ref n) if h.xid == 0 && n.chunks.is_empty());
            let same =
                matches!(h.body, Body::Msg(_)) && self.cont.as_ref().map(|c| c.0) == Some(h.xid);
            if !grant && !same {
                self.cont = None;
                stats.continuations_interrupted += 1;
                log::warn(format_args!(
                    "continued Call interrupted by xid {:#x} (header type {})",
                    h.xid,
                    header_type(&h.body)
                ));
                out.push(Action::Send(self.error(h.xid, v2::ERR_INVAL_FLAG, stats)));
                return out;
            }
        }
        match h.body {
            Body::ConnProp(set) => {
                stats.connprop_received += 1;
                let v = set.values();
                log::info(format_args!(
                    "client properties (xid {:#x}): max send {} recv buffer {} reverse requests {}",
                    h.xid, v.max_send_size, v.recv_buf_size, v.reverse_request_support
                ));
                self.client_props = Some(v);
                out.push(Action::Nothing);
            }
            Body::ConnPropPart(part) => {
                stats.connprop_received += 1;
                match &mut self.connprop_cont {
                    Some((x, v)) if *x == h.xid => v.extend_from_slice(part),
                    _ => self.connprop_cont = Some((h.xid, part.to_vec())),
                }
                if self.connprop_cont.as_ref().map_or(0, |c| c.1.len()) > MAX_CONNPROP {
                    self.connprop_cont = None;
                    stats.malformed += 1;
                    out.push(Action::Send(self.error(h.xid, v2::ERR_BAD_XDR, stats)));
                } else {
                    out.push(Action::Nothing);
                }
            }
            Body::Error(_) => {
                stats.malformed += 1;
                log::warn(format_args!(
                    "client sent an error message (xid {:#x})",
                    h.xid
                ));
                out.push(Action::Nothing);
            }
            Body::NoMsg(n) if v2 && h.xid == 0 && n.chunks.is_empty() => {
                stats.grants_received += 1;
                out.push(Action::Nothing);
            }
            Body::NoMsg(n) => {
                let p0 = n.chunks.reads.iter().next().map(|s| s.position) == Some(0);
                if !p0 {
                    stats.malformed += 1;
                    out.push(Action::Send(self.error(h.xid, v2::ERR_BAD_XDR, stats)));
                    return out;
                }
                let call = self.call_from(&h, &n.chunks, &[], n.inv_handle);
                out.push(self.admit(call, stats));
            }
            Body::Msg(m) => {
                if v2 && h.flags.has_more() {
                    stats.continuations_received += 1;
                    match &mut self.cont {
                        Some((x, v)) if *x == h.xid => v.extend_from_slice(m.payload),
                        Some(_) => {
                            self.cont = None;
                            out.push(Action::Send(self.error(h.xid, v2::ERR_INVAL_FLAG, stats)));
                            return out;
                        }
                        None => self.cont = Some((h.xid, m.payload.to_vec())),
                    }
                    if self.cont.as_ref().map_or(0, |c| c.1.len()) > self.opts.max_data {
                        self.cont = None;
                        out.push(Action::Send(self.error(h.xid, v2::ERR_SYSTEM, stats)));
                    } else {
                        out.push(Action::Nothing);
                    }
                    return out;
                }
                let mut inline = m.payload.to_vec();
                if let Some((x, mut v)) = self.cont.take() {
                    if x != h.xid {
                        out.push(Action::Send(self.error(h.xid, v2::ERR_INVAL_FLAG, stats)));
                        return out;
                    }
                    v.extend_from_slice(&inline);
                    inline = v;
                }
                let call = self.call_from(&h, &m.chunks, &inline, m.inv_handle);
                out.push(self.admit(call, stats));
            }
        }
        out
    }

    fn call_from(
        &self,
        h: &header::Header<'_>,
        c: &rpcrdma_xdr::chunk::ChunkListsView<'_>,
        inline: &[u8],
        inv_handle: u32,
    ) -> Call {
        Call {
            xid: h.xid,
            v2: h.protocol == Protocol::V2,
            inv_handle,
            reads: c.reads.iter().collect(),
            writes: c.writes.iter().map(|w| w.iter().collect()).collect(),
            reply: c.reply.map(|r| r.iter().collect()),
            inline: inline.to_vec(),
            rpc: None,
            refuse_reply: false,
        }
    }

    /// Checks a Call's chunks against our limits and fault switches.
    fn admit(&mut self, mut call: Call, stats: &mut Stats) -> Action {
        self.calls += 1;
        stats.calls += 1;
        if let Some(e) = stats.refused.get(call.xid) {
            // Sent again after a transport error: -00 §6.4.3 says when a
            // requester may, and how the Call must change.
            let resent = match e {
                Expect::Fail => &mut stats.refused_resent,
                _ if !call.complies(e) => &mut stats.resent_noncompliant,
                Expect::PositionZero => &mut stats.resent_read_chunks,
                Expect::NoWriteChunks => &mut stats.resent_write_chunks,
                Expect::Segments(_) => &mut stats.resent_segments,
                Expect::WriteResource(_) => &mut stats.resent_write_resource,
                Expect::ReplyResource(_) => &mut stats.resent_reply_resource,
            };
            *resent += 1;
            log::info(format_args!(
                "xid {:#x} was answered with an error and is sent again (expected: {e:?}; {})",
                call.xid,
                if call.complies(e) {
                    "as asked"
                } else {
                    "NOT as asked"
                }
            ));
        }
        let counted = self.opts.err_calls.matches(&call);
        if counted {
            self.err_counted += 1;
        }
        let k = self.err_counted;
        let nth = self
            .opts
            .err_nth
            .iter()
            .find(|(n, _)| counted && *n == k)
            .map(|(_, code)| *code);
        let inject = match (nth, self.opts.err_every) {
            (Some(code), _) => Some(code),
            (None, Some((start, n, code)))
                if counted && k > start && (k - start).is_multiple_of(n) =>
            {
                Some(code)
            }
            _ => None,
        };
        let v2 = self.version == Some(Protocol::V2);
        match inject {
            Some(v2::ERR_REPLY_RESOURCE) if v2 && call.reply.is_none() => {
                // Refused once nfsd's reply tells the length needed.
                log::info(format_args!(
                    "injecting error {} for call {} (xid {:#x}) at its reply",
                    v2::ERR_REPLY_RESOURCE,
                    k,
                    call.xid
                ));
                stats.errors_injected += 1;
                call.refuse_reply = true;
            }
            Some(code) => {
                log::info(format_args!(
                    "injecting error {code} for call {k} (xid {:#x})",
                    call.xid
                ));
                stats.errors_injected += 1;
                let body = err_body(code, &self.opts, Some(&call));
                return Action::Send(self.refuse(&call, body, false, stats));
            }
            None => {}
        }
        if v2 && self.opts.refuse_read_chunks && call.reads.iter().any(|r| r.position != 0) {
            stats.refused_read_chunks += 1;
            let body = ErrorBody::ReadChunks { max_chunks: 0 };
            return Action::Send(self.refuse(&call, body, false, stats));
        }
        if let Some(n) = self.opts.max_segs.filter(|_| v2) {
            if call.max_chunk_segs() > n {
                stats.refused_segments += 1;
                let body = ErrorBody::Segments { max_segments: n };
                return Action::Send(self.refuse(&call, body, false, stats));
            }
        }
        if v2 && self.opts.no_write_chunks && !call.writes.is_empty() {
            call.refuse_reply = true;
            stats.refused_write_chunks += 1;
        }
        if self.breaks_segment_props(&call) {
            stats.prop_violations += 1;
            log::warn(format_args!(
                "xid {:#x}: the Call's chunks exceed our segment properties",
                call.xid
            ));
            return self.refuse_segments(call.xid, stats);
        }
        if call.read_len() > self.opts.max_data as u64 {
            return Action::Send(self.error(call.xid, v2::ERR_SYSTEM, stats));
        }
        if call.reads.iter().any(|r| r.position % 4 != 0) {
            return Action::Send(self.error(call.xid, v2::ERR_BAD_XDR, stats));
        }
        self.unanswered = self.unanswered.saturating_add(1);
        Action::Call(call)
    }

    /// v2 with `--prop-segs` / `--prop-seg-size`: the Call carries more
    /// segments (all chunks together, -00 §5.2.4) or a longer segment
    /// (§5.2.3) than our CONNPROP allows.
    fn breaks_segment_props(&self, call: &Call) -> bool {
        if !call.v2 {
            return false;
        }
        let segs = call
            .reads
            .iter()
            .map(|r| r.target)
            .chain(call.writes.iter().flatten().copied())
            .chain(call.reply.iter().flatten().copied());
        let (mut n, mut longest) = (0u32, 0u32);
        for s in segs {
            n += 1;
            longest = longest.max(s.length);
        }
        self.opts.prop_segs.is_some_and(|m| n > m)
            || self.opts.prop_seg_size.is_some_and(|m| longest > m)
    }

    /// RDMA2_ERR_SEGMENTS with our advertised segment count. Like every
    /// RDMA2_ERROR it returns exactly one credit, the one the client
    /// counts it as returning ([`ConnProto::error_credit_word`]).
    fn refuse_segments(&mut self, xid: u32, stats: &mut Stats) -> Action {
        let body = ErrorBody::Segments {
            max_segments: self.opts.prop_segs.unwrap_or(16),
        };
        let mut buf = vec![0u8; 64];
        let credit = self.error_credit_word(false);
        let n = v2::encode_error(&mut buf, xid, credit, &body);
        stats.errors_sent += 1;
        buf.truncate(n.unwrap_or(0));
        Action::Send(buf)
    }
}
