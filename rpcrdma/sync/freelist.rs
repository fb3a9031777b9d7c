// SPDX-License-Identifier: GPL-2.0

//! [`FreeList`]: a bounded pool of owned values that any number of
//! contexts give to and take from without a lock, for a connection's idle
//! objects (its Send and Receive buffers, its spare Send chains), which
//! the sender, the completion handlers and the error paths of either take
//! and give back.
//!
//! Each value given goes into a cell; two bitmaps say which cells hold a
//! value (`full`) and which are empty (`free`). A give claims an empty
//! cell by clearing its `free` bit (one compare-exchange), writes the
//! value and sets the cell's `full` bit (one fetch-or); a take does the
//! same the other way round. Nothing spins on another context: a
//! compare-exchange fails only because another give or take changed the
//! same word meanwhile, and then made progress.
//!
//! A cell is in the middle of a give or take while neither bit is set. So
//! [`FreeList::take`] may find nothing while a value is on its way in (a
//! taker that waits must be woken by the giver, after its give), and
//! [`FreeList::give`] is refused only if every cell holds a value or is in
//! the middle of a take: with [`FreeList::SPARE`] cells more than values
//! ever given, a refusal needs more than that many takes under way at
//! once, each stopped between its two steps.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ops::Deref;
use core::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Cells per [`Word`].
const BITS: usize = 64;

/// One place of a [`FreeList`] (made with [`Cell::new`]).
pub struct Cell<T>(UnsafeCell<MaybeUninit<T>>);

impl<T> Cell<T> {
    /// An empty cell.
    pub const fn new() -> Self {
        Cell(UnsafeCell::new(MaybeUninit::uninit()))
    }
}

impl<T> Default for Cell<T> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a `Cell` has no method that touches its value; only the
// `FreeList` that owns the storage does, under its invariant, which gives
// each value one owner at a time and moves values between threads (hence
// `T: Send`). So a `FreeList` is `Sync` exactly when its storage is, and
// never shares a `T`.
unsafe impl<T: Send> Sync for Cell<T> {}

/// The state bits of 64 cells of a [`FreeList`] (made with
/// [`Word::new`]).
pub struct Word {
    full: AtomicU64,
    free: AtomicU64,
}

impl Word {
    /// A word for cells that do not exist yet ([`FreeList::new`] sets it).
    pub const fn new() -> Self {
        Word {
            full: AtomicU64::new(0),
            free: AtomicU64::new(0),
        }
    }
}

impl Default for Word {
    fn default() -> Self {
        Self::new()
    }
}

/// Why [`FreeList::new`] refused its storage.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Fewer words than [`FreeList::words_for`] the cells.
    TooFewWords,
}

/// A bounded pool of owned `T` without a lock (see the module
/// documentation); `C` is the storage of its cells, `W` of their state
/// words.
///
/// # Invariants
///
/// - `words.len() * 64 >= cells.len()`, neither is ever resized (both
///   are owned and only dereferenced), and the bits of a word for cells
///   past `cells.len()` are never set.
/// - For each cell, at most one of its two bits is set: `full` iff the
///   cell holds an initialised value that nobody owns, `free` iff it
///   holds none and nobody owns it. With neither set, the context whose
///   compare-exchange cleared the bit owns the cell: a giver that cleared
///   `free` writes it and then sets `full`; a taker that cleared `full`
///   moves the value out and then sets `free`.
pub struct FreeList<T, C: Deref<Target = [Cell<T>]>, W: Deref<Target = [Word]>> {
    cells: C,
    words: W,
}

impl<T, C: Deref<Target = [Cell<T>]>, W: Deref<Target = [Word]>> FreeList<T, C, W> {
    /// Cells to allocate beyond the most values the list will ever hold,
    /// so that a give is never refused (see the module documentation).
    pub const SPARE: usize = 16;

    /// How many [`Word`]s `cells` cells need.
    pub const fn words_for(cells: usize) -> usize {
        cells.div_ceil(BITS)
    }

    /// An empty list over `cells`, with state in `words` (at least
    /// [`FreeList::words_for`] the cells).
    pub fn new(cells: C, words: W) -> Result<Self, Refused> {
        let n = cells.len();
        if words.len() < Self::words_for(n) {
            return Err(Refused::TooFewWords);
        }
        let mut left = n;
        for w in words.iter() {
            let here = left.min(BITS);
            left = left.saturating_sub(BITS);
            let mask = match here {
                0 => 0,
                BITS => u64::MAX,
                k => (1u64 << k).wrapping_sub(1),
            };
            w.full.store(0, Relaxed);
            w.free.store(mask, Relaxed);
        }
        // INVARIANT: enough words, every existing cell free, none full,
        // no bit set for a cell that does not exist. Cells made by
        // `Cell::new` hold no value; a cell of a list that was dropped
        // holds none either (the drop takes them all).
        Ok(FreeList { cells, words })
    }

    /// How many values the list holds at most.
    pub fn capacity(&self) -> usize {
        self.cells.len()
    }

    /// Clears one set bit of `bits` (the lowest), returning its index, or
    /// `None` if none is set.
    fn claim(bits: &AtomicU64) -> Option<usize> {
        let mut b = bits.load(Relaxed);
        while b != 0 {
            let i = b.trailing_zeros();
            match bits.compare_exchange_weak(b, b & !(1u64 << i), Acquire, Relaxed) {
                // A `u32` below 64.
                Ok(_) => return usize::try_from(i).ok(),
                Err(now) => b = now,
            }
        }
        None
    }

    /// Gives `v` to the list; hands it back if no cell is empty (see the
    /// module documentation).
    pub fn give(&self, v: T) -> Result<(), T> {
        for (wi, w) in self.words.iter().enumerate() {
            let Some(bit) = Self::claim(&w.free) else {
                continue;
            };
            let at = wi.saturating_mul(BITS).saturating_add(bit);
            let Some(c) = self.cells.get(at) else {
                // No such cell (cannot happen: its bit was never set).
                return Err(v);
            };
            // SAFETY: clearing the cell's `free` bit made this context its
            // owner, and the cell is empty (type invariant), so nothing is
            // overwritten and nobody else touches it until `full` is set;
            // the acquire of the claim orders this write after the take
            // that emptied it.
            unsafe { (*c.0.get()).write(v) };
            // INVARIANT: the cell now holds the value; published with
            // release for the take that claims it.
            w.full.fetch_or(1u64 << bit, Release);
            return Ok(());
        }
        Err(v)
    }

    /// Takes a value from the list; `None` if it has none (or the ones it
    /// will have are still on their way in).
    pub fn take(&self) -> Option<T> {
        for (wi, w) in self.words.iter().enumerate() {
            let Some(bit) = Self::claim(&w.full) else {
                continue;
            };
            let at = wi.saturating_mul(BITS).saturating_add(bit);
            let c = self.cells.get(at)?;
            // SAFETY: clearing the cell's `full` bit made this context its
            // owner, and the cell holds an initialised value (type
            // invariant), written before the give's release that the
            // claim's acquire saw; it is moved out once, then the cell is
            // marked empty.
            let v = unsafe { (*c.0.get()).assume_init_read() };
            // INVARIANT: the cell is empty again.
            w.free.fetch_or(1u64 << bit, Release);
            return Some(v);
        }
        None
    }

    /// Whether the list holds a value right now (a hint for a taker
    /// deciding whether to wait: it may change at once).
    pub fn has_any(&self) -> bool {
        self.words.iter().any(|w| w.full.load(Acquire) != 0)
    }

    /// How many values the list holds right now (a snapshot, one load per
    /// 64 cells; gives and takes under way are not counted).
    pub fn held(&self) -> usize {
        self.words
            .iter()
            .map(|w| w.full.load(Relaxed).count_ones())
            .fold(0usize, |n, k| {
                n.saturating_add(usize::try_from(k).unwrap_or(0))
            })
    }
}

impl<T, C: Deref<Target = [Cell<T>]>, W: Deref<Target = [Word]>> Drop for FreeList<T, C, W> {
    fn drop(&mut self) {
        // `&mut self`: no give or take is under way; drop what is held.
        while self.take().is_some() {}
    }
}
