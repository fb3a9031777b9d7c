// SPDX-License-Identifier: GPL-2.0

//! `KVec` methods that differ between the kernel versions the module
//! builds for: 6.12 has `set_len` and no `clear`; 7.3 has `clear` and no
//! `set_len` (its `inc_len`/`dec_len` replace it).

use kernel::alloc::KVec;

/// Empties `v`, keeping its capacity. The elements are `Copy`, so there
/// is nothing to drop.
#[cfg(not(rpcrdma2_kernel_7_3))]
pub fn clear<T: Copy>(v: &mut KVec<T>) {
    // SAFETY: 0 is within the capacity, and a length of 0 leaves no element
    // to initialise; `T: Copy` needs no drop of the old ones.
    unsafe { v.set_len(0) }
}

/// Empties `v`, keeping its capacity. The elements are `Copy`, so there
/// is nothing to drop.
#[cfg(rpcrdma2_kernel_7_3)]
pub fn clear<T: Copy>(v: &mut KVec<T>) {
    v.clear()
}
