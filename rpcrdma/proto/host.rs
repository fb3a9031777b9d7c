// SPDX-License-Identifier: GPL-2.0

//! Host crate for the RPC-over-RDMA requester protocol logic.
//!
//! The code lives in the module tree rooted at `mod.rs`, which the
//! `rpcrdma2` kernel module compiles as `pub mod proto;` next to the codec
//! (`pub mod xdr;`). This file is only the host crate's root: it provides
//! the codec under the name the kernel crate root gives it (`xdr`, which
//! `mod.rs` imports as `proto::xdr`) and re-exports the tree for tests.
//! The lint policy is the workspace's (../../Cargo.toml) plus the no-panic
//! lints at the top of the tree.

#![no_std]

/// The wire codec, under the name the kernel crate root gives it.
pub use rpcrdma_xdr as xdr;

#[path = "mod.rs"]
pub mod proto;

pub use proto::*;
