// SPDX-License-Identifier: GPL-2.0

//! [`Transport`]: the protocol state of one transport (`rpc_xprt`) and of
//! its current connection, driven by the events the transport glue sees.
//!
//! Every method is O(1), never sleeps, never allocates and cannot panic;
//! the glue serialises calls with one spinlock. The order of calls:
//!
//! | event (glue)                                  | call                                   |
//! |-----------------------------------------------|----------------------------------------|
//! | `->setup`: create the transport               | [`Transport::new`]                     |
//! | connect worker, before `rdma_connect`         | [`Transport::connect`]                 |
//! | `RDMA_CM_EVENT_ESTABLISHED`                   | [`Transport::established`]             |
//! | then, to probe with our `RDMA2_CONNPROP`      | [`Transport::connprop_probe`]          |
//! | no answer to it in time                       | [`Transport::probe_timed_out`]         |
//! | `->send_request`, after the cwnd and the      | [`Transport::prepare_call`]            |
//! | same-connection-retransmit checks             |                                        |
//! | a Receive completes successfully              | [`Transport::receive`]                 |
//! | `->send_request` of a backchannel reply       | [`Transport::prepare_bc_reply`]        |
//! | a Receive completes with an error (flush)     | [`Transport::receive_flushed`]         |
//! | fewer Receives posted than asked for          | [`Transport::receives_unposted`]       |
//! | disconnect / `->close`                        | [`Transport::disconnected`]            |

use super::backchannel::{self, ReplyError, ReplyPlan};
use super::chunks::{self, ChunkPlan, Limits, PlanError, Rpc};
use super::config::Config;
use super::connprop::{self, Assembly};
use super::continuation::{self, Piece, Reassembly, Step};
use super::credits::{CreditState, CreditUpdate, Grant};
use super::errno::Errno;
use super::inline::{Direction, Thresholds, TooBig};
use super::negotiate::{Negotiation, Phase, ProbeLoss, ServerMemory, Verdict};
use super::recovery::{self, Hints, Recovery};
use super::reply::{classify, Cause, Control, Reply};
use super::xdr::chunk::ChunkLists;
use super::xdr::header::{self, Body, Flags, Header, MsgKind, MsgSpec, Protocol};
use super::xdr::props::{TransportProperties, RVREQSUP_NONE};
use super::xdr::pvtdata::Peer;
use super::xdr::{v1, v2};

/// Counters for `/proc/self/mountstats` and debugging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stats {
    /// Messages the responder got wrong (C: `bad_reply_count`).
    pub bad_reply: u64,
    /// v2 credit words with a zero limit (high half), ignored.
    pub bad_credit: u64,
    /// `RDMA_ERROR` replies other than `ERR_VERS`.
    pub rdma_error: u64,
    /// `ERR_VERS` replies.
    pub err_vers: u64,
    /// v2 probes sent.
    pub probes: u64,
    /// Connections switched to v1 by `ERR_VERS`.
    pub v1_fallbacks: u64,
    /// Connections opened in v1 because the first Call did not fit the
    /// 1024-byte probe.
    pub probe_too_big: u64,
    /// Probes lost with their connection.
    pub lost_probes: u64,
    /// v2 asynchronous credit grants.
    pub credit_grants: u64,
    /// `RDMA2_CONNPROP` messages received (whole or pieces).
    pub connprop: u64,
    /// Our `RDMA2_CONNPROP` probes sent ([`Transport::connprop_probe`]).
    pub connprop_sent: u64,
    /// Peer property sets applied (whole or reassembled).
    pub connprop_applied: u64,
    /// Peer property sets dropped: malformed, too long, or abandoned
    /// pieces of a continued set.
    pub connprop_bad: u64,
    /// CONNPROP probes that went unanswered ([`Transport::probe_timed_out`]).
    pub probe_timeouts: u64,
    /// Reverse-direction Calls dropped because the peer's Reverse Request
    /// Support property said it sends none (`RVREQSUP_NONE`).
    pub reverse_refused: u64,
    /// Reverse-direction (backchannel) Calls received.
    pub reverse_calls: u64,
    /// Reverse-direction replies sent ([`Transport::prepare_bc_reply`]).
    pub bc_replies: u64,
    /// Replies using what we do not support: chunks on a connection that
    /// offers none, a continued reply whose last piece has chunks, pieces
    /// of a continued reverse-direction Call, and the rest of such
    /// sequences.
    pub unsupported: u64,
    /// Connections closed for a protocol error.
    pub disconnects: u64,
    /// Replies using chunks handed to the transport for checking
    /// ([`Reply::Chunked`]).
    pub chunked_replies: u64,
    /// RPCs resent or failed after a transport error
    /// ([`Transport::recovered`]).
    pub recovery: recovery::Counters,
    /// Continued replies reassembled (their last piece arrived).
    pub continued_replies: u64,
    /// Pieces of continued replies received (every piece, last included).
    pub reply_pieces: u64,
    /// Continued Calls sent (counted when their first piece is sent).
    pub continued_calls: u64,
    /// Pieces of continued Calls sent.
    pub call_pieces: u64,
    /// Asynchronous credit grants sent ([`Transport::prepare_grant`]).
    pub grants_sent: u64,
}

/// What to do before `rdma_connect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectPlan {
    /// The version of the first message.
    pub protocol: Protocol,
    /// Reset the credit window to this (one credit) and `xprt->cong` to 0.
    pub credits: CreditUpdate,
    /// Post this many Receives (of [`Config::recv_buffer_size`] bytes)
    /// before connecting.
    pub post_receives: u32,
}

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
    NoCredits,
    /// The RPC does not fit inline: `-EMSGSIZE` (see [`TooBig::errno`]).
    TooBig(TooBig),
    /// The RPC cannot be planned with chunks ([`Transport::prepare_rpc`]):
    /// see [`PlanError::errno`].
    Plan(PlanError),
}

impl CallError {
    /// The errno `->send_request` returns.
    pub const fn errno(&self) -> Errno {
        match self {
            Self::NotConnected => Errno::ENOTCONN,
            Self::NoCredits => Errno::EAGAIN,
            Self::TooBig(t) => t.errno(),
            Self::Plan(e) => e.errno(),
        }
    }
}

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

/// The protocol state of one transport and its current connection. Not
/// `Copy`: there is one per `rpc_xprt`, updated in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transport {
    config: Config,
    memory: ServerMemory,
    neg: Negotiation,
    credits: CreditState,
    peer: Peer,
    props: Option<TransportProperties>,
    thresholds: Thresholds,
    established: bool,
    /// Segments per chunk the responder takes, learned from
    /// `RDMA2_ERR_SEGMENTS` on this connection (see [`Self::recovered`]).
    seg_cap: Option<u32>,
    /// Continued replies in progress.
    cont: Reassembly,
    /// Calls sent on this connection and not answered yet (a message that
    /// answers a Call: credit rule 3).
    unanswered: u32,
    /// A continued `RDMA2_CONNPROP` being reassembled.
    props_asm: Assembly,
    stats: Stats,
}

impl Transport {
    /// A transport with `config` (clamped, see [`Config::validated`]),
    /// not connected.
    pub fn new(config: Config) -> Self {
        let config = config.validated();
        Self {
            config,
            memory: ServerMemory::new(),
            neg: Negotiation::new(),
            credits: CreditState::new(&config, Protocol::V1),
            peer: Peer::Absent,
            props: None,
            thresholds: Thresholds::new(&config, &Peer::Absent, Protocol::V1, false),
            established: false,
            seg_cap: None,
            cont: Reassembly::new(),
            unanswered: 0,
            props_asm: Assembly::new(),
            stats: Stats::default(),
        }
    }

    /// The settings.
    #[inline]
    pub const fn config(&self) -> &Config {
        &self.config
    }

    /// What is known about the server.
    #[inline]
    pub const fn memory(&self) -> &ServerMemory {
        &self.memory
    }

    /// Counters.
    #[inline]
    pub const fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The negotiation phase of the current connection.
    #[inline]
    pub const fn phase(&self) -> Phase {
        self.neg.phase()
    }

    /// The version Calls are sent in (`None` when down).
    #[inline]
    pub const fn protocol(&self) -> Option<Protocol> {
        self.neg.protocol()
    }

    /// The current inline limits.
    #[inline]
    pub const fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    /// The credit state of the current connection.
    #[inline]
    pub const fn credits(&self) -> &CreditState {
        &self.credits
    }

    /// Starts a new connection (call before `rdma_connect`; also ends the
    /// previous one if [`disconnected`](Self::disconnected) was not
    /// called).
    pub fn connect(&mut self) -> ConnectPlan {
        if self.neg.phase() != Phase::Down {
            self.disconnected();
        }
        let protocol = self.neg.connect(&self.memory, self.config.policy);
        self.credits = CreditState::new(&self.config, protocol);
        self.peer = Peer::Absent;
        self.props = None;
        self.established = false;
        self.seg_cap = None;
        self.cont = Reassembly::new();
        self.unanswered = 0;
        self.props_asm.reset();
        self.refresh_thresholds();
        ConnectPlan {
            protocol,
            credits: self.credits.current(),
            post_receives: self.credits.replenish(),
        }
    }

    /// The connection is up; `peer` is the server's private data
    /// ([`super::xdr::pvtdata::decode`] of the CM event's
    /// `private_data`). Returns the inline limits now in force.
    pub fn established(&mut self, peer: Peer) -> Thresholds {
        if self.neg.phase() != Phase::Down {
            self.peer = peer;
            self.established = true;
            self.refresh_thresholds();
        }
        self.thresholds
    }

    /// The connection is gone (any reason). Returns what happened to an
    /// outstanding probe.
    pub fn disconnected(&mut self) -> ProbeLoss {
        let loss = self.neg.on_disconnect(&mut self.memory);
        if loss != ProbeLoss::None {
            self.stats.lost_probes = self.stats.lost_probes.wrapping_add(1);
        }
        self.established = false;
        self.cont = Reassembly::new();
        loss
    }

    fn refresh_thresholds(&mut self) {
        let (protocol, probing) = match self.neg.phase() {
            Phase::Probing { .. } => (Protocol::V2, true),
            Phase::Settled(p) => (p, false),
            Phase::Down => (self.credits.protocol(), false),
        };
        self.thresholds = Thresholds::new(&self.config, &self.peer, protocol, probing);
        if let Some(p) = self.props {
            // Private data, when valid, also binds (the smaller wins);
            // without it the properties alone set the thresholds.
            let base = match self.peer {
                Peer::Valid(_) => None,
                Peer::Absent | Peer::Invalid(_) => Some(&self.config),
            };
            self.thresholds.apply_props_over(&p, base);
        }
    }

    /// The peer's transport properties on this connection (`None` until
    /// an `RDMA2_CONNPROP` arrives; -00 defaults apply then).
    #[inline]
    pub const fn peer_props(&self) -> Option<&TransportProperties> {
        self.props.as_ref()
    }

    /// Sends our `RDMA2_CONNPROP` as the connection's version probe, if
    /// this connection probes for version 2, nothing has been sent yet,
    /// and the server is not known to leave CONNPROP unanswered (see
    /// [`super::connprop`]). On `Some`, the message is counted as sent
    /// (it takes the one credit of the probe): encode [`connprop::Plan`]
    /// and post it, then wait (at most [`connprop::PROBE_TIMEOUT_MS`]) for
    /// the phase to leave [`Phase::Probing`]; Calls meanwhile get
    /// [`CallError::NoCredits`].
    pub fn connprop_probe(&mut self) -> Option<connprop::Plan> {
        if self.neg.phase() != (Phase::Probing { probe: None })
            || !self.established
            || !self.memory.connprop_probe()
            || !self.credits.may_send()
        {
            return None;
        }
        if !self.neg.on_send(connprop::PROBE_XID) {
            return None;
        }
        self.stats.probes = self.stats.probes.wrapping_add(1);
        self.stats.connprop_sent = self.stats.connprop_sent.wrapping_add(1);
        Some(connprop::Plan {
            xid: connprop::PROBE_XID,
            credit: self.credits.on_send(),
            props: connprop::our_properties(&self.config),
        })
    }

    /// Our CONNPROP probe went unanswered for
    /// [`connprop::PROBE_TIMEOUT_MS`]: -00 §4.3.3 allows nothing more on
    /// this connection, so the caller closes it and connects again; the
    /// server is remembered as one that does not answer CONNPROP, and the
    /// next connection probes with its first RPC. Returns false (nothing
    /// changed) if the probe was answered meanwhile.
    pub fn probe_timed_out(&mut self) -> bool {
        if !self
            .neg
            .abandon_probe(connprop::PROBE_XID, &mut self.memory)
        {
            return false;
        }
        self.stats.probe_timeouts = self.stats.probe_timeouts.wrapping_add(1);
        self.established = false;
        self.cont = Reassembly::new();
        self.props_asm.reset();
        true
    }

    /// The chunk-planning limits of this connection: our configuration
    /// and the device's FRWR depth (`max_mr_pages`), lowered to what the
    /// peer's Maximum RDMA Segment Count and Size allow (-00 §5.2.3,
    /// §5.2.4). A segment size below `page_size` turns chunks off (every
    /// page-list segment is at least part of a page); see also
    /// [`Self::check_peer_limits`].
    pub fn limits(&self, page_size: u32, max_mr_pages: u32) -> Limits {
        let mut l = Limits::new(&self.config, page_size, max_mr_pages);
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
                direction: super::inline::Direction::Call,
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
                direction: super::inline::Direction::Call,
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
        Ok(CallPlan {
            protocol,
            credit: self.credits.on_send(),
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
        Ok(PiecePlan {
            credit: self.credits.on_send(),
            span,
            probe,
        })
    }

    /// The transport could not place a piece of continued Reply `xid`
    /// ([`Reply::Piece`]): the rest of its sequence is dropped.
    pub fn abandon_continuation(&mut self, xid: u32) {
        self.cont.abandon(xid);
    }

    /// Decides how to send the reply to a reverse-direction Call:
    /// `reply_len` is the RPC Reply (`rq_snd_buf.len`). On success the
    /// reply is counted as sent (in v2 it uses one message of the budget):
    /// encode [`ReplyPlan::msg_spec`] and post it. See
    /// [`super::backchannel`].
    pub fn prepare_bc_reply(&mut self, reply_len: u32) -> Result<ReplyPlan, ReplyError> {
        let protocol = match self.sendable() {
            Ok(p) => p,
            Err(CallError::NoCredits) => return Err(ReplyError::NoCredits),
            Err(_) => return Err(ReplyError::NotConnected),
        };
        backchannel::fit_reply(&self.thresholds, protocol, reply_len)
            .map_err(ReplyError::TooBig)?;
        let credit = match protocol {
            // Our backchannel window (C: rb_bc_srv_max_requests).
            Protocol::V1 => {
                self.credits.on_send();
                self.config.bc_requests.max(1)
            }
            Protocol::V2 => self.credits.on_send(),
        };
        self.stats.bc_replies = self.stats.bc_replies.wrapping_add(1);
        Ok(ReplyPlan {
            protocol,
            credit,
            hdr_len: backchannel::header_len(protocol),
        })
    }

    /// Sets the segments per chunk (`Config::max_segs`, clamped as
    /// [`Config::validated`] does) once the device is known: 0 turns
    /// chunks off (inline only).
    pub fn set_max_segs(&mut self, max_segs: u32) {
        self.config.max_segs = max_segs;
        self.config = self.config.validated();
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
        let probe = self.neg.on_send(xid);
        if probe {
            self.stats.probes = self.stats.probes.wrapping_add(1);
        }
        self.unanswered = self.unanswered.saturating_add(1);
        Ok((
            CallPlan {
                protocol,
                credit: self.credits.on_send(),
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
    fn grant_due(&self) -> bool {
        let c = &self.credits;
        let half = u32::from(c.recv_credits()).div_ceil(2).max(1);
        self.neg.phase() == Phase::Settled(Protocol::V2)
            && self.established
            && c.consumed() >= half
            && (self.unanswered > 0 || self.cont.receiving().is_some())
            && c.outstanding() <= c.limit()
    }

    /// If an asynchronous credit grant is (still) due
    /// ([`Outcome::grant_due`]), counts it as sent and returns its credit
    /// word: post `RDMA2_NOMSG` with [`grant_spec`] of it.
    pub fn prepare_grant(&mut self) -> Option<u32> {
        if !self.grant_due() {
            return None;
        }
        self.stats.grants_sent = self.stats.grants_sent.wrapping_add(1);
        Some(self.credits.on_send())
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

    fn count(&mut self, r: &Reply<'_>) {
        let s = &mut self.stats;
        let bump = |c: &mut u64| *c = c.wrapping_add(1);
        match *r {
            Reply::Deliver { .. } => {}
            Reply::Chunked { .. } => bump(&mut s.chunked_replies),
            Reply::Resend { .. } | Reply::Control(Control::Fallback) => {
                bump(&mut s.err_vers);
                bump(&mut s.v1_fallbacks);
            }
            Reply::ReverseCall { .. } => bump(&mut s.reverse_calls),
            Reply::Piece { last, .. } => {
                bump(&mut s.reply_pieces);
                if last.is_some() {
                    bump(&mut s.continued_replies);
                }
            }
            Reply::Control(Control::CreditGrant) => bump(&mut s.credit_grants),
            Reply::Control(Control::Properties(_) | Control::PropertiesPart) => {
                bump(&mut s.connprop)
            }
            Reply::Fail { cause, .. } | Reply::Drop(cause) | Reply::Disconnect(cause) => {
                if cause.is_bad_reply() {
                    bump(&mut s.bad_reply);
                }
                match cause {
                    Cause::RdmaError { .. } => bump(&mut s.rdma_error),
                    Cause::ErrVers { .. } | Cause::StrayErrVers => bump(&mut s.err_vers),
                    Cause::Continuation(f) if !f.is_bad_reply() => bump(&mut s.unsupported),
                    Cause::Chunks(_) => bump(&mut s.unsupported),
                    _ => {}
                }
                if matches!(r, Reply::Disconnect(_)) {
                    bump(&mut s.disconnects);
                }
            }
        }
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
            Step::Last {
                xid,
                offset,
                payload,
                len,
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
            }),
        };
        Some((reply, grant))
    }

    /// Takes the peer's property set `p` (from one `RDMA2_CONNPROP` or
    /// reassembled): the thresholds follow it at once, chunk planning
    /// from the next Call ([`Self::limits`]).
    fn set_props(&mut self, p: TransportProperties) {
        self.stats.connprop_applied = self.stats.connprop_applied.wrapping_add(1);
        self.props = Some(p);
        self.refresh_thresholds();
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
        });
        let reply = match self.connprop_piece(xid, body, false) {
            Some(props) => {
                self.set_props(props);
                Reply::Control(Control::Properties(props))
            }
            None => Reply::Control(Control::PropertiesPart),
        };
        Some((reply, grant))
    }

    fn on_header<'a>(&mut self, h: &Header<'a>) -> (Reply<'a>, Option<Grant>) {
        // Version 2 messages go through the reassembly first: pieces of a
        // sequence, and whatever interrupts one.
        let v2_conn = h.protocol == Protocol::V2 && self.neg.protocol() == Some(Protocol::V2);
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
                        self.set_props(p);
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
                    },
                };
                (reply, Some(grant))
            }
        }
    }

    fn on_decode_error<'a>(
        &mut self,
        buf: &'a [u8],
        e: super::xdr::Error,
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
        match self.neg.on_malformed(c.xid, c.vers) {
            // A malformed version 2 message that answers no Call: a
            // CONNPROP, or any message with XID 0 (-00 §6.4.2). Counted
            // and dropped; it must not fail the RPC that has XID 0.
            Verdict::Accept
                if c.vers == v2::VERSION && (c.xid == 0 || c.htype == v2::RDMA2_CONNPROP) =>
            {
                (Reply::Drop(Cause::Malformed(e)), None)
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
