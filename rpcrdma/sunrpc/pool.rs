// SPDX-License-Identifier: GPL-2.0

//! A transport's request slots ([`SlotPool`]): made once when the
//! transport is set up, lent to SUNRPC's tasks by `alloc_slot` (or a
//! backlog wake-up) and taken back by `free_slot`. The pool owns its
//! requests as `block::mq`'s `TagSet` does; the transport only says what
//! each slot carries ([`Transport::Slot`](super::transport::Transport::Slot))
//! and hands the pool out ([`Transport::slots`](super::transport::Transport::slots)).

use super::slot::{task_add_backlog, task_set_slot, wake_up_backlog, FreeSlot, SlotBox, Task};
use super::xprt::Xprt;
use crate::compat::init::PinInit;
use crate::sync::kvec::{kfree_list, KFreeList};
use core::pin::Pin;
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec};
use kernel::prelude::*;

/// A transport's request slots.
///
/// # Invariants
///
/// Every slot of `slots` is either lent to a task of the pool's
/// transport or has its one [`FreeSlot`] handle in `free`.
#[pin_data]
pub struct SlotPool<S> {
    /// The handles of the free slots, taken and given back without a
    /// lock: `alloc_slot` and `free_slot` run in any task's context, at
    /// once (declared before `slots`, so the handles are dropped before
    /// the slots they point to).
    free: KFreeList<FreeSlot<S>>,
    /// Every slot, pinned; owns the memory the handles in `free` and the
    /// slots lent to SUNRPC point to.
    slots: KVec<Pin<KBox<SlotBox<S>>>>,
}

impl<S> SlotPool<S> {
    /// `n` slots with Call and Reply buffers of `buf_size` bytes each,
    /// slot `i` carrying `init(i)`.
    pub fn new<I, E>(
        n: u16,
        buf_size: usize,
        init: impl Fn(u16) -> I,
    ) -> Result<impl PinInit<Self, Error>>
    where
        I: PinInit<S, E>,
        Error: From<E>,
    {
        let mut slots = KVec::with_capacity(n.into(), GFP_KERNEL)?;
        for index in 0..n {
            slots.push(SlotBox::new(index, buf_size, init(index))?, GFP_KERNEL)?;
        }
        let free = kfree_list(slots.len())?;
        for slot in slots.iter() {
            // SAFETY: the slot was just made, so no task holds it, and
            // this is its only handle. It is pinned in the pool's slot
            // array, dropped only with the pool, which its transport drops
            // after `destroy`, which SUNRPC calls once every task, and so
            // every slot, is released (the array is declared after the
            // free list, so it outlives the handles also while the pool is
            // dropped). The handle goes only to the pool's transport: its
            // `alloc_slot` and `free_slot` trampolines are the only callers
            // of `SlotPool::alloc` and `SlotPool::release`, with their own
            // `rpc_xprt`, and back to this free list.
            let handle = unsafe { FreeSlot::new(slot.as_ref()) };
            // The list has room for every slot and more; nothing else
            // gives or takes yet.
            free.give(handle).map_err(|_| ENOMEM)?;
        }
        Ok(try_pin_init!(SlotPool { free, slots }? Error))
    }

    /// How many slots the pool has.
    pub fn size(&self) -> usize {
        self.slots.len()
    }

    /// How many slots are free (a snapshot: a slot on its way in or out
    /// is not counted).
    pub fn free_count(&self) -> usize {
        self.free.held()
    }

    /// `xprt_ops::alloc_slot`: gives `task` a free slot, or queues it on
    /// `xprt`'s backlog. Only the pool's transport's `alloc_slot`
    /// trampoline calls it, with its own `rpc_xprt`.
    pub(super) fn alloc(&self, xprt: &Xprt, task: &Task) {
        if let Some(slot) = self.take() {
            task_set_slot(task, slot);
            return;
        }
        task_add_backlog(xprt, task);
        // A slot freed between the pop and joining the backlog would have
        // found no waiter: check again, as the C client does.
        if let Some(slot) = self.take() {
            if let Some(slot) = wake_up_backlog(xprt, slot) {
                self.put(slot);
            }
        }
    }

    /// `xprt_ops::free_slot`: hands a slot SUNRPC gave back to a task on
    /// `xprt`'s backlog, or keeps it. Only the pool's transport's
    /// `free_slot` trampoline calls it, with its own `rpc_xprt`.
    pub(super) fn release(&self, xprt: &Xprt, slot: FreeSlot<S>) {
        if let Some(slot) = wake_up_backlog(xprt, slot) {
            self.put(slot);
        }
    }

    fn take(&self) -> Option<FreeSlot<S>> {
        self.free.take()
    }

    /// Returns a free slot to the pool, its `rpc_rqst` zeroed.
    fn put(&self, mut slot: FreeSlot<S>) {
        slot.reset();
        if self.free.give(slot).is_err() {
            // Only if more takes than the list's spare cells are stopped
            // half-way at once; the slot's memory stays the pool's, only
            // its use is lost.
            if crate::compat::print::ratelimit() {
                pr_err!("free_slot: the free list refused a slot; the transport has one fewer\n");
            }
        }
    }

    /// Forgets every request's congestion-window slot (a connection
    /// ended: [`SlotBox::reset_cong`]).
    ///
    /// # Safety
    ///
    /// `xprt` is the pool's transport (the one its slots are lent to).
    pub(super) unsafe fn reset_cong(&self, xprt: &Xprt) {
        for slot in self.slots.iter() {
            // SAFETY: the slots are `xprt`'s (per the caller).
            unsafe { slot.reset_cong(xprt) };
        }
    }
}
