// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA responder: the protocol logic (host-tested) and the
//! RDMA/TCP I/O that carries it. See Documentation/responder.rst.

pub mod malform;
pub mod nfs;
pub mod proto;
pub mod server;
pub mod stats;
pub mod verbs;
