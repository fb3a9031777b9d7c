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
//!
//! The methods are grouped by job, one file each: this one holds the
//! state, its construction and the connection's lifecycle (connect,
//! established, our `RDMA2_CONNPROP` probe, disconnect); [`send`] the
//! send-side decisions (Calls, pieces of continued Calls, backchannel
//! replies, credit grants, the chunk-planning limits); [`receive`] what a
//! received message means; [`reverse`] the errors we answer the peer's
//! reverse-direction Calls with; [`stats`] the counters.

pub mod receive;
pub mod reverse;
pub mod send;
pub mod stats;

use self::stats::Stats;
use super::backchannel::CallAssembly;
use super::config::Config;
use super::connprop::{self, Assembly};
use super::continuation::Reassembly;
use super::credits::{CreditState, CreditUpdate};
use super::inline::Thresholds;
use super::negotiate::{Negotiation, Phase, ProbeLoss, ServerMemory};
use super::xdr::header::Protocol;
use super::xdr::props::TransportProperties;
use super::xdr::pvtdata::Peer;

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
    /// A continued reverse-direction Call being reassembled.
    rcall: CallAssembly,
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
            rcall: CallAssembly::new(),
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
        self.rcall = CallAssembly::new();
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
        self.rcall = CallAssembly::new();
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
    ///
    /// [`CallError::NoCredits`]: send::CallError::NoCredits
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
        let credit = self.credits.on_send();
        self.credits.on_call_sent();
        Some(connprop::Plan {
            xid: connprop::PROBE_XID,
            credit,
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
        self.rcall = CallAssembly::new();
        self.props_asm.reset();
        true
    }

    /// Sets the segments per chunk (`Config::max_segs`, clamped as
    /// [`Config::validated`] does) once the device is known: 0 turns
    /// chunks off (inline only).
    pub fn set_max_segs(&mut self, max_segs: u32) {
        self.config.max_segs = max_segs;
        self.config = self.config.validated();
    }
}
