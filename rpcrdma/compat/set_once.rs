// SPDX-License-Identifier: GPL-2.0

//! `SetOnce<T>`: a value set at most once, then read without a lock.
//!
//! Linux 7.3 has it as `kernel::sync::SetOnce` (from 6.17), which this
//! re-exports there; 6.12 gets the same type here, with the same methods
//! (`new`, `as_ref`, `populate`), on `core`'s atomics (6.12 has no
//! `kernel::sync::atomic`).

#[cfg(rpcrdma2_kernel_7_3)]
pub use kernel::sync::SetOnce;

#[cfg(not(rpcrdma2_kernel_7_3))]
pub use self::shim::SetOnce;

#[cfg(not(rpcrdma2_kernel_7_3))]
mod shim {
    use core::cell::UnsafeCell;
    use core::mem::MaybeUninit;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// A container that can be populated at most once, as 7.3's
    /// `kernel::sync::SetOnce`.
    ///
    /// # Invariants
    ///
    /// `init` only grows, within `0..=2`: 0 iff `value` is
    /// uninitialised, 1 iff exactly one thread has exclusive access to
    /// `value` (it is being written), 2 iff `value` is initialised and
    /// valid for shared access.
    pub struct SetOnce<T> {
        init: AtomicU32,
        value: UnsafeCell<MaybeUninit<T>>,
    }

    impl<T> SetOnce<T> {
        /// An empty container.
        pub const fn new() -> Self {
            // INVARIANT: empty, and `init` is 0.
            SetOnce {
                init: AtomicU32::new(0),
                value: UnsafeCell::new(MaybeUninit::uninit()),
            }
        }

        /// The value, if it was set.
        pub fn as_ref(&self) -> Option<&T> {
            if self.init.load(Ordering::Acquire) == 2 {
                // SAFETY: `init == 2`: the value is initialised and valid
                // for shared access (type invariant).
                Some(unsafe { &*self.value.get().cast::<T>() })
            } else {
                None
            }
        }

        /// Sets the value; `false` (and `value` dropped) if it was set
        /// before or is being set.
        pub fn populate(&self, value: T) -> bool {
            if self
                .init
                .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                return false;
            }
            // SAFETY: this thread moved `init` from 0 to 1: it alone has
            // access to the (uninitialised) value (type invariant).
            unsafe { core::ptr::write(self.value.get().cast::<T>(), value) };
            // INVARIANT: initialised, and released for shared access.
            self.init.store(2, Ordering::Release);
            true
        }
    }

    impl<T> Default for SetOnce<T> {
        fn default() -> Self {
            Self::new()
        }
    }

    impl<T> Drop for SetOnce<T> {
        fn drop(&mut self) {
            if *self.init.get_mut() == 2 {
                // SAFETY: `init == 2`: the value is initialised (type
                // invariant), and `&mut self` gives exclusive access.
                unsafe { self.value.get_mut().assume_init_drop() };
            }
        }
    }

    // SAFETY: moving the container moves the value: `T: Send`.
    unsafe impl<T: Send> Send for SetOnce<T> {}
    // SAFETY: the value is shared only once set (release/acquire on
    // `init`), so `&SetOnce` gives `&T` to several threads (`T: Sync`), and
    // it may be dropped by any of them (`T: Send`).
    unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}
}
