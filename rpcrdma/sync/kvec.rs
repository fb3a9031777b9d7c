// SPDX-License-Identifier: GPL-2.0

//! [`KFreeList`]: a [`FreeList`] in kernel memory, sized for a number of
//! values (the module only: the host crate has no `kernel`).

use super::freelist::{Cell, FreeList, Word};
use kernel::alloc::{flags::GFP_KERNEL, KVec};
use kernel::prelude::*;

/// A [`FreeList`] whose cells and state words are `KVec`s.
pub type KFreeList<T> = FreeList<T, KVec<Cell<T>>, KVec<Word>>;

/// An empty [`KFreeList`] for up to `values` values, with
/// [`FreeList::SPARE`] cells more so that a give is never refused while
/// takes are under way.
pub fn kfree_list<T>(values: usize) -> Result<KFreeList<T>> {
    let cells = values.saturating_add(KFreeList::<T>::SPARE);
    let mut c = KVec::with_capacity(cells, GFP_KERNEL)?;
    for _ in 0..cells {
        c.push(Cell::new(), GFP_KERNEL)?;
    }
    let words = KFreeList::<T>::words_for(cells);
    let mut w = KVec::with_capacity(words, GFP_KERNEL)?;
    for _ in 0..words {
        w.push(Word::new(), GFP_KERNEL)?;
    }
    // Enough words for the cells: never refused.
    FreeList::new(c, w).map_err(|_| EINVAL)
}
