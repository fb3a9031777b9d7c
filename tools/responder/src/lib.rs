// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA responder: the protocol logic (host-tested) and the
//! RDMA/TCP I/O that carries it. See Documentation/responder.rst.
//!
//! Only `verbs` (the thin layer over rdma-mummy-sys) and `splice` (over
//! rustix) contain `unsafe`; every other module forbids it, and every
//! `unsafe` block carries a `// SAFETY:` comment (enforced by clippy).

#![deny(
    clippy::undocumented_unsafe_blocks,
    unsafe_op_in_unsafe_fn,
    missing_docs
)]

pub mod malform;
pub mod manpage;
pub mod nfs;
pub mod proto;
pub mod server;
pub mod splice;
pub mod stats;
pub mod verbs;
