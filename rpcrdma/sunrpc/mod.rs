// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the SUNRPC client transport switch.
//!
//! Together with `ib` (and the one-call wrappers of `compat`), this is the
//! only place in the module that touches raw pointers or calls C directly.
//!
//! Like the kernel's `block::mq` (which `rnull` implements), it is a
//! generic abstraction: it names no type of the transport that uses it.
//! Everything C calls (the ops table, the class's `setup`, the connect
//! worker) is a trampoline generic over the [`transport::Transport`] type,
//! installed as a function pointer when the class is registered
//! ([`ClassRegistration::new`]) or an instance created
//! ([`xprt_box::XprtBox::create`]); requests are described in SUNRPC's
//! own terms (`xdr_buf` parts: [`rqst::XdrBufShape`], [`rqst::XdrRange`]),
//! which the transport translates into its protocol's.
//!
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
//! - [`pool`]: a transport's slots ([`pool::SlotPool`]), which the
//!   `alloc_slot` and `free_slot` trampolines lend and take back.
//! - [`transport`]: the [`transport::Transport`] trait a transport
//!   implements and the trampolines that call it: the `rpc_xprt_ops`
//!   table, the class's `setup` and the connect worker.
//! - [`xprt_box`]: a transport instance's allocation
//!   ([`xprt_box::XprtBox`]), its creation and the back-references
//!   ([`xprt_box::XprtRef`]) of its connection's handlers.
//! - [`bc`]: backchannel (NFSv4.1 callback) requests.

pub mod bc;
pub mod pool;
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

/// Jiffies per second: the kernel's `HZ` (`CONFIG_HZ`). Not
/// `bindings::HZ`, which bindgen takes from the user-space header (100):
/// see `RPCRDMA2_HZ` in bindings.h.
pub const HZ: usize = bindings::RPCRDMA2_HZ as usize;

/// `XPRT_TRANSPORT_RDMA`: the transport ident NFS accepts for `proto=rdma`.
pub const XPRT_TRANSPORT_RDMA: i32 = bindings::xprt_transports_XPRT_TRANSPORT_RDMA;

/// Registration of the module's `rdma` xprt_class with SUNRPC.
///
/// # Invariants
///
/// While a `ClassRegistration` exists, the class defined in `shim.c` is on
/// SUNRPC's transport list, with the `setup` trampoline of the transport
/// type it was registered for; dropping it unregisters the class.
pub struct ClassRegistration(());

impl ClassRegistration {
    /// Registers the `rdma` transport class, whose `setup` creates
    /// transports of type `T` ([`transport::Transport::setup`]).
    ///
    /// Fails with `EBUSY` when another module (normally the in-kernel
    /// `rpcrdma.ko`) already owns transport ident 256, or while the class
    /// is registered already.
    pub fn new<T: transport::Transport>() -> Result<Self> {
        // SAFETY: the class is a static in this module's C shim and
        // outlives the registration; the trampoline is valid for as long
        // as the module is loaded, which the class (its owner is this
        // module) ensures while it may be called.
        let ret = unsafe { bindings::rpcrdma2_shim_register_class(Some(transport::setup::<T>)) };
        if ret == -(bindings::EEXIST as i32) {
            pr_err!(
                "transport ident {} (netid rdma) is already registered, probably by rpcrdma.ko: unload it first (-EBUSY)\n",
                XPRT_TRANSPORT_RDMA
            );
            // `EEXIST` from a module's init tells insmod and modprobe that
            // the module is loaded already (Linux 7.3's loader turns it
            // into `EBUSY` itself): the same answer on every kernel.
            return Err(EBUSY);
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

    /// # Safety
    ///
    /// `args` points to a valid `struct xprt_create` for `'a`.
    unsafe fn from_raw<'a>(args: *const bindings::xprt_create) -> XprtCreate<'a> {
        // SAFETY: per the caller.
        XprtCreate(unsafe { &*args })
    }
}
