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
//! only the host crate's root: it re-exports the tree. The lint policy is the
//! workspace's (../Cargo.toml) plus the no-panic lints at the top of the tree.

#![no_std]

pub mod codec;

pub use codec::*;
