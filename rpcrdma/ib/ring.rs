// SPDX-License-Identifier: GPL-2.0

//! The rings a [`Qp`](super::qp::Qp) keeps its posted work in: one slot
//! per outstanding WR holding its context (and, on the Send queue, the MR
//! operation it started), filled by posters under the queue's post lock
//! and emptied by its completion handler without one ([`Ring`]); the
//! scratch WRs and SGEs of one post ([`PostState`]); and the `struct
//! ib_cqe`s that map a completion back to its slot.

use super::errno;
use super::mr::MrOp;
use super::wc::Completion;
use super::wr::{SendCtx, SendOp, SendWr};
use crate::bindings;
use core::cell::UnsafeCell;
use core::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
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

/// A ring's contexts and positions: written by its posters, which hold
/// the queue's post lock ([`PostState`]), and emptied by its one consumer
/// (the queue's completion handler, or the sweep after the drain)
/// without a lock.
///
/// Positions count WRs since the ring was made (wrapping); position `p`
/// uses cell `p % capacity`.
///
/// # Invariants
///
/// - `done <= posted`, `posted - done <= cells.len()`; only the consumer
///   stores `done`, only a poster (holding the post lock) stores `posted`.
/// - The cells of the positions `done..posted` hold `Some` (the contexts
///   of published WRs, in posting order); every other cell holds `None`.
///   A poster writes a cell only at a position that is not published
///   (`>= posted`) and free (`< done + capacity`); the consumer reads and
///   empties a cell only at position `done`, while `done < posted`, and
///   then stores `done + 1` (release), which gives the cell back.
/// - A poster publishes WRs before posting them and, if the provider
///   refuses some, takes their positions back before releasing the post
///   lock; the consumer empties a position only on a completion of that
///   position or of a later one, and WRs that were never posted have
///   none, so it never reaches a position that is being taken back.
pub(super) struct Ring<C> {
    cells: KVec<UnsafeCell<Option<C>>>,
    posted: AtomicUsize,
    done: AtomicUsize,
}

// SAFETY: contexts move between the posters and the consumer through the
// cells under the type invariant, each cell with one owner at a time
// (`C: Send`); the positions are atomics.
unsafe impl<C: Send> Send for Ring<C> {}
// SAFETY: as above: a `&Ring` moves contexts, never shares one.
unsafe impl<C: Send> Sync for Ring<C> {}

impl<C> Ring<C> {
    pub(super) fn new(cap: usize) -> Result<Self> {
        let mut cells = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            cells.push(UnsafeCell::new(None), GFP_KERNEL)?;
        }
        // INVARIANT: nothing published, every cell empty.
        Ok(Ring {
            cells,
            posted: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        })
    }

    pub(super) fn cap(&self) -> usize {
        self.cells.len()
    }

    /// WRs published and not yet handed back (a snapshot).
    pub(super) fn outstanding(&self) -> usize {
        let done = self.done.load(Acquire);
        self.posted.load(Acquire).wrapping_sub(done)
    }

    /// Whether `n` more WRs fit after position `head` (the post lock's
    /// [`PostState::head`]).
    fn has_room(&self, head: usize, n: usize) -> bool {
        // Acquire: the cells the consumer gave back are empty.
        let used = head.wrapping_sub(self.done.load(Acquire));
        used.checked_add(n).is_some_and(|u| u <= self.cap())
    }

    /// The cell of position `pos`. A poster may make a reference of it
    /// only while it holds the queue's post lock, for a position that is
    /// not published (or that it is taking back, see the type invariant)
    /// and within the room [`PostState::check_room`] found, and only one
    /// at a time.
    pub(super) fn cell(&self, pos: usize) -> Option<*mut Option<C>> {
        self.cells.get(wrap(pos, self.cap())).map(UnsafeCell::get)
    }

    /// Publishes positions up to `end` (exclusive) for the consumer, or
    /// takes published ones back (a post the provider refused).
    ///
    /// # Safety
    ///
    /// The caller holds the queue's post lock; the cells up to `end` hold
    /// the contexts of WRs that are, or are about to be, posted in order;
    /// positions taken back were never posted.
    pub(super) unsafe fn publish(&self, end: usize) {
        // INVARIANT: per the caller; release: the cells are written.
        self.posted.store(end, Release);
    }

    /// Whether cell `idx` holds an outstanding WR's context.
    ///
    /// # Safety
    ///
    /// The caller is the ring's one consumer (see [`Ring::pop`]).
    pub(super) unsafe fn is_outstanding(&self, idx: usize) -> bool {
        let cap = self.cap();
        let done = self.done.load(Relaxed);
        let n = self.posted.load(Acquire).wrapping_sub(done);
        idx < cap && wrap(idx.wrapping_add(cap).wrapping_sub(wrap(done, cap)), cap) < n
    }

    /// Takes the oldest outstanding context: `(cell, ctx)`.
    ///
    /// # Safety
    ///
    /// The caller is the ring's one consumer: the queue's completion
    /// handler (ib_core runs a CQ's completions one at a time) or the
    /// sweep after the drain (when no completion is left); it pops only
    /// up to the position of the completion it handles (or, sweeping,
    /// everything published: no post is under way then).
    pub(super) unsafe fn pop(&self) -> Option<(usize, C)> {
        // Only the consumer stores `done`.
        let done = self.done.load(Relaxed);
        if done == self.posted.load(Acquire) {
            return None;
        }
        let idx = wrap(done, self.cap());
        let c = self.cells.get(idx)?;
        // SAFETY: position `done` is published and not given back, so its
        // cell is the consumer's (type invariant), and the acquire load of
        // `posted` saw the poster's write.
        let ctx = unsafe { (*c.get()).take() };
        // INVARIANT: the cell is empty again; release: for the poster
        // that reuses it.
        self.done.store(done.wrapping_add(1), Release);
        ctx.map(|ctx| (idx, ctx))
    }
}

/// The posting side of a ring, under the queue's post lock.
///
/// # Invariants
///
/// `head` is the ring's `posted` whenever the lock is free; once `closed`,
/// nothing is posted.
pub(super) struct PostState<W> {
    pub(super) head: usize,
    pub(super) closed: bool,
    /// Scratch WRs and SGEs for one post, used under the lock.
    pub(super) wrs: KVec<W>,
    pub(super) sges: KVec<bindings::ib_sge>,
    pub(super) max_sge: usize,
}

// SAFETY: the scratch WRs' raw pointers point into the same `PostState`
// (or the QP's cqes) and are only used under the lock.
unsafe impl<W> Send for PostState<W> {}

impl<W: Copy> PostState<W> {
    pub(super) fn new(batch: usize, max_sge: usize, zero: W) -> Result<Self> {
        let zero_sge = bindings::ib_sge::default();
        Ok(PostState {
            head: 0,
            closed: false,
            wrs: KVec::from_elem(zero, batch, GFP_KERNEL)?,
            sges: KVec::from_elem(zero_sge, batch * max_sge, GFP_KERNEL)?,
            max_sge,
        })
    }

    /// Checks that `n` more WRs may be posted on `qp` (the ring's QP, null
    /// once destroyed): `ENOTCONN` after drain/teardown, `ENOBUFS` when
    /// they would exceed the queue depth (`what` names the queue in the
    /// message).
    pub(super) fn check_room<C>(
        &self,
        ring: &Ring<C>,
        qp: *mut bindings::ib_qp,
        n: usize,
        what: &str,
    ) -> Result {
        if self.closed || qp.is_null() {
            return Err(errno(bindings::ENOTCONN));
        }
        if !ring.has_room(self.head, n) {
            pr_err!(
                "{}: {} more WRs would exceed the queue depth {} (-ENOBUFS)\n",
                what,
                n,
                ring.cap()
            );
            return Err(errno(bindings::ENOBUFS));
        }
        Ok(())
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
