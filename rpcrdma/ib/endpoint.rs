// SPDX-License-Identifier: GPL-2.0

//! A connection endpoint ([`Endpoint`]): an rdma_cm id with its PD, CQs
//! and RC queue pair, connect and accept, drain and teardown.
//!
//! # Teardown
//!
//! [`Endpoint`]'s drop disconnects, drains the QP (`ib_drain_qp()`, which
//! flushes every posted WR through the handlers), destroys the QP, frees
//! the CQs, then the PD reference and the id, in that order.

use super::cm::{CmHandler, CmId, ConnParam};
use super::qp::{Qp, QpCaps, QpHandler};
use super::verbs::{Cq, Pd, PollContext};
use super::{errno, Device};
use crate::bindings;
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A connection endpoint: an rdma_cm id with a PD, a Send CQ, a Receive
/// CQ and an RC QP on the id's device.
///
/// Build it on an id bound to a device (active side: after
/// [`super::cm::CmEvent::RouteResolved`]; passive side: from
/// [`super::cm::Incoming::into_cm_id`]), then [`Endpoint::connect`] or
/// [`Endpoint::accept`].
///
/// # Invariants
///
/// `qp`'s CQs are `_send_cq` and `_recv_cq` (or `_send_cq` for both
/// queues when `_recv_cq` is `None`), whose context is `qp`; its QP was
/// created on `id` with `pd`. `drop` destroys them in dependency order.
pub struct Endpoint<H: CmHandler, Q: QpHandler> {
    // Only dropped (freed after the QP, before the rings they call into).
    _send_cq: Cq,
    /// `None`: the Receive Queue shares `_send_cq`.
    _recv_cq: Option<Cq>,
    qp: Pin<KBox<Qp<Q>>>,
    pd: Arc<Pd>,
    id: CmId<H>,
    drained: AtomicBool,
}

impl<H: CmHandler, Q: QpHandler> Endpoint<H, Q> {
    /// Allocates the PD, the CQ polled in `poll`, and an RC QP with `caps`
    /// on `id`'s device. Both queues complete to one CQ (room for both,
    /// plus one drain WR each) when the device allows a CQ that large:
    /// one work item then handles a Send's completion and the Receive of
    /// its reply together, in order, instead of two. Otherwise each queue
    /// has its own CQ.
    ///
    /// Fails with `ENOTCONN` if `id` is not bound to a device, `EINVAL` if
    /// `caps` exceed the device's limits; the id is destroyed on failure.
    pub fn new(id: CmId<H>, caps: &QpCaps, poll: PollContext, handler: Q) -> Result<Self> {
        let Some(dev) = id.device() else {
            pr_err!("endpoint: the rdma_cm id is not bound to a device yet (-ENOTCONN)\n");
            return Err(errno(bindings::ENOTCONN));
        };
        check_caps(dev, caps)?;
        let pd = Pd::new(dev)?;
        let qp = Qp::new(handler, pd.clone(), caps).inspect_err(|e| {
            pr_err!(
                "endpoint: cannot allocate the work-queue rings ({})\n",
                e.to_errno()
            )
        })?;
        let ctx: *mut c_void = core::ptr::from_ref::<Qp<Q>>(&qp).cast_mut().cast();
        let both = u64::from(caps.max_send_wr) + u64::from(caps.max_recv_wr) + 2;
        let shared = both <= u64::try_from(dev.max_cqe()).unwrap_or(0);
        let (send_cq, recv_cq) = if shared {
            (Cq::new(dev, ctx, both as u32, poll)?, None)
        } else {
            (
                Cq::new(dev, ctx, caps.max_send_wr + 1, poll)?,
                Some(Cq::new(dev, ctx, caps.max_recv_wr + 1, poll)?),
            )
        };
        let mut attr = bindings::ib_qp_init_attr {
            send_cq: send_cq.as_ptr(),
            recv_cq: recv_cq.as_ref().unwrap_or(&send_cq).as_ptr(),
            cap: bindings::ib_qp_cap {
                max_send_wr: caps.max_send_wr + 1,
                max_recv_wr: caps.max_recv_wr + 1,
                max_send_sge: caps.max_send_sge,
                max_recv_sge: caps.max_recv_sge,
                ..Default::default()
            },
            sq_sig_type: bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            qp_type: bindings::ib_qp_type_IB_QPT_RC,
            ..Default::default()
        };
        // SAFETY: the id is live and bound to the device of `pd` and the
        // CQs; `attr` is valid for the call.
        let ret = unsafe { bindings::rdma_create_qp(id.as_ptr(), pd.as_ptr(), &mut attr) };
        if ret != 0 {
            pr_err!(
                "rdma_create_qp on {} (send {}x{}, recv {}x{}) failed ({})\n",
                dev.name(),
                caps.max_send_wr + 1,
                caps.max_send_sge,
                caps.max_recv_wr + 1,
                caps.max_recv_sge,
                ret
            );
            return Err(Error::from_errno(ret));
        }
        // SAFETY: `rdma_create_qp()` succeeded, so `id->qp` is the new QP;
        // nothing else writes it until `rdma_destroy_qp()`.
        let raw_qp = unsafe { (*id.as_ptr()).qp };
        qp.qp.store(raw_qp, Ordering::Relaxed);
        super::census::enter(super::census::Kind::Qp);
        // INVARIANT: the QP uses these CQs and PD and lives on `id`.
        Ok(Endpoint {
            _send_cq: send_cq,
            _recv_cq: recv_cq,
            qp,
            pd,
            id,
            drained: AtomicBool::new(false),
        })
    }

    /// The QP, to post on.
    pub fn qp(&self) -> &Qp<Q> {
        &self.qp
    }

    /// The PD, to map buffers with.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The rdma_cm id.
    pub fn cm_id(&self) -> &CmId<H> {
        &self.id
    }

    /// The device.
    pub fn device(&self) -> &Device {
        self.pd.device()
    }

    /// Connects (active side): the outcome arrives as
    /// [`super::cm::CmEvent::Established`] or an error event.
    pub fn connect(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = param.as_raw()?;
        let id = self.id.as_ptr();
        // SAFETY: the id is live with a QP; `raw` and its private data are
        // valid for the call. The `_locked` form is for calls from the id's
        // own handler, which already holds the handler mutex.
        let ret = unsafe {
            if self.id.in_own_handler() {
                bindings::rdma_connect_locked(id, &mut raw)
            } else {
                bindings::rdma_connect(id, &mut raw)
            }
        };
        if ret != 0 {
            pr_err!("rdma_connect failed ({})\n", ret);
        }
        kernel::error::to_result(ret)
    }

    /// Accepts a connection request (passive side); then
    /// [`super::cm::CmEvent::Established`] follows.
    pub fn accept(&self, param: &ConnParam<'_>) -> Result {
        let mut raw = param.as_raw()?;
        let id = self.id.as_ptr();
        let own = self.id.in_own_handler();
        // SAFETY: the id is live with a QP; `rdma_accept()` needs the
        // handler mutex, which we take unless we run in the handler.
        let ret = unsafe {
            if !own {
                bindings::rdma_lock_handler(id);
            }
            let ret = bindings::rdma_accept(id, &mut raw);
            if !own {
                bindings::rdma_unlock_handler(id);
            }
            ret
        };
        if ret != 0 {
            pr_err!("rdma_accept failed ({})\n", ret);
        }
        kernel::error::to_result(ret)
    }

    /// Disconnects (see [`CmId::disconnect`]).
    pub fn disconnect(&self) -> Result {
        self.id.disconnect()
    }

    /// Stops posting, moves the QP to the error state and waits until
    /// every posted WR came back through the handler. Idempotent. Must not
    /// be called from a [`QpHandler`] callback.
    pub fn drain(&self) {
        if self.drained.swap(true, Ordering::AcqRel) {
            return;
        }
        self.qp.close();
        let qp = self.qp.qp.load(Ordering::Relaxed);
        if !qp.is_null() {
            // SAFETY: the QP is live (it is destroyed only in `drop`, after
            // this), and its CQs are not `IB_POLL_DIRECT`.
            unsafe { bindings::ib_drain_qp(qp) };
        }
        // Everything signalled has completed; what is left are unsignalled
        // Sends that finished before the drain marker.
        self.qp.sweep(!qp.is_null());
    }
}

impl<H: CmHandler, Q: QpHandler> Drop for Endpoint<H, Q> {
    fn drop(&mut self) {
        // Not connected is fine here.
        let _ = self.id.disconnect();
        self.drain();
        if !self.qp.detach().is_null() {
            // SAFETY: the id is live and owns the QP, which is drained and
            // no longer reachable for posting.
            unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
            super::census::leave(super::census::Kind::Qp);
        }
        // The fields now drop in order: the CQs (waiting for their poll
        // work), the rings, the PD reference, the id.
    }
}

fn check_caps(dev: &Device, caps: &QpCaps) -> Result {
    let wr = dev.max_qp_wr().max(0) as u64;
    let cqe = dev.max_cqe().max(0) as u64;
    let ok = caps.max_send_wr > 0
        && caps.max_recv_wr > 0
        && caps.max_recv_sge > 0
        && u64::from(caps.max_send_wr) < wr.min(cqe)
        && u64::from(caps.max_recv_wr) < wr.min(cqe)
        && i64::from(caps.max_send_sge) <= i64::from(dev.max_send_sge())
        && i64::from(caps.max_recv_sge) <= i64::from(dev.max_recv_sge());
    if !ok {
        pr_err!(
            "QP caps {:?} do not fit {} (max_qp_wr {}, max_cqe {}, max_send_sge {}, max_recv_sge {}) (-EINVAL)\n",
            caps,
            dev.name(),
            dev.max_qp_wr(),
            dev.max_cqe(),
            dev.max_send_sge(),
            dev.max_recv_sge()
        );
        return Err(EINVAL);
    }
    Ok(())
}
