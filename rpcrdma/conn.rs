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
use crate::sunrpc::xprt::{Rqst, XprtRef};
use crate::xdr::chunk::ChunkLists;
use crate::xdr::header::{self, Body, ErrorBody, Flags, MsgKind, MsgSpec, Protocol};
use crate::xdr::pvtdata::{self, PrivateData};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use kernel::alloc::{flags::GFP_KERNEL, KVec};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex, SpinLock};
use kernel::{new_condvar, new_mutex, new_spinlock};

/// rdma_cm address and route resolution timeout (the C client's).
const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// How long the connect worker waits for each CM step.
const CM_STEP_TIMEOUT_MS: u32 = 30_000;
/// Our inline thresholds (the C client's defaults, `rdma_max_inline_*`).
pub const INLINE_DEFAULT: usize = 4096;
/// Receives posted beyond the credit limit (the C client's batch).
const RECV_EXTRA: u32 = 8;

/// Connection statistics shared with the transport.
#[derive(Default)]
pub struct ConnStats {
    /// Bytes of RPC Calls sent inline.
    pub req_bytes: AtomicU64,
    /// Bytes of RPC Replies received inline.
    pub reply_bytes: AtomicU64,
    /// Malformed or unexpected replies.
    pub bad_reply: AtomicU64,
    /// Calls or replies too large for the inline path.
    pub too_big: AtomicU64,
    /// Whole-message copies into the Send buffer (C: pullup).
    pub pullup: AtomicU64,
    /// Backchannel calls received and dropped (not supported yet).
    pub bc_dropped: AtomicU64,
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

/// The QP handler's state (pinned: it holds a lock).
#[pin_data]
pub struct QpState {
    xprt: XprtRef,
    #[pin]
    sends: SpinLock<Stack<SendBuf>>,
    /// Our credit request / the maximum grant we accept.
    max_reqs: u32,
    /// The last credit grant applied to the congestion window.
    credits: AtomicU32,
    stats: Arc<ConnStats>,
}

impl ConnQp {
    fn new(xprt: XprtRef, nsend: usize, max_reqs: u32, stats: Arc<ConnStats>) -> Result<Self> {
        let state = Arc::pin_init(
            try_pin_init!(QpState {
                xprt,
                sends <- new_spinlock!(Stack::with_capacity(nsend)?),
                max_reqs,
                credits: AtomicU32::new(1),
                stats,
            }? Error),
            GFP_KERNEL,
        )?;
        Ok(ConnQp(state))
    }
}

impl QpState {

    /// Handles one received message (the reply handler).
    fn handle_reply(&self, data: &[u8]) {
        let hdr = match header::decode(data) {
            Ok(h) => h,
            Err(e) => {
                self.stats.bad_reply.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!("reply: malformed transport header ({}), dropped\n", e);
                }
                return;
            }
        };
        if hdr.protocol != Protocol::V1 {
            self.stats.bad_reply.fetch_add(1, Relaxed);
            pr_err!("reply: RPC-over-RDMA version {} on a version 1 connection, dropped\n", hdr.protocol.vers());
            return;
        }
        // RFC 8166 §3.3: the grant, clamped to [1, our request].
        let grant = hdr.credit.clamp(1, self.max_reqs);
        if self.credits.swap(grant, Relaxed) != grant {
            self.xprt.set_cwnd(grant, false);
        }
        let xid = hdr.xid.to_be();
        let done = self.xprt.with_rqst(xid, |rqst: &Rqst| match &hdr.body {
            Body::Msg(m) if m.chunks.is_empty() => {
                match rqst.copy_reply(m.payload) {
                    Ok(()) => {
                        self.stats.reply_bytes.fetch_add(m.payload.len() as u64, Relaxed);
                        rqst.complete(&self.xprt, m.payload.len() as i32);
                    }
                    Err(e) => {
                        self.stats.too_big.fetch_add(1, Relaxed);
                        if crate::sunrpc::ratelimit() {
                            pr_err!("reply: {} bytes do not fit the receive buffer ({:?})\n", m.payload.len(), e);
                        }
                        rqst.fail(&self.xprt, e.to_errno());
                    }
                }
            }
            Body::Msg(_) | Body::NoMsg(_) => {
                // We never offer chunks, so a reply using them is invalid.
                self.stats.bad_reply.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!("reply: chunk lists in a reply to an inline call (xid {:#010x}) (-EIO)\n", hdr.xid);
                }
                rqst.fail(&self.xprt, EIO.to_errno());
            }
            Body::Error(e) => {
                self.stats.bad_reply.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    if *e == ErrorBody::BadXdr {
                        // ERR_CHUNK: typically a Reply larger than the
                        // server's inline threshold and no Reply chunk.
                        pr_err!("reply: server answered ERR_CHUNK (xid {:#010x}): the reply does not fit inline and Write/Reply chunks are not supported yet (-EIO)\n", hdr.xid);
                    } else {
                        pr_err!("reply: server answered RDMA_ERROR {:?} (xid {:#010x}) (-EIO)\n", e, hdr.xid);
                    }
                }
                rqst.fail(&self.xprt, EIO.to_errno());
            }
            Body::ConnProp(_) | Body::ConnPropPart(_) => {
                self.stats.bad_reply.fetch_add(1, Relaxed);
                rqst.fail(&self.xprt, EIO.to_errno());
            }
        });
        if done.is_none() {
            if is_call(&hdr.body) {
                // A backchannel (NFSv4.1 callback) Call: not served yet.
                self.stats.bc_dropped.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_warn!("backchannel: callback xid {:#010x} dropped (backchannel calls are not supported yet)\n", hdr.xid);
                }
            } else {
                // A late reply for an RPC that was already retransmitted
                // or abandoned: nothing waits for it.
                pr_debug!("reply: no request waits for xid {:#010x}\n", hdr.xid);
            }
        }
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
                this.handle_reply(&ctx.0.as_slice()[..len]);
                // Keep the peer's credits backed: the buffer goes straight
                // back on the Receive queue.
                let _ = qp.post_recv_one(ctx);
            }
            Completion::Done(wc) => {
                if !wc.is_flushed() {
                    pr_err!("receive: completion error {:?}\n", wc.status_msg());
                }
                this.xprt.force_disconnect();
            }
            _ => {}
        }
    }
}

/// Whether an RDMA_MSG carries an RPC Call (msg_type 0 after the XID),
/// i.e. a backchannel request from the server.
fn is_call(body: &Body<'_>) -> bool {
    match body {
        Body::Msg(m) => m.payload.get(4..8) == Some(&[0, 0, 0, 0][..]),
        _ => false,
    }
}

/// Inline thresholds for one connection (RFC 8797 exchange).
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// Largest Send we may post (header + message).
    pub send: usize,
    /// Largest message the peer may send us.
    pub recv: usize,
    /// The peer accepts Send With Invalidate.
    pub remote_invalidate: bool,
}

/// An established connection.
pub struct Conn {
    ep: Endpoint<ConnCm, ConnQp>,
    /// Thresholds in force.
    pub limits: Thresholds,
    /// The RPC-over-RDMA version in use.
    pub protocol: Protocol,
    max_reqs: u32,
}

impl Conn {
    /// Connects to `dst` and returns the established connection
    /// (process context; sleeps).
    pub fn establish(
        net: &Net,
        dst: &SockAddr,
        xprt: &dyn Fn() -> XprtRef,
        max_reqs: u32,
        stats: &Arc<ConnStats>,
    ) -> Result<Conn> {
        let cm = ConnCm::new(xprt())?;
        let id = CmId::new(net, cm.clone())?;
        id.resolve_addr(None, dst, RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::AddrResolved, "address resolution")?;
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::RouteResolved, "route resolution")?;

        let nrecv = max_reqs + RECV_EXTRA;
        let nsend = max_reqs as usize + 2;
        let caps = QpCaps {
            max_send_wr: nsend as u32,
            max_recv_wr: nrecv,
            max_send_sge: 1,
            max_recv_sge: 1,
        };
        let qp = ConnQp::new(xprt(), nsend, max_reqs, stats.clone())?;
        let ep = Endpoint::new(id, &caps, PollContext::Workqueue, qp)?;

        // Buffers: Receives are posted before connecting so the peer's
        // first message has somewhere to land.
        let mut batch = RecvBatch::new();
        for i in 0..nrecv {
            let buf = RecvBuf(DmaBuf::new(ep.pd(), INLINE_DEFAULT, DmaDir::FromDevice, GFP_KERNEL)?);
            if let Err(b) = batch.push(buf) {
                ep.qp().post_recv(core::mem::replace(&mut batch, RecvBatch::new()))?;
                if batch.push(b).is_err() {
                    return Err(ENOMEM);
                }
            }
            let _ = i;
        }
        if !batch.is_empty() {
            ep.qp().post_recv(batch)?;
        }
        {
            let mut sends = ep.qp().handler().0.sends.lock();
            for _ in 0..nsend {
                let buf = DmaBuf::new(ep.pd(), INLINE_DEFAULT, DmaDir::ToDevice, GFP_KERNEL)?;
                if sends.push(SendBuf { buf, len: 0 }).is_err() {
                    break;
                }
            }
        }

        let ours = PrivateData {
            remote_invalidate: false,
            send_size: INLINE_DEFAULT as u32,
            recv_size: INLINE_DEFAULT as u32,
        };
        let mut pd = [0u8; 8];
        let n = ours.encode(&mut pd).map_err(|_| EINVAL)?;
        ep.connect(&ConnParam::rpcrdma_client(ep.device(), &pd[..n]))?;
        cm.wait_for(Step::Established, "connection")?;

        // RFC 8797: the peer's sizes cap ours; absent or invalid private
        // data means the version 1 defaults (1024 both ways).
        let peer = {
            let g = cm.state.lock();
            pvtdata::decode(&g.peer[..g.peer_len]).or_v1_defaults()
        };
        let limits = Thresholds {
            send: INLINE_DEFAULT.min(peer.recv_size as usize),
            recv: INLINE_DEFAULT.min(peer.send_size as usize),
            remote_invalidate: peer.remote_invalidate,
        };
        pr_info!(
            "connected to {}: RPC-over-RDMA version 1, inline send {} recv {}, {} credits max\n",
            dst, limits.send, limits.recv, max_reqs
        );
        Ok(Conn { ep, limits, protocol: Protocol::V1, max_reqs })
    }

    /// Marshals `rqst` as an inline RDMA_MSG and posts it.
    pub fn send(&self, rqst: &Rqst, stats: &ConnStats) -> Result {
        let call_len = rqst.call_len();
        let spec = MsgSpec {
            xid: u32::from_be(rqst.xid()),
            credit: self.max_reqs,
            kind: MsgKind::Msg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        };
        let hdr_len = spec.encoded_len(self.protocol).ok_or(EINVAL)?;
        let total = hdr_len.checked_add(call_len).ok_or(EINVAL)?;
        if total > self.limits.send {
            // Read chunks come with FRWR; until then a Call that does not
            // fit inline fails cleanly. (A Reply that may not fit is still
            // sent: most replies are far smaller than their buffer, and a
            // server that cannot send one inline answers ERR_CHUNK.)
            stats.too_big.fetch_add(1, Relaxed);
            if crate::sunrpc::ratelimit() {
                pr_err!(
                    "send: a {}-byte call exceeds the {}-byte inline threshold and Read chunks are not supported yet (-EMSGSIZE)\n",
                    total,
                    self.limits.send
                );
            }
            return Err(crate::errno::emsgsize());
        }
        let q = &self.ep.qp().handler().0;
        let Some(mut sb) = q.sends.lock().pop() else {
            return Err(crate::errno::enobufs());
        };
        let r = (|| {
            let buf = sb.buf.as_mut_slice();
            let n = header::encode_msg(buf, self.protocol, &spec).map_err(|_| EINVAL)?;
            let body = buf.get_mut(n..total).ok_or(EINVAL)?;
            rqst.copy_call(body)?;
            Ok(())
        })();
        if let Err(e) = r {
            let _ = q.sends.lock().push(sb);
            return Err(e);
        }
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
