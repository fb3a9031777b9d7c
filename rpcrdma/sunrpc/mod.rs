// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the SUNRPC client transport switch.
//!
//! Together with `ib` (and the one-call wrappers of `compat`), this is the
//! only place in the module that touches raw pointers or calls C directly.
//! The pieces:
//!
//! - [`xprt`]: `struct rpc_xprt` as [`xprt::Xprt`] (state bits, locks,
//!   counters, the SUNRPC calls made on a transport).
//! - [`rqst`]: `rpc_rqst` as [`rqst::Rqst`], and the request handles
//!   whose type says in which context the transport holds a request
//!   ([`rqst::TxRqst`], [`rqst::BcTxRqst`], [`rqst::ReplyRqst`],
//!   [`rqst::BufRqst`]);
//! - [`slot`]: `rpc_task` as [`slot::Task`], and the request slots
//!   ([`slot::SlotBox`]) with the handle of a free one
//!   ([`slot::FreeSlot`]).
//! - [`transport`]: the [`transport::Transport`] trait a transport
//!   implements and the `rpc_xprt_ops` trampolines that call it.
//! - [`xprt_box`]: a transport instance's allocation
//!   ([`xprt_box::XprtBox`]), its creation and the back-references
//!   ([`xprt_box::XprtRef`]) of its connection's handlers.
//! - [`bc`]: backchannel (NFSv4.1 callback) requests.

pub mod bc;
pub mod rqst;
pub mod slot;
pub mod transport;
pub mod xprt;
pub mod xprt_box;

// What only the KUnit suites use: in the KUnit variant of the module only.
#[cfg(rpcrdma2_kunit)]
pub mod testing;

use crate::bindings;
use kernel::error::to_result;
use kernel::prelude::*;

/// `XPRT_TRANSPORT_RDMA`: the transport ident NFS accepts for `proto=rdma`.
pub const XPRT_TRANSPORT_RDMA: i32 = bindings::xprt_transports_XPRT_TRANSPORT_RDMA;

/// Registration of the module's `rdma` xprt_class with SUNRPC.
///
/// # Invariants
///
/// While a `ClassRegistration` exists, the class defined in `shim.c` is on
/// SUNRPC's transport list; dropping it unregisters the class.
pub struct ClassRegistration(());

impl ClassRegistration {
    /// Registers the `rdma` transport class.
    ///
    /// Fails with `EEXIST` when another module (normally the in-kernel
    /// `rpcrdma.ko`) already owns transport ident 256.
    pub fn new() -> Result<Self> {
        // SAFETY: FFI call without preconditions; the class is a static in
        // this module's C shim and outlives the registration.
        let ret = unsafe { bindings::rpcrdma2_shim_register_class() };
        if ret == -(bindings::EEXIST as i32) {
            pr_err!(
                "transport ident {} (netid rdma) is already registered, probably by rpcrdma.ko: unload it first (-EEXIST)\n",
                XPRT_TRANSPORT_RDMA
            );
        }
        to_result(ret)?;
        // INVARIANT: registration succeeded.
        Ok(ClassRegistration(()))
    }
}

impl Drop for ClassRegistration {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the class is registered.
        unsafe { bindings::rpcrdma2_shim_unregister_class() };
    }
}

/// A borrowed view of the `struct xprt_create` handed to the class's setup.
pub struct XprtCreate<'a>(&'a bindings::xprt_create);

impl XprtCreate<'_> {
    /// The transport ident the caller asked for.
    pub fn ident(&self) -> i32 {
        self.0.ident
    }

    /// The raw arguments, for [`xprt_box::XprtBox::create`].
    pub(crate) fn raw(&self) -> &bindings::xprt_create {
        self.0
    }
}

/// The connect worker (a delayed work in `shim.c`) of the one transport
/// type this module has.
///
/// # Safety
///
/// `dwork` is the connect work of a live rpcrdma2 transport.
#[no_mangle]
pub unsafe extern "C" fn rpcrdma2_rs_connect_worker(dwork: *mut bindings::delayed_work) {
    // SAFETY: per the function's contract.
    unsafe { transport::connect_worker_entry::<crate::transport::RdmaXprt>(dwork) }
}

/// `xprt_class::setup` for the `rdma` class (see `shim.c`).
///
/// # Safety
///
/// `args` must point to a valid `struct xprt_create` for the duration of
/// the call, as `xprt_create_transport()` guarantees.
#[no_mangle]
pub unsafe extern "C" fn rpcrdma2_rs_setup(
    args: *mut bindings::xprt_create,
) -> *mut bindings::rpc_xprt {
    // SAFETY: the caller guarantees `args` is valid for the call.
    let args = XprtCreate(unsafe { &*args });
    match crate::transport::setup(&args) {
        Ok(xprt) => xprt,
        // An ERR_PTR: the negative errno cast to a pointer.
        Err(e) => e.to_errno() as isize as *mut bindings::rpc_xprt,
    }
}
