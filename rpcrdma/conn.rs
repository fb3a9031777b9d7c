// SPDX-License-Identifier: GPL-2.0

//! One RPC-over-RDMA connection: rdma_cm id, QP, Receive and Send
//! buffers, the CM event handler and the reply handler.
//!
//! A connection is created by the transport's connect worker
//! ([`Conn::establish`]) and torn down by `close` (dropping it drains the
//! QP and destroys the id). Its handlers reach the transport through an
//! [`XprtRef`].

use crate::ib::cm::{CmEvent, CmHandler, CmId, ConnParam, SockAddr};
use crate::ib::dma::{DmaBuf, DmaDir};
use crate::ib::qp::{
    Completion, Endpoint, Qp, QpCaps, QpHandler, RecvBatch, RecvCtx, SendCtx, SendWr, SgeList,
};
use crate::ib::verbs::PollContext;
use crate::ib::Net;
use crate::proto::{self, CallError, Reply};
use crate::sunrpc::xprt::{Rqst, XprtRef};
use crate::xdr::header::{self, Protocol};
use crate::xdr::pvtdata;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::alloc::{flags::GFP_KERNEL, KVec};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex, SpinLock};
use kernel::{new_condvar, new_mutex, new_spinlock};

/// rdma_cm address and route resolution timeout (the C client's).
const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// How long the connect worker waits for each CM step.
const CM_STEP_TIMEOUT_MS: u32 = 30_000;
/// The protocol state of a transport, shared by its connections'
/// handlers (it survives reconnects: it remembers v1-only servers).
pub type ProtoState = SpinLock<proto::Transport>;

/// Connection statistics shared with the transport.
#[derive(Default)]
pub struct ConnStats {
    /// Bytes of RPC Calls sent inline.
    pub req_bytes: AtomicU64,
    /// Bytes of RPC Replies received inline.
    pub reply_bytes: AtomicU64,
    /// Calls or replies too large for the inline path.
    pub too_big: AtomicU64,
    /// Whole-message copies into the Send buffer (C: pullup).
    pub pullup: AtomicU64,
    /// Backchannel calls received and dropped (not supported yet).
    pub bc_dropped: AtomicU64,
    /// Sends refused for lack of v2 credits (waited for buffer space).
    pub no_credits: AtomicU64,
}

/// Where the connect worker's handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
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
}

/// The CM event handler of a connection, waitable by the connect worker.
#[pin_data]
pub struct ConnCm {
    #[pin]
    state: Mutex<CmState>,
    #[pin]
    cv: CondVar,
    xprt: XprtRef,
}

impl ConnCm {
    fn new(xprt: XprtRef) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(ConnCm {
                state <- new_mutex!(CmState { step: Step::Idle, peer: [0; 64], peer_len: 0, gone: false }),
                cv <- new_condvar!(),
                xprt,
            }),
            GFP_KERNEL,
        )
    }

    fn set(&self, step: Step) {
        self.state.lock().step = step;
        self.cv.notify_all();
    }

    /// Waits until the handshake reaches `want` (or fails).
    fn wait_for(&self, want: Step, what: &str) -> Result {
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
                return Err(crate::errno::etimedout());
            }
            // Jiffies remaining come back from the wait.
            match self.cv.wait_interruptible_timeout(&mut g, left) {
                kernel::sync::CondVarTimeoutResult::Timeout => left = 0,
                kernel::sync::CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                kernel::sync::CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            }
        }
    }
}

impl CmHandler for ConnCm {
    fn event(&self, event: &CmEvent<'_>) {
        match event {
            CmEvent::AddrResolved => self.set(Step::AddrResolved),
            CmEvent::RouteResolved => self.set(Step::RouteResolved),
            CmEvent::AddrError { .. } => self.set(Step::Failed(crate::errno::eproto().to_errno())),
            CmEvent::RouteError { .. } | CmEvent::Unreachable { .. } => {
                self.set(Step::Failed(crate::errno::enetunreach().to_errno()))
            }
            CmEvent::ConnectError { .. } => {
                self.set(Step::Failed(crate::errno::enotconn().to_errno()))
            }
            CmEvent::Rejected { reason, .. } => {
                let e = if *reason == crate::ib::cm::REJ_STALE_CONN {
                    crate::errno::enotconn()
                } else {
                    crate::errno::econnrefused()
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
                let mut g = self.state.lock();
                let was_up = g.step == Step::Established && !g.gone;
                g.gone = true;
                if g.step != Step::Established {
                    g.step = Step::Failed(crate::errno::econnaborted().to_errno());
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

/// A Receive buffer: owned by the Receive WR while posted.
pub struct RecvBuf(DmaBuf);

impl RecvCtx for RecvBuf {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        sges.push_all(&self.0)
    }
}

/// A Send buffer holding one header + inline RPC message.
pub struct SendBuf {
    buf: DmaBuf,
    len: usize,
}

impl SendCtx for SendBuf {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        sges.push(&self.buf, 0, self.len)
    }
}

/// A stack over a fixed array (6.12's `KVec` has no `pop`).
struct Stack<T> {
    items: KVec<Option<T>>,
    top: usize,
}

impl<T> Stack<T> {
    fn with_capacity(n: usize) -> Result<Self> {
        let mut items = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            items.push(None, GFP_KERNEL)?;
        }
        Ok(Stack { items, top: 0 })
    }

    fn pop(&mut self) -> Option<T> {
        self.top = self.top.checked_sub(1)?;
        self.items.as_mut_slice().get_mut(self.top)?.take()
    }

    /// Returns `v` back if the stack is full.
    fn push(&mut self, v: T) -> core::result::Result<(), T> {
        match self.items.as_mut_slice().get_mut(self.top) {
            Some(slot) => {
                *slot = Some(v);
                self.top += 1;
                Ok(())
            }
            None => Err(v),
        }
    }
}

/// The QP handler: Send buffer recycling and the reply handler.
pub struct ConnQp(Arc<QpState>);

/// The QP handler's state (pinned: it holds locks).
#[pin_data]
pub struct QpState {
    xprt: XprtRef,
    #[pin]
    sends: SpinLock<Stack<SendBuf>>,
    /// Receive buffers not posted right now.
    #[pin]
    recvs: SpinLock<Stack<RecvBuf>>,
    proto: Arc<ProtoState>,
    stats: Arc<ConnStats>,
}

impl ConnQp {
    fn new(
        xprt: XprtRef,
        nsend: usize,
        nrecv: usize,
        proto: Arc<ProtoState>,
        stats: Arc<ConnStats>,
    ) -> Result<Self> {
        let state = Arc::pin_init(
            try_pin_init!(QpState {
                xprt,
                sends <- new_spinlock!(Stack::with_capacity(nsend)?),
                recvs <- new_spinlock!(Stack::with_capacity(nrecv)?),
                proto,
                stats,
            }? Error),
            GFP_KERNEL,
        )?;
        Ok(ConnQp(state))
    }
}

impl QpState {
    /// Posts up to `n` Receives from the idle buffers; reports a shortfall
    /// to the protocol state so its accounting stays true.
    fn post_receives(&self, qp: &Qp<ConnQp>, n: u32) {
        let mut batch = RecvBatch::new();
        let mut short = 0u32;
        for _ in 0..n {
            let Some(buf) = self.recvs.lock().pop() else {
                short += 1;
                continue;
            };
            if let Err(buf) = batch.push(buf) {
                // The batch is full: post it and start another.
                let full = core::mem::take(&mut batch);
                let _ = qp.post_recv(full);
                let _ = batch.push(buf);
            }
        }
        if !batch.is_empty() {
            // A failed post hands the buffers back as Aborted (counted
            // there).
            let _ = qp.post_recv(batch);
        }
        if short > 0 {
            self.proto.lock().receives_unposted(short);
        }
    }

    /// Acts on one received message (the reply handler).
    fn handle(&self, data: &[u8]) -> u32 {
        let out = self.proto.lock().receive(data);
        if let Some(u) = out.credits {
            self.xprt.set_cwnd(u.credits, false);
        }
        if out.wake_senders {
            self.xprt.write_space();
        }
        match out.reply {
            Reply::Deliver { xid, payload } => {
                let done = self.xprt.with_rqst(xid.to_be(), |rqst: &Rqst| {
                    match rqst.copy_reply(payload) {
                        Ok(()) => {
                            self.stats
                                .reply_bytes
                                .fetch_add(payload.len() as u64, Relaxed);
                            rqst.complete(&self.xprt, payload.len() as i32);
                        }
                        Err(e) => {
                            self.stats.too_big.fetch_add(1, Relaxed);
                            if crate::sunrpc::ratelimit() {
                                pr_err!(
                                    "reply: {} bytes do not fit the receive buffer ({:?})\n",
                                    payload.len(),
                                    e
                                );
                            }
                            rqst.fail(&self.xprt, e.to_errno());
                        }
                    }
                });
                if done.is_none() {
                    // A late reply for an RPC that was already
                    // retransmitted or abandoned: nothing waits for it.
                    pr_debug!("reply: no request waits for xid {:#010x}\n", xid);
                }
            }
            Reply::Fail { xid, errno, cause } => {
                if crate::sunrpc::ratelimit() {
                    if cause == proto::Cause::RdmaError(crate::xdr::header::ErrorBody::BadXdr) {
                        // v1 ERR_CHUNK: typically a Reply larger than the
                        // server's inline threshold, and no Reply chunk.
                        pr_err!("reply: server answered ERR_CHUNK (xid {:#010x}): the reply does not fit inline and Write/Reply chunks are not supported yet ({})\n", xid, errno.to_kernel());
                    } else {
                        pr_err!(
                            "reply: xid {:#010x} failed ({}): {:?}\n",
                            xid,
                            errno.to_kernel(),
                            cause
                        );
                    }
                }
                let _ = self.xprt.with_rqst(xid.to_be(), |rqst: &Rqst| {
                    rqst.fail(&self.xprt, errno.to_kernel())
                });
            }
            Reply::Resend { xid } => {
                pr_info!(
                    "server answered the RPC-over-RDMA version 2 probe with ERR_VERS: continuing in version 1\n"
                );
                let _ = self.xprt.with_rqst(xid.to_be(), |rqst: &Rqst| {
                    // The probe was not executed: send it again, in v1, on
                    // this same connection.
                    rqst.allow_resend(&self.xprt);
                    rqst.fail(&self.xprt, EAGAIN.to_errno());
                });
            }
            Reply::ReverseCall { xid, .. } => {
                self.stats.bc_dropped.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_warn!("backchannel: callback xid {:#010x} dropped (backchannel calls are not supported yet)\n", xid);
                }
            }
            Reply::Control(_) => {}
            Reply::Drop(cause) => {
                if cause.is_bad_reply() && crate::sunrpc::ratelimit() {
                    pr_err!("reply: dropped: {:?}\n", cause);
                }
            }
            Reply::Disconnect(cause) => {
                pr_err!("reply: protocol error, disconnecting: {:?}\n", cause);
                self.xprt.force_disconnect();
            }
        }
        out.post_receives
    }
}

impl QpHandler for ConnQp {
    type SendCtx = SendBuf;
    type RecvCtx = RecvBuf;

    fn send_done(&self, _qp: &Qp<Self>, ctx: SendBuf, c: Completion<'_>) {
        let this = &*self.0;
        if let Completion::Done(wc) = &c {
            if !wc.is_success() {
                if !wc.is_flushed() {
                    pr_err!("send: completion error {:?}\n", wc.status_msg());
                }
                this.xprt.force_disconnect();
            }
        }
        let _ = this.sends.lock().push(ctx);
        this.xprt.write_space();
    }

    fn recv_done(&self, qp: &Qp<Self>, ctx: RecvBuf, c: Completion<'_>) {
        let this = &*self.0;
        match c {
            Completion::Done(wc) if wc.is_success() => {
                let len = (wc.byte_len() as usize).min(ctx.0.len());
                ctx.0.sync_for_cpu(len);
                let more = this.handle(&ctx.0.as_slice()[..len]);
                let _ = this.recvs.lock().push(ctx);
                // Keep the peer's credits backed (in batches, as asked).
                this.post_receives(qp, more);
            }
            Completion::Done(wc) => {
                this.proto.lock().receive_flushed();
                if !wc.is_flushed() {
                    pr_err!("receive: completion error {:?}\n", wc.status_msg());
                }
                this.xprt.force_disconnect();
            }
            _ => {
                // Never posted (or the QP went first).
                this.proto.lock().receives_unposted(1);
                let _ = this.recvs.lock().push(ctx);
            }
        }
    }
}

/// An established connection.
pub struct Conn {
    ep: Endpoint<ConnCm, ConnQp>,
    /// Thresholds in force when the connection was established.
    pub limits: proto::Thresholds,
}

impl Conn {
    /// Connects to `dst` and returns the established connection
    /// (process context; sleeps). `proto` gives the plan: the version of
    /// the first message, the Receives to post, our private data.
    pub fn establish(
        net: &Net,
        dst: &SockAddr,
        xprt: &dyn Fn() -> XprtRef,
        proto_state: &Arc<ProtoState>,
        stats: &Arc<ConnStats>,
    ) -> Result<Conn> {
        let (config, plan) = {
            let mut p = proto_state.lock();
            (*p.config(), p.connect())
        };
        xprt().set_cwnd(plan.credits.credits, true);

        let cm = ConnCm::new(xprt())?;
        let id = CmId::new(net, cm.clone())?;
        id.resolve_addr(None, dst, RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::AddrResolved, "address resolution")?;
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::RouteResolved, "route resolution")?;

        let nrecv = config.recv_queue_depth();
        let nsend = config.max_requests as usize + 2;
        let caps = QpCaps {
            max_send_wr: nsend as u32,
            max_recv_wr: nrecv,
            max_send_sge: 1,
            max_recv_sge: 1,
        };
        let qp = ConnQp::new(
            xprt(),
            nsend,
            nrecv as usize,
            proto_state.clone(),
            stats.clone(),
        )?;
        let ep = Endpoint::new(id, &caps, PollContext::Workqueue, qp)?;

        // Buffers: every Receive buffer and Send buffer of the connection
        // is allocated and DMA-mapped now; the data path never allocates.
        let state = &ep.qp().handler().0;
        for _ in 0..nrecv {
            let buf = DmaBuf::new(
                ep.pd(),
                config.recv_buffer_size() as usize,
                DmaDir::FromDevice,
                GFP_KERNEL,
            )?;
            if state.recvs.lock().push(RecvBuf(buf)).is_err() {
                break;
            }
        }
        for _ in 0..nsend {
            let buf = DmaBuf::new(
                ep.pd(),
                config.inline_send as usize,
                DmaDir::ToDevice,
                GFP_KERNEL,
            )?;
            if state.sends.lock().push(SendBuf { buf, len: 0 }).is_err() {
                break;
            }
        }
        // The peer's first message needs somewhere to land.
        state.post_receives(ep.qp(), plan.post_receives);

        let pd = config.private_data_bytes();
        ep.connect(&ConnParam::rpcrdma_client(ep.device(), &pd))?;
        cm.wait_for(Step::Established, "connection")?;

        // RFC 8797: the peer's sizes cap ours; absent or invalid private
        // data means the defaults of the version in use.
        let peer = {
            let g = cm.state.lock();
            pvtdata::decode(&g.peer[..g.peer_len])
        };
        let limits = proto_state.lock().established(peer);
        match plan.protocol {
            Protocol::V2 => pr_info!(
                "connected to {}: probing RPC-over-RDMA version 2 (inline send {} recv {}, {} credits max)\n",
                dst, limits.send, limits.recv, config.max_requests
            ),
            Protocol::V1 => pr_info!(
                "connected to {}: RPC-over-RDMA version 1 (inline send {} recv {}, {} credits max)\n",
                dst, limits.send, limits.recv, config.max_requests
            ),
        }
        Ok(Conn { ep, limits })
    }

    /// Marshals `rqst` as an inline RDMA_MSG (v1) or RDMA2_MSG (v2) and
    /// posts it.
    pub fn send(&self, rqst: &Rqst, stats: &ConnStats) -> Result {
        let q = &self.ep.qp().handler().0;
        let call_len = rqst.call_len();
        let xid = u32::from_be(rqst.xid());
        let plan = q.proto.lock().prepare_call(
            xid,
            u32::try_from(call_len).unwrap_or(u32::MAX),
            u32::try_from(rqst.reply_buflen()).unwrap_or(u32::MAX),
        );
        let plan = match plan {
            Ok(p) => p,
            Err(CallError::NoCredits) => {
                stats.no_credits.fetch_add(1, Relaxed);
                return Err(crate::errno::enobufs());
            }
            Err(CallError::NotConnected) => return Err(crate::errno::enotconn()),
            Err(CallError::TooBig(t)) => {
                // Read chunks come with FRWR; until then a Call that does
                // not fit inline fails cleanly.
                stats.too_big.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!(
                        "send: {:?} of {} bytes exceeds the inline limit of {} and chunks are not supported yet (-EMSGSIZE)\n",
                        t.direction, t.len, t.limit
                    );
                }
                return Err(crate::errno::emsgsize());
            }
        };
        if plan.probe {
            pr_info!(
                "sending the RPC-over-RDMA version 2 probe (xid {:#010x})\n",
                xid
            );
        }
        let Some(mut sb) = q.sends.lock().pop() else {
            return Err(crate::errno::enobufs());
        };
        let r = (|| {
            let buf = sb.buf.as_mut_slice();
            let n =
                header::encode_msg(buf, plan.protocol, &plan.msg_spec(xid)).map_err(|_| EINVAL)?;
            let total = n.checked_add(call_len).ok_or(EINVAL)?;
            let body = buf.get_mut(n..total).ok_or(EINVAL)?;
            rqst.copy_call(body)?;
            Ok(total)
        })();
        let total = match r {
            Ok(t) => t,
            Err(e) => {
                let _ = q.sends.lock().push(sb);
                return Err(e);
            }
        };
        sb.len = total;
        sb.buf.sync_for_device(total);
        stats.pullup.fetch_add(1, Relaxed);
        stats.req_bytes.fetch_add(call_len as u64, Relaxed);
        self.ep.qp().post_send_one(SendWr::send(sb).signaled())
    }

    /// Starts a disconnect (the drop of the connection completes it).
    pub fn disconnect(&self) {
        let _ = self.ep.disconnect();
    }
}
