// SPDX-License-Identifier: GPL-2.0

//! The send-side decisions of [`Transport`]: how to send a Call
//! ([`Transport::prepare_call`]; with chunks, [`Transport::prepare_rpc`]),
//! a piece of a continued Call ([`Transport::prepare_piece`]), the reply
//! to a reverse-direction Call ([`Transport::prepare_bc_reply`]) and an
//! asynchronous credit grant ([`Transport::prepare_grant`]), and the
//! chunk-planning limits of the connection ([`Transport::limits`]).

use super::super::backchannel::{self, ReplyError, ReplyPlan};
use super::super::chunks::{self, ChunkPlan, Limits, PlanError, Rpc};
use super::super::continuation;
use super::super::errno::Errno;
use super::super::inline::{Direction, Thresholds, TooBig};
use super::super::negotiate::Phase;
use super::super::recovery::{self, Hints, Recovery};
use super::super::xdr::chunk::ChunkLists;
use super::super::xdr::header::{Flags, MsgKind, MsgSpec, Protocol};
use super::super::xdr::{v1, v2};
use super::Transport;

/// How to build and send one Call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallPlan {
    /// Header version.
    pub protocol: Protocol,
    /// The `rdma_credit` word.
    pub credit: u32,
    /// Length of the header [`msg_spec`](Self::msg_spec) encodes to.
    pub hdr_len: u32,
    /// This Call is the connection's v2 probe.
    pub probe: bool,
}

impl CallPlan {
    /// The header to encode with [`header::encode_msg`]: `RDMA_MSG` /
    /// `RDMA2_MSG` with three empty chunk lists, no flags (a Call), no
    /// invalidation handle. The RPC Call follows it in the same Send.
    ///
    /// [`header::encode_msg`]: super::super::xdr::header::encode_msg
    pub fn msg_spec(&self, xid: u32) -> MsgSpec<'static> {
        MsgSpec {
            xid,
            credit: self.credit,
            kind: MsgKind::Msg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        }
    }
}

/// Why a Call cannot be sent now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallError {
    /// No established connection: `-ENOTCONN` (SUNRPC reconnects).
    NotConnected,
    /// The v2 message budget is exhausted (also: the probe is still
    /// unanswered). Call `xprt_wait_for_buffer_space` and return
    /// `-EAGAIN`; a later [`Outcome::wake_senders`] reopens it.
    ///
    /// [`Outcome::wake_senders`]: super::receive::Outcome::wake_senders
    NoCredits,
    /// The RPC does not fit inline: `-EMSGSIZE` (see [`TooBig::errno`]).
    TooBig(TooBig),
    /// The RPC cannot be planned with chunks ([`Transport::prepare_rpc`]):
    /// see [`PlanError::errno`].
    Plan(PlanError),
    /// Its chunks need more MRs than are free
    /// ([`Transport::prepare_rpc_within`]): nothing was counted; wait
    /// for buffer space (`-EAGAIN`) as for credits, an RPC ending frees
    /// its MRs.
    NoMrs {
        /// MRs the plan needs.
        needed: usize,
    },
}

impl CallError {
    /// The errno `->send_request` returns.
    pub const fn errno(&self) -> Errno {
        match self {
            Self::NotConnected => Errno::ENOTCONN,
            Self::NoCredits => Errno::EAGAIN,
            Self::TooBig(t) => t.errno(),
            Self::Plan(e) => e.errno(),
            Self::NoMrs { .. } => Errno::EAGAIN,
        }
    }
}

/// The header of an asynchronous credit grant carrying `credit`
/// ([`Transport::prepare_grant`]): `RDMA2_NOMSG`, XID 0, no flags, three empty
/// chunk lists (36 bytes).
pub const fn grant_spec(credit: u32) -> MsgSpec<'static> {
    MsgSpec {
        xid: 0,
        credit,
        kind: MsgKind::NoMsg,
        flags: Flags::NONE,
        inv_handle: 0,
        chunks: ChunkLists::EMPTY,
    }
}

/// How to send one piece of a continued Call
/// ([`Transport::prepare_piece`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PiecePlan {
    /// The `rdma_credit` word.
    pub credit: u32,
    /// Bytes `span.offset..span.offset + span.len` of the RPC Call follow
    /// the header; `span.more` sets `F_MORE`.
    pub span: continuation::Span,
    /// This piece is the connection's v2 probe (the first piece of the
    /// first Call).
    pub probe: bool,
}

impl PiecePlan {
    /// The header to encode with [`header::encode_msg`] (version 2):
    /// `RDMA2_MSG`, empty chunk lists, `F_MORE` unless last.
    ///
    /// [`header::encode_msg`]: super::super::xdr::header::encode_msg
    pub const fn msg_spec(&self, xid: u32) -> MsgSpec<'static> {
        MsgSpec {
            xid,
            credit: self.credit,
            kind: MsgKind::Msg,
            flags: if self.span.more {
                Flags::MORE
            } else {
                Flags::NONE
            },
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        }
    }
}

impl Transport {
    /// The chunk-planning limits of this connection: our configuration
    /// and the device's FRWR depth (`max_mr_pages`), lowered to what the
    /// peer's Maximum RDMA Segment Count and Size allow (-00 §5.2.3,
    /// §5.2.4). A segment size below `page_size` turns chunks off (every
    /// page-list segment is at least part of a page); see also
    /// [`Self::check_peer_limits`].
    ///
    /// On a connection settled on version 2 with chunks, a Reply may come
    /// by Message Continuation instead of through a Reply chunk
    /// ([`Limits::cont_reply`]): every version 2 responder may continue a
    /// Reply that neither a Send nor the chunks offered can hold (-00
    /// §4.5.2, §6.3.3.1; -00 has no property to announce or refuse it).
    /// The bound is [`Config::cont_reply_pieces`] pieces of the largest
    /// payload one of our Receives holds after a 36-byte header
    /// ([`continuation::piece_room`] of the reply threshold): 128 pieces
    /// of 4060 bytes by default, within the credits we ask for, so the
    /// responder need not wait for a grant when nothing else is
    /// outstanding. A responder that cannot continue answers with
    /// `RDMA2_ERR_REPLY_RESOURCE`, and the RPC is sent again with a Reply
    /// chunk ([`recovery::decide`]).
    ///
    /// [`Config::cont_reply_pieces`]: super::super::config::Config::cont_reply_pieces
    pub fn limits(&self, page_size: u32, max_mr_pages: u32) -> Limits {
        let mut l = Limits::new(&self.config, page_size, max_mr_pages);
        if self.neg.phase() == Phase::Settled(Protocol::V2) && l.max_segs > 0 {
            let room = continuation::piece_room(self.thresholds.recv);
            l.cont_reply = room
                .saturating_mul(self.config.cont_reply_pieces)
                .min(continuation::MAX_SEQUENCE_LEN);
        }
        if let Some(p) = self.props {
            l.max_segs = l.max_segs.min(p.max_segment_count);
            let pages = p.max_segment_size.checked_div(page_size).unwrap_or(0);
            if pages == 0 {
                l.max_segs = 0;
            }
            l.max_mr_pages = l.max_mr_pages.max(1).min(pages.max(1));
        }
        l
    }

    /// Checks a plan made with [`Self::limits`] against the peer's segment
    /// properties: at most Maximum RDMA Segment Count segments in the
    /// whole header (Read, Write and Reply chunks together), none larger
    /// than Maximum RDMA Segment Size (page-list segments are by
    /// construction; a head or tail larger than that is not).
    pub fn check_peer_limits(&self, plan: &ChunkPlan) -> Result<(), PlanError> {
        let Some(p) = self.props else {
            return Ok(());
        };
        let ranges = plan.ranges();
        let n = u32::try_from(ranges.len()).unwrap_or(u32::MAX);
        if n > p.max_segment_count {
            return Err(PlanError::TooManySegments {
                direction: super::super::inline::Direction::Call,
                needed: n,
                limit: p.max_segment_count,
            });
        }
        if let Some(r) = ranges.iter().find(|r| r.len > p.max_segment_size) {
            // Segments of the allowed size it would take (at least 2).
            let size = p.max_segment_size.max(1);
            let whole = r.len.checked_div(size).unwrap_or(r.len);
            let part = u32::from(r.len.checked_rem(size).unwrap_or(0) != 0);
            return Err(PlanError::TooManySegments {
                direction: super::super::inline::Direction::Call,
                needed: whole.saturating_add(part),
                limit: 1,
            });
        }
        Ok(())
    }

    /// The largest RPC payload (`xprt->max_payload`) the peer's segment
    /// properties leave room for, if they are below what the transport
    /// plans for ([`chunks::MAX_PAYLOAD`]): a chunk of [`Self::limits`]'
    /// segments, less two (a misaligned start and a head or tail).
    /// `None` when the peer sent no properties or they do not constrain.
    pub fn max_payload(&self, page_size: u32, max_mr_pages: u32) -> Option<u32> {
        self.props?;
        let l = self.limits(page_size, max_mr_pages);
        if l.max_segs == 0 {
            return None;
        }
        let per_seg = l.max_mr_pages.max(1).saturating_mul(page_size);
        let n = l.max_segs.saturating_sub(2).max(1);
        let bytes = per_seg.saturating_mul(n);
        (bytes < chunks::MAX_PAYLOAD).then_some(bytes)
    }

    /// The version a Call may be sent in now: the connection is
    /// established, the version known and a credit free.
    fn sendable(&self) -> Result<Protocol, CallError> {
        let Some(protocol) = self.neg.protocol() else {
            return Err(CallError::NotConnected);
        };
        if !self.established {
            return Err(CallError::NotConnected);
        }
        if !self.credits.may_send() {
            return Err(CallError::NoCredits);
        }
        Ok(protocol)
    }

    /// Decides how to send Call `xid`: `call_len` is the RPC Call
    /// (`rq_snd_buf.len`), `reply_buflen` the largest expected Reply
    /// (`rq_rcv_buf.buflen`). On success the Call is counted as sent:
    /// encode [`CallPlan::msg_spec`] and post it (a failed post closes the
    /// connection, which resets the count).
    pub fn prepare_call(
        &mut self,
        xid: u32,
        call_len: u32,
        reply_buflen: u32,
    ) -> Result<CallPlan, CallError> {
        let mut protocol = self.sendable()?;
        // Without chunks (max_segs == 0) a Reply buffer larger than the
        // reply threshold is not refused here: most replies are far
        // smaller than their buffer (READLINK, READDIR, GETACL), and one
        // that really does not fit comes back as ERR_CHUNK, which fails
        // just that RPC. With chunks, this check picks the Reply chunk.
        let reply_buflen = if self.config.max_segs == 0 {
            0
        } else {
            reply_buflen
        };
        if let Err(too_big) = self.thresholds.fit(call_len, reply_buflen) {
            let v1 = Thresholds::new(&self.config, &self.peer, Protocol::V1, false);
            if self.neg.phase() == (Phase::Probing { probe: None })
                && v1.fit(call_len, reply_buflen).is_ok()
                && self.neg.settle_v1_for_size()
            {
                self.stats.probe_too_big = self.stats.probe_too_big.wrapping_add(1);
                self.credits.set_protocol(Protocol::V1);
                self.refresh_thresholds();
                protocol = Protocol::V1;
            } else {
                return Err(CallError::TooBig(too_big));
            }
        }
        let probe = self.neg.on_send(xid);
        if probe {
            self.stats.probes = self.stats.probes.wrapping_add(1);
        }
        self.unanswered = self.unanswered.saturating_add(1);
        let hdr_len = match protocol {
            Protocol::V1 => v1::MIN_MSG_HDR_LEN,
            Protocol::V2 => v2::MIN_MSG_HDR_LEN,
        };
        let credit = self.credits.on_send();
        self.credits.on_call_sent();
        Ok(CallPlan {
            protocol,
            credit,
            hdr_len: u32::try_from(hdr_len).unwrap_or(u32::MAX),
            probe,
        })
    }

    /// Decides how to send the piece of continued Call `xid` (of
    /// `call_len` bytes, `rq_snd_buf.len`) that starts at `offset`: 0 for
    /// the first piece, then the end of the previous piece
    /// ([`PiecePlan::span`]). For a Call that does not fit inline on a
    /// version 2 connection without chunks (`Config::max_segs` == 0):
    /// Message Continuation (-00 §4.5.2). On success the piece is counted
    /// as sent (one message of the credit budget): encode
    /// [`PiecePlan::msg_spec`], append the span of the Call, post it.
    ///
    /// `NoCredits` when the budget is exhausted, also in the middle of the
    /// Call (-00 §6.3.2: "the sender MUST wait for a further credit
    /// grant"): keep the offset and call again when
    /// [`Outcome::wake_senders`] says credits returned; send nothing else
    /// on the connection in between (the pieces of a sequence are
    /// consecutive messages). `TooBig` on a version 1 connection or with
    /// chunks (no continuation there) and for an empty Call. The first
    /// piece of the first Call of a connection is the v2 probe (at most
    /// 1024 bytes, since the thresholds are the probe's); the next piece
    /// waits until the probe is answered.
    ///
    /// [`Outcome::wake_senders`]: super::receive::Outcome::wake_senders
    pub fn prepare_piece(
        &mut self,
        xid: u32,
        call_len: u32,
        offset: u32,
    ) -> Result<PiecePlan, CallError> {
        let protocol = self.sendable()?;
        let room = continuation::piece_room(self.thresholds.send);
        let span = match continuation::split(call_len, offset, room) {
            Some(span) if protocol == Protocol::V2 && self.config.max_segs == 0 => span,
            _ => {
                return Err(CallError::TooBig(TooBig {
                    direction: Direction::Call,
                    len: call_len,
                    limit: self.thresholds.max_inline_call(),
                }))
            }
        };
        let probe = offset == 0 && self.neg.on_send(xid);
        let s = &mut self.stats;
        if probe {
            s.probes = s.probes.wrapping_add(1);
        }
        if offset == 0 {
            s.continued_calls = s.continued_calls.wrapping_add(1);
            self.unanswered = self.unanswered.saturating_add(1);
        }
        s.call_pieces = s.call_pieces.wrapping_add(1);
        let credit = self.credits.on_send();
        if !span.more {
            self.credits.on_call_sent();
        }
        Ok(PiecePlan {
            credit,
            span,
            probe,
        })
    }

    /// Decides how to send the reply to a reverse-direction Call, or the
    /// piece of it that starts at `offset`: `reply_len` is the RPC Reply
    /// (`rq_snd_buf.len`), `offset` 0 for the first message, then the end
    /// of the previous piece ([`ReplyPlan::span`]). A Reply that does not
    /// fit inline is continued on a version 2 connection (-00 §6.5: the
    /// responder "SHOULD use Message Continuation" when neither inline
    /// nor the offered chunks convey it, and a reverse-direction Call
    /// offers none; [`backchannel::reply_pieces`]); version 1 cannot
    /// (`TooBig`). On success the message is counted as sent (in v2 each
    /// piece uses one message of the budget): encode
    /// [`ReplyPlan::msg_spec`], append the span of the Reply, post it.
    /// `NoCredits` also in the middle of a continued Reply: keep the
    /// offset and call again when credits return, sending nothing else
    /// on the connection in between. See [`backchannel`].
    pub fn prepare_bc_reply(
        &mut self,
        reply_len: u32,
        offset: u32,
    ) -> Result<ReplyPlan, ReplyError> {
        let protocol = match self.sendable() {
            Ok(p) => p,
            Err(CallError::NoCredits) => return Err(ReplyError::NoCredits),
            Err(_) => return Err(ReplyError::NotConnected),
        };
        let inline = backchannel::fit_reply(&self.thresholds, protocol, reply_len);
        let span = match (inline, protocol) {
            (Ok(()), _) if offset == 0 => continuation::Span {
                offset: 0,
                len: reply_len,
                more: false,
            },
            (Err(t), Protocol::V1) => return Err(ReplyError::TooBig(t)),
            (r, _) => {
                let room = continuation::piece_room(self.thresholds.send);
                match continuation::split(reply_len, offset, room) {
                    Some(span) if protocol == Protocol::V2 => span,
                    _ => {
                        return Err(ReplyError::TooBig(r.err().unwrap_or(TooBig {
                            direction: Direction::Call,
                            len: reply_len,
                            limit: room,
                        })))
                    }
                }
            }
        };
        let credit = match protocol {
            // Our backchannel window (C: rb_bc_srv_max_requests).
            Protocol::V1 => {
                self.credits.on_send();
                self.config.bc_requests.max(1)
            }
            Protocol::V2 => self.credits.on_send(),
        };
        if !span.more {
            self.stats.bc_replies = self.stats.bc_replies.wrapping_add(1);
        }
        Ok(ReplyPlan {
            protocol,
            credit,
            hdr_len: backchannel::header_len(protocol),
            span,
        })
    }

    /// Decides how to send RPC `xid` described by `rpc`, with chunks when
    /// `Config::max_segs` > 0 (see [`chunks::plan`]); `page_size` and
    /// `max_mr_pages` are the host's and the device's (FRWR depth). On
    /// success the Call is counted as sent, as with
    /// [`Self::prepare_call`]; the [`ChunkPlan`] says what to register and
    /// what follows the header ([`ChunkPlan::kind`],
    /// [`ChunkPlan::send_layout`]). The v2 probe is always sent inline: an
    /// RPC that needs chunks while the probe is pending opens the
    /// connection in version 1 if it may, as one too big for the probe
    /// does.
    pub fn prepare_rpc(
        &mut self,
        xid: u32,
        rpc: &Rpc,
        page_size: u32,
        max_mr_pages: u32,
    ) -> Result<(CallPlan, ChunkPlan), CallError> {
        self.prepare_rpc_hinted(xid, rpc, page_size, max_mr_pages, &Hints::NONE)
    }

    /// [`Self::prepare_rpc`] of an RPC resent after a transport error,
    /// planned with `hints` ([`recovery::State::hints`]) and the
    /// connection's segment limit ([`Self::plan_hints`]).
    pub fn prepare_rpc_hinted(
        &mut self,
        xid: u32,
        rpc: &Rpc,
        page_size: u32,
        max_mr_pages: u32,
        hints: &Hints,
    ) -> Result<(CallPlan, ChunkPlan), CallError> {
        self.prepare_rpc_within(xid, rpc, page_size, max_mr_pages, hints, usize::MAX)
    }

    /// [`Self::prepare_rpc_hinted`] when only `mrs_free` MRs are free:
    /// an RPC whose chunks need more fails with [`CallError::NoMrs`]
    /// before anything is counted. The one plan serves both the check
    /// and the Call (each RPC is planned once).
    pub fn prepare_rpc_within(
        &mut self,
        xid: u32,
        rpc: &Rpc,
        page_size: u32,
        max_mr_pages: u32,
        hints: &Hints,
        mrs_free: usize,
    ) -> Result<(CallPlan, ChunkPlan), CallError> {
        let mut protocol = self.sendable()?;
        let limits = self.limits(page_size, max_mr_pages);
        let hints = self.plan_hints(hints);
        let mut plan =
            chunks::plan_with(rpc, &self.thresholds, &limits, &hints).map_err(CallError::Plan)?;
        self.check_peer_limits(&plan).map_err(CallError::Plan)?;
        if self.neg.phase() == (Phase::Probing { probe: None }) && !plan.is_inline() {
            if !self.neg.settle_v1_for_size() {
                return Err(CallError::NoCredits);
            }
            self.stats.probe_too_big = self.stats.probe_too_big.wrapping_add(1);
            self.credits.set_protocol(Protocol::V1);
            self.refresh_thresholds();
            protocol = Protocol::V1;
            plan = chunks::plan_with(rpc, &self.thresholds, &limits, &hints)
                .map_err(CallError::Plan)?;
        }
        let needed = plan.ranges().len();
        if needed > mrs_free {
            return Err(CallError::NoMrs { needed });
        }
        let probe = self.neg.on_send(xid);
        if probe {
            self.stats.probes = self.stats.probes.wrapping_add(1);
        }
        self.unanswered = self.unanswered.saturating_add(1);
        let credit = self.credits.on_send();
        self.credits.on_call_sent();
        Ok((
            CallPlan {
                protocol,
                credit,
                hdr_len: plan.header_len(),
                probe,
            },
            plan,
        ))
    }

    /// `hints` with the connection's segment limit applied: what chunk
    /// planning uses ([`chunks::plan_with`]).
    pub const fn plan_hints(&self, hints: &Hints) -> Hints {
        hints.capped(self.seg_cap)
    }

    /// Records what the transport did about a transport error
    /// ([`recovery::decide`]): counts it; after a resend for
    /// `RDMA2_ERR_SEGMENTS`, later RPCs on this connection are planned with
    /// the responder's segment limit too (a new connection forgets it).
    pub fn recovered(&mut self, r: &Recovery) {
        self.stats.recovery.count(r);
        if let Recovery::Resend {
            kind: recovery::Kind::Segments,
            state,
        } = *r
        {
            self.seg_cap = state.hints().capped(self.seg_cap).max_segs;
        }
    }

    /// An asynchronous credit grant is due (-00 §4.3.1, §6.4.2) when the
    /// responder has used at least half of the credits we advertise since
    /// our last message and still has something to send us (a Call of
    /// ours is unanswered, or a continued reply is in progress): without
    /// it the responder would stall once it has used them all if we have
    /// nothing to send (in the middle of a long continued reply, or with
    /// more reply pieces than Calls). It returns the Receives consumed, as
    /// any of our messages does. It may use the one message beyond the
    /// responder's limit that -00 keeps for credit grants ("receivers MUST
    /// always be in a position to receive one such credit grant update
    /// message, in addition to payload-bearing messages"), but no more.
    /// Never to an idle responder: it returns a grant's credit only with
    /// its next message, and our Calls might wait for that credit.
    pub(super) fn grant_due(&self) -> bool {
        let c = &self.credits;
        let half = u32::from(c.recv_credits()).div_ceil(2).max(1);
        self.neg.phase() == Phase::Settled(Protocol::V2)
            && self.established
            && c.consumed() >= half
            && (self.unanswered > 0 || self.cont.receiving().is_some())
            && c.may_send_grant()
    }

    /// If an asynchronous credit grant is (still) due
    /// ([`Outcome::grant_due`]), counts it as sent and returns its credit
    /// word: post `RDMA2_NOMSG` with [`grant_spec`] of it.
    ///
    /// [`Outcome::grant_due`]: super::receive::Outcome::grant_due
    pub fn prepare_grant(&mut self) -> Option<u32> {
        if !self.grant_due() {
            return None;
        }
        self.stats.grants_sent = self.stats.grants_sent.wrapping_add(1);
        let word = self.credits.on_send();
        self.credits.on_grant_sent();
        Some(word)
    }
}
