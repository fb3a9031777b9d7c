// SPDX-License-Identifier: GPL-2.0

//! Rate-limited printing. 6.12's kernel crate has no `pr_*_ratelimited`;
//! callers test [`ratelimit`] before a `pr_*!`. Replaced by the kernel
//! crate's rate-limited print macros once it has them.

use crate::bindings;

/// Whether a rate-limited message may be printed now
/// (`printk_ratelimit()`, one shared state for the module).
pub fn ratelimit() -> bool {
    // SAFETY: the name is a NUL-terminated static string.
    unsafe { bindings::__printk_ratelimit(c"rpcrdma2".as_ptr().cast()) != 0 }
}
