// SPDX-License-Identifier: GPL-2.0

//! When to probe a connection's peer for life.
//!
//! A reliable connection finds a dead peer only when it sends: a WR the
//! peer's adapter does not acknowledge fails once the retries run out. A
//! client whose Calls were all sent and acknowledged sends nothing more
//! while it waits for their replies, so a server that lost the connection
//! without the client hearing of it (its QP failed in an outage, its
//! disconnect request was lost in the same outage) leaves the client
//! waiting for the RPC timeout, a minute by default. The TCP transport
//! has TCP's retransmissions and keepalives for that; RPC-over-RDMA has
//! neither.
//!
//! So the transport looks at its connection once per keepalive period.
//! When replies are awaited and nothing at all was received during the
//! whole period, it posts a probe: a zero-length RDMA Write, which needs
//! no memory, credit or Receive at the peer and is acknowledged by the
//! peer's adapter, not its software. A live peer, however busy, answers
//! it at once; a dead one fails it after the retries, which ends the
//! connection and makes SUNRPC reconnect and send again. One probe at a
//! time; none while nothing is awaited, when the transport also stops
//! looking (no timer runs on an idle mount).
//!
//! This is the decision only (`core`, no I/O): the transport counts the
//! messages it receives, asks [`Keepalive::tick`] once per period, posts
//! the probe and reports its completion with [`Keepalive::probe_done`].

/// What to do at the end of a keepalive period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// No reply is awaited: stop looking until the next Call is sent.
    Idle,
    /// Replies are awaited and the peer showed life (something was
    /// received in the period), or a probe is on its way: look again
    /// after the next period.
    Wait,
    /// Replies are awaited and nothing was received for a whole period:
    /// post a probe now, and look again after the next period.
    Probe,
}

/// The keepalive state of one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keepalive {
    /// The receive count at the end of the previous period.
    seen: u64,
    /// A probe was posted and has not completed.
    probing: bool,
}

impl Keepalive {
    /// A new connection's state: nothing received, no probe.
    pub const fn new() -> Self {
        Keepalive {
            seen: 0,
            probing: false,
        }
    }

    /// A period ended. `received` counts the messages the connection has
    /// received so far (any, replies or not; it only grows), `awaiting`
    /// says whether replies are awaited now.
    pub fn tick(&mut self, received: u64, awaiting: bool) -> Tick {
        let quiet = received == self.seen;
        self.seen = received;
        if !awaiting {
            Tick::Idle
        } else if !quiet || self.probing {
            Tick::Wait
        } else {
            self.probing = true;
            Tick::Probe
        }
    }

    /// The probe completed (acknowledged, or flushed with the connection,
    /// or never posted): another may be posted.
    pub fn probe_done(&mut self) {
        self.probing = false;
    }

    /// Whether a probe is on its way.
    pub const fn probing(&self) -> bool {
        self.probing
    }
}
