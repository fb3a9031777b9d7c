// SPDX-License-Identifier: GPL-2.0

//! rdma_cm, passive side: a listening id ([`Listener`]) and the connection
//! requests it queues ([`Incoming`]), accepted from a thread as svcrdma
//! does. Only the KUnit loopback suites use it, so only the module's KUnit
//! variant (`cfg(rpcrdma2_kunit)`) compiles it.

use super::cm::{cm_handler, raw_slice, CmHandler, CmId, IdCtx, SockAddr, REJ_CONSUMER_DEFINED};
use super::{errno, from_err_ptr, Device, Net};
use crate::bindings;
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};
use kernel::types::ForeignOwnable;

/// A connection request waiting in a [`Listener`].
struct Pending {
    id: NonNull<bindings::rdma_cm_id>,
    private_data: KVec<u8>,
}

// SAFETY: the pending id is only used by whoever dequeues it.
unsafe impl Send for Pending {}

/// Destroys a connection request nobody accepted.
///
/// # Safety
///
/// `id` must be a live child id of a listener, owned by the caller, and
/// the caller must not be running in any handler of it.
unsafe fn reject_and_destroy(id: NonNull<bindings::rdma_cm_id>) {
    // SAFETY: the id is live and ours (caller guarantee). A failed reject
    // (e.g. the peer gave up) changes nothing: the id is destroyed anyway.
    unsafe {
        bindings::rdma_reject(
            id.as_ptr(),
            core::ptr::null(),
            0,
            REJ_CONSUMER_DEFINED as u8,
        );
        bindings::rdma_destroy_id(id.as_ptr());
    }
}

struct ListenState {
    /// Requests in arrival order (`None`: taken).
    pending: KVec<Option<Pending>>,
}

#[pin_data]
struct ListenInner {
    #[pin]
    state: Mutex<ListenState>,
    #[pin]
    cv: CondVar,
    /// The listening id, to tell its own events from its children's.
    listen_id: AtomicPtr<bindings::rdma_cm_id>,
}

/// The C event handler of a [`Listener`] and of its connection requests
/// until they are accepted.
///
/// # Safety
///
/// Called by rdma_cm with a live id whose `context` is an un-released
/// `Arc<ListenInner>` foreign reference, and a valid event.
unsafe extern "C" fn listen_handler(
    id: *mut bindings::rdma_cm_id,
    ev: *mut bindings::rdma_cm_event,
) -> core::ffi::c_int {
    // SAFETY: `id` and `ev` are live (function precondition).
    let (foreign, ev) = unsafe { ((*id).context, &*ev) };
    // SAFETY: the listener, and every dequeued request, keep a reference
    // on the `ListenInner` until their ids are destroyed.
    let inner = unsafe { <Arc<ListenInner> as ForeignOwnable>::borrow(foreign) };
    if ev.event == bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST {
        // SAFETY: connection requests carry `param.conn`.
        let conn = unsafe { &ev.param.conn };
        // SAFETY: rdma_cm passes `private_data_len` bytes, valid during the call.
        let data = unsafe { raw_slice(conn.private_data.cast(), conn.private_data_len) };
        let mut private_data = KVec::new();
        if private_data.extend_from_slice(data, GFP_KERNEL).is_err() {
            pr_err!("listener: no memory for a connection request; rejecting it\n");
            // The new id is not ours yet: 1 tells rdma_cm to destroy it.
            return 1;
        }
        let Some(id) = NonNull::new(id) else { return 1 };
        let mut st = inner.state.lock();
        let req = Some(Pending { id, private_data });
        let res = match st.pending.iter_mut().find(|p| p.is_none()) {
            Some(slot) => {
                *slot = req;
                Ok(())
            }
            None => st.pending.push(req, GFP_KERNEL),
        };
        drop(st);
        if res.is_err() {
            pr_err!("listener: no memory to queue a connection request; rejecting it\n");
            return 1;
        }
        inner.cv.notify_all();
        return 0;
    }
    if id != inner.listen_id.load(Ordering::Relaxed) {
        // An event for a request not accepted yet (e.g. the peer gave up);
        // `Endpoint::accept()` will fail and report it.
        pr_debug!("listener: event {} on a pending request\n", ev.event);
    } else {
        pr_info!("listener: event {} (status {})\n", ev.event, ev.status);
    }
    0
}

/// A listening rdma_cm id (passive side).
///
/// # Invariants
///
/// `id` is a live listening id owned by this object, its context is
/// `foreign` (an `Arc<ListenInner>` reference to `inner`), its handler
/// `listen_handler`. Every queued request id has the same context and
/// handler and is owned by `inner`'s queue.
pub struct Listener {
    id: NonNull<bindings::rdma_cm_id>,
    foreign: *mut c_void,
    inner: Arc<ListenInner>,
}

// SAFETY: see `CmId`.
unsafe impl Send for Listener {}
// SAFETY: see `CmId`.
unsafe impl Sync for Listener {}

impl Listener {
    /// Binds to `addr` (port 0 picks a free port, see
    /// [`Listener::local_addr`]) and listens with `backlog`.
    pub fn new(net: &Net, addr: &SockAddr, backlog: i32) -> Result<Listener> {
        let inner = Arc::pin_init(
            pin_init!(ListenInner {
                state <- kernel::new_mutex!(ListenState { pending: KVec::new() }, "rpcrdma2_listen"),
                cv <- kernel::new_condvar!("rpcrdma2_listen"),
                listen_id: AtomicPtr::new(core::ptr::null_mut()),
            }),
            GFP_KERNEL,
        )?;
        let foreign = crate::compat::foreign::into_foreign(inner.clone());
        // SAFETY: `net` is live; the handler matches the context type.
        let ptr = unsafe {
            bindings::rpcrdma2_shim_create_id(
                net.as_ptr(),
                Some(listen_handler),
                foreign,
                bindings::rdma_ucm_port_space_RDMA_PS_TCP,
                bindings::ib_qp_type_IB_QPT_RC,
            )
        };
        let id = match from_err_ptr(ptr) {
            Ok(id) => id,
            Err(e) => {
                pr_err!("rdma_create_id (listener) failed ({})\n", e.to_errno());
                // SAFETY: no id holds the reference.
                drop(unsafe { <Arc<ListenInner> as ForeignOwnable>::from_foreign(foreign) });
                return Err(e);
            }
        };
        inner.listen_id.store(id.as_ptr(), Ordering::Relaxed);
        // INVARIANT: from here on `drop` cleans up.
        let l = Listener { id, foreign, inner };
        // SAFETY: the id is live; rdma_cm copies the address.
        let ret = unsafe { bindings::rdma_bind_addr(id.as_ptr(), addr.as_ptr().cast_mut()) };
        if ret != 0 {
            pr_err!("rdma_bind_addr({}) failed ({})\n", addr, ret);
            return Err(Error::from_errno(ret));
        }
        // SAFETY: the id is live and bound.
        let ret = unsafe { bindings::rdma_listen(id.as_ptr(), backlog) };
        if ret != 0 {
            pr_err!("rdma_listen({}) failed ({})\n", addr, ret);
            return Err(Error::from_errno(ret));
        }
        Ok(l)
    }

    /// The bound address, with the port actually used.
    pub fn local_addr(&self) -> Result<SockAddr> {
        // SAFETY: the id is live and bound; the address was written during
        // `rdma_bind_addr()` in `new`.
        let ss = unsafe { core::ptr::addr_of!((*self.id.as_ptr()).route.addr.src_addr).read() };
        SockAddr::from_storage(&ss)
    }

    /// Waits up to `timeout_ms` for the next connection request.
    ///
    /// Fails with `ETIMEDOUT`, or `ERESTARTSYS` on a signal.
    pub fn accept_next(&self, timeout_ms: u32) -> Result<Incoming> {
        let mut left = kernel::time::msecs_to_jiffies(timeout_ms);
        let mut st = self.inner.state.lock();
        loop {
            if let Some(p) = st.pending.iter_mut().find_map(|p| p.take()) {
                return Ok(Incoming {
                    id: p.id,
                    private_data: p.private_data,
                    _listener: self.inner.clone(),
                });
            }
            if left == 0 {
                return Err(errno(bindings::ETIMEDOUT));
            }
            match self.inner.cv.wait_interruptible_timeout(&mut st, left) {
                kernel::sync::CondVarTimeoutResult::Timeout => left = 0,
                kernel::sync::CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                kernel::sync::CondVarTimeoutResult::Signal { .. } => return Err(ERESTARTSYS),
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: the listening id is ours; after this no new request
        // arrives and no handler call for it runs.
        unsafe { bindings::rdma_destroy_id(self.id.as_ptr()) };
        let mut st = self.inner.state.lock();
        let pending = core::mem::take(&mut st.pending);
        drop(st);
        for p in pending.into_iter().flatten() {
            // SAFETY: queued requests are owned by the queue (invariant);
            // we are not in any handler.
            unsafe { reject_and_destroy(p.id) };
        }
        // SAFETY: no id uses `foreign` any more: the listener and every
        // queued request are destroyed; dequeued requests hold their own
        // `Arc`.
        drop(unsafe { <Arc<ListenInner> as ForeignOwnable>::from_foreign(self.foreign) });
    }
}

/// A connection request taken from a [`Listener`], not yet accepted.
///
/// Turn it into a [`CmId`] with [`Incoming::into_cm_id`], build a
/// [`super::endpoint::Endpoint`] on it and call
/// [`super::endpoint::Endpoint::accept`]. Dropping it rejects the request.
///
/// # Invariants
///
/// `id` is a live request id owned by this object whose context is a
/// reference on `_listener` (kept alive by it) with `listen_handler`.
pub struct Incoming {
    id: NonNull<bindings::rdma_cm_id>,
    private_data: KVec<u8>,
    _listener: Arc<ListenInner>,
}

// SAFETY: see `CmId`.
unsafe impl Send for Incoming {}

impl Incoming {
    /// The private data of the peer's connect (on IB/RoCE zero-padded to
    /// the CM REQ's 56 bytes).
    pub fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    /// The device the request arrived on.
    pub fn device(&self) -> Option<&Device> {
        // SAFETY: a request id is bound to the device it arrived on for its
        // whole life, and rdma_cm keeps that device registered meanwhile.
        let dev = unsafe { (*self.id.as_ptr()).device };
        // SAFETY: see above.
        (!dev.is_null()).then(|| unsafe { Device::from_raw(dev) })
    }

    /// Hands the request to an owner: its events go to `handler` from now on.
    pub fn into_cm_id<H: CmHandler>(self, handler: Arc<H>) -> Result<CmId<H>> {
        let ctx = IdCtx::new(handler)?;
        let foreign = crate::compat::foreign::into_foreign(ctx.clone());
        let id = self.id;
        // SAFETY: the id is live and ours; with its handler mutex held no
        // event is delivered while context and handler change together.
        unsafe {
            bindings::rdma_lock_handler(id.as_ptr());
            (*id.as_ptr()).context = foreign;
            (*id.as_ptr()).event_handler = Some(cm_handler::<H>);
            bindings::rdma_unlock_handler(id.as_ptr());
        }
        // The id now belongs to the `CmId`: skip our `Drop` but release
        // the other fields (the listener reference is no longer needed).
        let me = core::mem::ManuallyDrop::new(self);
        // SAFETY: each field is read once and `me` is never used again.
        drop(unsafe { core::ptr::read(&me.private_data) });
        // SAFETY: as above.
        drop(unsafe { core::ptr::read(&me._listener) });
        // INVARIANT: context `foreign` and handler `cm_handler::<H>` were set.
        super::census::enter(super::census::Kind::CmId);
        Ok(CmId { id, foreign, ctx })
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        // SAFETY: the request id is ours (invariant); we are not in its
        // handler (requests are dequeued by threads, not handlers).
        unsafe { reject_and_destroy(self.id) };
    }
}
