// SPDX-License-Identifier: GPL-2.0

//! SUNRPC entry points for the KUnit suites only: netid lookup, the
//! class's setup through its C ABI, and `xprt_create` arguments. Compiled
//! only into the module's KUnit variant (`cfg(rpcrdma2_kunit)`).

use super::{XprtCreate, XPRT_TRANSPORT_RDMA};
use crate::bindings;
use core::pin::Pin;
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::error::to_result;
use kernel::prelude::*;
use kernel::str::CStr;

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

/// Calls the registered class's `setup` through its `xprt_class`, as
/// SUNRPC's `xprt_create_transport` does, and decodes the `ERR_PTR` it
/// may return (with `kernel::error::from_err_ptr`). For tests of the C
/// ABI path; `ENOENT` if the class has no `setup` (not registered).
pub fn call_class_setup(args: &bindings::xprt_create) -> Result<*mut bindings::rpc_xprt> {
    let mut args = *args;
    // SAFETY: the class is a static of the C shim; `setup` is written
    // only by registration and unregistration, which the loaded module
    // (these tests run in it) does not do meanwhile.
    let setup = unsafe { (*bindings::rpcrdma2_shim_class()).setup }.ok_or(ENOENT)?;
    // SAFETY: `args` is a valid `xprt_create` for the duration of the call.
    kernel::error::from_err_ptr(unsafe { setup(&mut args) })
}

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
