// SPDX-License-Identifier: GPL-2.0

//! The rings a [`Qp`](super::qp::Qp) keeps its posted work in: one slot
//! per outstanding WR holding its context (and, on the Send queue, the MR
//! operation it started), the scratch WRs and SGEs of one post, and the
//! `struct ib_cqe`s that map a completion back to its slot.

use super::errno;
use super::mr::MrOp;
use super::wc::Completion;
use super::wr::{SendCtx, SendOp, SendWr};
use crate::bindings;
use kernel::prelude::*;
use kernel::types::Opaque;

/// Scratch space for one Send-queue WR: big enough for every WR type the
/// layer builds (`ib_reg_wr` starts with its `ib_send_wr`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) union SendWrBuf {
    pub(super) send: bindings::ib_send_wr,
    pub(super) reg: bindings::ib_reg_wr,
    pub(super) rdma: bindings::ib_rdma_wr,
}

/// A Send-ring slot: the WR as posted (context, operation, flags) and the
/// MR operation it started (set only when the post moved the MR's state,
/// so only that WR's completion moves it on).
pub(super) struct SendSlot<C> {
    pub(super) ctx: C,
    pub(super) op: SendOp,
    pub(super) flags: i32,
    pub(super) mr_op: Option<MrOp>,
}

impl<C: SendCtx> SendSlot<C> {
    /// Finishes the MR operation, if any, and gives the context back.
    pub(super) fn finish(self, c: &Completion<'_>) -> C {
        if let (Some(op), Some(mr)) = (self.mr_op, self.ctx.mr()) {
            mr.end_op(op, c);
        }
        self.ctx
    }

    /// A WR that was never posted: undoes its MR operation, if any, and
    /// gives the WR back.
    pub(super) fn unpost(self) -> SendWr<C> {
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
pub(super) struct RingState<C, W> {
    pub(super) ctxs: KVec<Option<C>>,
    pub(super) head: usize,
    pub(super) tail: usize,
    pub(super) outstanding: usize,
    pub(super) closed: bool,
    /// Scratch WRs and SGEs for one post, used under the lock.
    pub(super) wrs: KVec<W>,
    pub(super) sges: KVec<bindings::ib_sge>,
    pub(super) max_sge: usize,
}

// SAFETY: the scratch WRs' raw pointers point into the same `RingState` (or
// the QP's cqes) and are only used under the lock; `C: Send`.
unsafe impl<C: Send, W> Send for RingState<C, W> {}

impl<C, W: Copy> RingState<C, W> {
    pub(super) fn new(cap: usize, batch: usize, max_sge: usize, zero: W) -> Result<Self> {
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

    pub(super) fn cap(&self) -> usize {
        self.ctxs.len()
    }

    /// Checks that `n` more WRs may be posted on `qp` (the ring's QP, null
    /// once destroyed): `ENOTCONN` after drain/teardown, `ENOBUFS` when
    /// they would exceed the queue depth (`what` names the queue in the
    /// message).
    pub(super) fn check_room(&self, qp: *mut bindings::ib_qp, n: usize, what: &str) -> Result {
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

    /// Whether slot `idx` holds the context of an outstanding WR.
    pub(super) fn is_outstanding(&self, idx: usize) -> bool {
        let cap = self.cap();
        idx < cap && wrap(idx + cap - self.tail, cap) < self.outstanding
    }

    /// Takes the oldest outstanding context: `(slot, ctx)`.
    pub(super) fn pop(&mut self) -> Option<(usize, C)> {
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
pub(super) fn wrap(i: usize, cap: usize) -> usize {
    i.checked_rem(cap).unwrap_or(0)
}

/// Allocates `n` cqes whose `done` is `done`.
pub(super) fn make_cqes(
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
pub(super) fn slot_of(
    cqes: &[Opaque<bindings::ib_cqe>],
    cqe: *mut bindings::ib_cqe,
) -> Option<usize> {
    let base = cqes.as_ptr() as usize;
    let size = core::mem::size_of::<Opaque<bindings::ib_cqe>>();
    let off = (cqe as usize).checked_sub(base)?;
    let idx = off / size;
    (off % size == 0 && idx < cqes.len()).then_some(idx)
}
