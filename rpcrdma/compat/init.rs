// SPDX-License-Identifier: GPL-2.0

//! Pin-init items that differ between the kernel versions the module
//! builds for: `kernel::init` on 6.12; on 7.3 they are in the `pin_init`
//! crate, which `kernel::init` does not re-export, and `PinInit`'s
//! `__pinned_init` is `__init` (checked against 7.3.4). Replaced by
//! `pin_init::...` once 6.12 is not built.

#[cfg(not(rpcrdma2_kernel_7_3))]
pub use kernel::init::{init_array_from_fn, PinInit};

#[cfg(rpcrdma2_kernel_7_3)]
pub use pin_init::{init_array_from_fn, PinInit};

/// Runs `init` on `slot` (`PinInit::__pinned_init` on 6.12, `__init` on
/// 7.3).
///
/// # Safety
///
/// As for those: `slot` is valid for writes and uninitialised, is not
/// touched on `Err` (only deallocated), and does not move until dropped.
#[inline]
pub unsafe fn pinned_init<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    #[cfg(not(rpcrdma2_kernel_7_3))]
    // SAFETY: the caller's guarantees are `__pinned_init`'s.
    let r = unsafe { init.__pinned_init(slot) };
    #[cfg(rpcrdma2_kernel_7_3)]
    // SAFETY: the caller's guarantees are `__init`'s.
    let r = unsafe { init.__init(slot) };
    r
}
