// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over rdma_cm and ib_core for the transport.
//!
//! Together with `sunrpc`, this is the only place in the module with
//! `unsafe`. The pieces, bottom-up (see `Documentation/design-ib.rst`):
//!
//! - [`Device`] / [`DeviceRef`]: an `ib_device` and its registration lock.
//! - [`census`]: how many objects of each kind below are held (a leak
//!   shows at unload).
//! - [`client`]: the module's `ib_client`; device-removal callbacks.
//! - [`cm`]: rdma_cm ids ([`cm::CmId`]) whose events reach a Rust
//!   [`cm::CmHandler`], address/route resolution, socket addresses,
//!   connection parameters; `listen`, the passive side, only in the KUnit
//!   variant (`cfg(rpcrdma2_kunit)`), for the loopback suites.
//! - [`verbs`]: protection domain ([`verbs::Pd`]) and completion queues.
//! - [`dma`]: kmalloc'ed buffers DMA-mapped for one device ([`dma::DmaBuf`]).
//! - [`mr`]: FRWR memory regions ([`mr::Mr`], [`mr::pool::MrPool`]),
//!   their state machine, synchronous and asynchronous invalidation.
//! - [`wr`]: work requests as built before posting: SGE lists
//!   ([`wr::SgeList`]), the posted contexts ([`wr::SendCtx`],
//!   [`wr::RecvCtx`]), Send-queue WRs ([`wr::SendWr`]), Send chains and
//!   Receive batches.
//! - [`wc`]: work completions ([`wc::WorkCompletion`]) and how a posted
//!   context comes back ([`wc::Completion`]).
//! - [`qp`]: an RC queue pair's posting and completion paths
//!   ([`qp::Qp`]), completions delivered to a Rust [`qp::QpHandler`] with
//!   the posted context; `ring`, the rings that hold posted contexts.
//! - [`endpoint`]: the QP with its CQs and PD on a connected id
//!   ([`endpoint::Endpoint`]): connect, accept, drain, teardown.

use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;
use kernel::types::Opaque;

pub mod census;
pub mod client;
pub mod cm;
pub mod dma;
pub mod endpoint;
pub mod mr;
pub mod qp;
mod ring;
pub mod verbs;
pub mod wc;
pub mod wr;

// Test-only: compiled into the KUnit variant of the module (Kbuild's
// RPCRDMA2_KUNIT), never into the production rpcrdma2.ko.
#[cfg(rpcrdma2_kunit)]
pub mod listen;
#[cfg(rpcrdma2_kunit)]
mod mr_tests;
#[cfg(rpcrdma2_kunit)]
mod tests;

/// Turns a positive `E*` constant from the bindings into an [`Error`].
pub(crate) use crate::compat::errno::code as errno;

/// Decodes a pointer that may be an `ERR_PTR` (`kernel::error::from_err_ptr`)
/// or NULL (`ENOMEM`).
pub(crate) fn from_err_ptr<T>(ptr: *mut T) -> Result<NonNull<T>> {
    NonNull::new(kernel::error::from_err_ptr(ptr)?).ok_or(ENOMEM)
}

/// The address of the current task, to recognise re-entry from a callback.
pub(crate) fn current_task() -> usize {
    let task: &kernel::task::Task = current!();
    core::ptr::from_ref(task).addr()
}

/// An RDMA device (`struct ib_device`), borrowed.
///
/// Obtained from an rdma_cm id bound to a device, from a [`DeviceRef`] or
/// from the `ib_client` callbacks; the borrow never outlives what keeps
/// the device registered.
///
/// # Invariants
///
/// The wrapped `ib_device` is registered (or being unregistered while the
/// borrow's owner still holds it) for the lifetime of the reference.
#[repr(transparent)]
pub struct Device(Opaque<bindings::ib_device>);

// SAFETY: `ib_device` is a kernel object meant to be used from any thread;
// the methods only read immutable attributes or call thread-safe functions.
unsafe impl Sync for Device {}
// SAFETY: See above; a `&Device` may be sent to other threads.
unsafe impl Send for Device {}

impl Device {
    /// Borrows a raw device.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a registered `ib_device` that stays registered
    /// for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Device {
        // SAFETY: `Device` is a transparent wrapper and the caller
        // guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Device>() }
    }

    /// The raw pointer, for calls into ib_core.
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device name (`rxe0`, `mlx5_0`, ...).
    pub fn name(&self) -> &CStr {
        // SAFETY: the device is valid (type invariant); `dev_name()` of a
        // registered device is a NUL-terminated string that lives as long
        // as the device.
        unsafe { CStr::from_char_ptr(bindings::rpcrdma2_shim_device_name(self.as_ptr())) }
    }

    /// `ib_device_attr::max_qp_rd_atom`: RDMA Reads the device can answer
    /// per QP (bounds `responder_resources`).
    pub fn max_qp_rd_atom(&self) -> i32 {
        // SAFETY: the device is valid; `attrs` is set before registration
        // and not changed afterwards.
        crate::compat::ib::attr_i32(unsafe { (*self.as_ptr()).attrs.max_qp_rd_atom })
    }

    /// `ib_device_attr::max_qp_wr`: the largest work queue the device offers.
    pub fn max_qp_wr(&self) -> i32 {
        // SAFETY: as in `max_qp_rd_atom`.
        crate::compat::ib::attr_i32(unsafe { (*self.as_ptr()).attrs.max_qp_wr })
    }

    /// `ib_device_attr::max_send_sge`.
    pub fn max_send_sge(&self) -> i32 {
        // SAFETY: as in `max_qp_rd_atom`.
        crate::compat::ib::attr_i32(unsafe { (*self.as_ptr()).attrs.max_send_sge })
    }

    /// `ib_device_attr::max_recv_sge`.
    pub fn max_recv_sge(&self) -> i32 {
        // SAFETY: as in `max_qp_rd_atom`.
        crate::compat::ib::attr_i32(unsafe { (*self.as_ptr()).attrs.max_recv_sge })
    }

    /// `ib_device_attr::max_cqe`.
    pub fn max_cqe(&self) -> i32 {
        // SAFETY: as in `max_qp_rd_atom`.
        crate::compat::ib::attr_i32(unsafe { (*self.as_ptr()).attrs.max_cqe })
    }

    /// Whether the device does "virtual DMA" (software devices such as
    /// rxe and siw): DMA addresses are kernel virtual addresses and the
    /// sync calls do nothing.
    pub fn uses_virt_dma(&self) -> bool {
        // SAFETY: the device is valid.
        unsafe { bindings::rpcrdma2_shim_uses_virt_dma(self.as_ptr()) }
    }

    /// Whether the device is an iWARP RNIC (`RDMA_NODE_RNIC`: siw, cxgb4,
    /// irdma in iWARP mode), for the loopback suites' iWARP outcomes
    /// (KUnit variant only).
    #[cfg(rpcrdma2_kunit)]
    pub fn is_iwarp(&self) -> bool {
        // SAFETY: as in `max_qp_rd_atom`.
        u32::from(unsafe { (*self.as_ptr()).node_type }) == bindings::RDMA_NODE_RNIC
    }

    /// The first IPv4 address of the network device under `port`, in
    /// network byte order as four bytes (RoCE and iWARP devices only).
    /// For the loopback suites (KUnit variant only).
    ///
    /// Fails with `ENODEV` when the port has no netdev and `EADDRNOTAVAIL`
    /// when the netdev has no IPv4 address.
    #[cfg(rpcrdma2_kunit)]
    pub fn port_ipv4(&self, port: u32) -> Result<[u8; 4]> {
        let mut addr: bindings::__be32 = 0;
        // SAFETY: the device is valid and `addr` is writable.
        let ret = unsafe { bindings::rpcrdma2_shim_port_ipv4(self.as_ptr(), port, &mut addr) };
        kernel::error::to_result(ret)?;
        // `__be32` holds the bytes in network order in memory.
        Ok(addr.to_ne_bytes())
    }

    /// Takes the device's registration lock (`ib_device_try_get()`).
    ///
    /// Fails with `ENODEV` when the device is being unregistered.
    pub fn get(&self) -> Result<DeviceRef> {
        // SAFETY: the device is valid.
        if !unsafe { bindings::rpcrdma2_shim_device_try_get(self.as_ptr()) } {
            pr_err!("RDMA device {} is going away (-ENODEV)\n", self.name());
            return Err(ENODEV);
        }
        // INVARIANT: we took a registration reference.
        Ok(DeviceRef(NonNull::from(self)))
    }
}

/// A counted registration reference on an RDMA device.
///
/// While it exists, `ib_unregister_device()` cannot finish: device
/// removal first runs the `ib_client` remove callbacks (see [`client`]),
/// then waits for these references. Every object that owns device
/// resources (PD, CQ, DMA mappings) holds one, so it can always release
/// them on a live device.
///
/// # Invariants
///
/// The reference holds one `ib_device_try_get()` count, dropped with
/// `ib_device_put()`.
pub struct DeviceRef(NonNull<Device>);

// SAFETY: the registration reference may be dropped from any thread.
unsafe impl Send for DeviceRef {}
// SAFETY: only `&Device` is reachable through a shared reference.
unsafe impl Sync for DeviceRef {}

impl core::ops::Deref for DeviceRef {
    type Target = Device;

    fn deref(&self) -> &Device {
        // SAFETY: the device stays registered while we hold the count.
        unsafe { self.0.as_ref() }
    }
}

impl Clone for DeviceRef {
    fn clone(&self) -> Self {
        // SAFETY: the device is valid; its count is at least our own one,
        // so `refcount_inc_not_zero()` cannot fail.
        let ok = unsafe { bindings::rpcrdma2_shim_device_try_get(self.as_ptr()) };
        debug_assert!(ok);
        // INVARIANT: we took a registration reference.
        DeviceRef(self.0)
    }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        // SAFETY: we own one registration count (type invariant).
        unsafe { bindings::ib_device_put(self.as_ptr()) };
    }
}

pub use crate::net::Net;
