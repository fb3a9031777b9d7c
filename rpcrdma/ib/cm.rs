// SPDX-License-Identifier: GPL-2.0

//! rdma_cm: connection identifiers, their events, addresses, listening.
//!
//! An [`CmId`] owns one `struct rdma_cm_id` (port space `RDMA_PS_TCP`, QP
//! type `IB_QPT_RC`). rdma_cm reports asynchronous events (address and
//! route resolution, connection establishment, disconnection, ...) by
//! calling the id's event handler with the id's handler mutex held; here
//! that handler is a generic trampoline that turns the event into a
//! [`CmEvent`] and calls [`CmHandler::event`] on the owner's `Arc`.
//!
//! Rules the wrapper enforces:
//!
//! - The C handler always returns 0: rdma_cm destroys an id whose handler
//!   returns non-zero, behind its owner's back. The one exception is when
//!   the owner drops its [`CmId`] from inside that id's own handler
//!   (`rdma_destroy_id()` there would deadlock on the handler mutex): the
//!   drop is then deferred to the trampoline, which returns 1 so that
//!   rdma_cm destroys the id once the handler has returned. No deadlock,
//!   no leak.
//! - The handler context (`id->context`) is a reference on an `Arc`, given
//!   back only after `rdma_destroy_id()` returned; `rdma_destroy_id()` waits
//!   for a running handler, so the handler can never outlive its context.
//! - Calls that take the handler mutex (`rdma_connect()`, `rdma_accept()`)
//!   use their `_locked` form when made from the id's own handler.
//!
//! The passive side (`super::listen`: a listener and its connection
//! requests) exists for the KUnit loopback suites only and is compiled
//! only into the module's KUnit variant (`cfg(rpcrdma2_kunit)`).

use super::{census, current_task, from_err_ptr, Device, Net};
use crate::bindings;
use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel::ffi::c_ulong;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

/// `IB_CM_REJ_STALE_CONN` (include/rdma/ib_cm.h): the passive side
/// still has a connection with this QP number. The C client treats this
/// rejection as `-ENOTCONN` (retry) rather than `-ECONNREFUSED`.
pub const REJ_STALE_CONN: i32 = 10;
/// `IB_CM_REJ_CONSUMER_DEFINED`: the peer application rejected.
pub const REJ_CONSUMER_DEFINED: i32 = 28;

pub use crate::net::SockAddr;

/// Connection parameters for [`super::endpoint::Endpoint::connect`] and
/// [`super::endpoint::Endpoint::accept`] (`struct rdma_conn_param`).
#[derive(Clone, Copy, Debug)]
pub struct ConnParam<'a> {
    /// Private data carried by the CM request (connect) or reply (accept);
    /// copied by rdma_cm during the call. At most 56 bytes on a connect
    /// and 196 on an accept over IB/RoCE (the CM message sizes minus the
    /// rdma_cm header); the receiver may see it zero-padded to that size.
    pub private_data: &'a [u8],
    /// RDMA Read/Atomic operations the peer may have outstanding against us.
    pub responder_resources: u8,
    /// RDMA Read/Atomic operations we may have outstanding against the peer.
    pub initiator_depth: u8,
    /// Whether hardware end-to-end flow control is used (IB only).
    pub flow_control: u8,
    /// Transport retries on timeout, 0-7 (ignored when accepting).
    pub retry_count: u8,
    /// Retries after a Receiver-Not-Ready NAK, 0-7 (7 = forever).
    pub rnr_retry_count: u8,
}

impl<'a> ConnParam<'a> {
    /// The RPC-over-RDMA client's choices (the C client, verbs.c:465-481):
    /// the client offers RDMA Read responder resources up to the device
    /// limit but never initiates Reads; 6 transport retries so that the
    /// RPC layer notices a dead server quickly; no flow control and no RNR
    /// retries, because RPC-over-RDMA credits must prevent RNR and an RNR
    /// NAK should be visible, not hidden.
    pub fn rpcrdma_client(dev: &Device, private_data: &'a [u8]) -> ConnParam<'a> {
        ConnParam {
            private_data,
            responder_resources: u8::try_from(dev.max_qp_rd_atom().max(0)).unwrap_or(u8::MAX),
            initiator_depth: 0,
            flow_control: 0,
            retry_count: 6,
            rnr_retry_count: 0,
        }
    }

    pub(crate) fn as_raw(&self) -> Result<bindings::rdma_conn_param> {
        let Ok(len) = u8::try_from(self.private_data.len()) else {
            pr_err!(
                "CM private data of {} bytes is longer than 255 (-EINVAL)\n",
                self.private_data.len()
            );
            return Err(EINVAL);
        };
        Ok(bindings::rdma_conn_param {
            private_data: if len == 0 {
                core::ptr::null()
            } else {
                self.private_data.as_ptr().cast()
            },
            private_data_len: len,
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: self.flow_control,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            ..Default::default()
        })
    }
}

/// An rdma_cm event, as delivered to [`CmHandler::event`].
///
/// Statuses are negative errnos except for [`CmEvent::Rejected`], whose
/// `reason` is the CM reject reason (`IB_CM_REJ_*` on IB/RoCE, see
/// [`REJ_STALE_CONN`]).
#[derive(Debug)]
pub enum CmEvent<'a> {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`: the id is bound to a device.
    AddrResolved,
    /// `RDMA_CM_EVENT_ADDR_ERROR` (status: e.g. `-ETIMEDOUT`, `-ENODEV`).
    AddrError {
        /// Negative errno.
        status: i32,
    },
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
    RouteResolved,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`.
    RouteError {
        /// Negative errno.
        status: i32,
    },
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE` (only without a QP on the id).
    ConnectResponse,
    /// `RDMA_CM_EVENT_CONNECT_ERROR`.
    ConnectError {
        /// Negative errno.
        status: i32,
    },
    /// `RDMA_CM_EVENT_UNREACHABLE`: no answer from the peer.
    Unreachable {
        /// Negative errno.
        status: i32,
    },
    /// `RDMA_CM_EVENT_REJECTED`.
    Rejected {
        /// The CM reject reason.
        reason: i32,
        /// The peer's private data when it rejected as a consumer
        /// (`rdma_consumer_reject_data()`), else empty.
        private_data: &'a [u8],
    },
    /// `RDMA_CM_EVENT_ESTABLISHED`: the connection is up.
    Established {
        /// Private data from the peer's accept (active side; may be
        /// zero-padded to the CM message size), empty on the passive side.
        private_data: &'a [u8],
    },
    /// `RDMA_CM_EVENT_DISCONNECTED`: the peer disconnected (answer with
    /// [`CmId::disconnect`], which sends the DREP the peer waits for), or
    /// our own disconnect completed. The QP is in the error state.
    Disconnected,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`: destroy the id soon, from another
    /// context (device removal waits for it).
    DeviceRemoval,
    /// `RDMA_CM_EVENT_ADDR_CHANGE`: the local address moved to another
    /// device; the connection must be re-established.
    AddrChange,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`: the QP may be reused.
    TimewaitExit,
    /// Any other event (multicast, connect request on a non-listener).
    Other {
        /// The raw `enum rdma_cm_event_type`.
        event: u32,
        /// The raw status.
        status: i32,
    },
}

impl<'a> CmEvent<'a> {
    /// Decodes a raw event.
    ///
    /// # Safety
    ///
    /// `id` and `ev` must be the arguments of a running event handler call;
    /// the private data slices borrow `ev` for `'a`, which must not outlast
    /// that call.
    unsafe fn from_raw(id: *mut bindings::rdma_cm_id, ev: &'a bindings::rdma_cm_event) -> Self {
        let status = ev.status;
        match ev.event {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => CmEvent::AddrResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => CmEvent::AddrError { status },
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => CmEvent::RouteResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => {
                CmEvent::RouteError { status }
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_RESPONSE => CmEvent::ConnectResponse,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => {
                CmEvent::ConnectError { status }
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => {
                CmEvent::Unreachable { status }
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => {
                let mut len: u8 = 0;
                // SAFETY: `id` and `ev` are the handler's arguments (caller
                // guarantee); the function only reads them.
                let data = unsafe {
                    bindings::rdma_consumer_reject_data(
                        id,
                        core::ptr::from_ref(ev).cast_mut(),
                        &mut len,
                    )
                };
                CmEvent::Rejected {
                    reason: status,
                    // SAFETY: rdma_cm returns `len` bytes of the event's
                    // private data, valid during the handler call.
                    private_data: unsafe { raw_slice(data.cast(), len) },
                }
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => {
                // SAFETY: for connection events the `conn` member of the
                // union is the active one.
                let conn = unsafe { &ev.param.conn };
                CmEvent::Established {
                    // SAFETY: rdma_cm passes `private_data_len` bytes at
                    // `private_data` (or NULL), valid during the call.
                    private_data: unsafe {
                        raw_slice(conn.private_data.cast(), conn.private_data_len)
                    },
                }
            }
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => CmEvent::Disconnected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => CmEvent::DeviceRemoval,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_CHANGE => CmEvent::AddrChange,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => CmEvent::TimewaitExit,
            event => CmEvent::Other { event, status },
        }
    }
}

/// A byte slice from a C pointer and length; empty for NULL.
///
/// # Safety
///
/// Unless NULL, `ptr` must be valid for reads of `len` bytes for `'a`.
pub(super) unsafe fn raw_slice<'a>(ptr: *const u8, len: u8) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller guarantees `len` readable bytes for `'a`.
        unsafe { core::slice::from_raw_parts(ptr, len as usize) }
    }
}

/// The owner of a [`CmId`] implements this to receive its events.
///
/// Called in process context (an rdma_cm work item, or the thread of a
/// call such as `rdma_resolve_addr()`), with the id's handler mutex held,
/// one event at a time per id. The handler may sleep. It must not wait
/// for another event of the same id (deadlock); it may drop the
/// [`CmId`] (destruction is then deferred until it returns).
pub trait CmHandler: Send + Sync + 'static {
    /// One event of the id.
    fn event(&self, event: &CmEvent<'_>);
}

/// What `id->context` points to: the owner's handler plus the state that
/// lets a drop from inside the handler be deferred.
pub(super) struct IdCtx<H> {
    handler: Arc<H>,
    /// The task running this id's handler right now, 0 when none.
    in_handler: AtomicUsize,
    /// Set when the `CmId` was dropped from its own handler.
    destroy_on_return: AtomicBool,
}

impl<H> IdCtx<H> {
    pub(super) fn new(handler: Arc<H>) -> Result<Arc<Self>> {
        Ok(Arc::new(
            IdCtx {
                handler,
                in_handler: AtomicUsize::new(0),
                destroy_on_return: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?)
    }

    fn in_own_handler(&self) -> bool {
        self.in_handler.load(Ordering::Relaxed) == current_task()
    }
}

/// The C event handler of every [`CmId`] with handler type `H`.
///
/// # Safety
///
/// Called by rdma_cm with a live id whose `context` came from
/// `Arc<IdCtx<H>>::into_foreign()` and is not yet released, and a valid
/// event, with the id's handler mutex held.
pub(super) unsafe extern "C" fn cm_handler<H: CmHandler>(
    id: *mut bindings::rdma_cm_id,
    ev: *mut bindings::rdma_cm_event,
) -> core::ffi::c_int {
    // SAFETY: `id` is live (function precondition).
    let foreign = unsafe { (*id).context };
    // SAFETY: the context is an un-released `Arc<IdCtx<H>>` foreign
    // reference; it is released only after `rdma_destroy_id()`, which waits
    // for this call, or below.
    let ctx = unsafe { <Arc<IdCtx<H>> as ForeignOwnable>::borrow(foreign) };
    ctx.in_handler.store(current_task(), Ordering::Relaxed);
    // SAFETY: `id` and `ev` are this call's arguments; the event does not
    // outlive the call.
    let event = unsafe { CmEvent::from_raw(id, &*ev) };
    ctx.handler.event(&event);
    ctx.in_handler.store(0, Ordering::Relaxed);
    if ctx.destroy_on_return.load(Ordering::Acquire) {
        // The owner dropped its `CmId` inside `event()`. Returning 1 makes
        // rdma_cm destroy the id after this call, and no handler call
        // follows, so the context reference is released here (`ctx` is not
        // used any more).
        // SAFETY: the foreign reference is un-released (see above) and no
        // borrow of it remains.
        drop(unsafe { <Arc<IdCtx<H>> as ForeignOwnable>::from_foreign(foreign) });
        return 1;
    }
    0
}

/// An rdma_cm identifier (`RDMA_PS_TCP`, `IB_QPT_RC`) whose events go to
/// an `Arc<H>`.
///
/// # Invariants
///
/// `id` is a live rdma_cm id owned by this object; its `context` is
/// `foreign`, an `Arc<IdCtx<H>>` foreign reference to the same allocation
/// as `ctx`, and its event handler is `cm_handler::<H>`. Dropping destroys
/// the id, then releases `foreign`.
pub struct CmId<H: CmHandler> {
    pub(super) id: NonNull<bindings::rdma_cm_id>,
    pub(super) foreign: *mut c_void,
    pub(super) ctx: Arc<IdCtx<H>>,
}

// SAFETY: rdma_cm ids may be used and destroyed from any thread; `H` is
// `Send + Sync`.
unsafe impl<H: CmHandler> Send for CmId<H> {}
// SAFETY: the `&self` methods are rdma_cm calls that serialise internally.
unsafe impl<H: CmHandler> Sync for CmId<H> {}

impl<H: CmHandler> CmId<H> {
    /// Creates an id in `net` whose events go to `handler`.
    pub fn new(net: &Net, handler: Arc<H>) -> Result<Self> {
        let ctx = IdCtx::new(handler)?;
        let foreign = crate::compat::foreign::into_foreign(ctx.clone());
        // SAFETY: `net` is live; the handler matches the context type.
        let ptr = unsafe {
            bindings::rpcrdma2_shim_create_id(
                net.as_ptr(),
                Some(cm_handler::<H>),
                foreign,
                bindings::rdma_ucm_port_space_RDMA_PS_TCP,
                bindings::ib_qp_type_IB_QPT_RC,
            )
        };
        match from_err_ptr(ptr) {
            // INVARIANT: the id is new, its context is `foreign`.
            Ok(id) => {
                census::enter(census::Kind::CmId);
                Ok(CmId { id, foreign, ctx })
            }
            Err(e) => {
                pr_err!("rdma_create_id failed ({})\n", e.to_errno());
                // SAFETY: the id was not created, so nothing else holds
                // the foreign reference.
                drop(unsafe { <Arc<IdCtx<H>> as ForeignOwnable>::from_foreign(foreign) });
                Err(e)
            }
        }
    }

    /// The owner's handler.
    pub fn handler(&self) -> &Arc<H> {
        &self.ctx.handler
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::rdma_cm_id {
        self.id.as_ptr()
    }

    /// Whether the caller is this id's event handler.
    pub(crate) fn in_own_handler(&self) -> bool {
        self.ctx.in_own_handler()
    }

    /// Starts resolving `dst` (and binding to the device that reaches it,
    /// from `src` if given) within `timeout_ms`; the outcome is
    /// [`CmEvent::AddrResolved`] or [`CmEvent::AddrError`].
    pub fn resolve_addr(&self, src: Option<&SockAddr>, dst: &SockAddr, timeout_ms: u32) -> Result {
        let src = src.map_or(core::ptr::null_mut(), |s| s.as_ptr().cast_mut());
        // SAFETY: the id is live (type invariant); the addresses are valid
        // sockaddrs that rdma_cm copies during the call.
        let ret = unsafe {
            bindings::rdma_resolve_addr(self.as_ptr(), src, dst.as_ptr(), timeout_ms as c_ulong)
        };
        if ret != 0 {
            pr_err!("rdma_resolve_addr({}) failed ({})\n", dst, ret);
        }
        kernel::error::to_result(ret)
    }

    /// Starts resolving the route to the resolved address within
    /// `timeout_ms`; the outcome is [`CmEvent::RouteResolved`] or
    /// [`CmEvent::RouteError`].
    pub fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: the id is live (type invariant).
        let ret = unsafe { bindings::rdma_resolve_route(self.as_ptr(), timeout_ms as c_ulong) };
        if ret != 0 {
            pr_err!("rdma_resolve_route failed ({})\n", ret);
        }
        kernel::error::to_result(ret)
    }

    /// The device the id is bound to: after [`CmEvent::AddrResolved`] on
    /// the active side, always for an accepted id.
    pub fn device(&self) -> Option<&Device> {
        // A volatile read because rdma_cm may write `device` from another
        // thread during resolution.
        // SAFETY: the id is live; `device` is set once by rdma_cm when the
        // id binds and stays until the id is destroyed, which cannot happen
        // while `&self` is borrowed.
        let dev = unsafe { core::ptr::addr_of!((*self.as_ptr()).device).read_volatile() };
        if dev.is_null() {
            None
        } else {
            // SAFETY: rdma_cm keeps the device registered while an id is
            // bound to it (device removal waits for the id's destruction).
            Some(unsafe { Device::from_raw(dev) })
        }
    }

    /// The port of the device the id is bound to.
    pub fn port_num(&self) -> u32 {
        // SAFETY: the id is live; `port_num` is set with `device`.
        unsafe { core::ptr::addr_of!((*self.as_ptr()).port_num).read_volatile() }
    }

    /// The local address (after binding or resolution).
    pub fn local_addr(&self) -> Result<SockAddr> {
        // SAFETY: the id is live; the route's source address is written by
        // rdma_cm under its own locks before the event we synchronised with.
        let ss = unsafe { core::ptr::addr_of!((*self.as_ptr()).route.addr.src_addr).read() };
        SockAddr::from_storage(&ss)
    }

    /// Sends a DREQ (or moves the QP to error): the peer and this id get
    /// [`CmEvent::Disconnected`]. Harmless when not connected.
    pub fn disconnect(&self) -> Result {
        // SAFETY: the id is live; `rdma_disconnect()` may be called from
        // any context, including the id's handler.
        kernel::error::to_result(unsafe { bindings::rdma_disconnect(self.as_ptr()) })
    }
}

impl<H: CmHandler> Drop for CmId<H> {
    fn drop(&mut self) {
        // Destroyed here or, just below, by rdma_cm when the handler
        // returns.
        census::leave(census::Kind::CmId);
        if self.ctx.in_own_handler() {
            // `rdma_destroy_id()` would deadlock on the handler mutex: let
            // the trampoline return 1 instead (see the module docs).
            self.ctx.destroy_on_return.store(true, Ordering::Release);
            return;
        }
        // SAFETY: the id is ours and live (type invariant); after this no
        // handler call runs or will run.
        unsafe { bindings::rdma_destroy_id(self.id.as_ptr()) };
        // SAFETY: the id is gone, so nothing else uses the context.
        drop(unsafe { <Arc<IdCtx<H>> as ForeignOwnable>::from_foreign(self.foreign) });
    }
}
