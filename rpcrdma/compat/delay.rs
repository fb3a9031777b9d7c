// SPDX-License-Identifier: GPL-2.0

//! Sleeping. 6.12's kernel crate has no sleep function; replaced by
//! `kernel::time::delay::fsleep` (after 6.12). The polling loops that use
//! [`msleep`] are themselves to go (issue 10: wait queues or refcounts).

use crate::bindings;

/// Sleeps for about `ms` milliseconds (process context only).
pub fn msleep(ms: u32) {
    // SAFETY: FFI call without preconditions; callers are in process
    // context.
    unsafe { bindings::msleep(ms) }
}
