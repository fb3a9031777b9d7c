// SPDX-License-Identifier: GPL-2.0

//! rpcrdma2: an RPC-over-RDMA client transport for the Linux SUNRPC layer.
//!
//! The module registers the `rdma` transport class (ident
//! `XPRT_TRANSPORT_RDMA`, netids `rdma` and `rdma6`) so that
//! `mount -o proto=rdma` carries NFS over RPC-over-RDMA version 2
//! (draft-ietf-nfsv4-rpcrdma-version-two-00), falling back to version 1
//! (RFC 8166) when the server only speaks version 1.
//!
//! Layering: [`bindings`] holds the raw FFI generated at build time;
//! [`sunrpc`] and [`ib`] are the modules with `unsafe` code and expose
//! safe wrappers (besides the thin wrappers of the C shim's helpers in
//! [`compat`] and [`fault`], and the generic lock-free free list in
//! [`sync`]); everything else is transport logic on top of them.

// `try_pin_init!` of a struct with many fields (`conn::QpState`) nests
// deeper than the default limit of 128 (Rust Binder sets the same).
#![recursion_limit = "256"]

use kernel::prelude::*;

pub mod backchannel;
pub mod bindings;
// What 6.12's kernel crate lacks (the KUnit kit among it: first, for the
// suites that use its macros).
#[macro_use]
pub mod compat;
pub mod conn;
pub mod connect;
pub mod fault;
pub mod ib;
pub mod mem;
pub mod net;
pub mod sunrpc;
/// Lock-free building blocks (`core` only, host-tested on threads like
/// the protocol logic).
pub mod sync;
pub mod trace;
pub mod transport;
pub mod why;

/// The RPC-over-RDMA wire codec (the `xdr/` crate's module tree, compiled
/// into the module unchanged).
#[path = "../xdr/src/codec/mod.rs"]
pub mod xdr;

/// The protocol logic without I/O (version negotiation, credits, inline
/// thresholds, reply validation): `core` only, host-tested like the codec;
/// see Documentation/design-proto.rst.
pub mod proto;

// The KUnit suites: only in the KUnit variant of the module
// (Kbuild's RPCRDMA2_KUNIT=1 passes `--cfg rpcrdma2_kunit`), never in the
// production rpcrdma2.ko.
#[cfg(rpcrdma2_kunit)]
mod tests;

rpcrdma2_module! {
    type: Rpcrdma2,
    name: "rpcrdma2",
    author: "The rpcrdma2 developers",
    description: "RPC-over-RDMA (version 2 and 1) client transport, in Rust",
    license: "GPL",
}

/// The module state: keeps the transport class and the `ib_client`
/// registered while loaded. Fields drop in order: the class goes away
/// before the `ib_client` its transports rely on, and the census of ib
/// objects is checked last (a leak is reported at unload).
struct Rpcrdma2 {
    _class: sunrpc::ClassRegistration,
    _faults: fault::Registration,
    _ib_client: ib::client::ClientRegistration,
    _census: ib::census::Guard,
}

impl kernel::Module for Rpcrdma2 {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let ib_client = ib::client::ClientRegistration::new()?;
        let faults = fault::Registration::register();
        let class = sunrpc::ClassRegistration::new::<transport::RdmaXprt>()?;
        pr_info!("RPC-over-RDMA transport 'rdma' registered (netids rdma, rdma6)\n");
        Ok(Rpcrdma2 {
            _class: class,
            _faults: faults,
            _ib_client: ib_client,
            _census: ib::census::Guard,
        })
    }
}
