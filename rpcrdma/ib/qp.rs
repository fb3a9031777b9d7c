// SPDX-License-Identifier: GPL-2.0

//! An RC queue pair's posting and completion paths ([`Qp`]), its queue
//! depths ([`QpCaps`]) and the handler its completions go to
//! ([`QpHandler`]).
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
//! The ring slots (module `ring`) hold the `struct ib_cqe` each WR
//! carries (`wr_cqe`), so the C `done` callback is a generic trampoline
//! that finds the slot by address, no allocation or refcounting per WR.
//! The rings also bound the number of outstanding WRs by the QP's
//! capacity, so a post never overflows a work queue.
//!
//! The QP is created, drained and destroyed by its
//! [`Endpoint`](super::endpoint::Endpoint).

use super::mr::MrOp;
use super::ring::{make_cqes, slot_of, wrap, PostState, Ring, SendSlot, SendWrBuf};
use super::verbs::Pd;
use super::wc::{Completion, WorkCompletion};
use super::wr::{
    RecvBatch, RecvCtx, SendChain, SendCtx, SendOp, SendWr, SgeList, MAX_RECV_BATCH, MAX_SEND_CHAIN,
};
use crate::bindings;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};
use kernel::types::Opaque;

/// Receives the contexts of completed work requests.
///
/// Called from the CQ's poll work item (process context, see
/// [`PollContext`](super::verbs::PollContext)), one completion at a time
/// per queue; the Send and Receive queues have separate CQs, so
/// `send_done` and `recv_done` may run concurrently. [`Completion::Aborted`] may also be delivered
/// synchronously from a failing `post_*` call or from teardown.
///
/// Handlers may post again through `qp`; they must not drain or drop the
/// [`Endpoint`](super::endpoint::Endpoint) (draining waits for this very
/// work item).
///
/// Posting takes a plain (not `_bh`/`_irq`) spinlock per queue, so post
/// from process context only (SUNRPC's rpciod, a work item, a thread),
/// never from softirq or hard-irq context; completions take none.
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

/// An RC queue pair (inside an [`Endpoint`](super::endpoint::Endpoint)):
/// posting and completion.
///
/// # Invariants
///
/// `qp` is null or the QP `rdma_create_qp()` created on the endpoint's id
/// with CQs whose `cq_context` is this object; it is only read under a
/// post lock and set to null (under both) before the QP is destroyed.
/// `send_cqes`/`recv_cqes` have one entry per ring slot and are never
/// resized, so their addresses are stable; their `done` is
/// `send_done::<Q>`/`recv_done::<Q>`.
#[pin_data]
pub struct Qp<Q: QpHandler> {
    handler: Q,
    pub(super) qp: AtomicPtr<bindings::ib_qp>,
    pd: Arc<Pd>,
    send_cqes: KVec<Opaque<bindings::ib_cqe>>,
    recv_cqes: KVec<Opaque<bindings::ib_cqe>>,
    /// The contexts of posted Send-queue WRs: filled under `send`,
    /// emptied by the Send CQ's completions without a lock.
    send_ring: Ring<SendSlot<Q::SendCtx>>,
    recv_ring: Ring<Q::RecvCtx>,
    /// The post locks: a post fills its ring slots and calls the
    /// provider under one, so that WRs are in the ring in the order the
    /// provider got them (a Send queue completes in that order, which is
    /// how a signalled completion retires the unsignalled WRs before it).
    #[pin]
    send: SpinLock<PostState<SendWrBuf>>,
    #[pin]
    recv: SpinLock<PostState<bindings::ib_recv_wr>>,
}

// SAFETY: the cqes are written only at initialisation and then only read
// (by ib_core); the rings are `Send + Sync` for `Send` contexts; everything
// else is `Send`/`Sync` or behind the post locks.
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
    pub(super) fn new(handler: Q, pd: Arc<Pd>, caps: &QpCaps) -> Result<Pin<KBox<Self>>> {
        let (ns, nr) = (caps.max_send_wr as usize, caps.max_recv_wr as usize);
        let send_cqes = make_cqes(ns, send_done::<Q>)?;
        let recv_cqes = make_cqes(nr, recv_done::<Q>)?;
        // SAFETY: all-zero is a valid (empty) `ib_send_wr`/`ib_reg_wr`.
        let zero_send: SendWrBuf = unsafe { core::mem::zeroed() };
        let send_state = PostState::new(MAX_SEND_CHAIN, caps.max_send_sge as usize, zero_send)?;
        let recv_state = PostState::new(
            MAX_RECV_BATCH,
            caps.max_recv_sge as usize,
            bindings::ib_recv_wr::default(),
        )?;
        let send_ring = Ring::new(ns)?;
        let recv_ring = Ring::new(nr)?;
        KBox::pin_init(
            pin_init!(Qp {
                handler,
                qp: AtomicPtr::new(core::ptr::null_mut()),
                pd,
                send_cqes,
                recv_cqes,
                send_ring,
                recv_ring,
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
        self.send_ring.outstanding()
    }

    /// How many WRs the Send queue holds at most.
    pub fn send_depth(&self) -> usize {
        self.send_ring.cap()
    }

    /// Receives posted and not yet handed back.
    pub fn recv_outstanding(&self) -> usize {
        self.recv_ring.outstanding()
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
        let ring = &self.recv_ring;
        let head = st.head;
        let res = (|| -> Result {
            let qp = self.qp.load(Ordering::Relaxed);
            st.check_room(ring, qp, n, "post_recv")?;
            let mut sge_at = 0;
            for i in 0..n {
                let pos = head.wrapping_add(i);
                let ctx = batch.ctxs.get_mut(i).and_then(|c| c.take());
                // SAFETY: the post lock is held, `pos` is beyond the
                // published positions and within the room checked above;
                // `dst` is the only reference to its cell.
                let dst = ring.cell(pos).map(|c| unsafe { &mut *c });
                let (Some(dst), Some(cqe)) = (dst, self.recv_cqes.get(wrap(pos, ring.cap())))
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
            // Published before the post: a completion may come before
            // `ib_post_recv` returns.
            // SAFETY: the post lock is held and the cells up to
            // `head + n` hold the contexts about to be posted, in order.
            unsafe { ring.publish(head.wrapping_add(n)) };
            // SAFETY: `qp` is live (non-null under the lock); the WR list
            // and its SGEs are valid scratch memory, copied by the provider.
            let ret = unsafe { bindings::rpcrdma2_shim_post_recv(qp, first, &mut bad) };
            posted = if ret == 0 {
                n
            } else {
                posted_before(first, bad, n)
            };
            st.head = head.wrapping_add(posted);
            if posted < n {
                // SAFETY: the post lock is held; the positions from
                // `head + posted` were never posted.
                unsafe { ring.publish(st.head) };
            }
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
        // Take back what was filled but not posted (from the new head).
        if res.is_err() {
            for i in posted..filled {
                // SAFETY: the post lock is held and the position was never
                // posted (taken back above, or never published); the only
                // reference to its cell.
                let src = ring.cell(head.wrapping_add(i)).map(|c| unsafe { &mut *c });
                if let (Some(src), Some(dst)) = (src, batch.ctxs.get_mut(i)) {
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

    /// Hands every WR of `chain` back through [`QpHandler::send_done`] as
    /// [`Completion::Aborted`] without posting it (a post the caller gave
    /// up on); the chain is empty afterwards.
    pub fn discard_send_chain(&self, chain: &mut SendChain<Q::SendCtx>) {
        let n = chain.len.min(MAX_SEND_CHAIN);
        chain.len = 0;
        for wr in chain.wrs.iter_mut().take(n).filter_map(|w| w.take()) {
            self.handler.send_done(self, wr.ctx, Completion::Aborted);
        }
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
        let ring = &self.send_ring;
        let head = st.head;
        let res = (|| -> Result {
            let qp = self.qp.load(Ordering::Relaxed);
            st.check_room(ring, qp, n, "post_send")?;
            let mut sge_at = 0;
            for i in 0..n {
                let pos = head.wrapping_add(i);
                let Some(wr) = wrs.get_mut(i).and_then(|w| w.take()) else {
                    return Err(EINVAL);
                };
                let (op, flags) = (wr.op, wr.flags);
                // SAFETY: the post lock is held, `pos` is beyond the
                // published positions and within the room checked above;
                // `dst` is the only reference to its cell.
                let dst = ring.cell(pos).map(|c| unsafe { &mut *c });
                let cqe = self.send_cqes.get(wrap(pos, ring.cap()));
                let (Some(dst), Some(cqe)) = (dst, cqe) else {
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
                // REG_MR, LOCAL_INV and a zero-length Write carry no SGEs;
                // the first two move the context's MR to Registered/
                // InvPosted (and record that in the slot, so that only
                // this WR's completion moves it on).
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
                    SendOp::ZeroLengthWrite => {}
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
                    SendOp::RdmaWrite { .. } | SendOp::ZeroLengthWrite => {
                        (bindings::ib_wr_opcode_IB_WR_RDMA_WRITE, no_ex)
                    }
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
                    (SendOp::ZeroLengthWrite, _) => SendWrBuf {
                        rdma: bindings::ib_rdma_wr {
                            wr,
                            remote_addr: 0,
                            rkey: 0,
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
            // Published before the post: a completion may come before
            // `ib_post_send` returns.
            // SAFETY: the post lock is held and the cells up to
            // `head + n` hold the contexts about to be posted, in order.
            unsafe { ring.publish(head.wrapping_add(n)) };
            // SAFETY: `qp` is live (non-null under the lock); the WR list
            // and its SGEs are valid scratch memory, copied by the provider.
            let ret = unsafe { bindings::rpcrdma2_shim_post_send(qp, first, &mut bad) };
            posted = if ret == 0 {
                n
            } else {
                posted_before(first.cast::<SendWrBuf>(), bad.cast::<SendWrBuf>(), n)
            };
            st.head = head.wrapping_add(posted);
            if posted < n {
                // SAFETY: the post lock is held; the positions from
                // `head + posted` were never posted.
                unsafe { ring.publish(st.head) };
            }
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
            for i in posted..filled {
                // SAFETY: the post lock is held and the position was never
                // posted (taken back above, or never published); the only
                // reference to its cell.
                let src = ring.cell(head.wrapping_add(i)).map(|c| unsafe { &mut *c });
                if let (Some(src), Some(dst)) = (src, wrs.get_mut(i)) {
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

    /// Posts two Send-queue WRs, `first` then `second`, in one
    /// `ib_post_send()` (e.g. a REG_MR and the Send that advertises its
    /// MR), without a [`SendChain`]. Failure is as for [`Qp::post_send`].
    pub fn post_send_pair(&self, first: SendWr<Q::SendCtx>, second: SendWr<Q::SendCtx>) -> Result {
        self.post_wrs(&mut [Some(first), Some(second)])
    }

    /// Hands `wr` back through [`QpHandler::send_done`] as
    /// [`Completion::Aborted`] without posting it (a post the caller gave
    /// up on).
    pub fn discard_send(&self, wr: SendWr<Q::SendCtx>) {
        self.handler.send_done(self, wr.ctx, Completion::Aborted);
    }

    /// A Send-queue completion: retire every earlier unsignalled WR, then
    /// hand back this one.
    fn complete_send(&self, wc: &WorkCompletion) {
        let Some(idx) = slot_of(&self.send_cqes, wc.cqe()) else {
            pr_err!("send completion for an unknown WR; ignored\n");
            return;
        };
        // Without a lock: ib_core runs this CQ's completions one at a
        // time, and the sweep, the ring's other consumer, runs only after
        // the drain. So `idx` stays outstanding until this loop takes it,
        // and the loop takes nothing past it.
        // SAFETY: this is the ring's one consumer (above).
        if !unsafe { self.send_ring.is_outstanding(idx) } {
            pr_err!("send completion for idle slot {}; ignored\n", idx);
            return;
        }
        loop {
            // SAFETY: as above; popping stops at `idx`, this completion's.
            let Some((slot, s)) = (unsafe { self.send_ring.pop() }) else {
                return;
            };
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
        // Without a lock, as in `complete_send`.
        // SAFETY: this is the ring's one consumer (see `complete_send`).
        if !unsafe { self.recv_ring.is_outstanding(idx) } {
            pr_err!("receive completion for idle slot {}; ignored\n", idx);
            return;
        }
        loop {
            // SAFETY: as above; popping stops at `idx`, this completion's.
            let Some((slot, ctx)) = (unsafe { self.recv_ring.pop() }) else {
                return;
            };
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

    /// Stops new posts on both queues.
    pub(super) fn close(&self) {
        self.send.lock().closed = true;
        self.recv.lock().closed = true;
    }

    /// Hands back whatever is still in the rings: unsignalled Sends as
    /// retired (the drain proved they finished), anything else as aborted.
    ///
    /// Called after [`Qp::close`] and the drain (or with no QP), when no
    /// completion is left to come and nothing is posted any more: the
    /// rings' one consumer then.
    pub(super) fn sweep(&self, sends_retired: bool) {
        loop {
            // SAFETY: the rings' one consumer (above).
            let popped = unsafe { self.send_ring.pop() };
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
            // SAFETY: as above.
            let popped = unsafe { self.recv_ring.pop() };
            let Some((_, ctx)) = popped else { break };
            self.handler.recv_done(self, ctx, Completion::Aborted);
        }
    }

    /// Detaches the QP pointer (posts fail from now on) and returns it.
    pub(super) fn detach(&self) -> *mut bindings::ib_qp {
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
