// SPDX-License-Identifier: GPL-2.0

//! Reverse-direction Calls: nfsd's callbacks relayed to the client
//! ([`ConnProto::reverse_call`]), our CB_NULL probes
//! ([`ConnProto::cb_null`]), and the client's replies to them.

use rpcrdma_xdr::chunk::{ChunkLists, Segment};
use rpcrdma_xdr::header::{self, Body, ErrorBody, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::props::RVREQSUP_NONE;
use rpcrdma_xdr::v2;

use super::{log, ConnProto};
use crate::nfs::Stripped;
use crate::stats::Stats;

/// Largest continued reply of the client's reassembled: the callback
/// service's reply buffer (one page) with room to spare.
const MAX_REPLY: usize = 64 * 1024;

/// What a message of the client's is, as a reply to one of our
/// reverse-direction Calls ([`ConnProto::reverse_reply`]).
#[derive(Debug)]
pub(super) enum ReverseReply {
    /// Not a reply of that kind.
    NotOne,
    /// A piece of a continued reply, kept until the last comes.
    Piece,
    /// A whole RPC Reply.
    Whole(Vec<u8>),
}

/// XIDs of the responder's own CB_NULL probes: `PROBE_XID | n` (nfsd's
/// callback XIDs are another counter; a clash would only misroute one
/// reply).
pub const PROBE_XID: u32 = 0xcb00_0000;

/// XID of the `--bad-reverse-call` Call (one per connection).
pub const BAD_CALL_XID: u32 = 0xcbad_0001;

/// XID of the `--continued-reverse-call` Call (one per connection).
pub const CONT_CALL_XID: u32 = 0xcbad_0002;

/// The `RDMA2_ERROR` code the client must answer the `--bad-reverse-call`
/// Call with: it offers a Write chunk, which a responder that "cannot
/// handle any Write chunks for a request" answers with
/// `RDMA2_ERR_REPLY_RESOURCE` (-00 §6.4.3).
pub const BAD_CALL_ANSWER: u32 = v2::ERR_REPLY_RESOURCE;

/// The header type of the `--unknown-htype-call` message: one -00 does
/// not define (RDMA2_MSG 0 to RDMA2_CONNPROP 5; 6 is unassigned too, 7 is
/// what the malformed-message catalogue uses).
pub const UNKNOWN_HTYPE: u32 = 7;

impl ConnProto {
    /// The client announced Reverse Request Support `NONE` (-00 §5.2.5:
    /// "receipt of reverse direction requests and replies is not
    /// supported"): no reverse-direction Call may be sent to it.
    pub fn refuses_reverse_calls(&self) -> bool {
        self.version == Some(Protocol::V2)
            && self
                .client_props
                .is_some_and(|p| p.reverse_request_support == RVREQSUP_NONE)
    }

    /// The client's reply to one of our reverse-direction Calls: an
    /// inline RPC Reply (v2: `F_RESPONSE` set; v1: the message type word),
    /// or in version 2 one continued over several `RDMA2_MSG`s with
    /// `F_RESPONSE` and `F_MORE` on all but the last (-00 §6.5), when
    /// relaying is on. A reply to a CB_COMPOUND relayed padded
    /// (`--pad-callbacks`) loses the padding's results here.
    pub(super) fn reverse_reply(
        &mut self,
        h: &header::Header<'_>,
        stats: &mut Stats,
    ) -> ReverseReply {
        if !self.opts.relay_callbacks {
            return ReverseReply::NotOne;
        }
        let Body::Msg(m) = h.body else {
            return ReverseReply::NotOne;
        };
        let v2 = h.protocol == Protocol::V2;
        let mut payload = std::borrow::Cow::Borrowed(m.payload);
        if v2 && h.flags.is_response() && m.chunks.is_empty() {
            if let Some((xid, mut so_far)) = self.reply_cont.take() {
                if xid == h.xid {
                    stats.reverse_reply_pieces += 1;
                    so_far.extend_from_slice(m.payload);
                    if so_far.len() > MAX_REPLY {
                        stats.reverse_replies_interrupted += 1;
                        log::warn(format_args!(
                            "a continued reply (xid {xid:#x}) grew beyond {MAX_REPLY} bytes: dropped"
                        ));
                        return ReverseReply::Piece;
                    }
                    if h.flags.has_more() {
                        self.reply_cont = Some((xid, so_far));
                        return ReverseReply::Piece;
                    }
                    stats.continued_reverse_replies += 1;
                    payload = std::borrow::Cow::Owned(so_far);
                } else {
                    stats.reverse_replies_interrupted += 1;
                    log::warn(format_args!(
                        "the continued reply to xid {xid:#x} was abandoned after {} bytes (xid {:#x} came)",
                        so_far.len(),
                        h.xid
                    ));
                }
            }
            if h.flags.has_more() && matches!(payload, std::borrow::Cow::Borrowed(_)) {
                stats.reverse_reply_pieces += 1;
                self.reply_cont = Some((h.xid, m.payload.to_vec()));
                return ReverseReply::Piece;
            }
        }
        let is_reply = crate::nfs::word_at(&payload, 4) == Some(crate::nfs::RPC_REPLY)
            && crate::nfs::word_at(&payload, 0) == Some(h.xid);
        let v2_ok = h.protocol != Protocol::V2 || h.flags.is_response();
        if !(is_reply && v2_ok && m.chunks.is_empty() && !h.flags.has_more()) {
            return ReverseReply::NotOne;
        }
        let reply = payload.into_owned();
        let Some(i) = self.padded.iter().position(|&(x, _)| x == h.xid) else {
            return ReverseReply::Whole(reply);
        };
        let (_, nops) = self.padded.swap_remove(i);
        ReverseReply::Whole(match crate::nfs::strip_cb_padding(&reply, nops) {
            Some(Stripped::Clean(r)) => {
                stats.padded_replies_stripped += 1;
                r
            }
            Some(Stripped::NotReached(r)) => {
                stats.padded_replies_not_reached += 1;
                r
            }
            Some(Stripped::Failed(r)) => {
                stats.padded_replies_wrong += 1;
                log::warn(format_args!(
                    "the reply to padded CB_COMPOUND xid {:#x} lacks a padding result or has one that is not NFS4_OK",
                    h.xid
                ));
                r
            }
            None => {
                stats.padded_replies_wrong += 1;
                log::warn(format_args!(
                    "the reply to padded CB_COMPOUND xid {:#x} is not a CB_COMPOUND4res: relayed as it came",
                    h.xid
                ));
                reply
            }
        })
    }

    /// Frames nfsd's callback Call `rpc` as a reverse-direction Call
    /// (RDMA_MSG / RDMA2_MSG without `F_RESPONSE`, no chunks), or `None`
    /// if relaying is off or it does not fit the client's receive size.
    pub fn reverse_call(&mut self, rpc: &[u8]) -> Option<Vec<u8>> {
        if !self.opts.relay_callbacks || self.version.is_none() {
            return None;
        }
        let proto = self.version?;
        if self.refuses_reverse_calls() {
            return None;
        }
        let xid = crate::nfs::word_at(rpc, 0)?;
        let padded = match self.opts.pad_callbacks {
            0 => None,
            n => crate::nfs::pad_cb_compound(rpc, n),
        };
        let rpc = padded.as_ref().map_or(rpc, |(p, _)| p.as_slice());
        let spec = MsgSpec {
            xid,
            credit: 0,
            kind: MsgKind::Msg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        };
        let hdr_len = spec.encoded_len(proto)?;
        if hdr_len.saturating_add(rpc.len()) > self.client_recv() {
            return None;
        }
        let spec = MsgSpec {
            credit: self.credit_word(false),
            ..spec
        };
        let mut buf = vec![0u8; hdr_len];
        let n = header::encode_msg(&mut buf, proto, &spec).ok()?;
        buf.truncate(n);
        buf.extend_from_slice(rpc);
        if let Some((_, nops)) = padded {
            if self.padded.len() >= 64 {
                self.padded.remove(0); // never answered: forget the oldest
            }
            self.padded.push((xid, nops));
            self.padded_sent = self.padded_sent.wrapping_add(1);
        }
        Some(buf)
    }

    /// `--pad-callbacks`: how many CB_COMPOUNDs [`Self::reverse_call`]
    /// padded on this connection.
    pub fn padded_sent(&self) -> u64 {
        self.padded_sent
    }

    /// `--pad-callbacks`: the CB_COMPOUNDs [`Self::reverse_call`] padded
    /// that are still to be answered.
    pub fn padded_pending(&self) -> usize {
        self.padded.len()
    }

    /// A CB_NULL probe of callback program `prog` (version 1, as nfsd's
    /// probes), framed as [`Self::reverse_call`] frames nfsd's callbacks;
    /// its reply is counted (`cb_null_replies`, `cb_null_failed`) and not
    /// handed to nfsd. `None` unless `probe_callbacks` and relaying are on
    /// and the version is settled.
    pub fn cb_null(&mut self, prog: u32) -> Option<Vec<u8>> {
        if !self.opts.probe_callbacks {
            return None;
        }
        let xid = PROBE_XID | (self.probes_sent & 0x00ff_ffff);
        let m = self.reverse_call(&crate::nfs::null_call(xid, prog, 1))?;
        self.probes_sent = self.probes_sent.wrapping_add(1);
        if self.probes.len() >= 64 {
            self.probes.remove(0); // never answered: forget the oldest
        }
        self.probes.push(xid);
        Some(m)
    }

    /// `--bad-reverse-call`: once per version 2 connection whose client
    /// takes reverse-direction Calls, a Call it cannot serve (-00 §6.4.3):
    /// an `RDMA2_MSG` without `F_RESPONSE` carrying a CB_NULL and offering
    /// a Write chunk (one segment, never written). Its `RDMA2_ERROR`
    /// answer is counted when it arrives (`bad_reverse_call_answered`,
    /// `bad_reverse_call_wrong`). `None` otherwise.
    pub fn bad_reverse_call(&mut self) -> Option<Vec<u8>> {
        if !self.opts.bad_reverse_call
            || !self.opts.relay_callbacks
            || self.bad_call_sent
            || self.version != Some(Protocol::V2)
            || self.refuses_reverse_calls()
        {
            return None;
        }
        let seg = [Segment {
            handle: 0x0bad_0001,
            length: 4096,
            offset: 0,
        }];
        let writes: [&[Segment]; 1] = [&seg];
        let spec = MsgSpec {
            xid: BAD_CALL_XID,
            credit: self.credit_word(false),
            kind: MsgKind::Msg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists {
                reads: &[],
                writes: &writes,
                reply: None,
            },
        };
        let mut buf = vec![0u8; spec.encoded_len(Protocol::V2)?];
        let n = header::encode_msg(&mut buf, Protocol::V2, &spec).ok()?;
        buf.truncate(n);
        buf.extend_from_slice(&crate::nfs::null_call(BAD_CALL_XID, 0x4000_0000, 1));
        self.bad_call_sent = true;
        self.bad_call_pending = Some(BAD_CALL_XID);
        Some(buf)
    }

    /// Counts the client's `RDMA2_ERROR` answer to the
    /// `--bad-reverse-call` Call: `Some(true)` with the code expected
    /// ([`BAD_CALL_ANSWER`]), `Some(false)` with another; `None` if `h`
    /// is not that answer.
    pub(super) fn bad_call_answer(&mut self, h: &header::Header<'_>) -> Option<bool> {
        let Body::Error(e) = h.body else { return None };
        if h.protocol != Protocol::V2 || self.bad_call_pending != Some(h.xid) {
            return None;
        }
        self.bad_call_pending = None;
        Some(
            h.flags.is_response()
                && e.code() == BAD_CALL_ANSWER
                && matches!(e, ErrorBody::ReplyResource { .. }),
        )
    }

    /// `--unknown-htype-call`: once per version 2 connection whose client
    /// takes reverse-direction Calls, for its admitted Call `xid` (not the
    /// first of the connection), a message to send ahead of that Call's
    /// reply: `xid`, version 2, header type [`UNKNOWN_HTYPE`], no flags (so
    /// no `F_RESPONSE`: the XID is ours, -00 §6.3.2), one zero word. The
    /// client cannot decode it and must answer it as its responder
    /// (`RDMA2_ERR_INVAL_HTYPE`, -00 §6.4.3), without taking it for the
    /// reply to its own Call `xid`. `None` otherwise.
    pub(super) fn unknown_htype_call(&mut self, xid: u32) -> Option<Vec<u8>> {
        if !self.opts.unknown_htype_call
            || !self.opts.relay_callbacks
            || self.unknown_htype_sent
            || self.calls < 2
            || self.version != Some(Protocol::V2)
            || self.refuses_reverse_calls()
        {
            return None;
        }
        self.unknown_htype_sent = true;
        self.unknown_htype_pending = Some(xid);
        let credit = self.credit_word(false);
        Some(
            [xid, v2::VERSION, credit, UNKNOWN_HTYPE, 0, 0]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect(),
        )
    }

    /// Counts the client's `RDMA2_ERROR` answer to the
    /// `--unknown-htype-call` message: `Some(true)` if it is
    /// `RDMA2_ERR_INVAL_HTYPE` with `F_RESPONSE`, `Some(false)` if another;
    /// `None` if `h` is not that answer.
    pub(super) fn unknown_htype_answer(&mut self, h: &header::Header<'_>) -> Option<bool> {
        let Body::Error(e) = h.body else { return None };
        if h.protocol != Protocol::V2 || self.unknown_htype_pending != Some(h.xid) {
            return None;
        }
        self.unknown_htype_pending = None;
        Some(h.flags.is_response() && matches!(e, ErrorBody::InvalHtype))
    }

    /// `--continued-reverse-call`: once per version 2 connection whose
    /// client takes reverse-direction Calls, a CB_NULL Call of callback
    /// program `prog` (XID [`CONT_CALL_XID`]) continued over two
    /// `RDMA2_MSG` pieces without
    /// `F_RESPONSE`, `F_MORE` on the first (-00 §4.5.2; the client's
    /// Reverse Request Support `INLINE` covers continued messages). Its
    /// answer is counted when it arrives (`continued_reverse_call_answered`,
    /// `continued_reverse_call_wrong`). `None` otherwise.
    pub fn continued_reverse_call(&mut self, prog: u32) -> Option<Vec<Vec<u8>>> {
        if !self.opts.continued_reverse_call
            || !self.opts.relay_callbacks
            || self.cont_call_sent
            || self.version != Some(Protocol::V2)
            || self.refuses_reverse_calls()
        {
            return None;
        }
        let rpc = crate::nfs::null_call(CONT_CALL_XID, prog, 1);
        let (first, second) = rpc.split_at(12);
        let mut out = Vec::new();
        for (payload, more) in [(first, true), (second, false)] {
            let spec = MsgSpec {
                xid: CONT_CALL_XID,
                credit: self.credit_word(false),
                kind: MsgKind::Msg,
                flags: if more { Flags::MORE } else { Flags::NONE },
                inv_handle: 0,
                chunks: ChunkLists::EMPTY,
            };
            let mut buf = vec![0u8; spec.encoded_len(Protocol::V2)?];
            let n = header::encode_msg(&mut buf, Protocol::V2, &spec).ok()?;
            buf.truncate(n);
            buf.extend_from_slice(payload);
            out.push(buf);
        }
        self.cont_call_sent = true;
        self.cont_call_pending = Some(CONT_CALL_XID);
        Some(out)
    }

    /// Counts the client's answer to the `--continued-reverse-call` Call:
    /// `Some(true)` for an RPC Reply with `F_RESPONSE` that is an accepted
    /// success, `Some(false)` for another answer with its XID (an
    /// `RDMA2_ERROR`, a failed reply); `None` if `h` is not an answer to
    /// it (a message of the client's without `F_RESPONSE` that is not an
    /// error is one of its own Calls).
    pub(super) fn continued_reverse_call_answer(&mut self, h: &header::Header<'_>) -> Option<bool> {
        // A Call of the client's may have the same XID (F_RESPONSE clear,
        // not an error): it is not an answer.
        let answer = h.flags.is_response() || matches!(h.body, Body::Error(_));
        if h.protocol != Protocol::V2 || self.cont_call_pending != Some(h.xid) || !answer {
            return None;
        }
        self.cont_call_pending = None;
        let ok = match &h.body {
            Body::Msg(m) => {
                h.flags.is_response()
                    && !h.flags.has_more()
                    && m.chunks.is_empty()
                    && crate::nfs::word_at(m.payload, 4) == Some(crate::nfs::RPC_REPLY)
                    && crate::nfs::reply_ok(m.payload, false)
            }
            _ => false,
        };
        Some(ok)
    }
}
