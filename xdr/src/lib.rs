// SPDX-License-Identifier: GPL-2.0

//! Wire-format codec for RPC-over-RDMA.
//!
//! This crate implements, with `core` only (no `alloc`, no `std`, no
//! dependencies and no `unsafe`):
//!
//! * XDR primitives with strict bounds checks ([`stream`]);
//! * the shared segment / chunk model used to build and to read the chunk
//!   lists of both protocol versions ([`chunk`]);
//! * RPC-over-RDMA version 1, RFC 8166 ([`v1`]);
//! * RPC-over-RDMA version 2, draft-ietf-nfsv4-rpcrdma-version-two-00 ([`v2`]);
//! * RFC 8797 RDMA-CM private data ([`pvtdata`]);
//! * version dispatch and a version-independent header model ([`header`]).
//!
//! All codec code lives in the module tree rooted at `src/codec/mod.rs`, which
//! never names `crate::`: the `rpcrdma2` kernel module compiles the very same
//! files with `#[path = "../xdr/src/codec/mod.rs"] pub mod xdr;`. This file is
//! only the host crate's root: it sets the lints the kernel build enforces and
//! re-exports the tree.

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
// No input may make the codec panic: in the kernel a panic is a BUG().
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

pub mod codec;

pub use codec::*;
