// SPDX-License-Identifier: GPL-2.0

//! The module's `ib_client`: which RDMA devices exist, and device-removal
//! callbacks for endpoints.
//!
//! The C client's `rpcrdma_rn_register()` lives in rpcrdma.ko and is not
//! exported, so rpcrdma2 registers its own `ib_client` ("rpcrdma2", in
//! `ib_shim.c`) at module load ([`ClientRegistration`]). ib_core calls its
//! `add` for every device present and later registered, and its `remove`
//! when a device is unregistered, before rdma_cm's (clients are removed in
//! reverse registration order, and rdma_cm registered before us). On
//! `remove`, every [`RemovalRegistration`] on that device gets
//! [`DeviceRemoval::device_removed`], then `remove` waits until all of them
//! have been dropped: the owner must free its QP, CQs, PD and DMA mappings
//! on that device (from another context, e.g. by forcing a disconnect)
//! and then drop the registration, as the C client's
//! `rpcrdma_remove_one()` does.

use super::{Device, DeviceRef};
use crate::bindings;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};

/// Implemented by whoever must let go of a device when it is removed.
pub trait DeviceRemoval: Send + Sync {
    /// The device is being unregistered. Called in process context from
    /// the device's unregistration; it blocks until the registration is
    /// dropped, so start the teardown here (e.g. schedule work) and drop
    /// the [`RemovalRegistration`] once the device's resources are freed.
    /// Dropping it from inside this call is allowed.
    fn device_removed(&self);
}

struct Entry {
    dev: *mut bindings::ib_device,
    key: u64,
    notify: Arc<dyn DeviceRemoval>,
}

struct State {
    /// Devices ib_core added and has not removed.
    devices: KVec<Option<*mut bindings::ib_device>>,
    /// Devices whose removal is running: no new registrations.
    removing: KVec<Option<*mut bindings::ib_device>>,
    entries: KVec<Option<Entry>>,
    next_key: u64,
}

// SAFETY: the raw device pointers are only compared, or dereferenced while
// ib_core guarantees the device is registered (see `devices()`).
unsafe impl Send for State {}

#[pin_data]
struct Registry {
    #[pin]
    state: Mutex<State>,
    /// Signalled whenever an entry goes away.
    #[pin]
    cv: CondVar,
}

/// The registry while the client is registered (set before
/// `ib_register_client()`, cleared after `ib_unregister_client()`).
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(core::ptr::null_mut());

/// Puts `v` in the first free slot of `table`, or appends it.
fn insert<T>(table: &mut KVec<Option<T>>, v: T) -> Result {
    match table.iter_mut().find(|s| s.is_none()) {
        Some(slot) => *slot = Some(v),
        None => table.push(Some(v), GFP_KERNEL)?,
    }
    Ok(())
}

/// Runs `f` on the registry, or fails with `ENODEV` when the client is not
/// registered.
fn with_registry<R>(f: impl FnOnce(&Registry) -> Result<R>) -> Result<R> {
    let reg = REGISTRY.load(Ordering::Acquire);
    if reg.is_null() {
        pr_err!("the rpcrdma2 ib_client is not registered (-ENODEV)\n");
        return Err(ENODEV);
    }
    // SAFETY: the registry is freed only after `ib_unregister_client()`
    // and after the module's users are gone; callers are such users.
    f(unsafe { &*reg })
}

/// The registration of the module's `ib_client`; keep it for the life of
/// the module.
///
/// # Invariants
///
/// While it exists the client is registered with ib_core and `REGISTRY`
/// points to `reg`.
pub struct ClientRegistration {
    reg: Pin<KBox<Registry>>,
}

impl ClientRegistration {
    /// Registers the `ib_client`; ib_core calls `add` for every present
    /// device before this returns.
    pub fn new() -> Result<Self> {
        let reg = KBox::pin_init(
            pin_init!(Registry {
                state <- kernel::new_mutex!(
                    State {
                        devices: KVec::new(),
                        removing: KVec::new(),
                        entries: KVec::new(),
                        next_key: 0,
                    },
                    "rpcrdma2_ib_client"
                ),
                cv <- kernel::new_condvar!("rpcrdma2_ib_client"),
            }),
            GFP_KERNEL,
        )?;
        let p = core::ptr::from_ref::<Registry>(&reg).cast_mut();
        if REGISTRY
            .compare_exchange(
                core::ptr::null_mut(),
                p,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            pr_err!("the rpcrdma2 ib_client is already registered (-EBUSY)\n");
            return Err(EBUSY);
        }
        // SAFETY: FFI call; the client is a static in `ib_shim.c` whose
        // callbacks find the registry through `REGISTRY`.
        let ret = unsafe { bindings::rpcrdma2_shim_register_ib_client() };
        if ret != 0 {
            pr_err!("ib_register_client failed ({})\n", ret);
            REGISTRY.store(core::ptr::null_mut(), Ordering::Release);
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered, `REGISTRY` set.
        Ok(ClientRegistration { reg })
    }
}

impl Drop for ClientRegistration {
    fn drop(&mut self) {
        // SAFETY: the client is registered (type invariant). ib_core calls
        // `remove` for every device first.
        unsafe { bindings::rpcrdma2_shim_unregister_ib_client() };
        REGISTRY.store(core::ptr::null_mut(), Ordering::Release);
        let st = self.reg.state.lock();
        if st.entries.iter().any(|e| e.is_some()) {
            pr_err!("ib_client unregistered with device-removal registrations left\n");
        }
    }
}

/// `ib_client::add`.
///
/// # Safety
///
/// Called by ib_core with a device being registered.
#[no_mangle]
pub unsafe extern "C" fn rpcrdma2_rs_ib_add_one(dev: *mut bindings::ib_device) -> core::ffi::c_int {
    let res = with_registry(|reg| {
        let mut st = reg.state.lock();
        insert(&mut st.devices, dev)
    });
    match res {
        Ok(()) => 0,
        Err(e) => {
            pr_err!("ib_client add: cannot record a device ({})\n", e.to_errno());
            e.to_errno()
        }
    }
}

/// `ib_client::remove`.
///
/// # Safety
///
/// Called by ib_core with a device being unregistered, after a successful
/// `add` for it.
#[no_mangle]
pub unsafe extern "C" fn rpcrdma2_rs_ib_remove_one(
    dev: *mut bindings::ib_device,
    _client_data: *mut core::ffi::c_void,
) {
    let _ = with_registry(|reg| {
        let mut st = reg.state.lock();
        for d in st.devices.iter_mut() {
            if *d == Some(dev) {
                *d = None;
            }
        }
        // Refuse new registrations, then notify outside the lock: the
        // callbacks may drop their registration right away.
        if insert(&mut st.removing, dev).is_err() {
            pr_err!("ib_client remove: no memory; device removal may race a new endpoint\n");
        }
        let mut key = None;
        loop {
            let next = st
                .entries
                .iter()
                .flatten()
                .filter(|e| e.dev == dev && key.is_none_or(|k| e.key > k))
                .min_by_key(|e| e.key)
                .map(|e| (e.key, e.notify.clone()));
            let Some((k, notify)) = next else { break };
            key = Some(k);
            drop(st);
            notify.device_removed();
            st = reg.state.lock();
        }
        // Wait for the owners to free their resources on the device.
        while st.entries.iter().flatten().any(|e| e.dev == dev) {
            reg.cv.wait(&mut st);
        }
        for d in st.removing.iter_mut() {
            if *d == Some(dev) {
                *d = None;
            }
        }
        Ok(())
    });
}

/// The RDMA devices present now, each with its registration lock taken.
pub fn devices() -> Result<KVec<DeviceRef>> {
    with_registry(|reg| {
        let st = reg.state.lock();
        let mut out = KVec::new();
        for &dev in st.devices.iter().flatten() {
            // SAFETY: ib_core has added and not yet removed the device (we
            // hold the lock `remove` takes first), so it is valid; `get`
            // fails if it is already being unregistered.
            let d = unsafe { Device::from_raw(dev) };
            if let Ok(r) = d.get() {
                out.push(r, GFP_KERNEL)?;
            }
        }
        Ok(out)
    })
}

/// A device-removal callback registration; dropping it unregisters.
///
/// # Invariants
///
/// While it exists, the registry holds an entry with key `key`.
pub struct RemovalRegistration {
    key: u64,
}

impl RemovalRegistration {
    /// Calls `notify.device_removed()` when `dev` is unregistered.
    ///
    /// Fails with `ENETUNREACH` when the device is already going away.
    pub fn new(dev: &Device, notify: Arc<dyn DeviceRemoval>) -> Result<Self> {
        let dev = dev.as_ptr();
        with_registry(|reg| {
            let mut st = reg.state.lock();
            if st.removing.contains(&Some(dev)) {
                pr_err!("RDMA device is being removed; not registering (-ENETUNREACH)\n");
                return Err(super::errno(bindings::ENETUNREACH));
            }
            let key = st.next_key;
            st.next_key += 1;
            insert(&mut st.entries, Entry { dev, key, notify })?;
            // INVARIANT: the entry is in the registry.
            Ok(RemovalRegistration { key })
        })
    }
}

impl Drop for RemovalRegistration {
    fn drop(&mut self) {
        let _ = with_registry(|reg| {
            let mut st = reg.state.lock();
            let removed = st
                .entries
                .iter_mut()
                .find(|e| e.as_ref().is_some_and(|e| e.key == self.key))
                .and_then(|e| e.take());
            drop(st);
            // Drop the callback's `Arc` outside the lock.
            drop(removed);
            reg.cv.notify_all();
            Ok(())
        });
    }
}
