// SPDX-License-Identifier: GPL-2.0

//! A pool of FRWR MRs on one PD ([`MrPool`]): an MR is taken for a
//! registration and given back once the peer can no longer reach it;
//! broken ones are deregistered and replaced.

use super::super::verbs::Pd;
use super::caps::MrShape;
use super::{Mr, MrState};
use crate::sync::kvec::{kfree_list, KFreeList};
use core::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

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
/// Every MR in `free` is `Free` and belongs to `pd`. `available` counts
/// the MRs given back (each once it is in `free`) minus those taken (each
/// once it left): the MRs in `free` but for the gives and takes under
/// way, below zero only while the take of a just-given MR is ahead of
/// that give's count.
pub struct MrPool {
    pd: Arc<Pd>,
    shape: MrShape,
    size: usize,
    lost: AtomicUsize,
    /// MRs in `free` (a sender checks it for every RPC, most of which
    /// need none).
    available: AtomicIsize,
    /// The free MRs, taken and given back without a lock (the sender
    /// takes them, the completions give them back); nothing that may
    /// sleep (unmapping, deregistering an MR) happens in either.
    free: KFreeList<Mr>,
}

impl MrPool {
    /// Allocates `size` MRs of `shape` on `pd`.
    pub fn new(pd: &Arc<Pd>, shape: MrShape, size: usize) -> Result<Arc<MrPool>> {
        let free = kfree_list(size)?;
        for _ in 0..size {
            // Room for `size` and more: never refused.
            let _ = free.give(Mr::new(pd, &shape)?);
        }
        Ok(Arc::new(
            MrPool {
                pd: pd.clone(),
                shape,
                size,
                lost: AtomicUsize::new(0),
                available: AtomicIsize::new(isize::try_from(size).unwrap_or(isize::MAX)),
                free,
            },
            GFP_KERNEL,
        )?)
    }

    /// The shape the MRs were made with.
    pub fn shape(&self) -> &MrShape {
        &self.shape
    }

    /// Takes a `Free` MR; `None` when the pool is empty.
    pub fn get(&self) -> Option<Mr> {
        let mr = self.free.take();
        if mr.is_some() {
            self.available.fetch_sub(1, Ordering::SeqCst);
        }
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
            // One more than were taken (cannot happen) is deregistered
            // like a broken one.
            if self.available.load(Ordering::Relaxed)
                < isize::try_from(self.size).unwrap_or(isize::MAX)
            {
                match self.free.give(mr) {
                    Ok(()) => {
                        // Counted once it is in: see `available`.
                        self.available.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    Err(mr) => drop(mr),
                }
            } else {
                drop(mr);
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

    /// MRs available now: a snapshot (0 while below zero). The count
    /// is stored and loaded sequentially consistent, so a caller that
    /// stores a flag of its own (sequentially consistent) before reading
    /// it, against one that returns MRs and then reads that flag, cannot
    /// both miss the other's store.
    pub fn available(&self) -> usize {
        usize::try_from(self.available.load(Ordering::SeqCst)).unwrap_or(0)
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
            // Dropped (deregistered) if refused (cannot happen: the
            // pool has room for more than `size`).
            if self.free.give(mr).is_ok() {
                self.available.fetch_add(1, Ordering::SeqCst);
            }
            done += 1;
        }
        Ok(done)
    }
}
