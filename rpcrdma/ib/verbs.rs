// SPDX-License-Identifier: GPL-2.0

//! Protection domains and completion queues.

use super::{census, from_err_ptr, Device, DeviceRef};
use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;
use kernel::sync::Arc;

/// A protection domain (`ib_alloc_pd()`).
///
/// Shared as `Arc<Pd>`: a [`super::endpoint::Endpoint`] and every
/// [`super::dma::DmaBuf`] whose lkey comes from it hold a reference, so
/// the PD is deallocated only after the last QP and buffer using it.
///
/// # Invariants
///
/// `pd` was returned by `ib_alloc_pd()` on `dev` and is deallocated only in
/// `drop`; `dev` keeps the device registered meanwhile.
pub struct Pd {
    pd: NonNull<bindings::ib_pd>,
    dev: DeviceRef,
}

// SAFETY: a kernel PD may be used and deallocated from any thread.
unsafe impl Send for Pd {}
// SAFETY: shared use only reads `local_dma_lkey` or passes the pointer to
// thread-safe verbs.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a PD on `dev`.
    pub fn new(dev: &Device) -> Result<Arc<Pd>> {
        let dev = dev.get()?;
        // SAFETY: the device is registered (we hold its registration lock).
        let ptr = unsafe { bindings::rpcrdma2_shim_alloc_pd(dev.as_ptr(), 0) };
        let pd = from_err_ptr(ptr).inspect_err(|e| {
            pr_err!("ib_alloc_pd on {} failed ({})\n", dev.name(), e.to_errno())
        })?;
        census::enter(census::Kind::Pd);
        // INVARIANT: freshly allocated on `dev`.
        Ok(Arc::new(Pd { pd, dev }, GFP_KERNEL)?)
    }

    /// The device the PD lives on.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The lkey for local DMA to any mapped kernel memory
    /// (`ib_pd::local_dma_lkey`), used in SGEs.
    pub fn local_dma_lkey(&self) -> u32 {
        // SAFETY: the PD is valid (type invariant); the field is set at
        // allocation and never changes.
        unsafe { (*self.pd.as_ptr()).local_dma_lkey }
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_pd {
        self.pd.as_ptr()
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: the PD is ours (type invariant); no QP or buffer uses it
        // any more, because they hold an `Arc<Pd>`.
        unsafe { bindings::rpcrdma2_shim_dealloc_pd(self.pd.as_ptr()) };
        census::leave(census::Kind::Pd);
    }
}

/// Where a completion queue's completions are processed.
///
/// Both choices run the handlers in process context (a work item), so
/// [`super::qp::QpHandler`] callbacks may take mutexes, allocate with
/// `GFP_KERNEL`, and call SUNRPC functions that sleep. `IB_POLL_SOFTIRQ`
/// is deliberately not offered: Rust cannot check that a callback never
/// sleeps, and the transport's reply path does not need softirq latency
/// (the C client uses `IB_POLL_WORKQUEUE` for both CQs for the same
/// reason). `IB_POLL_DIRECT` is not offered because `ib_drain_qp()`, which
/// teardown relies on, does not work with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollContext {
    /// `IB_POLL_WORKQUEUE`: the per-CPU, high-priority `ib_comp_wq`.
    /// Completions are handled on the CPU that took the interrupt.
    Workqueue,
    /// `IB_POLL_UNBOUND_WORKQUEUE`: `ib_comp_unbound_wq`.
    UnboundWorkqueue,
}

impl PollContext {
    fn raw(self) -> bindings::ib_poll_context {
        match self {
            PollContext::Workqueue => bindings::ib_poll_context_IB_POLL_WORKQUEUE,
            PollContext::UnboundWorkqueue => bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE,
        }
    }
}

/// A completion queue (`ib_alloc_cq_any()`), owned by one QP.
///
/// # Invariants
///
/// `cq` was returned by `ib_alloc_cq_any()` and is freed only in `drop`;
/// `_dev` keeps its device registered.
pub(crate) struct Cq {
    cq: NonNull<bindings::ib_cq>,
    _dev: DeviceRef,
}

// SAFETY: the CQ pointer is only passed to thread-safe verbs.
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `nr_cqe` entries on `dev`; completions call the
    /// `done` of each `ib_cqe` with `cq->cq_context == context`.
    pub(crate) fn new(
        dev: &Device,
        context: *mut core::ffi::c_void,
        nr_cqe: u32,
        poll: PollContext,
    ) -> Result<Cq> {
        let nr: i32 = nr_cqe.try_into().map_err(|_| EINVAL)?;
        let dev = dev.get()?;
        // SAFETY: the device is registered; `context` is only stored.
        let ptr =
            unsafe { bindings::rpcrdma2_shim_alloc_cq_any(dev.as_ptr(), context, nr, poll.raw()) };
        let cq = from_err_ptr(ptr).inspect_err(|e| {
            pr_err!(
                "ib_alloc_cq_any({} entries) on {} failed ({})\n",
                nr_cqe,
                dev.name(),
                e.to_errno()
            )
        })?;
        census::enter(census::Kind::Cq);
        // INVARIANT: freshly allocated.
        Ok(Cq { cq, _dev: dev })
    }

    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_cq {
        self.cq.as_ptr()
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: the CQ is ours; the owner destroys the QP using it
        // first. `ib_free_cq()` also waits for a running poll work item,
        // so no completion callback runs after it returns.
        unsafe { bindings::ib_free_cq(self.cq.as_ptr()) };
        census::leave(census::Kind::Cq);
    }
}
