// SPDX-License-Identifier: GPL-2.0

//! Host crate for the module's lock-free building blocks.
//!
//! The code lives in the module tree rooted at `mod.rs`, which the
//! `rpcrdma2` kernel module compiles as `pub mod sync;`. This file is only
//! the host crate's root, for the tests under `tests/` (which run it on
//! several threads).

#![no_std]

#[path = "mod.rs"]
mod tree;

pub use tree::*;
