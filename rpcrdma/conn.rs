// SPDX-License-Identifier: GPL-2.0

//! One RPC-over-RDMA connection: rdma_cm id, QP, Receive and Send
//! buffers, the CM event handler and the reply handler.
//!
//! A connection is created by the transport's connect worker
//! ([`Conn::establish`]) and torn down by `close` (dropping it drains the
//! QP and destroys the id). Its handlers reach the transport through an
//! [`XprtRef`].

use crate::backchannel::Backchannel;
use crate::ib::cm::{CmEvent, CmHandler, CmId, ConnParam, SockAddr};
use crate::ib::dma::{DmaBuf, DmaDir};
use crate::ib::mr::{self, FrwrCaps, Mr, MrAccess, MrPool, MrState, MrWr, PageSeg, Segment};
use crate::ib::qp::{
    Completion, Endpoint, Qp, QpCaps, QpHandler, RecvBatch, RecvCtx, SendChain, SendCtx, SendWr,
    SgeList, MAX_RECV_BATCH, MAX_SEND_CHAIN,
};
use crate::ib::verbs::PollContext;
use crate::ib::Net;
use crate::proto::chunks::MAX_RANGES;
use crate::proto::{self, CallError, ChunkPlan, Part, Reply, ReplyData};
use crate::sunrpc::xprt::{Rqst, XdrSide, XprtRef};
use crate::xdr::header::{self, ErrorBody, Protocol};
use crate::xdr::pvtdata;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::alloc::{
    flags::{GFP_KERNEL, GFP_NOWAIT},
    KVec,
};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex, SpinLock};
use kernel::{new_condvar, new_mutex, new_spinlock};

/// rdma_cm address and route resolution timeout (the C client's).
const RESOLVE_TIMEOUT_MS: u32 = 5000;
/// How long the connect worker waits for each CM step.
const CM_STEP_TIMEOUT_MS: u32 = 30_000;
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

/// Inline Reply bytes that follow a Write chunk's payload, and the offset
/// in the Reply where they go.
type Tail = (u32, KVec<u8>);

/// How an RPC whose MRs are being invalidated ends afterwards.
#[derive(Clone, Copy, Debug)]
enum Finish {
    /// `xprt_complete_rqst` with this many reply bytes.
    Complete(i32),
    /// Fail it with this (negative) errno.
    Fail(i32),
}

/// The chunk registrations of the RPC in one request slot.
struct Regs {
    /// An RPC with MRs is outstanding in this slot.
    active: bool,
    /// Its XID (host order).
    xid: u32,
    plan: Option<ChunkPlan>,
    /// The segments advertised, in [`ChunkPlan::ranges`] order.
    segs: [Segment; MAX_RANGES],
    nsegs: usize,
    /// The MRs that are back from the Send queue (`None`: empty place).
    mrs: KVec<Option<Mr>>,
    /// MRs still owned by Send-queue WRs (REG_MR not retired yet).
    in_flight: u32,
    /// LOCAL_INVs are outstanding.
    invalidating: bool,
    /// `Conn::release` is taking the MRs back.
    releasing: bool,
    /// One of them failed: the connection is going away; the RPC is not
    /// completed (it is sent again after the reconnect).
    inv_failed: bool,
    /// The reply arrived: end the RPC this way once the MRs are
    /// invalidated.
    finish: Option<Finish>,
    /// The rkey the responder invalidated with the reply (Send With
    /// Invalidate), already checked to be one of this RPC's.
    remote_rkey: Option<u32>,
    /// Inline bytes that follow a Write chunk's payload in the Reply,
    /// and their offset: written into the Reply after the MRs are
    /// invalidated and unmapped (they may land in the DMA-mapped pages).
    tail: Option<Tail>,
    /// Scratch page list for mapping one range (room for an MR's depth,
    /// allocated at connect so that the data path never allocates).
    pages: KVec<PageSeg>,
}

impl Regs {
    fn new(n: usize, depth: usize) -> Result<Self> {
        let pages = KVec::with_capacity(depth, GFP_KERNEL)?;
        let mut mrs = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            mrs.push(None, GFP_KERNEL)?;
        }
        Ok(Regs {
            active: false,
            xid: 0,
            plan: None,
            segs: [Segment::default(); MAX_RANGES],
            nsegs: 0,
            mrs,
            in_flight: 0,
            invalidating: false,
            releasing: false,
            inv_failed: false,
            finish: None,
            remote_rkey: None,
            tail: None,
            pages,
        })
    }

    fn reset(&mut self) {
        self.active = false;
        self.plan = None;
        self.nsegs = 0;
        self.in_flight = 0;
        self.invalidating = false;
        self.releasing = false;
        self.inv_failed = false;
        self.finish = None;
        self.remote_rkey = None;
        self.tail = None;
    }

    /// Stores an MR that came back; gives it back if there is no room.
    fn store(&mut self, mr: Mr) -> core::result::Result<(), Mr> {
        match self.mrs.iter_mut().find(|m| m.is_none()) {
            Some(e) => {
                *e = Some(mr);
                Ok(())
            }
            None => Err(mr),
        }
    }

    /// Takes one MR that is back.
    fn take(&mut self) -> Option<Mr> {
        self.mrs.iter_mut().find_map(|m| m.take())
    }

    /// Marks the MR the responder invalidated (if any) as such; then
    /// counts the MRs that still need a LOCAL_INV.
    fn registered(&mut self) -> (usize, bool) {
        let mut remote = false;
        if let Some(rkey) = self.remote_rkey.take() {
            for m in self.mrs.iter_mut().flatten() {
                if m.state() == MrState::Registered && m.rkey() == rkey {
                    remote = m.remote_invalidated(rkey).is_ok();
                }
            }
        }
        let n = self
            .mrs
            .iter()
            .flatten()
            .filter(|m| m.state() == MrState::Registered)
            .count();
        (n, remote)
    }
}

/// How much chunk-registration state a connection keeps.
struct RegSizing {
    /// Request slots.
    slots: usize,
    /// MRs one RPC may use.
    mrs_per_rpc: usize,
    /// Pages per MR.
    depth: usize,
}

/// FRWR for chunks: the device's sizing and the connection's MR pool.
struct Chunking {
    caps: FrwrCaps,
    pool: Arc<MrPool>,
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
    /// Where reverse-direction Calls go.
    bc: Arc<Backchannel>,
    /// Chunk registrations by request slot.
    #[pin]
    regs: SpinLock<KVec<Regs>>,
    /// Set once the PD exists (`None`: inline only).
    #[pin]
    chunking: SpinLock<Option<Arc<Chunking>>>,
    /// Send chains for REG_MR and LOCAL_INV WRs: a few KiB each, so kept
    /// on the heap, never on the (deep) stacks of rpciod and the CQ
    /// workqueue.
    #[pin]
    chains: SpinLock<Stack<KBox<SendChain<SendOpCtx>>>>,
}

impl ConnQp {
    fn new(
        xprt: XprtRef,
        nsend: usize,
        nrecv: usize,
        proto: Arc<ProtoState>,
        stats: Arc<ConnStats>,
        bc: Arc<Backchannel>,
        sizing: RegSizing,
    ) -> Result<Self> {
        let mut regs = KVec::with_capacity(sizing.slots, GFP_KERNEL)?;
        for _ in 0..sizing.slots {
            regs.push(Regs::new(sizing.mrs_per_rpc, sizing.depth)?, GFP_KERNEL)?;
        }
        let mut chains = Stack::with_capacity(CHAINS)?;
        if sizing.depth > 0 {
            for _ in 0..CHAINS {
                let _ = chains.push(SendChain::new_boxed(GFP_KERNEL)?);
            }
        }
        let state = Arc::pin_init(
            try_pin_init!(QpState {
                xprt,
                sends <- new_spinlock!(Stack::with_capacity(nsend)?),
                recvs <- new_spinlock!(Stack::with_capacity(nrecv)?),
                proto,
                stats,
                bc,
                regs <- new_spinlock!(regs),
                chunking <- new_spinlock!(None),
                chains <- new_spinlock!(chains),
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

    /// Gives an MR back to the pool (deregisters it if it is not clean).
    fn put_mr(&self, mr: Mr) {
        match self.chunking() {
            Some(c) => {
                let lost = c.pool.lost();
                c.pool.put(mr);
                if c.pool.lost() > lost {
                    self.stats.mrs_orphaned.fetch_add(1, Relaxed);
                }
            }
            None => drop(mr),
        }
    }

    /// Ends request `xid` (host order) as `f` says, if it still waits,
    /// after writing a deferred Reply `tail` (see [`Regs::tail`]).
    fn finish(&self, xid: u32, f: Finish, tail: Option<Tail>) {
        let _ = self.xprt.with_rqst(xid.to_be(), |rqst: &Rqst| match f {
            Finish::Complete(len) => match tail {
                Some((at, bytes)) => match rqst.write_reply_at(at, &bytes) {
                    Ok(()) => rqst.complete(&self.xprt, len),
                    Err(e) => rqst.fail(&self.xprt, e.to_errno()),
                },
                None => rqst.complete(&self.xprt, len),
            },
            Finish::Fail(e) => rqst.fail(&self.xprt, e),
        });
    }

    /// The slot whose registrations belong to RPC `xid` (host order).
    fn slot_of(&self, xid: u32) -> Option<usize> {
        self.regs
            .lock()
            .iter()
            .position(|r| r.active && r.xid == xid)
    }

    /// Ends RPC `xid` as `f` says once its MRs, if it has any, are
    /// invalidated (C: `frwr_unmap_async`, then `rpcrdma_complete_rqst`).
    fn end_rpc(&self, qp: &Qp<ConnQp>, xid: u32, f: Finish, inv: Option<u32>) {
        let Some(slot) = self.slot_of(xid) else {
            if inv.is_some() {
                self.remote_inv_foreign(xid, inv);
            }
            self.finish(xid, f, None);
            return;
        };
        let start = {
            let mut g = self.regs.lock();
            match g.get_mut(slot) {
                Some(r) if r.active && r.xid == xid => {
                    r.finish = Some(f);
                    r.remote_rkey = inv;
                    let go = r.in_flight == 0 && !r.invalidating && !r.releasing;
                    r.invalidating |= go;
                    go
                }
                _ => false,
            }
        };
        if start {
            self.start_inv(qp, slot);
        }
    }

    /// Posts LOCAL_INV for the registered MRs of `slot` (marked
    /// `invalidating`, all MRs back); the last completion ends the RPC.
    fn start_inv(&self, qp: &Qp<ConnQp>, slot: usize) {
        let tag = u16::try_from(slot).unwrap_or(u16::MAX);
        // MRs that are not registered need no invalidation.
        let (n, remote) = {
            let mut g = self.regs.lock();
            let Some(r) = g.get_mut(slot) else { return };
            r.registered()
        };
        if remote {
            self.stats.remote_inv.fetch_add(1, Relaxed);
        }
        self.stats.local_inv.fetch_add(n as u64, Relaxed);
        if n == 0 {
            let (xid, f, tail) = self.drain_slot(slot);
            if let Some(f) = f {
                self.finish(xid, f, tail);
            }
            return;
        }
        // Without a spare chain (no memory), post them one by one.
        let mut chain = self.take_chain().ok();
        let mut i = 0;
        let mut failed = false;
        loop {
            let next = {
                let mut g = self.regs.lock();
                g.get_mut(slot).and_then(|r| r.take())
            };
            let Some(mr) = next else { break };
            if mr.state() != MrState::Registered {
                self.put_mr(mr);
                continue;
            }
            i += 1;
            let last = i == n;
            if failed {
                self.inv_done(slot, mr, last);
                continue;
            }
            let wr = SendWr::local_inv(SendOpCtx::Inv {
                wr: MrWr::new(mr),
                slot: tag,
                last,
            });
            // A failed post hands the WRs back as Aborted.
            failed = qp.post_batched(chain.as_deref_mut(), wr, last).is_err();
        }
        if let Some(c) = chain {
            self.put_chain(c);
        }
    }

    /// Takes everything out of `slot` (MRs to the pool) and resets it;
    /// returns the XID and how the RPC was to end.
    fn drain_slot(&self, slot: usize) -> (u32, Option<Finish>, Option<Tail>) {
        loop {
            let next = {
                let mut g = self.regs.lock();
                g.get_mut(slot).and_then(|r| r.take())
            };
            match next {
                Some(mr) => self.put_mr(mr),
                None => break,
            }
        }
        let mut g = self.regs.lock();
        match g.get_mut(slot) {
            Some(r) => {
                let out = (
                    r.xid,
                    if r.inv_failed { None } else { r.finish },
                    r.tail.take(),
                );
                r.reset();
                out
            }
            None => (0, None, None),
        }
    }

    /// A REG_MR of `slot` came back.
    fn reg_done(&self, qp: &Qp<ConnQp>, slot: usize, mr: Mr) {
        let (start, extra) = {
            let mut g = self.regs.lock();
            match g.get_mut(slot) {
                Some(r) => {
                    let extra = r.store(mr).err();
                    r.in_flight = r.in_flight.saturating_sub(1);
                    let go =
                        r.in_flight == 0 && r.finish.is_some() && !r.invalidating && !r.releasing;
                    r.invalidating |= go;
                    (go, extra)
                }
                None => (false, Some(mr)),
            }
        };
        if let Some(mr) = extra {
            self.put_mr(mr);
        }
        if start {
            self.start_inv(qp, slot);
        }
    }

    /// A LOCAL_INV of `slot` came back (or was never posted).
    fn inv_done(&self, slot: usize, mr: Mr, last: bool) {
        let ok = mr.state() == MrState::Invalidated;
        self.put_mr(mr);
        if !ok {
            if let Some(r) = self.regs.lock().get_mut(slot) {
                r.inv_failed = true;
            }
        }
        if last {
            let (xid, f, tail) = self.drain_slot(slot);
            if let Some(f) = f {
                self.finish(xid, f, tail);
            }
        }
    }

    /// Copies an inline reply into request `xid` and ends it.
    fn deliver_inline(&self, qp: &Qp<ConnQp>, xid: u32, payload: &[u8], inv: Option<u32>) {
        let copied = self
            .xprt
            .with_rqst(xid.to_be(), |rqst: &Rqst| rqst.copy_reply(payload));
        let f = match copied {
            None => {
                // A late reply for an RPC that was already
                // retransmitted or abandoned: nothing waits for it.
                pr_debug!(
                    "reply: no request waits for xid {:#010x}
",
                    xid
                );
                return;
            }
            Some(Ok(())) => {
                self.stats
                    .reply_bytes
                    .fetch_add(payload.len() as u64, Relaxed);
                Finish::Complete(payload.len() as i32)
            }
            Some(Err(e)) => {
                self.stats.too_big.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!(
                        "reply: {} bytes do not fit the receive buffer ({:?})\n",
                        payload.len(),
                        e
                    );
                }
                Finish::Fail(e.to_errno())
            }
        };
        self.end_rpc(qp, xid, f, inv);
    }

    /// Keeps a copy of the inline bytes that follow a Write chunk's
    /// payload (none with Linux's NFS client, whose COMPOUNDs end with
    /// READ) for [`QpState::finish`] to write at offset `at`.
    fn defer_tail(&self, xid: u32, at: u32, tail: &[u8]) -> Result {
        if tail.is_empty() {
            return Ok(());
        }
        let mut v = KVec::with_capacity(tail.len(), GFP_NOWAIT)?;
        v.extend_from_slice(tail, GFP_NOWAIT)?;
        let mut g = self.regs.lock();
        let r = g
            .iter_mut()
            .find(|r| r.active && r.xid == xid)
            .ok_or(EINVAL)?;
        r.tail = Some((at, v));
        Ok(())
    }

    /// A Send With Invalidate named `rkey`, which is none of RPC `xid`'s
    /// MRs: counted and logged; the RPC's MRs are invalidated locally.
    fn remote_inv_foreign(&self, xid: u32, rkey: Option<u32>) {
        self.stats.remote_inv_foreign.fetch_add(1, Relaxed);
        if crate::sunrpc::ratelimit() {
            pr_err!(
                "reply: xid {:#010x}: the server invalidated rkey {:#x}, which is not one of the RPC's\n",
                xid,
                rkey.unwrap_or(0)
            );
        }
    }

    /// A reply that uses chunks: checks it against what RPC `xid`
    /// registered, then ends the RPC.
    fn deliver_chunked(
        &self,
        qp: &Qp<ConnQp>,
        xid: u32,
        h: &crate::xdr::header::Header<'_>,
        inv: Option<u32>,
    ) {
        // Check the reply against the registration and the remotely
        // invalidated rkey against the RPC's MRs.
        let checked = {
            let g = self.regs.lock();
            g.iter().find(|r| r.active && r.xid == xid).and_then(|r| {
                let plan = r.plan?;
                let segs = r.segs.get(..r.nsegs)?;
                let ours = inv.map(|k| plan.invalidated(segs, k));
                Some((plan.check_reply(segs, h), ours))
            })
        };
        let (checked, inv) = match checked {
            Some((c, Some(proto::chunks::Invalidated::NotOurs))) => {
                self.remote_inv_foreign(xid, inv);
                (Some(c), None)
            }
            Some((c, _)) => (Some(c), inv),
            None => (None, inv),
        };
        let f = match checked {
            Some(Ok(ReplyData::Inline { payload })) => {
                return self.deliver_inline(qp, xid, payload, inv);
            }
            Some(Ok(ReplyData::Long { len })) => {
                self.stats.rdma_reply.fetch_add(u64::from(len), Relaxed);
                Finish::Complete(i32::try_from(len).unwrap_or(i32::MAX))
            }
            Some(Ok(ReplyData::Written {
                head,
                written,
                tail,
                ..
            })) => {
                let placed = self.xprt.with_rqst(xid.to_be(), |rqst: &Rqst| {
                    rqst.place_written(head, written, tail.len() as u32)
                });
                match placed {
                    None => {
                        pr_debug!("reply: no request waits for xid {:#010x}\n", xid);
                        // Its MRs (if still registered) go with the slot.
                        Finish::Fail(EIO.to_errno())
                    }
                    Some(Ok((at, len))) => match self.defer_tail(xid, at, tail) {
                        Ok(()) => {
                            self.stats.rdma_reply.fetch_add(u64::from(written), Relaxed);
                            self.stats
                                .reply_bytes
                                .fetch_add((head.len() + tail.len()) as u64, Relaxed);
                            Finish::Complete(i32::try_from(len).unwrap_or(i32::MAX))
                        }
                        Err(e) => {
                            if crate::sunrpc::ratelimit() {
                                pr_err!(
                                    "reply: xid {:#010x}: no memory for {} inline bytes after the payload ({:?})\n",
                                    xid,
                                    tail.len(),
                                    e
                                );
                            }
                            Finish::Fail(e.to_errno())
                        }
                    },
                    Some(Err(e)) => {
                        self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                        if crate::sunrpc::ratelimit() {
                            pr_err!(
                                "reply: xid {:#010x}: {} written bytes with {} + {} inline do not fit the receive buffer ({:?})\n",
                                xid,
                                written,
                                head.len(),
                                tail.len(),
                                e
                            );
                        }
                        Finish::Fail(e.to_errno())
                    }
                }
            }
            None => {
                // Chunks for an RPC that registered none are the
                // responder's error.
                self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!(
                        "reply: xid {:#010x} uses chunks it was not offered (-EIO)\n",
                        xid
                    );
                }
                Finish::Fail(EIO.to_errno())
            }
            Some(Err(e)) => {
                self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!(
                        "reply: xid {:#010x} does not match its chunks: {:?} ({})\n",
                        xid,
                        e,
                        e.errno().to_kernel()
                    );
                }
                Finish::Fail(e.errno().to_kernel())
            }
        };
        self.end_rpc(qp, xid, f, inv);
    }

    /// Acts on one received message (the reply handler).
    fn handle(&self, qp: &Qp<ConnQp>, data: &[u8], inv: Option<u32>) -> u32 {
        let out = self.proto.lock().receive(data);
        if let Some(u) = out.credits {
            self.xprt.set_cwnd(u.credits, false);
        }
        if out.wake_senders {
            self.xprt.write_space();
        }
        match out.reply {
            Reply::Deliver { xid, payload } => self.deliver_inline(qp, xid, payload, inv),
            Reply::Chunked { xid, header } => self.deliver_chunked(qp, xid, &header, inv),
            Reply::Fail { xid, errno, cause } => {
                if crate::sunrpc::ratelimit() {
                    match cause {
                        proto::Cause::RdmaError {
                            protocol: Protocol::V1,
                            body: ErrorBody::BadXdr,
                        } => {
                            // v1 ERR_CHUNK: svcrdma sends it for a Reply
                            // larger than its inline threshold with no (or
                            // too small a) chunk for it, and for a header it
                            // cannot process.
                            pr_err!("reply: server answered ERR_CHUNK (xid {:#010x}): the reply does not fit inline and no Write or Reply chunk could hold it, or the server could not process the Call's header ({})\n", xid, errno.to_kernel());
                        }
                        proto::Cause::RdmaError { protocol, body } => {
                            pr_err!(
                                "reply: server answered {} (xid {:#010x}, {:?}): RPC failed ({})\n",
                                body.name(protocol),
                                xid,
                                body,
                                errno.to_kernel()
                            );
                        }
                        _ => {
                            pr_err!(
                                "reply: xid {:#010x} failed ({}): {:?}\n",
                                xid,
                                errno.to_kernel(),
                                cause
                            );
                        }
                    }
                }
                self.end_rpc(qp, xid, Finish::Fail(errno.to_kernel()), inv);
            }
            Reply::Resend { xid } => {
                pr_info!(
                    "server answered the RPC-over-RDMA version 2 probe with ERR_VERS: continuing in version 1\n"
                );
                let _ = self.xprt.with_rqst(xid.to_be(), |rqst: &Rqst| {
                    // The probe was not executed: send it again, in v1, on
                    // this same connection.
                    rqst.allow_resend(&self.xprt);
                    rqst.retry(&self.xprt, EAGAIN.to_errno());
                });
            }
            Reply::ReverseCall { xid, payload } => self.bc.receive_call(&self.xprt, xid, payload),
            Reply::Control(_) => {}
            Reply::Drop(cause) => {
                let unsolicited_error = matches!(cause, proto::Cause::RdmaError { .. });
                if (cause.is_bad_reply() || unsolicited_error) && crate::sunrpc::ratelimit() {
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
    type SendCtx = SendOpCtx;
    type RecvCtx = RecvBuf;

    fn send_done(&self, qp: &Qp<Self>, ctx: SendOpCtx, c: Completion<'_>) {
        let this = &*self.0;
        if let Completion::Done(wc) = &c {
            if !wc.is_success() {
                if !wc.is_flushed() {
                    pr_err!("send: completion error {:?}\n", wc.status_msg());
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
        bc: &Arc<Backchannel>,
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

        // FRWR for chunks; without it the connection is inline only.
        let frwr = id.device().and_then(|d| FrwrCaps::query(d).ok());
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
            nsend,
            nrecv as usize,
            proto_state.clone(),
            stats.clone(),
            bc.clone(),
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
        let chunking = q.chunking();
        // Receive pages the upper layer left to the transport.
        rqst.fill_sparse_pages()?;
        let mut rpc = rqst.chunk_rpc();
        rpc.ddp_allowed &= crate::sunrpc::param_ddp();
        let page_size = mr::page_size() as u32;
        let depth = chunking.as_ref().map_or(1, |c| c.caps.depth);
        if let Some(c) = &chunking {
            // Make sure the MRs are there before the Call is counted as
            // sent: a Send that finds the pool empty waits for space.
            let p = q.proto.lock();
            let limits = proto::Limits::new(p.config(), page_size, depth);
            let need = proto::chunks::plan(&rpc, p.thresholds(), &limits)
                .map_or(0, |pl| pl.ranges().len());
            drop(p);
            if need > c.pool.available() {
                stats.no_mrs.fetch_add(1, Relaxed);
                return Err(crate::errno::enobufs());
            }
        }
        let plan = q.proto.lock().prepare_rpc(xid, &rpc, page_size, depth);
        let (plan, chunks) = match plan {
            Ok(p) => p,
            Err(CallError::NoCredits) => {
                stats.no_credits.fetch_add(1, Relaxed);
                return Err(crate::errno::enobufs());
            }
            Err(CallError::NotConnected) => return Err(crate::errno::enotconn()),
            Err(CallError::TooBig(t)) => {
                stats.too_big.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
                    pr_err!(
                        "send: {:?} of {} bytes exceeds the inline limit of {} and this connection has no chunks (-EMSGSIZE)\n",
                        t.direction, t.len, t.limit
                    );
                }
                return Err(crate::errno::emsgsize());
            }
            Err(CallError::Plan(e)) => {
                stats.too_big.fetch_add(1, Relaxed);
                if crate::sunrpc::ratelimit() {
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
        if plan.probe {
            pr_info!(
                "sending the RPC-over-RDMA version 2 probe (xid {:#010x})\n",
                xid
            );
        }
        let Some(mut sb) = q.sends.lock().pop() else {
            return Err(crate::errno::enobufs());
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
            let r = g.get_mut(i).ok_or(EINVAL)?;
            r.reset();
            r.active = true;
            r.xid = xid;
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
                return Err(crate::errno::enobufs());
            };
            let (side, access) = if k < nread {
                (XdrSide::Call, MrAccess::RemoteRead)
            } else {
                (XdrSide::Reply, MrAccess::RemoteWrite)
            };
            if let Err(e) = rqst.map_range(side, range, &mut mr, access, xid, pages) {
                c.pool.put(mr);
                if crate::sunrpc::ratelimit() {
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
                    crate::errno::enobufs()
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
        let mut waited = 0u32;
        loop {
            let busy = match q.regs.lock().get_mut(i) {
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
            if waited >= 10_000 {
                pr_err!(
                    "release: the MRs of slot {} did not come back in 10 s\n",
                    slot
                );
                return;
            }
            crate::sunrpc::msleep(1);
            waited += 1;
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
            match mr::invalidate_sync(self.ep.qp(), mrs, SendOpCtx::SyncInv) {
                Ok(back) | Err((_, back)) => {
                    for mr in back {
                        q.put_mr(mr);
                    }
                }
            }
        }
        if let Some(r) = q.regs.lock().get_mut(i) {
            r.reset();
        }
    }

    /// Posts one signalled Send that `fill` writes into a Send buffer
    /// (returning the length used): for messages that are not Calls (the
    /// backchannel's replies). `ENOBUFS` if no Send buffer is free.
    pub fn post_send(&self, fill: impl FnOnce(&mut [u8]) -> Result<usize>) -> Result {
        let q = &self.ep.qp().handler().0;
        let Some(mut sb) = q.sends.lock().pop() else {
            return Err(crate::errno::enobufs());
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

    /// Starts a disconnect (the drop of the connection completes it).
    pub fn disconnect(&self) {
        let _ = self.ep.disconnect();
    }
}
