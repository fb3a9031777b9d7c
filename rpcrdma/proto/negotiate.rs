// SPDX-License-Identifier: GPL-2.0

//! Protocol version negotiation (draft -00 §4.3.3).
//!
//! Two pieces of state:
//!
//! * [`ServerMemory`], one per transport, survives reconnects: whether the
//!   server has shown that it speaks only version 1, and how many probes
//!   in a row were lost with their connection.
//! * [`Negotiation`], one per connection: [`Phase::Probing`] while the
//!   first (v2) message is unanswered, then [`Phase::Settled`].
//!
//! Rules, with the -00 text they implement:
//!
//! * The probe is normally our own `RDMA2_CONNPROP`
//!   ([`super::connprop`]), sent before any RPC; the first RPC is the
//!   probe only on a server that left a CONNPROP probe unanswered
//!   ([`ServerMemory::connprop_probe`], [`Negotiation::abandon_probe`]),
//!   or when the glue sends no CONNPROP.
//!
//! * "First, the client sends a single valid RPC-over-RDMA message with
//!   the value two (2) in the rdma_vers field. Because the server might
//!   support only RPC-over-RDMA version 1, this initial message MUST NOT
//!   be larger than the version 1 default inline threshold of 1024
//!   bytes." A new connection starts in [`Phase::Probing`] unless the
//!   policy is [`VersionPolicy::ForceV1`] or the server is remembered as
//!   v1-only. The 1024-byte limit is applied by
//!   [`super::inline::Thresholds`]. A first Call that does not fit 1024
//!   bytes but fits version 1's thresholds opens the connection in
//!   version 1 instead ([`Negotiation::settle_v1_for_size`]): a client may
//!   always start a connection in version 1 ("If the server supports the
//!   RPC-over-RDMA protocol version used in the first RPC-over-RDMA
//!   message received from a client, it MUST use that protocol version in
//!   all subsequent messages"); the server is not marked v1-only, so the
//!   next connection probes again. (With chunks, a Long Call would keep
//!   such a probe under 1024 bytes.)
//! * "Upon connection establishment a client MUST NOT send more than a
//!   single RPC-over-RDMA message at a time until it receives a valid
//!   non-error RPC-over-RDMA message from the server that grants client
//!   credits." Enforced by the credit state ([`super::credits`]): one
//!   credit and a v2 message limit of one until a valid credit word
//!   arrives.
//! * Any valid v2 message that is not `ERR_VERS` settles the connection on
//!   version 2 (an `RDMA2_ERROR` in v2 framing proves v2 support but
//!   grants no credits).
//! * "If the server does not support RPC-over-RDMA version 2, it MUST send
//!   an RPC-over-RDMA message to the client with the same XID, with
//!   RDMA2_ERROR [...] and with the error code RDMA2_ERR_VERS. [...] the
//!   client selects a protocol version in the range of server-supported
//!   versions for subsequent messages on this connection." An `ERR_VERS`
//!   whose XID is the probe's and whose range includes 1 switches the
//!   connection to version 1 and asks for the RPC to be sent again
//!   ([`Verdict::Resend`]). It may be framed three ways, all decoded by
//!   the codec to `ErrorBody::Vers`: v2 `RDMA2_ERR_VERS`; v1 `ERR_VERS`
//!   with `rdma_vers` 1; and, from Linux svcrdma
//!   (`svc_rdma_send_error_msg` copies the Call's version word), v1
//!   `ERR_VERS` with `rdma_vers` 2 (`xid, 2, credits, 4, 1, 1, 1`).
//! * "If the connection is lost immediately after an RDMA2_ERROR /
//!   RDMA2_ERR_VERS message is received, a client can avoid a possible
//!   version negotiation loop when re-establishing another connection by
//!   assuming that particular server does not support RPC-over-RDMA
//!   version 2. A client can assume the same situation [...] if the
//!   initial negotiation message is lost or dropped." A fallback marks the
//!   server v1-only for the life of the transport, so every reconnect
//!   starts in version 1. A probe lost with its connection counts; after
//!   [`LOST_PROBE_LIMIT`] such losses in a row the server is marked
//!   v1-only as well (one loss may be a server restart; a server that
//!   drops the connection on every v2 message must not make us loop).
//! * "The client MUST NOT change the protocol version for the duration of
//!   the connection." Once settled, a connection never changes version:
//!   an `ERR_VERS` fails the RPC it answers ([`Verdict::ErrVers`]), and a
//!   message framed in the other version is a protocol error that closes
//!   the connection ([`Verdict::VersionMismatch`]).
//! * If the server also rejects version 1 (an `ERR_VERS` to a v1 Call, or
//!   a probe answer whose range excludes 1) the RPC fails with
//!   `-EPROTONOSUPPORT`; nothing loops, because a failed RPC is not
//!   retried by the transport.

use super::config::VersionPolicy;
use super::xdr::header::{Body, ErrorBody, Header, Protocol};
use super::xdr::v1;

/// Lost probes in a row after which the server is taken to be v1-only.
pub const LOST_PROBE_LIMIT: u8 = 2;

/// What a transport knows about its server across connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerMemory {
    v1_only: bool,
    lost_probes: u8,
    /// A CONNPROP probe went unanswered: probe with the first RPC.
    connprop_unanswered: bool,
}

impl ServerMemory {
    /// Nothing known yet.
    pub const fn new() -> Self {
        Self {
            v1_only: false,
            lost_probes: 0,
            connprop_unanswered: false,
        }
    }

    /// New connections probe with our `RDMA2_CONNPROP` (false once the
    /// server left one unanswered: the first RPC is the probe then).
    #[inline]
    pub const fn connprop_probe(&self) -> bool {
        !self.connprop_unanswered
    }

    /// The server speaks only version 1: connections start in version 1.
    #[inline]
    pub const fn v1_only(&self) -> bool {
        self.v1_only
    }

    /// Probes lost with their connection since the last answered one.
    #[inline]
    pub const fn lost_probes(&self) -> u8 {
        self.lost_probes
    }

    /// The version a new connection starts with under `policy`.
    pub const fn first_protocol(&self, policy: VersionPolicy) -> Protocol {
        match policy {
            VersionPolicy::ForceV1 => Protocol::V1,
            VersionPolicy::TryV2 if self.v1_only => Protocol::V1,
            VersionPolicy::TryV2 => Protocol::V2,
        }
    }

    fn remember_v1_only(&mut self) {
        self.v1_only = true;
        self.lost_probes = 0;
    }

    fn probe_answered(&mut self) {
        self.lost_probes = 0;
    }

    fn remember_connprop_unanswered(&mut self) {
        self.connprop_unanswered = true;
    }

    /// Returns true if this loss marked the server v1-only.
    fn probe_lost(&mut self) -> bool {
        self.lost_probes = self.lost_probes.saturating_add(1);
        if self.lost_probes >= LOST_PROBE_LIMIT && !self.v1_only {
            self.v1_only = true;
            return true;
        }
        false
    }
}

/// Where a connection is in the negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// No connection.
    Down,
    /// The connection speaks v2 but has not heard from the server yet.
    Probing {
        /// XID of the probe (the first message), once it has been sent.
        probe: Option<u32>,
    },
    /// The version is fixed for the rest of the connection.
    Settled(Protocol),
}

/// What the negotiation makes of a received, well-formed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The header is in the connection's version (which may just have
    /// been settled): classify it.
    Accept,
    /// The probe was answered with `ERR_VERS` offering version 1: the
    /// connection now speaks version 1; send RPC `xid` again.
    Resend {
        /// The probe's XID.
        xid: u32,
    },
    /// An `ERR_VERS` that leaves no usable version: the probe's range
    /// excludes 1, or a settled connection's version was rejected. Fail
    /// RPC `xid` (`-EPROTONOSUPPORT` if no version is left, see
    /// [`Verdict::ErrVers`]).
    ErrVers {
        /// XID of the rejected RPC.
        xid: u32,
        /// Lowest version the server supports.
        low: u32,
        /// Highest version the server supports.
        high: u32,
        /// The connection's version when the error arrived (V2 for a
        /// probe).
        rejected: Protocol,
        /// The connection had already settled (so this error breaks
        /// -00's rule and does not change its version).
        settled: bool,
    },
    /// An `ERR_VERS` during the probe that does not answer the probe:
    /// drop it.
    StrayErrVers,
    /// A message framed in a version the connection does not use: a
    /// protocol error; close the connection.
    VersionMismatch {
        /// The message's `rdma_vers`.
        got: u32,
    },
    /// No connection is up: drop the message.
    NotConnected,
}

/// What a disconnect did to the negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeLoss {
    /// No probe was outstanding.
    None,
    /// The outstanding probe was lost with the connection.
    Lost,
    /// The probe was lost and that made the server v1-only
    /// ([`LOST_PROBE_LIMIT`] losses in a row).
    NowV1Only,
}

/// The negotiation state of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Negotiation {
    phase: Phase,
}

impl Default for Negotiation {
    fn default() -> Self {
        Self::new()
    }
}

impl Negotiation {
    /// No connection.
    pub const fn new() -> Self {
        Self { phase: Phase::Down }
    }

    /// Starts a new connection; returns its first version.
    pub fn connect(&mut self, memory: &ServerMemory, policy: VersionPolicy) -> Protocol {
        let p = memory.first_protocol(policy);
        self.phase = match p {
            Protocol::V1 => Phase::Settled(Protocol::V1),
            Protocol::V2 => Phase::Probing { probe: None },
        };
        p
    }

    /// The current phase.
    #[inline]
    pub const fn phase(&self) -> Phase {
        self.phase
    }

    /// The version the connection sends in (`None` when down).
    pub const fn protocol(&self) -> Option<Protocol> {
        match self.phase {
            Phase::Down => None,
            Phase::Probing { .. } => Some(Protocol::V2),
            Phase::Settled(p) => Some(p),
        }
    }

    /// True while the version is not settled.
    #[inline]
    pub const fn is_probing(&self) -> bool {
        matches!(self.phase, Phase::Probing { .. })
    }

    /// Records that Call `xid` is being sent. Returns true if it is the
    /// probe.
    pub fn on_send(&mut self, xid: u32) -> bool {
        match self.phase {
            Phase::Probing { probe: None } => {
                self.phase = Phase::Probing { probe: Some(xid) };
                true
            }
            Phase::Probing { probe: Some(p) } => p == xid,
            Phase::Down | Phase::Settled(_) => false,
        }
    }

    /// Opens a probing connection in version 1 because its first Call
    /// does not fit the 1024-byte probe. Returns false (and changes
    /// nothing) unless the connection is probing with no probe sent.
    pub fn settle_v1_for_size(&mut self) -> bool {
        if self.phase == (Phase::Probing { probe: None }) {
            self.phase = Phase::Settled(Protocol::V1);
            true
        } else {
            false
        }
    }

    /// Judges a well-formed header received on this connection.
    pub fn on_header(&mut self, h: &Header<'_>, memory: &mut ServerMemory) -> Verdict {
        let vers = match h.body {
            Body::Error(ErrorBody::Vers { low, high }) => Some((low, high)),
            _ => None,
        };
        match self.phase {
            Phase::Down => Verdict::NotConnected,
            Phase::Probing { probe } => match vers {
                Some((low, high)) if probe == Some(h.xid) => {
                    memory.probe_answered();
                    if low <= v1::VERSION && v1::VERSION <= high {
                        memory.remember_v1_only();
                        self.phase = Phase::Settled(Protocol::V1);
                        Verdict::Resend { xid: h.xid }
                    } else {
                        // The probe is answered; the next Call probes
                        // again (and fails the same way).
                        self.phase = Phase::Probing { probe: None };
                        Verdict::ErrVers {
                            xid: h.xid,
                            low,
                            high,
                            rejected: Protocol::V2,
                            settled: false,
                        }
                    }
                }
                Some(_) => Verdict::StrayErrVers,
                None => match h.protocol {
                    Protocol::V2 => {
                        memory.probe_answered();
                        self.phase = Phase::Settled(Protocol::V2);
                        Verdict::Accept
                    }
                    Protocol::V1 => Verdict::VersionMismatch {
                        got: Protocol::V1.vers(),
                    },
                },
            },
            Phase::Settled(p) => match vers {
                Some((low, high)) => Verdict::ErrVers {
                    xid: h.xid,
                    low,
                    high,
                    rejected: p,
                    settled: true,
                },
                None if h.protocol == p => Verdict::Accept,
                None => Verdict::VersionMismatch {
                    got: h.protocol.vers(),
                },
            },
        }
    }

    /// Judges a message that failed to decode but whose four common words
    /// were readable: `Accept` if `vers` is the connection's version (the
    /// message is merely malformed), `VersionMismatch` otherwise. A
    /// malformed answer to the probe clears the probe, so that the next
    /// Call probes again.
    pub fn on_malformed(&mut self, xid: u32, vers: u32) -> Verdict {
        match self.phase {
            Phase::Down => Verdict::NotConnected,
            Phase::Probing { probe } => {
                if vers != Protocol::V2.vers() {
                    return Verdict::VersionMismatch { got: vers };
                }
                if probe == Some(xid) {
                    self.phase = Phase::Probing { probe: None };
                }
                Verdict::Accept
            }
            Phase::Settled(p) if p.vers() == vers => Verdict::Accept,
            Phase::Settled(_) => Verdict::VersionMismatch { got: vers },
        }
    }

    /// The probe `xid` (our CONNPROP) went unanswered for too long: the
    /// connection is given up without counting a lost probe, and the
    /// server is remembered as one that does not answer CONNPROP, so the
    /// next connection probes with its first RPC. Returns false (and
    /// changes nothing) unless `xid` is the outstanding probe.
    pub fn abandon_probe(&mut self, xid: u32, memory: &mut ServerMemory) -> bool {
        if self.phase != (Phase::Probing { probe: Some(xid) }) {
            return false;
        }
        memory.remember_connprop_unanswered();
        self.phase = Phase::Down;
        true
    }

    /// The connection is gone. A probe still unanswered counts as lost.
    pub fn on_disconnect(&mut self, memory: &mut ServerMemory) -> ProbeLoss {
        let lost = matches!(self.phase, Phase::Probing { probe: Some(_) });
        self.phase = Phase::Down;
        if !lost {
            ProbeLoss::None
        } else if memory.probe_lost() {
            ProbeLoss::NowV1Only
        } else {
            ProbeLoss::Lost
        }
    }
}
