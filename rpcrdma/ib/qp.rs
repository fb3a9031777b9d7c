// SPDX-License-Identifier: GPL-2.0

//! An RC queue pair on an rdma_cm id, with its PD and CQs, and the safe
//! posting and completion paths.
//!
//! # Ownership of posted work
//!
//! Every work request is posted together with a context owned by the
//! transport (a `KBox` or `Arc` holding the buffers its SGEs point into).
//! The context moves into a ring slot of the [`Qp`] when the WR is posted
//! and comes back exactly once to [`QpHandler::send_done`] or
//! [`QpHandler::recv_done`]:
//!
//! - [`Completion::Done`] with the WR's own work completion (success,
//!   error or flush);
//! - [`Completion::Retired`] for an unsignalled Send-queue WR when a later
//!   WR on the same Send queue completed: Send queues complete in order,
//!   so the earlier WR is done and its buffers are free. This is how the C
//!   client's sendctx ring works (verbs.c:797-822), generalised;
//! - [`Completion::Aborted`] when it was never posted (the post failed) or
//!   the QP went away first.
//!
//! The ring slots hold the `struct ib_cqe` each WR carries (`wr_cqe`), so
//! the C `done` callback is a generic trampoline that finds the slot by
//! address, no allocation or refcounting per WR. The rings also bound the
//! number of outstanding WRs by the QP's capacity, so a post never
//! overflows a work queue.
//!
//! SGEs can only be built from [`DmaBuf`]s borrowed from the context
//! itself ([`SendCtx::sges`], [`RecvCtx::sges`]), so the memory a WR
//! names stays alive until its context is handed back.
//!
//! # Teardown
//!
//! [`Endpoint`]'s drop disconnects, drains the QP (`ib_drain_qp()`, which
//! flushes every posted WR through the handlers), destroys the QP, frees
//! the CQs, then the PD reference and the id, in that order.

use super::cm::{CmHandler, CmId, ConnParam};
use super::dma::DmaBuf;
use super::mr::{Mr, MrOp};
use super::verbs::{Cq, Pd, PollContext};
use super::{errno, Device};
use crate::bindings;
use core::convert::Infallible;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use kernel::alloc::Flags;
use kernel::init::init_array_from_fn;
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};
use kernel::types::Opaque;

/// The most WRs one [`SendChain`] holds.
pub const MAX_SEND_CHAIN: usize = 16;
/// The most Receives one [`RecvBatch`] holds.
pub const MAX_RECV_BATCH: usize = 16;

/// A work completion (`struct ib_wc`), borrowed for a completion callback.
///
/// Only [`WorkCompletion::status`] (and the WR identity) is defined for a
/// failed completion; the other fields are meaningful on success.
#[repr(transparent)]
pub struct WorkCompletion(bindings::ib_wc);

/// The opcode of a successful work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    /// `IB_WC_SEND`.
    Send,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite,
    /// `IB_WC_RDMA_READ`.
    RdmaRead,
    /// `IB_WC_LOCAL_INV`.
    LocalInv,
    /// `IB_WC_REG_MR`.
    RegMr,
    /// `IB_WC_RECV`.
    Recv,
    /// `IB_WC_RECV_RDMA_WITH_IMM`.
    RecvRdmaWithImm,
    /// Anything else (raw `enum ib_wc_opcode`).
    Other(u32),
}

impl WorkCompletion {
    /// The raw `enum ib_wc_status` (0 is `IB_WC_SUCCESS`).
    pub fn status(&self) -> u32 {
        self.0.status
    }

    /// Whether the WR succeeded.
    pub fn is_success(&self) -> bool {
        self.0.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// Whether the WR was flushed because the QP entered the error state
    /// (disconnect, drain or an earlier error): `IB_WC_WR_FLUSH_ERR`.
    pub fn is_flushed(&self) -> bool {
        self.0.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }

    /// ib_core's name for the status ("success", "WR flushed", ...).
    pub fn status_msg(&self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg()` returns a static string for every value.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self.0.status)) }
    }

    /// The vendor error code of a failed completion.
    pub fn vendor_err(&self) -> u32 {
        self.0.vendor_err
    }

    /// The operation that completed.
    pub fn opcode(&self) -> WcOpcode {
        match self.0.opcode {
            bindings::ib_wc_opcode_IB_WC_SEND => WcOpcode::Send,
            bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
            bindings::ib_wc_opcode_IB_WC_RDMA_READ => WcOpcode::RdmaRead,
            bindings::ib_wc_opcode_IB_WC_LOCAL_INV => WcOpcode::LocalInv,
            bindings::ib_wc_opcode_IB_WC_REG_MR => WcOpcode::RegMr,
            bindings::ib_wc_opcode_IB_WC_RECV => WcOpcode::Recv,
            bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
            o => WcOpcode::Other(o),
        }
    }

    /// Bytes received (Receives).
    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }

    /// The raw `IB_WC_*` flags.
    pub fn wc_flags(&self) -> u32 {
        self.0.wc_flags as u32
    }

    /// The rkey the peer invalidated with Send With Invalidate
    /// (`IB_WC_WITH_INVALIDATE` set), if any.
    pub fn invalidated_rkey(&self) -> Option<u32> {
        if self.wc_flags() & bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE != 0 {
            // SAFETY: with `IB_WC_WITH_INVALIDATE` the union holds the rkey.
            Some(unsafe { self.0.ex.invalidate_rkey })
        } else {
            None
        }
    }

    /// The `ib_cqe` the WR carried.
    fn cqe(&self) -> *mut bindings::ib_cqe {
        // SAFETY: kernel ULPs (us) always post with `wr_cqe`, never `wr_id`.
        unsafe { self.0.__bindgen_anon_1.wr_cqe }
    }
}

/// How a posted context comes back (see the module documentation).
pub enum Completion<'a> {
    /// The WR's own work completion.
    Done(&'a WorkCompletion),
    /// An unsignalled Send-queue WR that completed successfully, known
    /// because a later WR on the queue completed (or the queue drained).
    Retired,
    /// Never posted, or the QP was destroyed before the WR completed.
    Aborted,
}

impl Completion<'_> {
    /// Whether the WR is known to have executed successfully.
    pub fn is_success(&self) -> bool {
        match self {
            Completion::Done(wc) => wc.is_success(),
            Completion::Retired => true,
            Completion::Aborted => false,
        }
    }
}

/// The SGE list of one WR, built by a context from buffers it owns.
///
/// `'a` is the borrow of the context: only buffers that live as long as
/// the context (its own, or `'static` ones) can be added, so a posted WR
/// never names freed memory.
pub struct SgeList<'s, 'a> {
    sges: &'s mut [bindings::ib_sge],
    len: usize,
    pd: *const Pd,
    _bufs: PhantomData<&'a DmaBuf>,
}

impl<'s, 'a> SgeList<'s, 'a> {
    fn new(sges: &'s mut [bindings::ib_sge], pd: &Arc<Pd>) -> Self {
        SgeList {
            sges,
            len: 0,
            pd: &**pd,
            _bufs: PhantomData,
        }
    }

    /// Adds `len` bytes of `buf` from `offset`.
    ///
    /// Fails with `EINVAL` when the range is outside the buffer or the
    /// buffer belongs to another PD, `E2BIG` when the WR has no SGE left.
    pub fn push(&mut self, buf: &'a DmaBuf, offset: usize, len: usize) -> Result {
        if offset.checked_add(len).is_none_or(|end| end > buf.len()) {
            pr_err!(
                "SGE [{}, +{}) is outside a {}-byte buffer (-EINVAL)\n",
                offset,
                len,
                buf.len()
            );
            return Err(EINVAL);
        }
        if !core::ptr::eq(&**buf.pd(), self.pd) {
            pr_err!("SGE buffer is mapped for another PD (-EINVAL)\n");
            return Err(EINVAL);
        }
        let Some(sge) = self.sges.get_mut(self.len) else {
            pr_err!("more than {} SGEs in one WR (-E2BIG)\n", self.sges.len());
            return Err(E2BIG);
        };
        *sge = bindings::ib_sge {
            addr: buf.dma_addr() + offset as u64,
            // `len <= buf.len() <= u32::MAX` (DmaBuf invariant).
            length: len as u32,
            lkey: buf.lkey(),
        };
        self.len += 1;
        Ok(())
    }

    /// Adds the whole of `buf`.
    pub fn push_all(&mut self, buf: &'a DmaBuf) -> Result {
        self.push(buf, 0, buf.len())
    }

    /// The number of SGEs so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no SGE was added.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A context posted with a Receive: owns the buffer(s) it receives into.
pub trait RecvCtx: Send + 'static {
    /// Describes the Receive's buffers.
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result;
}

/// A context posted with a Send-queue WR: owns what the WR reads.
pub trait SendCtx: Send + 'static {
    /// Describes the Send's buffers (none by default: an empty Send).
    fn sges<'a>(&'a self, _sges: &mut SgeList<'_, 'a>) -> Result {
        Ok(())
    }

    /// The memory region a [`SendOp::RegMr`] registers or a
    /// [`SendOp::LocalInv`] invalidates (none by default). The MR lives in
    /// the context, so it stays allocated until the WR came back; the
    /// completion path moves it through its state machine (see
    /// [`super::mr`]) before [`QpHandler::send_done`] sees the context.
    fn mr(&self) -> Option<&Mr> {
        None
    }
}

/// Receives the contexts of completed work requests.
///
/// Called from the CQ's poll work item (process context, see
/// [`PollContext`]), one completion at a time per queue; the Send and
/// Receive queues have separate CQs, so `send_done` and `recv_done` may
/// run concurrently. [`Completion::Aborted`] may also be delivered
/// synchronously from a failing `post_*` call or from teardown.
///
/// Handlers may post again through `qp`; they must not drain or drop the
/// [`Endpoint`] (draining waits for this very work item).
///
/// Posting and completions share a plain (not `_bh`/`_irq`) spinlock per
/// queue, so post from process context only (SUNRPC's rpciod, a work item,
/// a thread), never from softirq or hard-irq context.
pub trait QpHandler: Send + Sync + Sized + 'static {
    /// The context of a Send-queue WR.
    type SendCtx: SendCtx;
    /// The context of a Receive.
    type RecvCtx: RecvCtx;

    /// A Send-queue WR is finished.
    fn send_done(&self, qp: &Qp<Self>, ctx: Self::SendCtx, c: Completion<'_>);

    /// A Receive is finished; on success the data is in its buffer (sync
    /// it for the CPU first) and [`WorkCompletion::byte_len`] says how much.
    fn recv_done(&self, qp: &Qp<Self>, ctx: Self::RecvCtx, c: Completion<'_>);
}

/// What a Send-queue WR does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// `IB_WR_SEND`.
    Send,
    /// `IB_WR_SEND_WITH_INV`: Send and invalidate the peer's `rkey`.
    SendWithInv {
        /// The rkey to invalidate at the peer.
        rkey: u32,
    },
    /// `IB_WR_REG_MR` (FRWR) of the context's [`SendCtx::mr`], which must
    /// be mapped ([`super::mr::MrState::Mapped`]).
    RegMr,
    /// `IB_WR_LOCAL_INV` of the context's [`SendCtx::mr`], which must be
    /// registered ([`super::mr::MrState::Registered`]).
    LocalInv,
    /// `IB_WR_RDMA_WRITE` of the context's SGEs to the peer's memory.
    RdmaWrite {
        /// The peer's address (an MR's iova-based offset).
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
    /// `IB_WR_RDMA_READ` of the peer's memory into the context's SGEs
    /// (needs `initiator_depth` > 0 in the [`super::cm::ConnParam`] and
    /// buffers mapped [`super::dma::DmaDir::FromDevice`]).
    RdmaRead {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
}

/// One Send-queue WR: an operation, its flags and its context.
///
/// A [`SendChain`] posts FRWR REG_MRs and the Send behind them in one
/// `ib_post_send()`, or a chain of LOCAL_INVs.
pub struct SendWr<C> {
    ctx: C,
    op: SendOp,
    flags: i32,
}

impl<C: SendCtx> SendWr<C> {
    /// An unsignalled Send of the context's SGEs.
    pub fn send(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::Send,
            flags: 0,
        }
    }

    /// An unsignalled Send With Invalidate of `rkey`.
    pub fn send_with_inv(ctx: C, rkey: u32) -> Self {
        SendWr {
            ctx,
            op: SendOp::SendWithInv { rkey },
            flags: 0,
        }
    }

    /// An unsignalled FRWR `IB_WR_REG_MR` of `ctx.mr()` (see
    /// [`super::mr`]); chain it in front of the Send that carries the
    /// rkey.
    pub fn reg_mr(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::RegMr,
            flags: 0,
        }
    }

    /// An unsignalled `IB_WR_LOCAL_INV` of `ctx.mr()`.
    pub fn local_inv(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::LocalInv,
            flags: 0,
        }
    }

    /// An unsignalled RDMA Write of the context's SGEs to `remote_addr`
    /// under the peer's `rkey`.
    pub fn rdma_write(ctx: C, remote_addr: u64, rkey: u32) -> Self {
        SendWr {
            ctx,
            op: SendOp::RdmaWrite { remote_addr, rkey },
            flags: 0,
        }
    }

    /// An unsignalled RDMA Read from the peer's `remote_addr`/`rkey` into
    /// the context's SGEs.
    pub fn rdma_read(ctx: C, remote_addr: u64, rkey: u32) -> Self {
        SendWr {
            ctx,
            op: SendOp::RdmaRead { remote_addr, rkey },
            flags: 0,
        }
    }

    /// Requests a completion (`IB_SEND_SIGNALED`). Unsignalled WRs come
    /// back as [`Completion::Retired`] when a later one completes; signal
    /// at least every so often, or the ring fills up.
    pub fn signaled(mut self) -> Self {
        self.flags |= bindings::ib_send_flags_IB_SEND_SIGNALED;
        self
    }

    /// Sets `IB_SEND_SOLICITED`.
    pub fn solicited(mut self) -> Self {
        self.flags |= bindings::ib_send_flags_IB_SEND_SOLICITED;
        self
    }

    /// Sets `IB_SEND_FENCE`: wait for earlier RDMA Reads to finish.
    pub fn fenced(mut self) -> Self {
        self.flags |= bindings::ib_send_flags_IB_SEND_FENCE;
        self
    }

    /// The operation.
    pub fn op(&self) -> SendOp {
        self.op
    }
}

/// Up to [`MAX_SEND_CHAIN`] Send-queue WRs posted as one linked list, in
/// order, by one `ib_post_send()`.
pub struct SendChain<C> {
    wrs: [Option<SendWr<C>>; MAX_SEND_CHAIN],
    len: usize,
}

impl<C: SendCtx> SendChain<C> {
    /// An empty chain.
    pub fn new() -> Self {
        SendChain {
            wrs: core::array::from_fn(|_| None),
            len: 0,
        }
    }

    /// An empty chain on the heap, initialised in place: with large
    /// contexts a chain takes a few KiB, which [`SendChain::new`] followed
    /// by a move into a box would put on the stack first. Post it with
    /// [`Qp::post_send_chain`].
    pub fn new_boxed(flags: Flags) -> Result<KBox<Self>> {
        let wrs = init_array_from_fn::<_, MAX_SEND_CHAIN, _, Infallible>(|_| None);
        KBox::init(init!(SendChain { wrs <- wrs, len: 0 }), flags)
    }

    /// Appends a WR; gives it back when the chain is full.
    pub fn push(&mut self, wr: SendWr<C>) -> core::result::Result<(), SendWr<C>> {
        match self.wrs.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(wr);
                self.len += 1;
                Ok(())
            }
            None => Err(wr),
        }
    }

    /// The number of WRs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the chain is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<C: SendCtx> Default for SendChain<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// Up to [`MAX_RECV_BATCH`] Receives posted by one `ib_post_recv()`.
pub struct RecvBatch<C> {
    ctxs: [Option<C>; MAX_RECV_BATCH],
    len: usize,
}

impl<C: RecvCtx> RecvBatch<C> {
    /// An empty batch.
    pub fn new() -> Self {
        RecvBatch {
            ctxs: core::array::from_fn(|_| None),
            len: 0,
        }
    }

    /// Appends a Receive; gives the context back when the batch is full.
    pub fn push(&mut self, ctx: C) -> core::result::Result<(), C> {
        match self.ctxs.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(ctx);
                self.len += 1;
                Ok(())
            }
            None => Err(ctx),
        }
    }

    /// The number of Receives.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<C: RecvCtx> Default for RecvBatch<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// Scratch space for one Send-queue WR: big enough for every WR type the
/// layer builds (`ib_reg_wr` starts with its `ib_send_wr`).
#[repr(C)]
#[derive(Clone, Copy)]
union SendWrBuf {
    send: bindings::ib_send_wr,
    reg: bindings::ib_reg_wr,
    rdma: bindings::ib_rdma_wr,
}

/// A Send-ring slot: the WR as posted (context, operation, flags) and the
/// MR operation it started (set only when the post moved the MR's state,
/// so only that WR's completion moves it on).
struct SendSlot<C> {
    ctx: C,
    op: SendOp,
    flags: i32,
    mr_op: Option<MrOp>,
}

impl<C: SendCtx> SendSlot<C> {
    /// Finishes the MR operation, if any, and gives the context back.
    fn finish(self, c: &Completion<'_>) -> C {
        if let (Some(op), Some(mr)) = (self.mr_op, self.ctx.mr()) {
            mr.end_op(op, c);
        }
        self.ctx
    }

    /// A WR that was never posted: undoes its MR operation, if any, and
    /// gives the WR back.
    fn unpost(self) -> SendWr<C> {
        let (op, flags) = (self.op, self.flags);
        SendWr {
            ctx: self.finish(&Completion::Aborted),
            op,
            flags,
        }
    }
}

/// The lock-protected part of a ring.
///
/// # Invariants
///
/// `ctxs.len()` is the ring capacity; the slots `tail, tail+1, ...`
/// (`outstanding` of them, modulo capacity) hold the contexts of posted,
/// unfinished WRs in posting order, and all other slots are `None`;
/// `head == (tail + outstanding) % capacity`. Once `closed`, nothing is
/// posted.
struct RingState<C, W> {
    ctxs: KVec<Option<C>>,
    head: usize,
    tail: usize,
    outstanding: usize,
    closed: bool,
    /// Scratch WRs and SGEs for one post, used under the lock.
    wrs: KVec<W>,
    sges: KVec<bindings::ib_sge>,
    max_sge: usize,
}

// SAFETY: the scratch WRs' raw pointers point into the same `RingState` (or
// the QP's cqes) and are only used under the lock; `C: Send`.
unsafe impl<C: Send, W> Send for RingState<C, W> {}

impl<C, W: Copy> RingState<C, W> {
    fn new(cap: usize, batch: usize, max_sge: usize, zero: W) -> Result<Self> {
        let mut ctxs = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            ctxs.push(None, GFP_KERNEL)?;
        }
        let zero_sge = bindings::ib_sge::default();
        Ok(RingState {
            ctxs,
            head: 0,
            tail: 0,
            outstanding: 0,
            closed: false,
            wrs: KVec::from_elem(zero, batch, GFP_KERNEL)?,
            sges: KVec::from_elem(zero_sge, batch * max_sge, GFP_KERNEL)?,
            max_sge,
        })
    }

    fn cap(&self) -> usize {
        self.ctxs.len()
    }

    /// Checks that `n` more WRs may be posted on `qp` (the ring's QP, null
    /// once destroyed): `ENOTCONN` after drain/teardown, `ENOBUFS` when
    /// they would exceed the queue depth (`what` names the queue in the
    /// message).
    fn check_room(&self, qp: *mut bindings::ib_qp, n: usize, what: &str) -> Result {
        if self.closed || qp.is_null() {
            return Err(errno(bindings::ENOTCONN));
        }
        let cap = self.cap();
        if self.outstanding + n > cap {
            pr_err!(
                "{}: {} WRs would exceed the queue depth {} (-ENOBUFS)\n",
                what,
                self.outstanding + n,
                cap
            );
            return Err(errno(bindings::ENOBUFS));
        }
        Ok(())
    }

    /// Takes the oldest outstanding context: `(slot, ctx)`.
    fn pop(&mut self) -> Option<(usize, C)> {
        if self.outstanding == 0 {
            return None;
        }
        let t = self.tail;
        let ctx = self.ctxs.get_mut(t)?.take()?;
        self.tail = wrap(t + 1, self.cap());
        self.outstanding -= 1;
        Some((t, ctx))
    }
}

/// `i` modulo a ring capacity `cap` (0 for an empty ring): no division,
/// and no panic path for a zero `cap`.
fn wrap(i: usize, cap: usize) -> usize {
    i.checked_rem(cap).unwrap_or(0)
}

/// Allocates `n` cqes whose `done` is `done`.
fn make_cqes(
    n: usize,
    done: unsafe extern "C" fn(*mut bindings::ib_cq, *mut bindings::ib_wc),
) -> Result<KVec<Opaque<bindings::ib_cqe>>> {
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        v.push(
            Opaque::new(bindings::ib_cqe { done: Some(done) }),
            GFP_KERNEL,
        )?;
    }
    Ok(v)
}

/// The slot of `cqe` in `cqes`, if it is one of them.
fn slot_of(cqes: &[Opaque<bindings::ib_cqe>], cqe: *mut bindings::ib_cqe) -> Option<usize> {
    let base = cqes.as_ptr() as usize;
    let size = core::mem::size_of::<Opaque<bindings::ib_cqe>>();
    let off = (cqe as usize).checked_sub(base)?;
    let idx = off / size;
    (off % size == 0 && idx < cqes.len()).then_some(idx)
}

/// Queue depths and SGE limits of a QP.
#[derive(Clone, Copy, Debug)]
pub struct QpCaps {
    /// Send-queue WRs that may be outstanding (one more is reserved for
    /// the drain).
    pub max_send_wr: u32,
    /// Receives that may be posted (one more is reserved for the drain).
    pub max_recv_wr: u32,
    /// SGEs per Send-queue WR.
    pub max_send_sge: u32,
    /// SGEs per Receive.
    pub max_recv_sge: u32,
}

/// An RC queue pair (inside an [`Endpoint`]): posting and completion.
///
/// # Invariants
///
/// `qp` is null or the QP `rdma_create_qp()` created on the endpoint's id
/// with CQs whose `cq_context` is this object; it is only read under a
/// ring lock and set to null (under both) before the QP is destroyed.
/// `send_cqes`/`recv_cqes` have one entry per ring slot and are never
/// resized, so their addresses are stable; their `done` is
/// `send_done::<Q>`/`recv_done::<Q>`.
#[pin_data]
pub struct Qp<Q: QpHandler> {
    handler: Q,
    qp: AtomicPtr<bindings::ib_qp>,
    pd: Arc<Pd>,
    send_cqes: KVec<Opaque<bindings::ib_cqe>>,
    recv_cqes: KVec<Opaque<bindings::ib_cqe>>,
    #[pin]
    send: SpinLock<RingState<SendSlot<Q::SendCtx>, SendWrBuf>>,
    #[pin]
    recv: SpinLock<RingState<Q::RecvCtx, bindings::ib_recv_wr>>,
}

// SAFETY: the cqes are written only at initialisation and then only read
// (by ib_core); everything else is `Send`/`Sync` or behind the ring locks.
unsafe impl<Q: QpHandler> Send for Qp<Q> {}
// SAFETY: see above; `Q: Sync`.
unsafe impl<Q: QpHandler> Sync for Qp<Q> {}

/// `ib_cqe::done` of Send-queue WRs.
///
/// # Safety
///
/// Called by ib_core with a CQ whose `cq_context` is a live `Qp<Q>` and a
/// completion of a WR posted by it.
unsafe extern "C" fn send_done<Q: QpHandler>(cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: the CQ's context is the `Qp<Q>` that outlives the CQ (it is
    // freed only after `ib_free_cq()` returned); `wc` is valid for the call
    // and `WorkCompletion` is a transparent wrapper.
    let (qp, wc) = unsafe {
        (
            &*((*cq).cq_context as *const Qp<Q>),
            &*(wc as *const WorkCompletion),
        )
    };
    qp.complete_send(wc);
}

/// `ib_cqe::done` of Receives.
///
/// # Safety
///
/// As for [`send_done`].
unsafe extern "C" fn recv_done<Q: QpHandler>(cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: as in `send_done`.
    let (qp, wc) = unsafe {
        (
            &*((*cq).cq_context as *const Qp<Q>),
            &*(wc as *const WorkCompletion),
        )
    };
    qp.complete_recv(wc);
}

impl<Q: QpHandler> Qp<Q> {
    fn new(handler: Q, pd: Arc<Pd>, caps: &QpCaps) -> Result<Pin<KBox<Self>>> {
        let (ns, nr) = (caps.max_send_wr as usize, caps.max_recv_wr as usize);
        let send_cqes = make_cqes(ns, send_done::<Q>)?;
        let recv_cqes = make_cqes(nr, recv_done::<Q>)?;
        // SAFETY: all-zero is a valid (empty) `ib_send_wr`/`ib_reg_wr`.
        let zero_send: SendWrBuf = unsafe { core::mem::zeroed() };
        let send_state = RingState::new(ns, MAX_SEND_CHAIN, caps.max_send_sge as usize, zero_send)?;
        let recv_state = RingState::new(
            nr,
            MAX_RECV_BATCH,
            caps.max_recv_sge as usize,
            bindings::ib_recv_wr::default(),
        )?;
        KBox::pin_init(
            pin_init!(Qp {
                handler,
                qp: AtomicPtr::new(core::ptr::null_mut()),
                pd,
                send_cqes,
                recv_cqes,
                send <- kernel::new_spinlock!(send_state, "rpcrdma2_sq"),
                recv <- kernel::new_spinlock!(recv_state, "rpcrdma2_rq"),
            }),
            GFP_KERNEL,
        )
    }

    /// The handler.
    pub fn handler(&self) -> &Q {
        &self.handler
    }

    /// The PD whose buffers the SGEs must come from.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The QP number, 0 before creation or after destruction.
    pub fn qp_num(&self) -> u32 {
        let _g = self.send.lock();
        let qp = self.qp.load(Ordering::Relaxed);
        if qp.is_null() {
            0
        } else {
            // SAFETY: non-null under the lock means live (invariant).
            unsafe { (*qp).qp_num }
        }
    }

    /// Send-queue WRs posted and not yet handed back.
    pub fn send_outstanding(&self) -> usize {
        self.send.lock().outstanding
    }

    /// Receives posted and not yet handed back.
    pub fn recv_outstanding(&self) -> usize {
        self.recv.lock().outstanding
    }

    /// Posts the Receives of `batch` in one `ib_post_recv()`.
    ///
    /// On failure the contexts that were not posted come back to
    /// [`QpHandler::recv_done`] as [`Completion::Aborted`] before this
    /// returns: `ENOBUFS` when the Receive queue is full, `ENOTCONN` after
    /// drain/teardown, `EINVAL`/`E2BIG` for bad SGEs, or the provider's
    /// error.
    pub fn post_recv(&self, mut batch: RecvBatch<Q::RecvCtx>) -> Result {
        let n = batch.len;
        // Slots filled by this call, and how many of those were posted.
        let (mut filled, mut posted) = (0, 0);
        let mut guard = self.recv.lock();
        let st = &mut *guard;
        let res = (|| -> Result {
            let qp = self.qp.load(Ordering::Relaxed);
            st.check_room(qp, n, "post_recv")?;
            let cap = st.cap();
            let mut sge_at = 0;
            for i in 0..n {
                let slot = wrap(st.head + i, cap);
                let ctx = batch.ctxs.get_mut(i).and_then(|c| c.take());
                let (Some(dst), Some(cqe)) = (st.ctxs.get_mut(slot), self.recv_cqes.get(slot))
                else {
                    return Err(EINVAL);
                };
                *dst = ctx;
                filled = i + 1;
                let Some(ctx) = dst.as_ref() else {
                    return Err(EINVAL);
                };
                let max = st.max_sge;
                let sges = st.sges.get_mut(sge_at..sge_at + max).ok_or(EINVAL)?;
                let sg_list = sges.as_mut_ptr();
                let mut list = SgeList::new(sges, &self.pd);
                ctx.sges(&mut list)?;
                let num_sge = list.len as i32;
                sge_at += max;
                let next = if i + 1 < n {
                    // SAFETY: `i + 1 < n <= MAX_RECV_BATCH == wrs.len()`.
                    unsafe { st.wrs.as_mut_ptr().add(i + 1) }
                } else {
                    core::ptr::null_mut()
                };
                let wr = st.wrs.get_mut(i).ok_or(EINVAL)?;
                *wr = bindings::ib_recv_wr {
                    next,
                    __bindgen_anon_1: bindings::ib_recv_wr__bindgen_ty_1 { wr_cqe: cqe.get() },
                    sg_list,
                    num_sge,
                };
            }
            let first = st.wrs.as_ptr();
            let mut bad: *const bindings::ib_recv_wr = core::ptr::null();
            // SAFETY: `qp` is live (non-null under the lock); the WR list
            // and its SGEs are valid scratch memory, copied by the provider.
            let ret = unsafe { bindings::rpcrdma2_shim_post_recv(qp, first, &mut bad) };
            posted = if ret == 0 {
                n
            } else {
                posted_before(first, bad, n)
            };
            st.head = wrap(st.head + posted, cap);
            st.outstanding += posted;
            if ret != 0 {
                pr_err!(
                    "ib_post_recv failed ({}) after {} of {} WRs\n",
                    ret,
                    posted,
                    n
                );
                return Err(Error::from_errno(ret));
            }
            Ok(())
        })();
        // Take back what was filled but not posted (slots from the new head).
        if res.is_err() {
            let cap = st.cap();
            for i in posted..filled {
                let slot = wrap(st.head + i - posted, cap);
                if let (Some(src), Some(dst)) = (st.ctxs.get_mut(slot), batch.ctxs.get_mut(i)) {
                    if let Some(c) = src.take() {
                        *dst = Some(c);
                    }
                }
            }
        }
        drop(guard);
        for c in batch.ctxs.iter_mut().filter_map(|c| c.take()) {
            self.handler.recv_done(self, c, Completion::Aborted);
        }
        res
    }

    /// Posts one Receive.
    pub fn post_recv_one(&self, ctx: Q::RecvCtx) -> Result {
        let mut b = RecvBatch::new();
        // A new batch has room for one.
        let _ = b.push(ctx);
        self.post_recv(b)
    }

    /// Posts the WRs of `chain`, linked in order, in one `ib_post_send()`.
    ///
    /// Failure is as for [`Qp::post_recv`], through
    /// [`QpHandler::send_done`]. WRs the provider accepted before one it
    /// refused stay posted and complete normally.
    ///
    /// A chain is large (up to [`MAX_SEND_CHAIN`] WRs with their contexts
    /// inline): callers on deep stacks should keep theirs somewhere else
    /// (e.g. in a `KBox`) and use [`Qp::post_send_chain`].
    pub fn post_send(&self, mut chain: SendChain<Q::SendCtx>) -> Result {
        self.post_send_chain(&mut chain)
    }

    /// Posts the WRs of `chain` as [`Qp::post_send`] does, in place: the
    /// chain is empty afterwards (every WR was posted or handed back), so
    /// it can be reused. Needs no stack for the WRs themselves.
    pub fn post_send_chain(&self, chain: &mut SendChain<Q::SendCtx>) -> Result {
        let n = chain.len.min(MAX_SEND_CHAIN);
        chain.len = 0;
        let wrs = chain.wrs.get_mut(..n).unwrap_or_default();
        self.post_wrs(wrs)
    }

    /// Posts `wrs` (all `Some`), linked in order, in one `ib_post_send()`.
    /// Every WR is taken out of `wrs`: posted, or handed back through
    /// [`QpHandler::send_done`] as [`Completion::Aborted`]. The WRs not
    /// posted are put back into their own entries of `wrs` under the lock
    /// (not into a local array), so a post uses little stack whatever the
    /// size of the contexts.
    fn post_wrs(&self, wrs: &mut [Option<SendWr<Q::SendCtx>>]) -> Result {
        let n = wrs.len().min(MAX_SEND_CHAIN);
        // Slots filled by this call, and how many of those were posted.
        let (mut filled, mut posted) = (0, 0);
        let mut guard = self.send.lock();
        let st = &mut *guard;
        let res = (|| -> Result {
            let qp = self.qp.load(Ordering::Relaxed);
            st.check_room(qp, n, "post_send")?;
            let cap = st.cap();
            let mut sge_at = 0;
            for i in 0..n {
                let slot = wrap(st.head + i, cap);
                let Some(wr) = wrs.get_mut(i).and_then(|w| w.take()) else {
                    return Err(EINVAL);
                };
                let (op, flags) = (wr.op, wr.flags);
                let (Some(dst), Some(cqe)) = (st.ctxs.get_mut(slot), self.send_cqes.get(slot))
                else {
                    // Unreachable (the ring and the cqes have `cap` entries).
                    if let Some(w) = wrs.get_mut(i) {
                        *w = Some(wr);
                    }
                    return Err(EINVAL);
                };
                *dst = Some(SendSlot {
                    ctx: wr.ctx,
                    op,
                    flags,
                    mr_op: None,
                });
                filled = i + 1;
                let Some(SendSlot { ctx, mr_op, .. }) = dst.as_mut() else {
                    return Err(EINVAL);
                };
                let max = st.max_sge;
                let sges = st.sges.get_mut(sge_at..sge_at + max).ok_or(EINVAL)?;
                let sg_list = sges.as_mut_ptr();
                let mut list = SgeList::new(sges, &self.pd);
                // REG_MR and LOCAL_INV carry no SGEs; they move the
                // context's MR to RegPosted/InvPosted (and record that in
                // the slot, so that only this WR's completion moves it on).
                let mut reg = None;
                let mut inv_rkey = 0;
                match op {
                    SendOp::RegMr => {
                        let mr = ctx.mr().ok_or_else(|| {
                            pr_err!("post_send: REG_MR without an MR in its context (-EINVAL)\n");
                            EINVAL
                        })?;
                        if !core::ptr::eq(&**mr.pd(), &*self.pd) {
                            pr_err!("post_send: REG_MR of an MR of another PD (-EINVAL)\n");
                            return Err(EINVAL);
                        }
                        reg = Some(mr.begin_reg()?);
                        *mr_op = Some(MrOp::Reg);
                    }
                    SendOp::LocalInv => {
                        let mr = ctx.mr().ok_or_else(|| {
                            pr_err!(
                                "post_send: LOCAL_INV without an MR in its context (-EINVAL)\n"
                            );
                            EINVAL
                        })?;
                        inv_rkey = mr.begin_inv()?;
                        *mr_op = Some(MrOp::Inv);
                    }
                    _ => ctx.sges(&mut list)?,
                }
                let num_sge = list.len as i32;
                sge_at += max;
                let next = if i + 1 < n {
                    // SAFETY: `i + 1 < n <= MAX_SEND_CHAIN == wrs.len()`;
                    // a `SendWrBuf` starts with its `ib_send_wr`.
                    unsafe {
                        st.wrs
                            .as_mut_ptr()
                            .add(i + 1)
                            .cast::<bindings::ib_send_wr>()
                    }
                } else {
                    core::ptr::null_mut()
                };
                let no_ex = bindings::ib_send_wr__bindgen_ty_2::default();
                let (opcode, ex) = match op {
                    SendOp::Send => (bindings::ib_wr_opcode_IB_WR_SEND, no_ex),
                    SendOp::SendWithInv { rkey } => (
                        bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV,
                        bindings::ib_send_wr__bindgen_ty_2 {
                            invalidate_rkey: rkey,
                        },
                    ),
                    SendOp::RegMr => (bindings::ib_wr_opcode_IB_WR_REG_MR, no_ex),
                    SendOp::LocalInv => (
                        bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
                        bindings::ib_send_wr__bindgen_ty_2 {
                            invalidate_rkey: inv_rkey,
                        },
                    ),
                    SendOp::RdmaWrite { .. } => (bindings::ib_wr_opcode_IB_WR_RDMA_WRITE, no_ex),
                    SendOp::RdmaRead { .. } => (bindings::ib_wr_opcode_IB_WR_RDMA_READ, no_ex),
                };
                let wr = bindings::ib_send_wr {
                    next,
                    __bindgen_anon_1: bindings::ib_send_wr__bindgen_ty_1 { wr_cqe: cqe.get() },
                    sg_list,
                    num_sge,
                    opcode,
                    send_flags: flags,
                    ex,
                };
                let buf = st.wrs.get_mut(i).ok_or(EINVAL)?;
                *buf = match (op, reg) {
                    (SendOp::RegMr, Some(r)) => SendWrBuf {
                        reg: bindings::ib_reg_wr {
                            wr,
                            mr: r.mr,
                            key: r.key,
                            access: r.access,
                        },
                    },
                    (
                        SendOp::RdmaWrite { remote_addr, rkey }
                        | SendOp::RdmaRead { remote_addr, rkey },
                        _,
                    ) => SendWrBuf {
                        rdma: bindings::ib_rdma_wr {
                            wr,
                            remote_addr,
                            rkey,
                        },
                    },
                    _ => SendWrBuf { send: wr },
                };
            }
            let first = st.wrs.as_ptr().cast::<bindings::ib_send_wr>();
            let mut bad: *const bindings::ib_send_wr = core::ptr::null();
            // A REG_MR's `ib_mr`, which the provider may keep using until
            // the WR completes, belongs to the context now held by the
            // WR's ring slot, and slots are emptied only when the WR came
            // back (or was never posted).
            // SAFETY: `qp` is live (non-null under the lock); the WR list
            // and its SGEs are valid scratch memory, copied by the provider.
            let ret = unsafe { bindings::rpcrdma2_shim_post_send(qp, first, &mut bad) };
            posted = if ret == 0 {
                n
            } else {
                posted_before(first.cast::<SendWrBuf>(), bad.cast::<SendWrBuf>(), n)
            };
            st.head = wrap(st.head + posted, cap);
            st.outstanding += posted;
            if ret != 0 {
                pr_err!(
                    "ib_post_send failed ({}) after {} of {} WRs\n",
                    ret,
                    posted,
                    n
                );
                return Err(Error::from_errno(ret));
            }
            Ok(())
        })();
        // WRs not posted: those moved to slots beyond the head go back to
        // their entries of `wrs` (their MR operations undone), next to
        // those never taken out.
        if res.is_err() {
            let cap = st.cap();
            for i in posted..filled {
                let slot = wrap(st.head + i - posted, cap);
                if let (Some(src), Some(dst)) = (st.ctxs.get_mut(slot), wrs.get_mut(i)) {
                    if let Some(s) = src.take() {
                        *dst = Some(s.unpost());
                    }
                }
            }
        }
        drop(guard);
        for wr in wrs.iter_mut().filter_map(|w| w.take()) {
            self.handler.send_done(self, wr.ctx, Completion::Aborted);
        }
        res
    }

    /// Posts a run of WRs in as few posts as `chain` allows: adds `wr` to
    /// `chain` and posts the chain when `last` or full, signalling the WR
    /// that ends each post (the others are retired by it). Without a chain
    /// (none could be had) `wr` is posted alone, signalled if `last`.
    /// Failure is as for [`Qp::post_send`].
    pub fn post_batched(
        &self,
        chain: Option<&mut SendChain<Q::SendCtx>>,
        mut wr: SendWr<Q::SendCtx>,
        last: bool,
    ) -> Result {
        let Some(c) = chain else {
            if last {
                wr = wr.signaled();
            }
            return self.post_send_one(wr);
        };
        if last || c.len() + 1 >= MAX_SEND_CHAIN {
            wr = wr.signaled();
        }
        if let Err(wr) = c.push(wr) {
            // Unreachable: a full chain was posted (and emptied) before.
            self.handler.send_done(self, wr.ctx, Completion::Aborted);
            return Err(EINVAL);
        }
        if last || c.len() == MAX_SEND_CHAIN {
            self.post_send_chain(c)
        } else {
            Ok(())
        }
    }

    /// Posts one Send-queue WR.
    pub fn post_send_one(&self, wr: SendWr<Q::SendCtx>) -> Result {
        // Not a `SendChain`: that would put MAX_SEND_CHAIN WRs on the stack.
        self.post_wrs(&mut [Some(wr)])
    }

    /// A Send-queue completion: retire every earlier unsignalled WR, then
    /// hand back this one.
    fn complete_send(&self, wc: &WorkCompletion) {
        let Some(idx) = slot_of(&self.send_cqes, wc.cqe()) else {
            pr_err!("send completion for an unknown WR; ignored\n");
            return;
        };
        if !self.is_outstanding(&self.send, idx) {
            pr_err!("send completion for idle slot {}; ignored\n", idx);
            return;
        }
        loop {
            let popped = self.send.lock().pop();
            let Some((slot, s)) = popped else { return };
            if slot == idx {
                let c = Completion::Done(wc);
                let ctx = s.finish(&c);
                self.handler.send_done(self, ctx, c);
                return;
            }
            let ctx = s.finish(&Completion::Retired);
            self.handler.send_done(self, ctx, Completion::Retired);
        }
    }

    /// A Receive completion. Receives complete in order on an RC QP
    /// without SRQ, so this is always the oldest one.
    fn complete_recv(&self, wc: &WorkCompletion) {
        let Some(idx) = slot_of(&self.recv_cqes, wc.cqe()) else {
            pr_err!("receive completion for an unknown WR; ignored\n");
            return;
        };
        if !self.is_outstanding(&self.recv, idx) {
            pr_err!("receive completion for idle slot {}; ignored\n", idx);
            return;
        }
        loop {
            let popped = self.recv.lock().pop();
            let Some((slot, ctx)) = popped else { return };
            if slot == idx {
                self.handler.recv_done(self, ctx, Completion::Done(wc));
                return;
            }
            pr_err!(
                "receive slot {} completed out of order; dropping slot {}\n",
                idx,
                slot
            );
            self.handler.recv_done(self, ctx, Completion::Aborted);
        }
    }

    fn is_outstanding<C, W>(&self, ring: &SpinLock<RingState<C, W>>, idx: usize) -> bool {
        let st = ring.lock();
        let cap = st.ctxs.len();
        idx < cap && wrap(idx + cap - st.tail, cap) < st.outstanding
    }

    /// Stops new posts on both queues.
    fn close(&self) {
        self.send.lock().closed = true;
        self.recv.lock().closed = true;
    }

    /// Hands back whatever is still in the rings: unsignalled Sends as
    /// retired (the drain proved they finished), anything else as aborted.
    fn sweep(&self, sends_retired: bool) {
        loop {
            let popped = self.send.lock().pop();
            let Some((_, s)) = popped else { break };
            let c = if sends_retired {
                Completion::Retired
            } else {
                Completion::Aborted
            };
            let ctx = s.finish(&c);
            self.handler.send_done(self, ctx, c);
        }
        loop {
            let popped = self.recv.lock().pop();
            let Some((_, ctx)) = popped else { break };
            self.handler.recv_done(self, ctx, Completion::Aborted);
        }
    }

    /// Detaches the QP pointer (posts fail from now on) and returns it.
    fn detach(&self) -> *mut bindings::ib_qp {
        let _s = self.send.lock();
        let _r = self.recv.lock();
        self.qp.swap(core::ptr::null_mut(), Ordering::Relaxed)
    }
}

/// How many WRs of a list starting at `first` were posted when the
/// provider refused `bad` (clamped to `n`; all of them if `bad` is bogus).
fn posted_before<T>(first: *const T, bad: *const T, n: usize) -> usize {
    if bad.is_null() {
        return 0;
    }
    let size = core::mem::size_of::<T>();
    match (bad as usize).checked_sub(first as usize) {
        Some(off) if size != 0 => (off / size).min(n),
        _ => 0,
    }
}

/// A connection endpoint: an rdma_cm id with a PD, a Send CQ, a Receive
/// CQ and an RC QP on the id's device.
///
/// Build it on an id bound to a device (active side: after
/// [`super::cm::CmEvent::RouteResolved`]; passive side: from
/// [`super::cm::Incoming::into_cm_id`]), then [`Endpoint::connect`] or
/// [`Endpoint::accept`].
///
/// # Invariants
///
/// `qp`'s CQs are `_send_cq` and `_recv_cq` (or `_send_cq` for both
/// queues when `_recv_cq` is `None`), whose context is `qp`; its QP was
/// created on `id` with `pd`. `drop` destroys them in dependency order.
pub struct Endpoint<H: CmHandler, Q: QpHandler> {
    // Only dropped (freed after the QP, before the rings they call into).
    _send_cq: Cq,
    /// `None`: the Receive Queue shares `_send_cq`.
    _recv_cq: Option<Cq>,
    qp: Pin<KBox<Qp<Q>>>,
    pd: Arc<Pd>,
    id: CmId<H>,
    drained: AtomicBool,
}

impl<H: CmHandler, Q: QpHandler> Endpoint<H, Q> {
    /// Allocates the PD, the CQ polled in `poll`, and an RC QP with `caps`
    /// on `id`'s device. Both queues complete to one CQ (room for both,
    /// plus one drain WR each) when the device allows a CQ that large:
    /// one work item then handles a Send's completion and the Receive of
    /// its reply together, in order, instead of two. Otherwise each queue
    /// has its own CQ.
    ///
    /// Fails with `ENOTCONN` if `id` is not bound to a device, `EINVAL` if
    /// `caps` exceed the device's limits; the id is destroyed on failure.
    pub fn new(id: CmId<H>, caps: &QpCaps, poll: PollContext, handler: Q) -> Result<Self> {
        let Some(dev) = id.device() else {
            pr_err!("endpoint: the rdma_cm id is not bound to a device yet (-ENOTCONN)\n");
            return Err(errno(bindings::ENOTCONN));
        };
        check_caps(dev, caps)?;
        let pd = Pd::new(dev)?;
        let qp = Qp::new(handler, pd.clone(), caps).inspect_err(|e| {
            pr_err!(
                "endpoint: cannot allocate the work-queue rings ({})\n",
                e.to_errno()
            )
        })?;
        let ctx = &*qp as *const Qp<Q> as *mut c_void;
        let both = u64::from(caps.max_send_wr) + u64::from(caps.max_recv_wr) + 2;
        let shared = both <= u64::try_from(dev.max_cqe()).unwrap_or(0);
        let (send_cq, recv_cq) = if shared {
            (Cq::new(dev, ctx, both as u32, poll)?, None)
        } else {
            (
                Cq::new(dev, ctx, caps.max_send_wr + 1, poll)?,
                Some(Cq::new(dev, ctx, caps.max_recv_wr + 1, poll)?),
            )
        };
        let mut attr = bindings::ib_qp_init_attr {
            send_cq: send_cq.as_ptr(),
            recv_cq: recv_cq.as_ref().unwrap_or(&send_cq).as_ptr(),
            cap: bindings::ib_qp_cap {
                max_send_wr: caps.max_send_wr + 1,
                max_recv_wr: caps.max_recv_wr + 1,
                max_send_sge: caps.max_send_sge,
                max_recv_sge: caps.max_recv_sge,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        // SAFETY: the id is live and bound to the device of `pd` and the
        // CQs; `attr` is valid for the call.
        let ret = unsafe { bindings::rdma_create_qp(id.as_ptr(), pd.as_ptr(), &mut attr) };
        if ret != 0 {
            pr_err!(
                "rdma_create_qp on {} (send {}x{}, recv {}x{}) failed ({})\n",
                dev.name(),
                caps.max_send_wr + 1,
                caps.max_send_sge,
                caps.max_recv_wr + 1,
                caps.max_recv_sge,
                ret
            );
            return Err(Error::from_errno(ret));
        }
        // SAFETY: `rdma_create_qp()` succeeded, so `id->qp` is the new QP;
        // nothing else writes it until `rdma_destroy_qp()`.
        let raw_qp = unsafe { (*id.as_ptr()).qp };
        qp.qp.store(raw_qp, Ordering::Relaxed);
        super::census::enter(super::census::Kind::Qp);
        // INVARIANT: the QP uses these CQs and PD and lives on `id`.
        Ok(Endpoint {
            _send_cq: send_cq,
            _recv_cq: recv_cq,
            qp,
            pd,
            id,
            drained: AtomicBool::new(false),
        })
    }

    /// The QP, to post on.
    pub fn qp(&self) -> &Qp<Q> {
        &self.qp
    }

    /// The PD, to map buffers with.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The rdma_cm id.
    pub fn cm_id(&self) -> &CmId<H> {
        &self.id
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.pd.device()
    }

    /// Connects (active side): the outcome arrives as
    /// [`super::cm::CmEvent::Established`] or an error event.
    pub fn connect(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = param.as_raw()?;
        let id = self.id.as_ptr();
        // SAFETY: the id is live with a QP; `raw` and its private data are
        // valid for the call. The `_locked` form is for calls from the id's
        // own handler, which already holds the handler mutex.
        let ret = unsafe {
            if self.id.in_own_handler() {
                bindings::rdma_connect_locked(id, &mut raw)
            } else {
                bindings::rdma_connect(id, &mut raw)
            }
        };
        if ret != 0 {
            pr_err!("rdma_connect failed ({})\n", ret);
        }
        kernel::error::to_result(ret)
    }

    /// Accepts a connection request (passive side); then
    /// [`super::cm::CmEvent::Established`] follows.
    pub fn accept(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = param.as_raw()?;
        let id = self.id.as_ptr();
        let own = self.id.in_own_handler();
        // SAFETY: the id is live with a QP; `rdma_accept()` needs the
        // handler mutex, which we take unless we run in the handler.
        let ret = unsafe {
            if !own {
                bindings::rdma_lock_handler(id);
            }
            let ret = bindings::rdma_accept(id, &mut raw);
            if !own {
                bindings::rdma_unlock_handler(id);
            }
            ret
        };
        if ret != 0 {
            pr_err!("rdma_accept failed ({})\n", ret);
        }
        kernel::error::to_result(ret)
    }

    /// Disconnects (see [`CmId::disconnect`]).
    pub fn disconnect(&self) -> Result {
        self.id.disconnect()
    }

    /// Stops posting, moves the QP to the error state and waits until
    /// every posted WR came back through the handler. Idempotent. Must not
    /// be called from a [`QpHandler`] callback.
    pub fn drain(&self) {
        if self.drained.swap(true, Ordering::AcqRel) {
            return;
        }
        self.qp.close();
        let qp = self.qp.qp.load(Ordering::Relaxed);
        if !qp.is_null() {
            // SAFETY: the QP is live (it is destroyed only in `drop`, after
            // this), and its CQs are not `IB_POLL_DIRECT`.
            unsafe { bindings::ib_drain_qp(qp) };
        }
        // Everything signalled has completed; what is left are unsignalled
        // Sends that finished before the drain marker.
        self.qp.sweep(!qp.is_null());
    }
}

impl<H: CmHandler, Q: QpHandler> Drop for Endpoint<H, Q> {
    fn drop(&mut self) {
        // Not connected is fine here.
        let _ = self.id.disconnect();
        self.drain();
        if !self.qp.detach().is_null() {
            // SAFETY: the id is live and owns the QP, which is drained and
            // no longer reachable for posting.
            unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
            super::census::leave(super::census::Kind::Qp);
        }
        // The fields now drop in order: the CQs (waiting for their poll
        // work), the rings, the PD reference, the id.
    }
}

fn check_caps(dev: &Device, caps: &QpCaps) -> Result {
    let wr = dev.max_qp_wr().max(0) as u64;
    let cqe = dev.max_cqe().max(0) as u64;
    let ok = caps.max_send_wr > 0
        && caps.max_recv_wr > 0
        && caps.max_recv_sge > 0
        && u64::from(caps.max_send_wr) < wr.min(cqe)
        && u64::from(caps.max_recv_wr) < wr.min(cqe)
        && i64::from(caps.max_send_sge) <= i64::from(dev.max_send_sge())
        && i64::from(caps.max_recv_sge) <= i64::from(dev.max_recv_sge());
    if !ok {
        pr_err!(
            "QP caps {:?} do not fit {} (max_qp_wr {}, max_cqe {}, max_send_sge {}, max_recv_sge {}) (-EINVAL)\n",
            caps,
            dev.name(),
            dev.max_qp_wr(),
            dev.max_cqe(),
            dev.max_send_sge(),
            dev.max_recv_sge()
        );
        return Err(EINVAL);
    }
    Ok(())
}
