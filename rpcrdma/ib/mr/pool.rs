// SPDX-License-Identifier: GPL-2.0

//! A pool of FRWR MRs on one PD ([`MrPool`]): an MR is taken for a
//! registration and given back once the peer can no longer reach it;
//! broken ones are deregistered and replaced.

use super::super::verbs::Pd;
use super::caps::MrShape;
use super::{Mr, MrState};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};

/// A pool of FRWR MRs for one connection (one PD).
///
/// The owner chooses the size and the shape of the MRs (for example, a
/// transport may keep as many as its requests can use at once, bounded by
/// memory). MRs that came back
/// `Broken` or still registered are deregistered, not reused, and
/// [`MrPool::refill`] replaces them (call it in process context, e.g. on
/// reconnect). A new connection has a new PD and so a new pool.
///
/// # Invariants
///
/// Every MR in `free` is `Free` and belongs to `pd`. `available` is the
/// number of MRs in `free` whenever its lock is free (written only under
/// it).
#[pin_data]
pub struct MrPool {
    pd: Arc<Pd>,
    shape: MrShape,
    size: usize,
    lost: AtomicUsize,
    /// MRs in `free`, readable without its lock (a sender checks it for
    /// every RPC, most of which need none).
    available: AtomicUsize,
    /// A spinlock: nothing that may sleep (unmapping, deregistering an
    /// MR) happens under it.
    #[pin]
    free: SpinLock<FreeList>,
}

/// A stack of MRs in `size` preallocated slots: `slots[..n]` are `Some`,
/// the rest `None` (so giving an MR back never allocates).
struct FreeList {
    slots: KVec<Option<Mr>>,
    n: usize,
}

impl FreeList {
    fn pop(&mut self) -> Option<Mr> {
        let i = self.n.checked_sub(1)?;
        let mr = self.slots.get_mut(i)?.take();
        self.n = i;
        mr
    }

    /// Gives `mr` back if there is a free slot.
    fn push(&mut self, mr: Mr) -> core::result::Result<(), Mr> {
        match self.slots.get_mut(self.n) {
            Some(slot) => {
                *slot = Some(mr);
                self.n += 1;
                Ok(())
            }
            None => Err(mr),
        }
    }
}

impl MrPool {
    /// Allocates `size` MRs of `shape` on `pd`.
    pub fn new(pd: &Arc<Pd>, shape: MrShape, size: usize) -> Result<Arc<MrPool>> {
        let mut slots = KVec::with_capacity(size, GFP_KERNEL)?;
        for _ in 0..size {
            slots.push(Some(Mr::new(pd, &shape)?), GFP_KERNEL)?;
        }
        let v = FreeList { slots, n: size };
        let available = AtomicUsize::new(size);
        Arc::pin_init(
            pin_init!(MrPool {
                pd: pd.clone(),
                shape,
                size,
                lost: AtomicUsize::new(0),
                available,
                free <- kernel::new_spinlock!(v, "rpcrdma2_mr_pool"),
            }),
            GFP_KERNEL,
        )
    }

    /// The shape the MRs were made with.
    pub fn shape(&self) -> &MrShape {
        &self.shape
    }

    /// Takes a `Free` MR; `None` when the pool is empty.
    pub fn get(&self) -> Option<Mr> {
        let mut free = self.free.lock();
        let mr = free.pop();
        self.available.store(free.n, Ordering::SeqCst);
        mr
    }

    /// Gives an MR back. A `Mapped` or `Invalidated` one is unmapped
    /// first (its owned buffer, if any, is freed); any other state means
    /// the peer may still reach it or its hardware state is unknown, so it
    /// is deregistered and counted as lost until [`MrPool::refill`].
    pub fn put(&self, mut mr: Mr) {
        if !core::ptr::eq(&**mr.pd(), &*self.pd) {
            pr_err!(
                "MR {:#x} returned to the pool of another PD; deregistered\n",
                mr.rkey()
            );
            return;
        }
        let reusable = match mr.state() {
            MrState::Free => true,
            MrState::Mapped | MrState::Invalidated => mr.unmap().is_ok(),
            _ => false,
        };
        if reusable {
            // A slot is free unless more MRs come back than were taken;
            // an extra one is deregistered like a broken one, once the
            // lock is dropped.
            let extra = {
                let mut free = self.free.lock();
                let r = free.push(mr);
                self.available.store(free.n, Ordering::SeqCst);
                r
            };
            if extra.is_ok() {
                return;
            }
        } else {
            drop(mr);
        }
        self.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// The number of MRs the pool holds when all are back.
    pub fn size(&self) -> usize {
        self.size
    }

    /// MRs available now: a snapshot, without the pool's lock. The count
    /// is stored and loaded sequentially consistent, so a caller that
    /// stores a flag of its own (sequentially consistent) before reading
    /// it, against one that returns MRs and then reads that flag, cannot
    /// both miss the other's store.
    pub fn available(&self) -> usize {
        self.available.load(Ordering::SeqCst)
    }

    /// MRs deregistered by [`MrPool::put`] and not replaced yet.
    pub fn lost(&self) -> usize {
        self.lost.load(Ordering::Relaxed)
    }

    /// Allocates replacements for lost MRs; returns how many.
    pub fn refill(&self) -> Result<usize> {
        let mut done = 0;
        while self.lost.load(Ordering::Relaxed) > 0 {
            let mr = Mr::new(&self.pd, &self.shape)?;
            self.lost.fetch_sub(1, Ordering::Relaxed);
            // Dropped (deregistered) if there is no slot, once the lock
            // is dropped.
            let extra = {
                let mut free = self.free.lock();
                let r = free.push(mr);
                self.available.store(free.n, Ordering::SeqCst);
                r
            };
            drop(extra);
            done += 1;
        }
        Ok(done)
    }
}
