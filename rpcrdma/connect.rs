// SPDX-License-Identifier: GPL-2.0

//! The connection handshake: the rdma_cm event handler of a connection
//! ([`ConnCm`]), which the transport's connect worker waits on step by
//! step (address, route, established, then the answer to the version 2
//! probe) and which later turns a disconnect, device removal or address
//! change into an autoclose.

use crate::ib::cm::{CmEvent, CmHandler};
use crate::sunrpc::xprt_box::XprtRef;
use crate::why::{CloseWhy, Why};
use crate::xdr::pvtdata;
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};
use kernel::{new_condvar, new_mutex};

/// rdma_cm address and route resolution timeout (the C client's).
pub(crate) const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// How long the connect worker waits for each CM step.
const CM_STEP_TIMEOUT_MS: u32 = 30_000;

/// Where the connect worker's handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Idle,
    AddrResolved,
    RouteResolved,
    Established,
    /// Failed with a negative errno.
    Failed(i32),
}

struct CmState {
    step: Step,
    /// The peer's CM private data from ESTABLISHED (zero-padded by RoCE).
    peer: [u8; 64],
    peer_len: usize,
    /// Set once the connection is known to be gone.
    gone: bool,
    /// The version 2 probe (our RDMA2_CONNPROP) was answered.
    settled: bool,
}

/// The CM event handler of a connection, waitable by the connect worker.
#[pin_data]
pub struct ConnCm {
    #[pin]
    state: Mutex<CmState>,
    #[pin]
    cv: CondVar,
    xprt: XprtRef,
    /// Why the connection ends (shared with its handlers).
    why: Arc<CloseWhy>,
}

impl ConnCm {
    pub(crate) fn new(xprt: XprtRef, why: Arc<CloseWhy>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(ConnCm {
                state <- new_mutex!(CmState { step: Step::Idle, peer: [0; 64], peer_len: 0, gone: false, settled: false }),
                cv <- new_condvar!(),
                xprt,
                why,
            }),
            GFP_KERNEL,
        )
    }

    fn set(&self, step: Step) {
        self.state.lock().step = step;
        self.cv.notify_all();
    }

    /// Waits until the handshake reaches `want` (or fails).
    pub(crate) fn wait_for(&self, want: Step, what: &str) -> Result {
        let deadline = kernel::time::msecs_to_jiffies(CM_STEP_TIMEOUT_MS);
        let mut g = self.state.lock();
        let mut left = deadline;
        loop {
            match g.step {
                s if s == want => return Ok(()),
                Step::Failed(e) => {
                    pr_err!("connect: {} failed ({})\n", what, e);
                    return Err(Error::from_errno(e));
                }
                _ => {}
            }
            if left == 0 {
                pr_err!("connect: {} timed out\n", what);
                return Err(crate::compat::errno::etimedout());
            }
            // Jiffies remaining come back from the wait.
            match self.cv.wait_interruptible_timeout(&mut g, left) {
                kernel::sync::CondVarTimeoutResult::Timeout => left = 0,
                kernel::sync::CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                kernel::sync::CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            }
        }
    }

    /// The reply handler saw the answer to the version 2 probe (the
    /// connection's version is settled, or the probe was refused).
    pub(crate) fn probe_answered(&self) {
        self.state.lock().settled = true;
        self.cv.notify_all();
    }

    /// Waits up to `ms` for [`Self::probe_answered`]. `Ok(true)`: answered;
    /// `Ok(false)`: not in time; an error if the connection went away or
    /// a signal arrived.
    pub(crate) fn wait_probe_answer(&self, ms: u32) -> Result<bool> {
        let mut left = kernel::time::msecs_to_jiffies(ms);
        let mut g = self.state.lock();
        loop {
            if g.settled {
                return Ok(true);
            }
            if g.gone {
                return Err(crate::compat::errno::econnaborted());
            }
            if left == 0 {
                return Ok(false);
            }
            match self.cv.wait_interruptible_timeout(&mut g, left) {
                kernel::sync::CondVarTimeoutResult::Timeout => left = 0,
                kernel::sync::CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                kernel::sync::CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            }
        }
    }

    /// The peer's RFC 8797 private data from ESTABLISHED, decoded.
    pub(crate) fn peer(&self) -> pvtdata::Peer {
        let g = self.state.lock();
        pvtdata::decode(&g.peer[..g.peer_len])
    }
}

/// The errno a connect attempt ends with when the CM reports
/// `RDMA_CM_EVENT_UNREACHABLE` with `status`.
///
/// The CM reports a connection request that got no answer (its REQ
/// retries ran out, `IB_CM_REQ_ERROR`; iWARP's connect timing out; the
/// peer's neighbour entry changing under it) as `UNREACHABLE` with
/// status `-ETIMEDOUT`: that is `-ETIMEDOUT`, as the
/// TCP transport reports a SYN that got no answer. SUNRPC's
/// `call_connect_status()` and `call_status()` retry it at once, paced by
/// the transport's reconnect back-off; `-ENETUNREACH`, which the C client
/// reports for every `UNREACHABLE`, makes every task woken by the failed
/// attempt wait 3 s more (`rpc_delay()`), among them tasks whose request
/// the next connection carries, so a task that slept there kept the new
/// connection's one credit and the whole mount waited 3 s after the
/// reconnect (Documentation/testing.rst, "Soak"). Any other status (in
/// 6.12 only a UD id's bad SIDR reply has one) stays `-ENETUNREACH`.
pub(crate) fn unreachable_errno(status: i32) -> i32 {
    let timedout = crate::compat::errno::etimedout().to_errno();
    if status == timedout {
        timedout
    } else {
        crate::compat::errno::enetunreach().to_errno()
    }
}

impl CmHandler for ConnCm {
    fn event(&self, event: &CmEvent<'_>) {
        match event {
            CmEvent::AddrResolved => self.set(Step::AddrResolved),
            CmEvent::RouteResolved => self.set(Step::RouteResolved),
            CmEvent::AddrError { .. } => {
                self.set(Step::Failed(crate::compat::errno::eproto().to_errno()))
            }
            CmEvent::RouteError { .. } => {
                self.set(Step::Failed(crate::compat::errno::enetunreach().to_errno()))
            }
            CmEvent::Unreachable { status } => self.set(Step::Failed(unreachable_errno(*status))),
            CmEvent::ConnectError { .. } => {
                self.set(Step::Failed(crate::compat::errno::enotconn().to_errno()))
            }
            CmEvent::Rejected { reason, .. } => {
                let e = if *reason == crate::ib::cm::REJ_STALE_CONN {
                    crate::compat::errno::enotconn()
                } else {
                    crate::compat::errno::econnrefused()
                };
                self.set(Step::Failed(e.to_errno()))
            }
            CmEvent::Established { private_data } => {
                let mut g = self.state.lock();
                let n = private_data.len().min(g.peer.len());
                g.peer[..n].copy_from_slice(&private_data[..n]);
                g.peer_len = n;
                g.step = Step::Established;
                drop(g);
                self.cv.notify_all();
            }
            CmEvent::Disconnected | CmEvent::DeviceRemoval | CmEvent::AddrChange => {
                self.why.note(match event {
                    CmEvent::Disconnected => Why::PeerDisconnected,
                    CmEvent::DeviceRemoval => Why::DeviceRemoval,
                    _ => Why::AddrChange,
                });
                let mut g = self.state.lock();
                let was_up = g.step == Step::Established && !g.gone;
                g.gone = true;
                if g.step != Step::Established {
                    g.step = Step::Failed(crate::compat::errno::econnaborted().to_errno());
                }
                drop(g);
                self.cv.notify_all();
                if was_up {
                    // Autoclose runs `close`, which disconnects (answering
                    // the peer's DREQ) and tears the connection down.
                    self.xprt.force_disconnect();
                }
            }
            _ => {}
        }
    }
}
