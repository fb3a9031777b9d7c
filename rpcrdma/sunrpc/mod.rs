// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the SUNRPC client transport switch.
//!
//! Together with `ib`, this is the only place in the module that touches
//! raw pointers or calls C directly.

pub mod bc;
pub mod xprt;

use crate::bindings;
use core::pin::Pin;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::error::to_result;
use kernel::prelude::*;
use kernel::str::CStr;

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

/// The `force_v1` module parameter (defined in `shim.c`).
pub fn param_force_v1() -> bool {
    // SAFETY: FFI call without preconditions.
    unsafe { bindings::rpcrdma2_shim_param_force_v1() }
}

/// The `ddp` module parameter (defined in `shim.c`).
pub fn param_ddp() -> bool {
    // SAFETY: FFI call without preconditions.
    unsafe { bindings::rpcrdma2_shim_param_ddp() }
}

/// Whether a rate-limited message may be printed now (`printk_ratelimit`).
pub fn ratelimit() -> bool {
    // SAFETY: the name is a NUL-terminated static string.
    unsafe { bindings::__printk_ratelimit(c"rpcrdma2".as_ptr().cast()) != 0 }
}

/// Sleeps for about `ms` milliseconds (process context).
pub fn msleep(ms: u32) {
    // SAFETY: FFI call without preconditions; callers are in process
    // context.
    unsafe { bindings::msleep(ms) }
}

/// Looks a netid up in SUNRPC's transport list and returns its ident.
///
/// This is what NFS does for `proto=`; it may `request_module()` a
/// transport that is not loaded.
pub fn find_transport_ident(netid: &CStr) -> Result<i32> {
    // SAFETY: `netid` is a valid NUL-terminated string for the call.
    let ret = unsafe { bindings::xprt_find_transport_ident(netid.as_char_ptr()) };
    to_result(ret)?;
    Ok(ret)
}

/// Calls the class's setup entry point as SUNRPC does and decodes the
/// `ERR_PTR` it may return. For tests of the C ABI path.
pub fn call_class_setup(args: &bindings::xprt_create) -> Result<*mut bindings::rpc_xprt> {
    let mut args = *args;
    // SAFETY: `args` is a valid `xprt_create` for the duration of the call.
    let ret = unsafe { rpcrdma2_rs_setup(&mut args) };
    let v = ret as isize;
    if (-(bindings::MAX_ERRNO as isize)..0).contains(&v) {
        return Err(Error::from_errno(v as i32));
    }
    Ok(ret)
}

/// A borrowed view of the `struct xprt_create` handed to the class's setup.
pub struct XprtCreate<'a>(&'a bindings::xprt_create);

/// An IPv4 `xprt_create` in the initial network namespace, for tests.
pub struct TestCreateArgs {
    addr: bindings::sockaddr_in,
    args: bindings::xprt_create,
}

impl TestCreateArgs {
    /// Arguments for `addr:port` (host byte order). Boxed: `args` points
    /// at `addr`, so the pair must not move.
    pub fn ipv4(addr: u32, port: u16) -> Result<Pin<KBox<Self>>> {
        let mut b = KBox::new(
            TestCreateArgs {
                addr: bindings::sockaddr_in {
                    sin_family: bindings::AF_INET as u16,
                    sin_port: port.to_be(),
                    sin_addr: bindings::in_addr {
                        s_addr: addr.to_be(),
                    },
                    ..Default::default()
                },
                args: bindings::xprt_create {
                    ident: XPRT_TRANSPORT_RDMA,
                    // `init_net` is a static that lives forever.
                    net: core::ptr::addr_of_mut!(bindings::init_net),
                    addrlen: core::mem::size_of::<bindings::sockaddr_in>(),
                    servername: c"rpcrdma2-test".as_ptr().cast(),
                    ..Default::default()
                },
            },
            GFP_KERNEL,
        )?;
        b.args.dstaddr = core::ptr::addr_of_mut!(b.addr).cast();
        Ok(Pin::from(b))
    }

    /// The arguments as setup sees them.
    pub fn get(&self) -> XprtCreate<'_> {
        XprtCreate(&self.args)
    }
}

impl XprtCreate<'_> {
    /// The transport ident the caller asked for.
    pub fn ident(&self) -> i32 {
        self.0.ident
    }

    /// The raw arguments, for [`xprt::XprtBox::create`].
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
    unsafe { xprt::connect_worker_entry::<crate::transport::RdmaXprt>(dwork) }
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
