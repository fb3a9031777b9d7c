// SPDX-License-Identifier: GPL-2.0

//! Host crate for the RPC-over-RDMA requester protocol logic.
//!
//! The code lives in the module tree rooted at `mod.rs`, which the
//! `rpcrdma2` kernel module compiles as `pub mod proto;` next to the codec
//! (`pub mod xdr;`). This file is only the host crate's root: it provides
//! the codec under the same name (`xdr`, so that `super::xdr` resolves in
//! `mod.rs`), sets the lints the kernel build enforces plus the no-panic
//! lints, and re-exports the tree for tests.

#![no_std]
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    unreachable_pub,
    rust_2018_idioms,
    unsafe_op_in_unsafe_fn,
    non_ascii_idents,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::ignored_unit_patterns,
    clippy::mut_mut,
    clippy::needless_bitwise_bool,
    clippy::no_mangle_with_rust_abi,
    clippy::unnecessary_safety_comment,
    clippy::unnecessary_safety_doc
)]
// No input may make this code panic: in the kernel a panic is a BUG().
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::arithmetic_side_effects,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented,
        clippy::as_conversions
    )
)]

/// The wire codec, under the name the kernel crate root gives it.
pub mod xdr {
    pub use rpcrdma_xdr::*;
}

#[path = "mod.rs"]
pub mod proto;

pub use proto::*;
