// SPDX-License-Identifier: GPL-2.0

//! The kernel networking types that both SUNRPC and rdma_cm name: a
//! socket address ([`SockAddr`], what `rpc_xprt::addr` holds and
//! `rdma_resolve_addr` takes) and a network namespace ([`Net`]). Here so
//! that `sunrpc/` and `ib/` share them without one importing the other.

use crate::bindings;
use core::fmt;
use kernel::prelude::*;
use kernel::types::Opaque;

/// `AF_INET`.
const AF_INET: u16 = 2;
/// `AF_INET6`.
const AF_INET6: u16 = 10;

/// An IPv4 or IPv6 socket address in a `sockaddr_storage`, as rdma_cm
/// takes it.
///
/// # Invariants
///
/// The family is `AF_INET` (and the storage holds a `sockaddr_in`) or
/// `AF_INET6` (a `sockaddr_in6`).
#[derive(Clone, Copy)]
pub struct SockAddr {
    ss: bindings::__kernel_sockaddr_storage,
}

impl SockAddr {
    /// `addr:port` for IPv4; `addr` in network order (`[192, 168, 0, 1]`).
    pub fn ipv4(addr: [u8; 4], port: u16) -> SockAddr {
        let mut ss = bindings::__kernel_sockaddr_storage::default();
        let sin = bindings::sockaddr_in {
            sin_family: AF_INET,
            sin_port: port.to_be(),
            sin_addr: bindings::in_addr {
                s_addr: u32::from_ne_bytes(addr),
            },
            ..Default::default()
        };
        // SAFETY: `sockaddr_storage` is larger than and as aligned as
        // `sockaddr_in`, and `ss` is a local we own.
        unsafe { core::ptr::write(core::ptr::from_mut(&mut ss).cast(), sin) };
        // INVARIANT: family AF_INET with a sockaddr_in.
        SockAddr { ss }
    }

    /// `[addr]:port` for IPv6; `scope_id` is the interface index for
    /// link-local addresses (0 otherwise).
    pub fn ipv6(addr: [u8; 16], port: u16, scope_id: u32) -> SockAddr {
        let mut ss = bindings::__kernel_sockaddr_storage::default();
        let mut sin6 = bindings::sockaddr_in6 {
            sin6_family: AF_INET6,
            sin6_port: port.to_be(),
            sin6_scope_id: scope_id,
            ..Default::default()
        };
        sin6.sin6_addr.in6_u.u6_addr8 = addr;
        // SAFETY: `sockaddr_storage` is larger than and as aligned as
        // `sockaddr_in6`, and `ss` is a local we own.
        unsafe { core::ptr::write(core::ptr::from_mut(&mut ss).cast(), sin6) };
        // INVARIANT: family AF_INET6 with a sockaddr_in6.
        SockAddr { ss }
    }

    /// Copies an address from a `sockaddr_storage` (e.g. `rpc_xprt::addr`).
    ///
    /// Fails with `EAFNOSUPPORT` for families other than IPv4 and IPv6.
    pub fn from_storage(ss: &bindings::__kernel_sockaddr_storage) -> Result<SockAddr> {
        let a = SockAddr { ss: *ss };
        match a.family() {
            // INVARIANT: the family was checked.
            AF_INET | AF_INET6 => Ok(a),
            f => {
                pr_err!("address family {} is not IPv4 or IPv6 (-EAFNOSUPPORT)\n", f);
                Err(Error::from_errno(-(bindings::EAFNOSUPPORT as i32)))
            }
        }
    }

    /// The address family (`AF_INET` = 2 or `AF_INET6` = 10).
    pub fn family(&self) -> u16 {
        // SAFETY: every variant of the storage union starts with the
        // family; all bit patterns are valid `u16`s.
        unsafe { (*(self.as_ptr())).sa_family }
    }

    /// The port, in host order.
    pub fn port(&self) -> u16 {
        let p = self.as_ptr();
        // SAFETY: the storage holds the structure its family says (type
        // invariant); both have the port at the same place.
        u16::from_be(unsafe { (*p.cast::<bindings::sockaddr_in>()).sin_port })
    }

    /// Whether this is an IPv6 address.
    pub fn is_ipv6(&self) -> bool {
        self.family() == AF_INET6
    }

    pub(crate) fn as_ptr(&self) -> *const bindings::sockaddr {
        core::ptr::from_ref(&self.ss).cast()
    }
}

impl fmt::Display for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.as_ptr();
        if self.is_ipv6() {
            // SAFETY: family AF_INET6 means a sockaddr_in6 (invariant).
            let a = unsafe {
                (*p.cast::<bindings::sockaddr_in6>())
                    .sin6_addr
                    .in6_u
                    .u6_addr16
            };
            f.write_str("[")?;
            for (i, w) in a.iter().enumerate() {
                if i > 0 {
                    f.write_str(":")?;
                }
                write!(f, "{:x}", u16::from_be(*w))?;
            }
            write!(f, "]:{}", self.port())
        } else {
            // SAFETY: family AF_INET means a sockaddr_in (invariant).
            let a = unsafe { (*p.cast::<bindings::sockaddr_in>()).sin_addr.s_addr }.to_ne_bytes();
            write!(f, "{}.{}.{}.{}:{}", a[0], a[1], a[2], a[3], self.port())
        }
    }
}

impl fmt::Debug for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A network namespace, borrowed (`struct net`).
#[repr(transparent)]
pub struct Net(Opaque<bindings::net>);

// SAFETY: network namespaces are shared kernel objects; rdma_cm takes its
// own reference when an id is created in one.
unsafe impl Sync for Net {}

impl Net {
    /// The initial namespace, `init_net`. The transport always uses its
    /// `rpc_xprt`'s namespace; this is for the loopback suites (KUnit
    /// variant only).
    #[cfg(rpcrdma2_kunit)]
    pub fn init() -> &'static Net {
        // SAFETY: `init_net` is a static that lives forever; `Net` is a
        // transparent wrapper that only hands out shared references.
        unsafe { Net::from_raw(core::ptr::addr_of_mut!(bindings::init_net)) }
    }

    /// Borrows a raw namespace (e.g. `rpc_xprt::xprt_net`).
    ///
    /// # Safety
    ///
    /// `ptr` must point to a live `struct net` for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net) -> &'a Net {
        // SAFETY: transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast::<Net>() }
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::net {
        self.0.get()
    }
}
