// SPDX-License-Identifier: GPL-2.0

//! A transport instance's allocation: [`XprtBox`], its creation and the
//! back-references ([`XprtRef`]) its connection's handlers hold.
//!
//! # Memory layout
//!
//! `xprt_alloc()` zero-allocates the transport with `rpc_xprt` at offset 0
//! and `xprt_free()` releases it with `kfree_rcu()`. The Rust transport
//! therefore lives in the same allocation: [`XprtBox<T>`] is `#[repr(C)]`
//! with the `rpc_xprt` first and `T` after it, initialised in place by
//! [`XprtBox::create`] and dropped in place by the `destroy` trampoline
//! (in [`super::transport`]), never by Rust's allocator.

use super::rqst::ReplyRqst;
use super::slot::{SlotBox, Task};
#[cfg(rpcrdma2_kunit)]
use super::transport::destroy;
use super::transport::{connect_worker, keepalive_worker, OpsTable, Transport};
use super::xprt::{spin_lock, spin_unlock, Xprt};
use crate::bindings;
use crate::compat::init::PinInit;
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ptr::{addr_of_mut, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::prelude::*;
use kernel::types::Opaque;

/// A transport instance: `rpc_xprt`, then the connect and keepalive
/// workers, then `T`.
///
/// # Invariants
///
/// Lives in memory from `xprt_alloc()`; `data` and `sender` are
/// initialised from [`XprtBox::create`] until the `destroy` trampoline
/// drops them. `sender` is only reached by a context that holds the
/// transport's send lock (`XPRT_LOCKED`), through [`XprtBox::sender`].
#[repr(C)]
pub struct XprtBox<T: Transport> {
    xprt: Xprt,
    pub(super) connect_work: Opaque<bindings::delayed_work>,
    /// Runs [`Transport::keepalive`] while the transport asks for it.
    pub(super) keepalive_work: Opaque<bindings::delayed_work>,
    /// Live [`XprtRef`]s; `destroy` waits for zero before freeing.
    pub(super) refs: AtomicUsize,
    /// A per-transport copy of the RPC timeout once `set_connect_timeout`
    /// shortened it (`xprt->timeout` then points here).
    timeout: Opaque<bindings::rpc_timeout>,
    /// The transport's state.
    pub data: T,
    /// The state only the holder of the transport send lock touches
    /// ([`Transport::Sender`]), reached through [`XprtBox::sender`].
    sender: UnsafeCell<T::Sender>,
}

/// A back-reference from a connection's handlers (CM events, completions)
/// to their transport, usable from any context.
///
/// It does not keep the transport alive through SUNRPC's refcount (that
/// would be a cycle: the transport owns its connection). Instead the
/// `destroy` op waits until every `XprtRef` is dropped before it frees the
/// transport; the transport's own `destroy` must tear its connection down,
/// which drops them.
///
/// # Invariants
///
/// Points to the `rpc_xprt` of a live `XprtBox` whose `refs` counts this
/// reference.
pub struct XprtRef(NonNull<bindings::rpc_xprt>, NonNull<AtomicUsize>);

// SAFETY: `Xprt` is `Sync`, and the counter is atomic.
unsafe impl Send for XprtRef {}
// SAFETY: as above.
unsafe impl Sync for XprtRef {}

impl core::ops::Deref for XprtRef {
    type Target = Xprt;
    fn deref(&self) -> &Xprt {
        // SAFETY: by the type invariant the transport is alive.
        unsafe { &*self.0.as_ptr().cast::<Xprt>() }
    }
}

impl XprtRef {
    /// Finds the request waiting for `xid` (network byte order) and pins
    /// it, under one `queue_lock`, as the reply handlers of the C
    /// transports do; `None` if no request waits for `xid`. The
    /// [`ReplyRqst`] owns the pin: completing it unpins it under the same
    /// lock as the completion.
    pub fn find_reply(&self, xid: u32) -> Option<ReplyRqst> {
        let x = self.as_raw();
        // SAFETY: the transport is alive (type invariant).
        // `xprt_lookup_rqst` and `xprt_pin_rqst` require `queue_lock`.
        // The receive queue of an `XprtBox`'s transport holds forward
        // requests only (backchannel requests are never queued for a
        // reply), and every forward request of it has a slot its
        // `alloc_slot` lent from its pool of `SlotBox`es, which is alive
        // while the request is queued: the index read is of a live slot.
        unsafe {
            let lock = addr_of_mut!((*x).queue_lock);
            spin_lock(lock);
            let rq = NonNull::new(bindings::xprt_lookup_rqst(x, xid));
            if let Some(rq) = rq {
                bindings::xprt_pin_rqst(rq.as_ptr());
            }
            spin_unlock(lock);
            let rq = rq?;
            // The pin is the handle's.
            Some(ReplyRqst::new(rq, SlotBox::<()>::index_of(rq.as_ptr())))
        }
    }
}

impl Drop for XprtRef {
    fn drop(&mut self) {
        // SAFETY: the counter lives in the transport, alive per invariant.
        let refs = unsafe { self.1.as_ref() };
        if refs.fetch_sub(1, Ordering::Release) == 1 {
            // SAFETY: `wake_up_var` uses the address only as a key (the
            // transport may be freed as soon as the count is zero).
            unsafe { bindings::rpcrdma2_shim_wake_zero(refs.as_ptr().cast()) };
        }
    }
}

/// A transport instance [`XprtBox::create`] made, before it is handed to
/// SUNRPC: what [`Transport::setup`] returns, so that the class's `setup`
/// hands SUNRPC only `rpc_xprt`s that live in an `XprtBox<T>` of the
/// class's own transport type. Dropping it without handing it over
/// leaks the instance.
///
/// # Invariants
///
/// `0` is the `rpc_xprt` of an `XprtBox<T>` made by `XprtBox::<T>::create`
/// that no one else references.
pub struct NewXprt<T: Transport>(NonNull<bindings::rpc_xprt>, PhantomData<T>);

impl<T: Transport> NewXprt<T> {
    /// The `rpc_xprt`, for SUNRPC (or a test) to own from now on.
    pub fn into_raw(self) -> *mut bindings::rpc_xprt {
        self.0.as_ptr()
    }
}

/// Parameters for [`XprtBox::create`].
pub struct CreateParams<'a> {
    /// The `xprt_create` SUNRPC passed to the class's setup.
    pub args: &'a super::XprtCreate<'a>,
    /// Maximum number of concurrent requests (slots).
    pub max_reqs: u32,
    /// RPC timeout: initial = max (jiffies).
    pub timeout: usize,
    /// bind / reestablish / idle timeouts (jiffies).
    pub bind_timeout: usize,
    /// Initial reconnect delay (jiffies).
    pub reestablish_timeout: usize,
    /// Idle disconnect (jiffies).
    pub idle_timeout: usize,
    /// `xprt->max_payload`.
    pub max_payload: usize,
}

impl<T: Transport> XprtBox<T> {
    /// The SUNRPC side of the transport.
    pub fn xprt(&self) -> &Xprt {
        &self.xprt
    }

    /// Forgets every request's congestion-window slot: credits are valid
    /// for one connection only, and the next connection starts with
    /// `cong = 0` (RFC 8166 §3.3.3); as C's `rpcrdma_req_reset` on every
    /// request when a connection is torn down, whether a task holds it or
    /// not ([`SlotBox::reset_cong`](super::slot::SlotBox::reset_cong)).
    pub fn reset_slots_cong(&self) {
        // SAFETY: the pool `T::slots` gives is the one this transport's
        // `alloc_slot` and `free_slot` trampolines lend from and take back
        // to, with this `rpc_xprt`.
        unsafe { self.data.slots().reset_cong(self.xprt()) }
    }

    /// Allocates and initialises a transport: generic `rpc_xprt` fields,
    /// the destination address and display strings, the ops table, the
    /// connect worker, then `T` from `init`. Returns the new instance
    /// for [`Transport::setup`] to hand to SUNRPC.
    pub fn create(p: &CreateParams<'_>, init: impl PinInit<T, Error>) -> Result<NewXprt<T>> {
        let args = p.args.raw();
        if args.addrlen > core::mem::size_of::<bindings::__kernel_sockaddr_storage>() {
            return Err(EBADF);
        }
        // SAFETY: FFI call without preconditions.
        if unsafe { bindings::rpcrdma2_shim_module_get() } == 0 {
            return Err(EIO);
        }
        // SAFETY: `args.net` is the caller's network namespace.
        let x =
            unsafe { bindings::xprt_alloc(args.net, core::mem::size_of::<Self>(), 0, p.max_reqs) };
        let Some(x) = NonNull::new(x) else {
            // SAFETY: balances the module_get above.
            unsafe { bindings::rpcrdma2_shim_module_put() };
            return Err(ENOMEM);
        };
        let this = x.as_ptr().cast::<Self>();
        // SAFETY: `xprt_alloc` returned a zeroed allocation of
        // `size_of::<Self>()` bytes with an initialised `rpc_xprt` first;
        // until `ops` is set nobody else uses it.
        let r = unsafe { Self::init_fields(this, p, init) };
        if let Err(e) = r {
            // SAFETY: `data` was not initialised; free what init_fields
            // set up and the allocation itself.
            unsafe {
                free_addresses(x.as_ptr());
                bindings::xprt_free(x.as_ptr());
                bindings::rpcrdma2_shim_module_put();
            }
            return Err(e);
        }
        // INVARIANT: made by `create`, not given to anyone yet.
        Ok(NewXprt(x, PhantomData))
    }

    /// # Safety
    ///
    /// `this` is a fresh `xprt_alloc()` allocation of `size_of::<Self>()`.
    unsafe fn init_fields(
        this: *mut Self,
        p: &CreateParams<'_>,
        init: impl PinInit<T, Error>,
    ) -> Result {
        let args = p.args.raw();
        // SAFETY: per the function's contract.
        unsafe {
            let x = this.cast::<bindings::rpc_xprt>();
            (*x).timeout = core::ptr::addr_of!(DEFAULT_TIMEOUT);
            (*x).connect_timeout = p.timeout;
            (*x).max_reconnect_timeout = p.timeout;
            (*x).bind_timeout = p.bind_timeout;
            (*x).reestablish_timeout = p.reestablish_timeout;
            (*x).idle_timeout = p.idle_timeout;
            (*x).set_resvport(0);
            (*x).prot = bindings::IPPROTO_TCP as i32;
            (*x).xprt_class = bindings::rpcrdma2_shim_class();
            (*x).addrlen = args.addrlen;
            core::ptr::copy_nonoverlapping(
                args.dstaddr.cast::<u8>(),
                addr_of_mut!((*x).addr).cast::<u8>(),
                args.addrlen,
            );
            (*x).max_payload = p.max_payload;
            let port = sockaddr_port(addr_of_mut!((*x).addr).cast());
            if port != 0 {
                bindings::rpcrdma2_shim_xprt_set_bound(x);
            }
            format_addresses(x)?;
            bindings::rpcrdma2_shim_init_delayed_work(
                (*this).connect_work.get(),
                Some(connect_worker::<T>),
            );
            bindings::rpcrdma2_shim_init_delayed_work(
                (*this).keepalive_work.get(),
                Some(keepalive_worker::<T>),
            );
            addr_of_mut!((*this).refs).write(AtomicUsize::new(0));
            // (`timeout` is plain data, zeroed by xprt_alloc, unused until
            // set_connect_timeout.)
            // In place: the box never moves until xprt_free().
            crate::compat::init::pinned_init(init, addr_of_mut!((*this).data))?;
            // After `data`: nothing can fail from here on, so an error
            // above leaves nothing of it to drop.
            addr_of_mut!((*this).sender).write(UnsafeCell::new(T::Sender::default()));
            // A promoted constant: `'static`, like the C transports' tables.
            let ops: &'static bindings::rpc_xprt_ops = &OpsTable::<T>::OPS;
            (*x).ops = ops;
        }
        Ok(())
    }

    /// The transport's sender state ([`Transport::Sender`]). A caller may
    /// make a reference of it only while it holds the transport's send
    /// lock (`XPRT_LOCKED`: SUNRPC's `->send_request` and `->close` run
    /// under it, and `->destroy` after `xprt_destroy` took it for good),
    /// and only one at a time.
    pub(super) fn sender(&self) -> *mut T::Sender {
        self.sender.get()
    }

    /// A back-reference for a connection's handlers (see [`XprtRef`]).
    pub fn xprt_ref(&self) -> XprtRef {
        self.refs.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: counted above; `destroy` waits for it to drop.
        XprtRef(NonNull::from(&self.xprt).cast(), NonNull::from(&self.refs))
    }

    /// `set_connect_timeout` as the C transports implement it: a shorter
    /// connect timeout also shortens the RPC timeout (to no less than
    /// `min_initval`, using a per-transport copy), and the reconnect
    /// back-off is capped at `reconnect`. Jiffies; under transport_lock.
    pub fn apply_connect_timeout(&self, connect: usize, reconnect: usize, min_initval: usize) {
        let x = self.xprt.as_raw();
        // SAFETY: the xprt is alive; these fields are protected by
        // transport_lock, held across the update; `self.timeout` lives as
        // long as the xprt, so `xprt->timeout` may point at it.
        unsafe {
            let lock = addr_of_mut!((*x).transport_lock);
            spin_lock(lock);
            if connect < (*x).connect_timeout {
                let mut to = *(*x).timeout;
                let initval = connect.max(min_initval);
                to.to_initval = initval;
                to.to_maxval = initval;
                self.timeout.get().write(to);
                (*x).timeout = self.timeout.get();
                (*x).connect_timeout = connect;
            }
            if reconnect < (*x).max_reconnect_timeout {
                (*x).max_reconnect_timeout = reconnect;
            }
            spin_unlock(lock);
        }
    }

    /// The cookie identifying this transport to `xprt_lock_connect`.
    fn connect_lock_cookie(&self) -> *mut core::ffi::c_void {
        core::ptr::from_ref(self).cast_mut().cast()
    }

    /// Hands the transport lock held by `task` to the connect worker
    /// (`xprt_lock_connect`); false if `task` does not hold it.
    pub fn lock_connect(&self, task: &Task) -> bool {
        // SAFETY: the xprt and the task are alive; the cookie is only
        // compared by SUNRPC, never dereferenced.
        unsafe {
            bindings::xprt_lock_connect(self.xprt.as_raw(), task.raw(), self.connect_lock_cookie())
        }
    }

    /// Releases the lock taken by [`XprtBox::lock_connect`].
    pub fn unlock_connect(&self) {
        // SAFETY: the xprt is alive; the cookie is the one lock_connect used.
        unsafe { bindings::xprt_unlock_connect(self.xprt.as_raw(), self.connect_lock_cookie()) }
    }

    /// Queues the connect worker after `delay` jiffies.
    pub fn queue_connect(&self, delay: usize) {
        // SAFETY: the work was initialised in `create`.
        unsafe { bindings::rpcrdma2_shim_queue_delayed_work(self.connect_work.get(), delay) }
    }

    /// Runs [`Transport::keepalive`] after `delay` jiffies (nothing if it
    /// is queued already); it runs again as long as it returns a delay.
    pub fn queue_keepalive(&self, delay: usize) {
        // SAFETY: the work was initialised in `create`; `destroy` cancels
        // it before the box goes.
        unsafe { bindings::rpcrdma2_shim_queue_delayed_work(self.keepalive_work.get(), delay) }
    }

    /// Rewrites the port and its display strings (rpcbind result).
    pub fn update_port(&self, port: u16) {
        // SAFETY: the xprt is alive; SUNRPC serialises set_port with the
        // readers of the strings as it does for the C transports.
        unsafe {
            let x = self.xprt.as_raw();
            set_sockaddr_port(addr_of_mut!((*x).addr).cast(), port);
            let _ = replace_port_strings(x, port);
        }
    }

    /// # Safety
    ///
    /// `x` must be the `rpc_xprt` of a live `XprtBox<T>`.
    pub(super) unsafe fn from_xprt<'a>(x: *mut bindings::rpc_xprt) -> &'a Self {
        // SAFETY: `rpc_xprt` is at offset 0 of the `#[repr(C)]` box.
        unsafe { &*x.cast::<Self>() }
    }
}

/// A transport created by [`XprtBox::create`] that was never handed to
/// SUNRPC, for tests: calls go through the installed ops table, and drop
/// runs the `destroy` op as SUNRPC would. KUnit variant only.
///
/// # Invariants
///
/// `0` is an `rpc_xprt` of an `XprtBox<T>` that no one else references.
#[cfg(rpcrdma2_kunit)]
pub struct Unpublished<T: Transport>(NonNull<bindings::rpc_xprt>, PhantomData<T>);

#[cfg(rpcrdma2_kunit)]
impl<T: Transport> Unpublished<T> {
    /// Wraps the result of [`XprtBox::create`].
    ///
    /// # Safety
    ///
    /// `x` came from `XprtBox::<T>::create` and was not given to SUNRPC.
    pub unsafe fn new(x: *mut bindings::rpc_xprt) -> Option<Self> {
        NonNull::new(x).map(|x| Unpublished(x, PhantomData))
    }

    /// Wraps a new instance that was not handed to SUNRPC.
    pub fn from_new(x: NewXprt<T>) -> Self {
        // INVARIANT: `NewXprt`'s invariant is this one.
        Unpublished(x.0, PhantomData)
    }

    /// The transport.
    pub fn get(&self) -> &XprtBox<T> {
        // SAFETY: by the type invariant.
        unsafe { XprtBox::from_xprt(self.0.as_ptr()) }
    }

    /// `address_strings[idx]` as text.
    pub fn display(&self, idx: u32) -> Option<&str> {
        // SAFETY: the strings were set by `create` and live until drop.
        unsafe {
            let p = (*self.0.as_ptr())
                .address_strings
                .get(idx as usize)
                .copied()?;
            if p.is_null() {
                return None;
            }
            core::ffi::CStr::from_ptr(p.cast()).to_str().ok()
        }
    }

    /// Calls the ops table's `set_connect_timeout`.
    pub fn set_connect_timeout(&self, connect: usize, reconnect: usize) {
        // SAFETY: the ops table was installed by `create`; the xprt is ours.
        unsafe {
            if let Some(f) = (*(*self.0.as_ptr()).ops).set_connect_timeout {
                f(self.0.as_ptr(), connect, reconnect);
            }
        }
    }

    /// `(timeout->to_initval, connect_timeout, max_reconnect_timeout)`.
    pub fn timeouts(&self) -> (usize, usize, usize) {
        // SAFETY: the xprt is ours and alive; `timeout` points to a static
        // or to the transport's own copy.
        unsafe {
            let x = self.0.as_ptr();
            (
                (*(*x).timeout).to_initval,
                (*x).connect_timeout,
                (*x).max_reconnect_timeout,
            )
        }
    }

    /// Takes `n` slots through the ops table's `alloc_slot` (there must
    /// be `n` free: a task that finds none would be queued on the
    /// backlog), shows each `rpc_rqst` to `f`, and gives them all back
    /// through `free_slot`; returns how many it took. As SUNRPC's
    /// `xprt_release` would not have run, `rq_cong` is left as `f` leaves
    /// it.
    pub fn with_slots(
        &self,
        n: usize,
        mut f: impl FnMut(&mut bindings::rpc_rqst),
    ) -> Result<usize> {
        let mut taken = kernel::alloc::KVec::with_capacity(n, kernel::alloc::flags::GFP_KERNEL)?;
        // SAFETY: the ops table was installed by `create`; each task is a
        // zeroed stand-in that lives across its `alloc_slot`, which with
        // a free slot only sets `tk_rqstp` and `tk_status`. A slot taken
        // is this function's until `free_slot` gives it back below (no
        // task of SUNRPC's holds it), so `f` may write it meanwhile.
        unsafe {
            let ops = &*(*self.0.as_ptr()).ops;
            let (Some(alloc), Some(free)) = (ops.alloc_slot, ops.free_slot) else {
                return Err(EINVAL);
            };
            for _ in 0..n {
                let mut task = bindings::rpc_task::default();
                alloc(self.0.as_ptr(), &mut task);
                if task.tk_status != 0 || task.tk_rqstp.is_null() {
                    break;
                }
                f(&mut *task.tk_rqstp);
                if let Err(e) = taken.push(task.tk_rqstp, kernel::alloc::flags::GFP_KERNEL) {
                    free(self.0.as_ptr(), task.tk_rqstp);
                    for &rq in taken.iter() {
                        free(self.0.as_ptr(), rq);
                    }
                    return Err(e.into());
                }
            }
            for &rq in taken.iter() {
                free(self.0.as_ptr(), rq);
            }
        }
        Ok(taken.len())
    }

    /// Runs the ops table's `alloc_slot` for a fresh task and returns
    /// whether it got a slot, then hands it back through `free_slot`.
    pub fn cycle_slot(&self) -> bool {
        let mut task = bindings::rpc_task::default();
        // SAFETY: the ops table was installed by `create`; the task is a
        // zeroed stand-in that lives across both calls, and a transport
        // with free slots only sets `tk_rqstp` and `tk_status` on it.
        unsafe {
            let ops = &*(*self.0.as_ptr()).ops;
            let (Some(alloc), Some(free)) = (ops.alloc_slot, ops.free_slot) else {
                return false;
            };
            alloc(self.0.as_ptr(), &mut task);
            if task.tk_status != 0 || task.tk_rqstp.is_null() {
                return false;
            }
            free(self.0.as_ptr(), task.tk_rqstp);
        }
        true
    }
}

#[cfg(rpcrdma2_kunit)]
impl<T: Transport> Drop for Unpublished<T> {
    fn drop(&mut self) {
        // SAFETY: by the type invariant nobody else uses the transport;
        // `destroy` frees it exactly once.
        unsafe { destroy::<T>(self.0.as_ptr()) }
    }
}

/// RDMA has no keepalive: 60 s RPC timeout, no retries (as the C client).
static DEFAULT_TIMEOUT: bindings::rpc_timeout = bindings::rpc_timeout {
    to_initval: 60 * super::HZ,
    to_maxval: 60 * super::HZ,
    to_increment: 0,
    to_retries: 0,
    to_exponential: 0,
};

/// # Safety
///
/// `sa` points to a valid IPv4 or IPv6 `sockaddr`.
unsafe fn sockaddr_port(sa: *const bindings::sockaddr) -> u16 {
    // SAFETY: per the function's contract.
    unsafe {
        match u32::from((*sa).sa_family) {
            bindings::AF_INET => u16::from_be((*sa.cast::<bindings::sockaddr_in>()).sin_port),
            bindings::AF_INET6 => u16::from_be((*sa.cast::<bindings::sockaddr_in6>()).sin6_port),
            _ => 0,
        }
    }
}

/// # Safety
///
/// `sa` points to a valid, writable IPv4 or IPv6 `sockaddr`.
unsafe fn set_sockaddr_port(sa: *mut bindings::sockaddr, port: u16) {
    // SAFETY: per the function's contract.
    unsafe {
        match u32::from((*sa).sa_family) {
            bindings::AF_INET => (*sa.cast::<bindings::sockaddr_in>()).sin_port = port.to_be(),
            bindings::AF_INET6 => (*sa.cast::<bindings::sockaddr_in6>()).sin6_port = port.to_be(),
            _ => {}
        }
    }
}

/// A small `fmt::Write` into a NUL-terminated stack buffer.
struct StackStr<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackStr<N> {
    fn new() -> Self {
        StackStr {
            buf: [0; N],
            len: 0,
        }
    }

    fn as_ptr(&self) -> *const core::ffi::c_char {
        self.buf.as_ptr().cast()
    }
}

impl<const N: usize> core::fmt::Write for StackStr<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(core::fmt::Error)?;
        // Keep one byte for the terminating NUL.
        if end >= N {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// kstrdup()s a formatted string into `address_strings[idx]`.
///
/// # Safety
///
/// `x` is a live `rpc_xprt` whose `address_strings[idx]` is NULL or was
/// set by this function (it is freed first).
unsafe fn set_display(
    x: *mut bindings::rpc_xprt,
    idx: u32,
    args: core::fmt::Arguments<'_>,
) -> Result {
    let mut s = StackStr::<64>::new();
    core::fmt::write(&mut s, args).map_err(|_| EINVAL)?;
    // SAFETY: `s` is NUL-terminated; the slot is ours to replace.
    unsafe {
        let dup = bindings::kstrdup(s.as_ptr().cast(), kernel::bindings::GFP_KERNEL);
        if dup.is_null() {
            return Err(ENOMEM);
        }
        let slot = addr_of_mut!((*x).address_strings[idx as usize]);
        bindings::kfree((*slot).cast());
        *slot = dup;
    }
    Ok(())
}

/// # Safety
///
/// As [`set_display`].
unsafe fn replace_port_strings(x: *mut bindings::rpc_xprt, port: u16) -> Result {
    // SAFETY: per the function's contract.
    unsafe {
        set_display(
            x,
            bindings::rpc_display_format_t_RPC_DISPLAY_PORT,
            format_args!("{}", port),
        )?;
        set_display(
            x,
            bindings::rpc_display_format_t_RPC_DISPLAY_HEX_PORT,
            format_args!("{:4x}", port),
        )
    }
}

/// Fills `address_strings` as `xprt_rdma_format_addresses()` does: the
/// allocated ones are freed by [`free_addresses`]; PROTO and NETID point
/// to static strings.
///
/// # Safety
///
/// `x` is a fresh `rpc_xprt` with `addr` set.
unsafe fn format_addresses(x: *mut bindings::rpc_xprt) -> Result {
    // SAFETY: per the function's contract.
    unsafe {
        let sa = addr_of_mut!((*x).addr).cast::<bindings::sockaddr>();
        let netid: &'static core::ffi::CStr = match u32::from((*sa).sa_family) {
            bindings::AF_INET => {
                let a = u32::from_be((*sa.cast::<bindings::sockaddr_in>()).sin_addr.s_addr);
                set_display(
                    x,
                    bindings::rpc_display_format_t_RPC_DISPLAY_HEX_ADDR,
                    format_args!("{:08x}", a),
                )?;
                c"rdma"
            }
            bindings::AF_INET6 => {
                let a = (*sa.cast::<bindings::sockaddr_in6>())
                    .sin6_addr
                    .in6_u
                    .u6_addr8;
                let mut hex = StackStr::<40>::new();
                for b in a {
                    core::fmt::write(&mut hex, format_args!("{:02x}", b)).map_err(|_| EINVAL)?;
                }
                let hex = core::str::from_utf8(&hex.buf[..hex.len]).map_err(|_| EINVAL)?;
                set_display(
                    x,
                    bindings::rpc_display_format_t_RPC_DISPLAY_HEX_ADDR,
                    format_args!("{}", hex),
                )?;
                c"rdma6"
            }
            f => {
                pr_err!("transport setup: unsupported address family {}\n", f);
                return Err(crate::compat::errno::eafnosupport());
            }
        };
        let mut buf = [0u8; 128];
        let n = bindings::rpc_ntop(sa, buf.as_mut_ptr().cast(), buf.len());
        let text = core::str::from_utf8(buf.get(..n).unwrap_or(&[])).map_err(|_| EINVAL)?;
        set_display(
            x,
            bindings::rpc_display_format_t_RPC_DISPLAY_ADDR,
            format_args!("{}", text),
        )?;
        replace_port_strings(x, sockaddr_port(sa))?;
        (*x).address_strings[bindings::rpc_display_format_t_RPC_DISPLAY_PROTO as usize] =
            c"rdma".as_ptr().cast();
        (*x).address_strings[bindings::rpc_display_format_t_RPC_DISPLAY_NETID as usize] =
            netid.as_ptr().cast();
    }
    Ok(())
}

/// Frees the strings [`format_addresses`] allocated.
///
/// # Safety
///
/// `x` is an `rpc_xprt` whose strings were set by this module.
pub(super) unsafe fn free_addresses(x: *mut bindings::rpc_xprt) {
    for i in 0..bindings::rpc_display_format_t_RPC_DISPLAY_MAX {
        if i == bindings::rpc_display_format_t_RPC_DISPLAY_PROTO
            || i == bindings::rpc_display_format_t_RPC_DISPLAY_NETID
        {
            continue;
        }
        // SAFETY: the allocated strings came from kstrdup (or are NULL).
        unsafe {
            let slot = addr_of_mut!((*x).address_strings[i as usize]);
            bindings::kfree((*slot).cast());
            *slot = core::ptr::null_mut();
        }
    }
}
