// SPDX-License-Identifier: GPL-2.0

//! Pin-init items whose path differs between the kernel versions the
//! module builds for: `kernel::init` on 6.12; from 6.15 they are in the
//! `pin_init` crate, which `kernel::init` no longer re-exports (checked
//! against 7.3.4). Replaced by `pin_init::...` once 6.12 is not built.

#[cfg(not(rpcrdma2_kernel_7_3))]
pub use kernel::init::{init_array_from_fn, PinInit};

#[cfg(rpcrdma2_kernel_7_3)]
pub use pin_init::{init_array_from_fn, PinInit};
