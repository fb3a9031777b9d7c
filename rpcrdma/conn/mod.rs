// SPDX-License-Identifier: GPL-2.0

//! One RPC-over-RDMA connection: rdma_cm id, QP, Receive and Send
//! buffers, the Send path; the reply handler is in `reply.rs`, the
//! per-slot FRWR registrations and their invalidation in `frwr.rs`, the CM
//! handshake the connection waits on in [`crate::connect`].
//!
//! A connection is created by the transport's connect worker
//! ([`Conn::establish`]) and torn down by `close` (dropping it drains the
//! QP and destroys the id). Its handlers reach the transport through an
//! [`XprtRef`].

use crate::backchannel::Backchannel;
use crate::connect::{ConnCm, Step, RESOLVE_TIMEOUT_MS};
use crate::ib::cm::{CmId, ConnParam, SockAddr};
use crate::ib::dma::{DmaBuf, DmaDir};
use crate::ib::endpoint::Endpoint;
use crate::ib::mr::{self, FrwrCaps, Mr, MrAccess, MrPool, MrState, MrWr, PageSeg, Segment};
use crate::ib::qp::{Qp, QpCaps, QpHandler};
use crate::ib::verbs::PollContext;
use crate::ib::wc::Completion;
use crate::ib::wr::{
    RecvBatch, RecvCtx, SendChain, SendCtx, SendWr, SgeList, MAX_RECV_BATCH, MAX_SEND_CHAIN,
};
use crate::ib::Net;
use crate::proto::chunks::MAX_RANGES;
use crate::proto::{self, CallError, ChunkPlan, Part, Reply, ReplyData};
use crate::sunrpc::rqst::{Rqst, XdrSide};
use crate::sunrpc::xprt_box::XprtRef;
use crate::trace;
use crate::xdr::header::{self, Protocol};
use core::ffi::CStr;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::alloc::{
    flags::{GFP_KERNEL, GFP_NOWAIT},
    KVec,
};
use kernel::{new_condvar, new_spinlock};

mod continued;
mod frwr;
mod recovery;
mod reply;
pub mod why;

use self::continued::Cursor;
use self::frwr::{Chunking, Finish, RegSizing, RegTable};
use self::recovery::RecoveryTable;
use self::why::{CloseWhy, Why};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, SpinLock};

/// Most MRs in one connection's pool.
const MR_POOL_MAX: usize = 256;
/// Send chains a connection keeps for posting REG_MRs and LOCAL_INVs (more
/// are allocated when they are all in use, and freed after).
const CHAINS: usize = 8;
/// The protocol state of a transport, shared by its connections'
/// handlers (it survives reconnects: it remembers v1-only servers).
pub type ProtoState = SpinLock<proto::Transport>;

/// Connection statistics shared with the transport.
#[derive(Default)]
pub struct ConnStats {
    /// Bytes of RPC Calls copied into Send buffers (C:
    /// `pullup_copy_count`; every inline byte is copied here).
    pub req_bytes: AtomicU64,
    /// Bytes of RPC Replies copied out of Receive buffers (C:
    /// `fixup_copy_count`).
    pub reply_bytes: AtomicU64,
    /// Calls or replies too large for the inline path.
    pub too_big: AtomicU64,
    /// Sends refused for lack of v2 credits (waited for buffer space).
    pub no_credits: AtomicU64,
    /// Read chunk segments sent (C: `read_chunk_count`).
    pub read_chunks: AtomicU64,
    /// Write chunk segments offered (C: `write_chunk_count`).
    pub write_chunks: AtomicU64,
    /// Reply chunk segments offered (C: `reply_chunk_count`).
    pub reply_chunks: AtomicU64,
    /// Bytes registered for the responder to write: Write and Reply
    /// chunks (C: `total_rdma_request`).
    pub rdma_request: AtomicU64,
    /// Bytes the responder wrote through Write and Reply chunks (C:
    /// `total_rdma_reply`).
    pub rdma_reply: AtomicU64,
    /// Long Calls: `RDMA_NOMSG` with a Position-Zero Read chunk (C:
    /// `nomsg_call_count`).
    pub nomsg_calls: AtomicU64,
    /// LOCAL_INV WRs posted after replies (C: `local_inv_needed`).
    pub local_inv: AtomicU64,
    /// MRs the responder invalidated (Send With Invalidate of one of the
    /// RPC's rkeys): no LOCAL_INV needed.
    pub remote_inv: AtomicU64,
    /// Send With Invalidate naming an rkey that is not one of the RPC's
    /// (the responder's error; all MRs are invalidated locally).
    pub remote_inv_foreign: AtomicU64,
    /// MRs allocated for chunks (C: `mrs_allocated`).
    pub mrs_allocated: AtomicU64,
    /// Replies whose chunks did not match what the Call registered.
    pub bad_chunk_replies: AtomicU64,
    /// Sends that found the MR pool empty (waited for buffer space).
    pub no_mrs: AtomicU64,
    /// MRs deregistered instead of reused because a registration or an
    /// invalidation failed (C: `mrs_orphaned`); replaced when the next
    /// connection builds its pool.
    pub mrs_orphaned: AtomicU64,
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

/// The context of a Send-queue WR of a connection.
pub enum SendOpCtx {
    /// A Send of a header (and the inline RPC message).
    Buf(SendBuf),
    /// A REG_MR for the RPC in request slot `slot`.
    Reg {
        /// The MR.
        wr: MrWr,
        /// The request slot.
        slot: u16,
    },
    /// A LOCAL_INV after the reply of the RPC in request slot `slot`;
    /// `last` on the last one of that RPC.
    Inv {
        /// The MR.
        wr: MrWr,
        /// The request slot.
        slot: u16,
        /// The RPC's last LOCAL_INV.
        last: bool,
    },
    /// A LOCAL_INV of [`mr::invalidate_sync`].
    SyncInv(MrWr),
}

impl SendCtx for SendOpCtx {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        match self {
            SendOpCtx::Buf(b) => sges.push(&b.buf, 0, b.len),
            _ => Ok(()),
        }
    }

    fn mr(&self) -> Option<&Mr> {
        match self {
            SendOpCtx::Buf(_) => None,
            SendOpCtx::Reg { wr, .. } | SendOpCtx::Inv { wr, .. } | SendOpCtx::SyncInv(wr) => {
                Some(wr.mr())
            }
        }
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
    /// The connection id of the tracepoints.
    id: u32,
    #[pin]
    sends: SpinLock<Stack<SendBuf>>,
    /// Receive buffers not posted right now.
    #[pin]
    recvs: SpinLock<Stack<RecvBuf>>,
    proto: Arc<ProtoState>,
    stats: Arc<ConnStats>,
    /// Where reverse-direction Calls go.
    bc: Arc<Backchannel>,
    /// Why the connection ends (shared with its CM handler).
    why: Arc<CloseWhy>,
    /// The connection's CM handler: the connect worker waits there for
    /// the answer to the version 2 probe.
    cm: Arc<ConnCm>,
    /// Chunk registrations by request slot.
    #[pin]
    regs: SpinLock<RegTable>,
    /// Notified when a slot that is being released ([`Conn::release`])
    /// has no WR left in the Send queue.
    #[pin]
    regs_idle: CondVar,
    /// Set once the PD exists (`None`: inline only).
    #[pin]
    chunking: SpinLock<Option<Arc<Chunking>>>,
    /// Error recovery state by request slot.
    #[pin]
    recovery: SpinLock<RecoveryTable>,
    /// Send chains for REG_MR and LOCAL_INV WRs: a few KiB each, so kept
    /// on the heap, never on the (deep) stacks of rpciod and the CQ
    /// workqueue.
    #[pin]
    chains: SpinLock<Stack<KBox<SendChain<SendOpCtx>>>>,
    /// A continued Call stopped half-way (waiting for credits or a Send
    /// buffer).
    #[pin]
    cursor: SpinLock<Option<Cursor>>,
}

impl ConnQp {
    #[allow(clippy::too_many_arguments)]
    fn new(
        xprt: XprtRef,
        id: u32,
        nsend: usize,
        nrecv: usize,
        proto: Arc<ProtoState>,
        stats: Arc<ConnStats>,
        bc: Arc<Backchannel>,
        why: Arc<CloseWhy>,
        cm: Arc<ConnCm>,
        sizing: RegSizing,
    ) -> Result<Self> {
        let regs = RegTable::new(sizing.slots, sizing.mrs_per_rpc, sizing.depth)?;
        let recovery = RecoveryTable::new(sizing.slots)?;
        let mut chains = Stack::with_capacity(CHAINS)?;
        if sizing.depth > 0 {
            for _ in 0..CHAINS {
                let _ = chains.push(SendChain::new_boxed(GFP_KERNEL)?);
            }
        }
        let state = Arc::pin_init(
            try_pin_init!(QpState {
                xprt,
                id,
                sends <- new_spinlock!(Stack::with_capacity(nsend)?),
                recvs <- new_spinlock!(Stack::with_capacity(nrecv)?),
                proto,
                stats,
                bc,
                why,
                cm,
                regs <- new_spinlock!(regs),
                regs_idle <- new_condvar!(),
                chunking <- new_spinlock!(None),
                recovery <- new_spinlock!(recovery),
                chains <- new_spinlock!(chains),
                cursor <- new_spinlock!(None),
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
        let mut left = n;
        let mut short = 0u32;
        // One batch at a time, each moved into the post: a batch holds
        // MAX_RECV_BATCH buffers, so two at once would cost stack.
        while left > 0 {
            let mut batch = RecvBatch::new();
            while left > 0 && batch.len() < MAX_RECV_BATCH {
                left -= 1;
                let Some(buf) = self.recvs.lock().pop() else {
                    short += 1;
                    continue;
                };
                if let Err(buf) = batch.push(buf) {
                    let _ = self.recvs.lock().push(buf);
                    break;
                }
            }
            if batch.is_empty() {
                continue;
            }
            // A failed post hands the buffers back as Aborted (counted
            // there).
            let _ = qp.post_recv(batch);
        }
        if short > 0 {
            self.proto.lock().receives_unposted(short);
        }
    }

    fn chunking(&self) -> Option<Arc<Chunking>> {
        self.chunking.lock().clone()
    }

    /// An empty Send chain from the connection's spares, else a new one.
    fn take_chain(&self) -> Result<KBox<SendChain<SendOpCtx>>> {
        match self.chains.lock().pop() {
            Some(c) => Ok(c),
            None => SendChain::new_boxed(GFP_NOWAIT),
        }
    }

    /// Gives an (empty) chain back; one too many is freed.
    fn put_chain(&self, chain: KBox<SendChain<SendOpCtx>>) {
        let _ = self.chains.lock().push(chain);
    }
}

impl QpHandler for ConnQp {
    type SendCtx = SendOpCtx;
    type RecvCtx = RecvBuf;

    fn send_done(&self, qp: &Qp<Self>, ctx: SendOpCtx, c: Completion<'_>) {
        let this = &*self.0;
        if let Completion::Done(wc) = &c {
            if !wc.is_success() {
                if !wc.is_flushed() {
                    pr_err!("send: completion error {:?}\n", wc.status_msg());
                    this.why.note(Why::SendError);
                }
                this.xprt.force_disconnect();
            }
        }
        match ctx {
            SendOpCtx::Buf(b) => {
                let _ = this.sends.lock().push(b);
            }
            SendOpCtx::Reg { wr, slot } => {
                if let Some(mr) = wr.done() {
                    this.reg_done(qp, usize::from(slot), mr);
                }
            }
            SendOpCtx::Inv { wr, slot, last } => {
                if let Some(mr) = wr.done() {
                    this.inv_done(usize::from(slot), mr, last);
                }
            }
            SendOpCtx::SyncInv(wr) => {
                let _ = wr.done();
            }
        }
        this.xprt.write_space();
    }

    fn recv_done(&self, qp: &Qp<Self>, ctx: RecvBuf, c: Completion<'_>) {
        let this = &*self.0;
        match c {
            Completion::Done(wc) if wc.is_success() => {
                let len = (wc.byte_len() as usize).min(ctx.0.len());
                ctx.0.sync_for_cpu(len);
                let more = this.handle(qp, &ctx.0.as_slice()[..len], wc.invalidated_rkey());
                let _ = this.recvs.lock().push(ctx);
                // Keep the peer's credits backed (in batches, as asked).
                this.post_receives(qp, more);
            }
            Completion::Done(wc) => {
                this.proto.lock().receive_flushed();
                if !wc.is_flushed() {
                    pr_err!("receive: completion error {:?}\n", wc.status_msg());
                    this.why.note(Why::RecvError);
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
    /// The connection id of the tracepoints.
    pub id: u32,
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
        bc: &Arc<Backchannel>,
    ) -> Result<Conn> {
        let id = trace::next_conn_id();
        let mut step = c"setup";
        let r = Self::establish_as(id, &mut step, net, dst, xprt, proto_state, stats, bc);
        if let Err(e) = &r {
            trace::connect_error(dst, step, e.to_errno());
        }
        r
    }

    /// [`Conn::establish`] of connection `id`; `step` names the step in
    /// progress, for the tracepoint of a failure.
    #[allow(clippy::too_many_arguments)]
    fn establish_as(
        id: u32,
        step: &mut &'static CStr,
        net: &Net,
        dst: &SockAddr,
        xprt: &dyn Fn() -> XprtRef,
        proto_state: &Arc<ProtoState>,
        stats: &Arc<ConnStats>,
        bc: &Arc<Backchannel>,
    ) -> Result<Conn> {
        let (config, plan) = {
            let mut p = proto_state.lock();
            (*p.config(), p.connect())
        };
        xprt().set_cwnd(plan.credits.credits, true);

        let why = Arc::new(CloseWhy::default(), GFP_KERNEL)?;
        let cm = ConnCm::new(xprt(), why.clone())?;
        let conn_id = id;
        let id = CmId::new(net, cm.clone())?;
        *step = c"address resolution";
        id.resolve_addr(None, dst, RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::AddrResolved, "address resolution")?;
        *step = c"route resolution";
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::RouteResolved, "route resolution")?;
        *step = c"resources";

        // FRWR for chunks; without it (or with frwr=N) the connection is
        // inline only.
        let frwr = id
            .device()
            .filter(|_| crate::compat::params::frwr())
            .and_then(|d| FrwrCaps::query(d).ok());
        let max_wr = id
            .device()
            .map_or(0, |d| d.max_qp_wr().min(d.max_cqe()).max(0) as u32);
        let segs = frwr.map_or(0, |c| {
            proto::Limits::segs_for_depth(mr::page_size() as u32, c.depth).min(c.max_segs)
        });
        proto_state.lock().set_max_segs(segs);
        // One Read chunk and one Reply chunk per RPC at most.
        let mrs_per_rpc = 2 * segs as usize;

        let nrecv = config.recv_queue_depth();
        let nsend = config.max_requests as usize + 2;
        // Each RPC: its Send, and a REG_MR and a LOCAL_INV per MR.
        let send_wr = (nsend * (1 + 2 * mrs_per_rpc))
            .min(max_wr.saturating_sub(1) as usize)
            .max(nsend);
        let caps = QpCaps {
            max_send_wr: send_wr as u32,
            max_recv_wr: nrecv,
            max_send_sge: 1,
            max_recv_sge: 1,
        };
        let qp = ConnQp::new(
            xprt(),
            conn_id,
            nsend,
            nrecv as usize,
            proto_state.clone(),
            stats.clone(),
            bc.clone(),
            why,
            cm.clone(),
            RegSizing {
                slots: config.max_requests as usize,
                mrs_per_rpc,
                depth: frwr.map_or(0, |c| c.depth as usize),
            },
        )?;
        let ep = Endpoint::new(id, &caps, PollContext::Workqueue, qp)?;
        if let Some(frwr) = frwr.filter(|_| segs > 0) {
            // The C client registers at most a few hundred MRs per
            // connection up front; a Send that finds none waits.
            let size = (config.max_requests as usize * segs as usize).clamp(1, MR_POOL_MAX);
            let pool = MrPool::new(ep.pd(), frwr, size)?;
            stats.mrs_allocated.fetch_add(size as u64, Relaxed);
            let c = Arc::new(Chunking { caps: frwr, pool }, GFP_KERNEL)?;
            *ep.qp().handler().0.chunking.lock() = Some(c);
        }

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
        *step = c"connection";
        ep.connect(&ConnParam::rpcrdma_client(ep.device(), &pd))?;
        cm.wait_for(Step::Established, "connection")?;

        // RFC 8797: the peer's sizes cap ours; absent or invalid private
        // data means the defaults of the version in use.
        let peer = cm.peer();
        trace::pvtdata(conn_id, &peer);
        let limits = proto_state.lock().established(peer);
        trace::connect(
            conn_id,
            dst,
            plan.protocol,
            limits.send,
            limits.recv,
            config.max_requests,
        );
        match plan.protocol {
            Protocol::V2 => pr_info!(
                "connected to {} (conn {}): probing RPC-over-RDMA version 2 (inline send {} recv {}, {} credits max)\n",
                dst, conn_id, limits.send, limits.recv, config.max_requests
            ),
            Protocol::V1 => {
                trace::version(conn_id, Protocol::V1, c"version 1 from the start");
                pr_info!(
                    "connected to {} (conn {}): RPC-over-RDMA version 1 (inline send {} recv {}, {} credits max)\n",
                    dst, conn_id, limits.send, limits.recv, config.max_requests
                )
            }
        }
        let conn = Conn {
            ep,
            limits,
            id: conn_id,
        };
        if plan.protocol == Protocol::V2 {
            *step = c"version 2 probe";
            conn.probe(proto_state, &cm)?;
            // The peer's segment properties may leave room for less than
            // a full payload: lower the transport's, before the upper
            // layer sizes its I/O (NFS reads it at mount).
            let depth = frwr.map_or(1, |c| c.depth);
            let max = proto_state
                .lock()
                .max_payload(mr::page_size() as u32, depth);
            if let Some(bytes) = max {
                if xprt().lower_max_payload(bytes as usize) {
                    pr_info!(
                        "conn {}: the server's segment limits allow RPC payloads of {} bytes at most\n",
                        conn_id,
                        bytes
                    );
                }
            }
        }
        Ok(conn)
    }

    /// Sends our `RDMA2_CONNPROP` as the version 2 probe and waits for
    /// the server's answer (see `proto::connprop`), unless this transport
    /// probes with its first RPC. `EAGAIN` when the probe is not answered
    /// in time (the server is remembered as not answering CONNPROP: the
    /// next connection probes with an RPC) or the connection fails
    /// meanwhile: SUNRPC then connects again.
    fn probe(&self, proto_state: &Arc<ProtoState>, cm: &ConnCm) -> Result {
        let Some(plan) = proto_state.lock().connprop_probe() else {
            return Ok(());
        };
        if trace::connprop_enabled() {
            let mut sent = crate::xdr::props::TransportProperties::DEFAULTS;
            for p in &plan.props {
                sent.apply(p);
            }
            trace::connprop(self.id, c"sent", &sent);
        }
        if let Err(e) = self.post_send(|buf| plan.encode(buf).map_err(|_| EINVAL)) {
            pr_err!(
                "conn {}: posting the RDMA2_CONNPROP probe failed ({:?})\n",
                self.id,
                e
            );
            return Err(EAGAIN);
        }
        match cm.wait_probe_answer(proto::connprop::PROBE_TIMEOUT_MS) {
            Ok(true) => Ok(()),
            Ok(false) => {
                if !proto_state.lock().probe_timed_out() {
                    // Answered just now.
                    return Ok(());
                }
                pr_warn!(
                    "conn {}: no answer to the RPC-over-RDMA version 2 probe (RDMA2_CONNPROP) in {} ms: reconnecting; this server's connections will probe with their first RPC\n",
                    self.id,
                    proto::connprop::PROBE_TIMEOUT_MS
                );
                self.disconnect(Why::ProbeTimeout);
                Err(EAGAIN)
            }
            Err(e) => {
                pr_warn!(
                    "conn {}: the connection failed while probing for version 2 ({:?})\n",
                    self.id,
                    e
                );
                Err(EAGAIN)
            }
        }
    }

    /// Marshals `rqst` (in request slot `slot`) and posts it: inline as
    /// `RDMA_MSG` / `RDMA2_MSG`, or with a Reply chunk over the whole
    /// receive buffer (Long Reply) and/or as `RDMA_NOMSG` with a
    /// Position-Zero Read chunk over the whole Call (Long Call). The MRs
    /// are registered by REG_MR WRs chained before the signalled Send.
    pub fn send(&self, rqst: &Rqst, slot: u16, stats: &ConnStats) -> Result {
        let q = &self.ep.qp().handler().0;
        // Registrations left from an earlier transmission on this
        // connection (the v2 probe sent again in v1) go first.
        self.release(slot);
        let xid = u32::from_be(rqst.xid());
        if let Some(e) = self.blocked_by_continued(xid) {
            return Err(e);
        }
        if self.continuing() {
            return self.send_continued(rqst, xid, stats);
        }
        let chunking = q.chunking();
        // Receive pages the upper layer left to the transport.
        rqst.fill_sparse_pages()?;
        let mut rpc = rqst.chunk_rpc();
        rpc.ddp_allowed &= crate::compat::params::ddp();
        let page_size = mr::page_size() as u32;
        let depth = chunking.as_ref().map_or(1, |c| c.caps.depth);
        // A resend after a transport error is planned as its recovery says.
        let recovery = q.recovery.lock().begin(usize::from(slot), xid);
        let hints = recovery.hints();
        if let Some(c) = &chunking {
            // Make sure the MRs are there before the Call is counted as
            // sent: a Send that finds the pool empty waits for space.
            let p = q.proto.lock();
            let limits = p.limits(page_size, depth);
            let need =
                proto::chunks::plan_with(&rpc, p.thresholds(), &limits, &p.plan_hints(&hints))
                    .map_or(0, |pl| pl.ranges().len());
            drop(p);
            if need > c.pool.available() {
                stats.no_mrs.fetch_add(1, Relaxed);
                return Err(crate::compat::errno::enobufs());
            }
        }
        let plan = q
            .proto
            .lock()
            .prepare_rpc_hinted(xid, &rpc, page_size, depth, &hints);
        let (plan, chunks) = match plan {
            Ok(p) => p,
            Err(CallError::NoCredits) => {
                stats.no_credits.fetch_add(1, Relaxed);
                let c = *q.proto.lock().credits();
                trace::credit_wait(self.id, xid, &c);
                return Err(crate::compat::errno::enobufs());
            }
            Err(CallError::NotConnected) => return Err(crate::compat::errno::enotconn()),
            Err(CallError::TooBig(t)) => {
                stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "send: {:?} of {} bytes exceeds the inline limit of {} and this connection has no chunks (-EMSGSIZE)\n",
                        t.direction, t.len, t.limit
                    );
                }
                return Err(crate::compat::errno::emsgsize());
            }
            Err(CallError::Plan(proto::PlanError::TooBig(t)))
                if chunking.is_none() && t.direction == proto::Direction::Call =>
            {
                // Inline only: a version 2 connection continues the Call
                // (-00 §4.5.2); version 1 cannot.
                return self.send_continued(rqst, xid, stats);
            }
            Err(CallError::Plan(e)) => {
                stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "send: xid {:#010x} cannot be sent: {:?} ({})\n",
                        xid,
                        e,
                        e.errno().to_kernel()
                    );
                }
                return Err(Error::from_errno(e.errno().to_kernel()));
            }
        };
        trace::marshal(
            self.id,
            rqst.task_id(),
            xid,
            chunks.protocol(),
            &chunks,
            u32::try_from(rqst.call_len()).unwrap_or(u32::MAX),
            plan.probe,
            &recovery,
        );
        let Some(mut sb) = q.sends.lock().pop() else {
            return Err(crate::compat::errno::enobufs());
        };
        let n = chunks.ranges().len();
        if n > 0 {
            if let Err(e) = self.register(rqst, slot, xid, &chunks, chunking.as_deref()) {
                let _ = q.sends.lock().push(sb);
                self.release(slot);
                return Err(e);
            }
        }
        let r = (|| {
            let g = q.regs.lock();
            let segs = match g.get(usize::from(slot)) {
                Some(r) if n > 0 => r.segs.get(..r.nsegs).ok_or(EINVAL)?,
                _ => &[],
            };
            let remote_inv = q.proto.lock().thresholds().remote_invalidation;
            let lists = chunks.chunk_lists(segs, remote_inv).map_err(|_| EINVAL)?;
            let spec = crate::xdr::header::MsgSpec {
                kind: chunks.kind(),
                chunks: lists.lists(),
                inv_handle: lists.inv_handle(),
                ..plan.msg_spec(xid)
            };
            let buf = sb.buf.as_mut_slice();
            let hdr = header::encode_msg(buf, plan.protocol, &spec).map_err(|_| EINVAL)?;
            drop(g);
            let layout = chunks.send_layout();
            if layout.is_empty() {
                return Ok(hdr);
            }
            let total = hdr.checked_add(layout.len() as usize).ok_or(EINVAL)?;
            let body = buf.get_mut(hdr..total).ok_or(EINVAL)?;
            rqst.copy_call_layout(body, &layout)?;
            Ok(total)
        })();
        let total = match r {
            Ok(t) => t,
            Err(e) => {
                let _ = q.sends.lock().push(sb);
                self.release(slot);
                return Err(e);
            }
        };
        sb.len = total;
        sb.buf.sync_for_device(total);
        if chunks.call() == proto::CallForm::Long {
            stats.nomsg_calls.fetch_add(1, Relaxed);
        }
        let sum = |r: &[proto::Range]| r.iter().map(|r| u64::from(r.len)).sum::<u64>();
        stats
            .read_chunks
            .fetch_add(chunks.read_ranges().len() as u64, Relaxed);
        stats
            .write_chunks
            .fetch_add(chunks.write_ranges().len() as u64, Relaxed);
        stats
            .reply_chunks
            .fetch_add(chunks.reply_ranges().len() as u64, Relaxed);
        stats.rdma_request.fetch_add(
            sum(chunks.write_ranges()) + sum(chunks.reply_ranges()),
            Relaxed,
        );
        stats
            .req_bytes
            .fetch_add(u64::from(chunks.send_layout().len()), Relaxed);
        self.post_with_regs(slot, n, sb)
    }

    /// Maps every range of `chunks` into an MR from the pool and keeps
    /// the MRs and their segments in `slot`.
    fn register(
        &self,
        rqst: &Rqst,
        slot: u16,
        xid: u32,
        chunks: &ChunkPlan,
        chunking: Option<&Chunking>,
    ) -> Result {
        let q = &self.ep.qp().handler().0;
        let c = chunking.ok_or(EIO)?;
        let i = usize::from(slot);
        let mut pages = {
            let mut g = q.regs.lock();
            let r = g.activate(i, xid).ok_or(EINVAL)?;
            r.plan = Some(*chunks);
            core::mem::take(&mut r.pages)
        };
        let ret = self.register_ranges(rqst, slot, xid, chunks, c, &mut pages);
        if let Some(r) = q.regs.lock().get_mut(i) {
            r.pages = pages;
        }
        ret
    }

    fn register_ranges(
        &self,
        rqst: &Rqst,
        slot: u16,
        xid: u32,
        chunks: &ChunkPlan,
        c: &Chunking,
        pages: &mut KVec<PageSeg>,
    ) -> Result {
        let q = &self.ep.qp().handler().0;
        let i = usize::from(slot);
        let nread = chunks.read_ranges().len();
        for (k, range) in chunks.ranges().iter().enumerate() {
            if range.part == Part::WritePad {
                return Err(EINVAL);
            }
            let Some(mut mr) = c.pool.get() else {
                return Err(crate::compat::errno::enobufs());
            };
            let (side, access) = if k < nread {
                (XdrSide::Call, MrAccess::RemoteRead)
            } else {
                (XdrSide::Reply, MrAccess::RemoteWrite)
            };
            if let Err(e) = rqst.map_range(side, range, &mut mr, access, xid, pages) {
                c.pool.put(mr);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "send: xid {:#010x}: mapping {:?} failed ({:?})\n",
                        xid,
                        range,
                        e
                    );
                }
                return Err(e);
            }
            let seg = mr.segment().ok_or(EIO)?;
            trace::mr_reg(q.id, xid, seg.handle, seg.length, seg.offset);
            let mut g = q.regs.lock();
            let r = g.get_mut(i).ok_or(EINVAL)?;
            let Some(place) = r.segs.get_mut(k) else {
                drop(g);
                c.pool.put(mr);
                return Err(EINVAL);
            };
            *place = seg;
            r.nsegs = k + 1;
            if let Err(mr) = r.store(mr) {
                drop(g);
                c.pool.put(mr);
                return Err(EINVAL);
            }
        }
        Ok(())
    }

    /// Posts the REG_MRs of `slot`'s `n` MRs chained before the
    /// signalled Send `sb`.
    fn post_with_regs(&self, slot: u16, n: usize, sb: SendBuf) -> Result {
        let q = &self.ep.qp().handler().0;
        let qp = self.ep.qp();
        if n == 0 {
            return qp.post_send_one(SendWr::send(SendOpCtx::Buf(sb)).signaled());
        }
        let i = usize::from(slot);
        let mut chain = match q.take_chain() {
            Ok(c) => c,
            Err(e) => {
                // Nothing posted: the MRs stay in the slot until the
                // next transmission releases them.
                let _ = q.sends.lock().push(sb);
                return Err(if e == ENOMEM {
                    crate::compat::errno::enobufs()
                } else {
                    e
                });
            }
        };
        if let Some(r) = q.regs.lock().get_mut(i) {
            r.in_flight = n as u32;
        }
        loop {
            let next = q.regs.lock().get_mut(i).and_then(|r| r.take());
            let Some(mr) = next else { break };
            let wr = SendWr::reg_mr(SendOpCtx::Reg {
                wr: MrWr::new(mr),
                slot,
            });
            let _ = chain.push(wr);
            if chain.len() + 1 == MAX_SEND_CHAIN {
                // REG_MRs alone: retired by the Send's completion.
                if let Err(e) = qp.post_send_chain(&mut chain) {
                    q.put_chain(chain);
                    let _ = q.sends.lock().push(sb);
                    self.release(slot);
                    return Err(e);
                }
            }
        }
        let _ = chain.push(SendWr::send(SendOpCtx::Buf(sb)).signaled());
        let r = qp.post_send_chain(&mut chain);
        q.put_chain(chain);
        if r.is_err() {
            // Everything came back as Aborted.
            self.release(slot);
        }
        r
    }

    /// Invalidates and releases whatever `slot` still has registered
    /// (an abandoned RPC, `buf_free`; or before sending again). Waits
    /// for MRs still in the Send queue. Process context.
    pub fn release(&self, slot: u16) {
        let q = &self.ep.qp().handler().0;
        let active = q
            .regs
            .lock()
            .get(usize::from(slot))
            .is_some_and(|r| r.active);
        if active {
            self.release_slot(slot);
        }
    }

    /// [`Conn::release`] of a slot with registrations: out of line, as it
    /// needs a few KiB of stack (a synchronous invalidation) that the
    /// common path of [`Conn::send`] should not pay for.
    #[inline(never)]
    #[cold]
    fn release_slot(&self, slot: u16) {
        let q = &self.ep.qp().handler().0;
        let i = usize::from(slot);
        {
            let mut g = q.regs.lock();
            loop {
                let busy = match g.get_mut(i) {
                    Some(r) if r.active => {
                        // Keeps a reply from starting an invalidation.
                        r.releasing = true;
                        r.in_flight > 0 || r.invalidating
                    }
                    _ => return,
                };
                if !busy {
                    break;
                }
                // Every WR posted gets a completion, flushed if the QP
                // goes to error (C: frwr_unmap_sync waits uninterruptibly
                // on mr_linv_done the same way); reg_done and drain_slot
                // notify.
                q.regs_idle.wait(&mut g);
            }
        }
        let mut mrs = KVec::new();
        loop {
            let next = q.regs.lock().get_mut(i).and_then(|r| r.take());
            let Some(mr) = next else { break };
            if mr.state() == MrState::Registered {
                // Without memory the MR is dropped, which deregisters it.
                let _ = mrs.push(mr, GFP_KERNEL);
            } else {
                q.put_mr(mr);
            }
        }
        if !mrs.is_empty() {
            let xid = q.regs.lock().get(i).map_or(0, |r| r.xid);
            trace::mr_inv(
                q.id,
                xid,
                c"sync",
                0,
                u32::try_from(mrs.len()).unwrap_or(u32::MAX),
            );
            match mr::invalidate_sync(self.ep.qp(), mrs, SendOpCtx::SyncInv) {
                Ok(back) | Err((_, back)) => {
                    for mr in back {
                        q.put_mr(mr);
                    }
                }
            }
        }
        q.regs.lock().deactivate(i);
    }

    /// Posts one signalled Send that `fill` writes into a Send buffer
    /// (returning the length used): for messages that are not Calls (the
    /// backchannel's replies). `ENOBUFS` if no Send buffer is free.
    pub fn post_send(&self, fill: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result {
        let q = &self.ep.qp().handler().0;
        if self.continuing() {
            // Not between the pieces of a continued Call.
            return Err(crate::compat::errno::enobufs());
        }
        let Some(mut sb) = q.sends.lock().pop() else {
            return Err(crate::compat::errno::enobufs());
        };
        match fill(sb.buf.as_mut_slice()) {
            Ok(len) => sb.len = len,
            Err(e) => {
                let _ = q.sends.lock().push(sb);
                return Err(e);
            }
        }
        sb.buf.sync_for_device(sb.len);
        self.ep
            .qp()
            .post_send_one(SendWr::send(SendOpCtx::Buf(sb)).signaled())
    }

    /// Notes why the connection is about to end (the transport closes
    /// it later): the first cause noted is the reason reported.
    pub fn note(&self, why: Why) {
        self.ep.qp().handler().0.why.note(why);
    }

    /// Starts a disconnect (the drop of the connection completes it).
    /// Returns the reason reported by the `rpcrdma2_disconnect`
    /// tracepoint: the cause noted before, else `why`; `None` if this
    /// connection's end was reported already.
    pub fn disconnect(&self, why: Why) -> Option<Why> {
        let r = self.ep.qp().handler().0.why.report(why);
        if let Some(r) = r {
            trace::disconnect(self.id, r.name());
        }
        let _ = self.ep.disconnect();
        r
    }
}
