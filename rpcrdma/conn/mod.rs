// SPDX-License-Identifier: GPL-2.0

//! One RPC-over-RDMA connection: rdma_cm id, QP, Receive and Send
//! buffers; its setup is in `establish.rs`, the Send path in `send.rs`,
//! the reply handler in `reply.rs`, the per-slot FRWR registrations and
//! their invalidation in `frwr.rs`, Message Continuation in
//! `continued.rs`, the replies to reverse-direction Calls in
//! `bc_reply.rs`, recovery from transport errors in `recovery.rs`, the
//! keepalive probe in `keepalive.rs`, a
//! request's `xdr_buf`s in the protocol's terms in `xdrbuf.rs`, the CM
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
use crate::ib::mr::caps::FastRegCaps;
use crate::ib::mr::inv::MrWr;
use crate::ib::mr::pool::MrPool;
use crate::ib::mr::{self, Mr, MrAccess, MrRef, MrState, RemoteRegion};
use crate::ib::qp::{Qp, QpCaps, QpHandler};
use crate::ib::verbs::PollContext;
use crate::ib::wc::Completion;
use crate::ib::wr::{
    RecvBatch, RecvCtx, SendChain, SendCtx, SendWr, SgeList, MAX_RECV_BATCH, MAX_SEND_CHAIN,
};
use crate::ib::{Device, Net};
use crate::proto::chunks::sizing::{FrwrSizing, SizingError, MAX_SEGS};
use crate::proto::chunks::MAX_RANGES;
use crate::proto::{self, CallError, ChunkPlan, Part, Reply, ReplyData};
use crate::sunrpc::rqst::{TxRqst, XdrSide};
use crate::sunrpc::xprt_box::XprtRef;
use crate::trace;
use crate::xdr::header::{self, Protocol};
use core::ffi::CStr;
use core::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
use kernel::alloc::{
    flags::{GFP_KERNEL, GFP_NOWAIT},
    KVec,
};
use kernel::{new_condvar, new_spinlock};

mod bc_reply;
mod continued;
mod establish;
mod frwr;
mod keepalive;
mod recovery;
mod reply;
mod send;
mod xdrbuf;

use self::continued::CursorCell;
#[cfg(rpcrdma2_kunit)]
pub(crate) use self::establish::frwr_sizing;
use self::frwr::{Chunking, Finish, RegSizing, RegTable, Registrations};
use self::keepalive::Liveness;
use self::recovery::{RecoveryTable, SlotRecovery};
use crate::compat::set_once::SetOnce;
use crate::sync::kvec::{kfree_list as idle, KFreeList};
use crate::why::{self, CloseWhy, Why};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, SpinLock};

/// Send chains a connection keeps for posting REG_MRs and LOCAL_INVs (more
/// are allocated when they are all in use, and freed after: a chain given
/// back while this many are idle).
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
    /// Replies dropped as stale: they arrived while the RPC, sent again
    /// on the same connection, had its MRs mapped and its REG_MRs not yet
    /// posted (`proto::reqlife`'s `Action::Stale`), so they answer an
    /// earlier transmission; the RPC ends with the reply to this one.
    pub stale_replies: AtomicU64,
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
    /// A REG_MR of an MR that stays in its request's slot: the WR only
    /// keeps the MR's hardware object alive until it is retired.
    Reg(MrRef),
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
    /// A LOCAL_INV of [`mr::inv::invalidate_sync`].
    SyncInv(MrWr),
    /// The keepalive probe, a zero-length RDMA Write (`keepalive.rs`).
    Probe,
}

impl SendCtx for SendOpCtx {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        match self {
            SendOpCtx::Buf(b) => sges.push(&b.buf, 0, b.len),
            _ => Ok(()),
        }
    }

    fn mr(&self) -> Option<&MrRef> {
        match self {
            SendOpCtx::Buf(_) | SendOpCtx::Probe => None,
            SendOpCtx::Reg(r) => Some(r),
            SendOpCtx::Inv { wr, .. } | SendOpCtx::SyncInv(wr) => SendCtx::mr(wr),
        }
    }
}

/// One flag per request slot that says whether a table behind a lock has
/// something for the slot, so that the common case (nothing) costs a load
/// instead of the lock.
///
/// # Invariants
///
/// The table that owns the flags writes them, under its lock, whenever a
/// slot changes between having something and not (each table says what);
/// so with that lock free, a flag is true exactly when the table has
/// something for the slot. Stores are release and loads acquire: a reader
/// that sees a flag cleared sees what the table did before.
pub struct SlotFlags(KVec<AtomicBool>);

impl SlotFlags {
    fn new(n: usize) -> Result<Arc<Self>> {
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            v.push(AtomicBool::new(false), GFP_KERNEL)?;
        }
        Ok(Arc::new(SlotFlags(v), GFP_KERNEL)?)
    }

    /// The flag of slot `i` (`false` for a slot the table does not have).
    pub fn get(&self, i: usize) -> bool {
        self.0.get(i).is_some_and(|a| a.load(Acquire))
    }

    /// Sets the flag of slot `i`; the owning table's only, under its lock.
    fn set(&self, i: usize, v: bool) {
        if let Some(a) = self.0.get(i) {
            a.store(v, Release);
        }
    }
}

/// Which connection, if any, holds registrations in each request slot of
/// a transport (its connection id; 0: none), so that `buf_free` looks at
/// the current connection (under the transport's `conn` lock) only for a
/// request that still has some. One per transport, shared by its
/// connections.
///
/// # Invariants
///
/// A connection's registration table ([`frwr::RegTable`]) writes slot
/// `i`'s entry only: its id when it makes the slot active, and 0, if the
/// entry is still its id, when it makes the slot idle. So an entry of 0
/// means no connection's table has the slot active but for one making
/// it active right now, which is the slot's own sender; an older
/// connection that drains late cannot clear a newer one's entry.
/// Connection ids are never 0 (`trace::next_conn_id`).
pub struct SlotOwners(KVec<AtomicU32>);

impl SlotOwners {
    /// `n` slots, all without registrations.
    pub fn new(n: usize) -> Result<Arc<Self>> {
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            v.push(AtomicU32::new(0), GFP_KERNEL)?;
        }
        Ok(Arc::new(SlotOwners(v), GFP_KERNEL)?)
    }

    /// Whether request slot `i` may hold registrations on a connection
    /// (true for a slot beyond the table: not known). Once the slot's
    /// request has ended (its task neither sends nor waits for a reply
    /// any more), false stays false.
    pub fn may_hold(&self, i: usize) -> bool {
        self.0.get(i).is_none_or(|a| a.load(Acquire) != 0)
    }

    /// Connection `id` made slot `i` active.
    fn claim(&self, i: usize, id: u32) {
        if let Some(a) = self.0.get(i) {
            a.store(id, Release);
        }
    }

    /// Connection `id` made slot `i` idle.
    fn disown(&self, i: usize, id: u32) {
        if let Some(a) = self.0.get(i) {
            let _ = a.compare_exchange(id, 0, Release, Relaxed);
        }
    }
}

#[cfg(rpcrdma2_kunit)]
impl SlotOwners {
    /// [`SlotOwners::claim`], for the KUnit suite.
    pub(crate) fn test_claim(&self, i: usize, id: u32) {
        self.claim(i, id)
    }

    /// [`SlotOwners::disown`], for the KUnit suite.
    pub(crate) fn test_disown(&self, i: usize, id: u32) {
        self.disown(i, id)
    }
}

/// Idle objects of a connection (Send and Receive buffers, spare Send
/// chains), which its sender, completion handlers and their error paths
/// take and give back without a lock ([`KFreeList`]).
type Idle<T> = KFreeList<T>;

/// The QP handler: Send buffer recycling and the reply handler.
pub struct ConnQp(Arc<QpState>);

/// The QP handler's state (pinned: it holds locks).
#[pin_data]
pub struct QpState {
    xprt: XprtRef,
    /// The connection id of the tracepoints.
    id: u32,
    /// Send buffers not posted right now.
    sends: Idle<SendBuf>,
    /// Receive buffers not posted right now.
    recvs: Idle<RecvBuf>,
    proto: Arc<ProtoState>,
    stats: Arc<ConnStats>,
    /// Where reverse-direction Calls go.
    bc: Arc<Backchannel>,
    /// Why the connection ends (shared with its CM handler).
    why: Arc<CloseWhy>,
    /// The connection's CM handler: the connect worker waits there for
    /// the answer to the version 2 probe.
    cm: Arc<ConnCm>,
    /// Chunk registrations by request slot, and the Send chains that
    /// post their REG_MRs and LOCAL_INVs (`frwr.rs`).
    #[pin]
    frwr: Registrations,
    /// Set once the PD exists (never: inline only); read without a
    /// lock.
    chunking: SetOnce<Arc<Chunking>>,
    /// Error recovery state by request slot (`recovery.rs`).
    #[pin]
    recovery: SlotRecovery,
    /// A continued Call stopped half-way (waiting for credits or a Send
    /// buffer).
    cursor: CursorCell,
    /// What the keepalive knows of the peer (`keepalive.rs`).
    #[pin]
    liveness: Liveness,
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
        owners: Arc<SlotOwners>,
    ) -> Result<Self> {
        let regs = RegTable::new(sizing.slots, sizing.mrs_per_rpc, owners, id)?;
        let recovery = RecoveryTable::new(sizing.slots)?;
        let chains = idle(CHAINS)?;
        if sizing.depth > 0 {
            for _ in 0..CHAINS {
                let _ = chains.give(SendChain::new_boxed(GFP_KERNEL)?);
            }
        }
        let state = Arc::pin_init(
            try_pin_init!(QpState {
                xprt,
                id,
                sends: idle(nsend)?,
                recvs: idle(nrecv)?,
                proto,
                stats,
                bc,
                why,
                cm,
                frwr <- Registrations::new(regs, chains),
                chunking: SetOnce::new(),
                recovery <- SlotRecovery::new(recovery),
                cursor: CursorCell::new(),
                liveness <- Liveness::new(),
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
                let Some(buf) = self.recvs.take() else {
                    short += 1;
                    continue;
                };
                if let Err(buf) = batch.push(buf) {
                    let _ = self.recvs.give(buf);
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

    fn chunking(&self) -> Option<&Chunking> {
        self.chunking.as_ref().map(|c| &**c)
    }
}

impl QpHandler for ConnQp {
    type SendCtx = SendOpCtx;
    type RecvCtx = RecvBuf;

    fn send_done(&self, _qp: &Qp<Self>, ctx: SendOpCtx, c: Completion<'_>) {
        let this = &*self.0;
        if let Completion::Done(wc) = &c {
            if !wc.is_success() {
                if wc.is_flushed() {
                    this.why.note(Why::Flushed);
                } else if matches!(ctx, SendOpCtx::Probe) {
                    this.probe_failed(wc);
                } else {
                    pr_err!("send: completion error {:?}\n", wc.status_msg());
                    this.why.note(Why::SendError);
                }
                this.xprt.force_disconnect();
            }
        }
        match ctx {
            SendOpCtx::Buf(b) => {
                let _ = this.sends.give(b);
            }
            // Its error (if any) marked the MR broken; the MR is in its
            // request's slot.
            SendOpCtx::Reg(_) => {}
            SendOpCtx::Inv { wr, slot, last } => {
                if let Some(mr) = wr.done() {
                    this.inv_done(usize::from(slot), mr, last);
                }
            }
            SendOpCtx::SyncInv(wr) => {
                let _ = wr.done();
            }
            SendOpCtx::Probe => this.probe_done(&c),
        }
        this.xprt.write_space();
    }

    fn recv_done(&self, qp: &Qp<Self>, ctx: RecvBuf, c: Completion<'_>) {
        let this = &*self.0;
        match c {
            Completion::Done(wc) if wc.is_success() => {
                this.liveness.received();
                let len = (wc.byte_len() as usize).min(ctx.0.len());
                ctx.0.sync_for_cpu(len);
                let more = this.handle(qp, &ctx.0.as_slice()[..len], wc.invalidated_rkey());
                let _ = this.recvs.give(ctx);
                // Keep the peer's credits backed (in batches, as asked).
                this.post_receives(qp, more);
            }
            Completion::Done(wc) => {
                crate::fault::delay_if(crate::fault::Point::DelayFlush, 2000);
                this.proto.lock().receive_flushed();
                if wc.is_flushed() {
                    this.why.note(Why::Flushed);
                } else {
                    pr_err!("receive: completion error {:?}\n", wc.status_msg());
                    this.why.note(Why::RecvError);
                }
                this.xprt.force_disconnect();
            }
            _ => {
                // Never posted (or the QP went first).
                this.proto.lock().receives_unposted(1);
                let _ = this.recvs.give(ctx);
            }
        }
    }
}

/// An established connection.
pub struct Conn {
    ep: Endpoint<ConnCm, ConnQp>,
    /// The QP handler's [`QpState::chunking`], for the sender without a
    /// lock (it is set before the connection exists and never changes).
    chunking: Option<Arc<Chunking>>,
    /// Thresholds in force when the connection was established.
    pub limits: proto::Thresholds,
    /// The connection id of the tracepoints.
    pub id: u32,
    /// Call Sends posted unsignalled since the last signalled one
    /// ([`proto::signal`]); only [`Conn::send`] reads and writes it.
    unsignalled: AtomicU32,
    /// [`Conn::disconnect`] ran: a holder of the connection (the sender's
    /// copy, `Transport::Sender`) looks for the current one again.
    closed: AtomicBool,
}

impl Conn {
    /// Whether an inline Call's Send asks for a completion, with `free`
    /// Send buffers left once it took its own ([`proto::signal`]; an
    /// unsignalled Send's buffer comes back with the next signalled
    /// completion). Only [`Conn::send`] calls it, and SUNRPC's transport
    /// send lock (`XPRT_LOCKED`) serialises those calls, so a plain load
    /// and store keep the count.
    fn signal_inline(&self, free: usize) -> bool {
        self.signal_call(free, 0)
    }

    /// [`Conn::signal_inline`] for a Call whose Send has `regs` REG_MRs
    /// before it: signalled, too, if it leaves the Send queue more than
    /// half full ([`proto::signal::SendSignal::next_in`]).
    fn signal_call(&self, free: usize, regs: usize) -> bool {
        let qp = self.ep.qp();
        let mut s = proto::signal::SendSignal::resume(self.unsignalled.load(Relaxed));
        let outstanding = qp.send_outstanding().saturating_add(regs + 1);
        let signal = s.next_in(free, outstanding, qp.send_depth());
        self.unsignalled.store(s.unsignalled(), Relaxed);
        signal
    }

    /// Posts one signalled Send that `fill` writes into a Send buffer
    /// (returning the length used): for control messages that are not
    /// Calls (the connect worker's `RDMA2_CONNPROP`). `ENOBUFS` if no Send
    /// buffer is free.
    pub(super) fn post_send(&self, fill: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result {
        let q = &self.ep.qp().handler().0;
        if self.continuing() {
            // Not between the pieces of a continued Call.
            return Err(crate::compat::errno::enobufs());
        }
        let Some(mut sb) = q.sends.take() else {
            return Err(crate::compat::errno::enobufs());
        };
        match fill(sb.buf.as_mut_slice()) {
            Ok(len) => sb.len = len,
            Err(e) => {
                let _ = q.sends.give(sb);
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

    /// Whether [`Conn::disconnect`] ran (the transport replaced or is
    /// replacing the connection).
    pub fn closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    /// Stops posting on the connection and waits until every WR posted
    /// came back through its handlers (`ib_drain_qp`); idempotent. Process
    /// context, not from a completion handler.
    pub fn drain(&self) {
        self.ep.drain();
    }

    /// Starts a disconnect (the drop of the connection completes it).
    /// Returns the reason reported by the `rpcrdma2_disconnect`
    /// tracepoint: the cause noted before, else `why`; `None` if this
    /// connection's end was reported already.
    pub fn disconnect(&self, why: Why) -> Option<Why> {
        self.closed.store(true, Release);
        let r = self.ep.qp().handler().0.why.report(why);
        if let Some(r) = r {
            trace::disconnect(self.id, r.name());
        }
        let _ = self.ep.disconnect();
        r
    }
}
