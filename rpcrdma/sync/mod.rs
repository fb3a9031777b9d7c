// SPDX-License-Identifier: GPL-2.0

//! Lock-free building blocks the kernel crate does not have, generic (they
//! name no user) and `core` only, so that the same tree runs under `cargo
//! test` on several threads (`tests/`) and in the module.
//!
//! * [`freelist`]: a bounded free list of owned values that any number of
//!   contexts give to and take from without a lock (a connection's idle
//!   Send and Receive buffers, its spare Send chains, its free MRs);
//!   [`kvec`] makes one in kernel memory (in the module only).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects,
    clippy::as_conversions
)]

pub mod freelist;
#[cfg(CONFIG_RUST)]
pub mod kvec;
