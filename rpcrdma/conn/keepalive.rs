// SPDX-License-Identifier: GPL-2.0

//! The keepalive probe: a zero-length RDMA Write posted when replies are
//! awaited and nothing was received for a whole keepalive period
//! ([`proto::keepalive`] decides, the transport's keepalive worker asks
//! once per period). A live peer's adapter acknowledges it; when the
//! peer's QP is gone the retries run out, the probe completes with an
//! error, and the connection ends with [`Why::Unresponsive`].

use super::{Conn, QpState, SendOpCtx};
use crate::ib::wc::{Completion, WorkCompletion};
use crate::ib::wr::SendWr;
use crate::proto::keepalive::Keepalive;
use crate::proto::keepalive::Tick;
use crate::trace;
use crate::why::Why;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::SpinLock;

/// What a connection knows of its peer's liveness: how many messages it
/// received, and when to probe ([`proto::keepalive`]).
#[pin_data]
pub(super) struct Liveness {
    /// Messages received (successful Receives); written by the Receive
    /// handler only.
    received: AtomicU64,
    /// When to probe the peer.
    #[pin]
    clock: SpinLock<Keepalive>,
}

impl Liveness {
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Liveness {
            received: AtomicU64::new(0),
            clock <- new_spinlock!(Keepalive::new()),
        })
    }

    /// A message was received. Only the Receive handler calls it, and the
    /// CQ's one work item runs that one completion at a time: a plain
    /// load and store, no locked read-modify-write per Receive.
    pub(super) fn received(&self) {
        self.received
            .store(self.received.load(Relaxed).wrapping_add(1), Relaxed);
    }
}

impl Conn {
    /// A keepalive period ended; `awaiting` says whether replies are
    /// awaited. Posts a probe if the peer showed no life for the whole
    /// period. Returns whether to look again after the next period
    /// (false: nothing is awaited).
    pub fn keepalive(&self, awaiting: bool) -> bool {
        let q = &self.ep.qp().handler().0;
        let received = q.liveness.received.load(Relaxed);
        let tick = q.liveness.clock.lock().tick(received, awaiting);
        match tick {
            Tick::Idle => false,
            Tick::Wait => true,
            Tick::Probe => {
                trace::keepalive(self.id, c"probe");
                // A WR that cannot be posted comes back through send_done
                // as aborted, which ends the probe: the next quiet period
                // tries again.
                let _ = self
                    .ep
                    .qp()
                    .post_send_one(SendWr::zero_length_write(SendOpCtx::Probe).signaled());
                true
            }
        }
    }
}

impl QpState {
    /// The probe came back: acknowledged, failed, flushed, or never
    /// posted. Another may go.
    pub(super) fn probe_done(&self, c: &Completion<'_>) {
        if matches!(c, Completion::Done(wc) if wc.is_success()) {
            trace::keepalive(self.id, c"acknowledged");
        }
        self.liveness.clock.lock().probe_done();
    }

    /// The probe completed with an error other than a flush: the peer's
    /// adapter did not acknowledge it.
    pub(super) fn probe_failed(&self, wc: &WorkCompletion) {
        trace::keepalive(self.id, c"unanswered");
        if crate::compat::print::ratelimit() {
            pr_warn!(
                "the server did not acknowledge a keepalive probe ({:?}): reconnecting\n",
                wc.status_msg()
            );
        }
        self.why.note(Why::Unresponsive);
    }
}
