// SPDX-License-Identifier: GPL-2.0

//! `struct rpc_task` behind the safe [`Task`], and request slots.
//!
//! # Memory layout
//!
//! A [`SlotBox<S>`] is an `rpc_rqst` followed by the transport's
//! per-request state `S`; `alloc_slot` hands its `rpc_rqst` to SUNRPC and
//! every later callback maps the `rpc_rqst` back to its `SlotBox` (what C
//! does with `container_of`).
//!
//! # Slot ownership
//!
//! A slot is either lent to SUNRPC (a task holds it, from `alloc_slot`
//! until `free_slot`) or free, and then held as a [`FreeSlot`]: the
//! handle is what [`task_set_slot`] and [`wake_up_backlog`] consume to
//! lend it, what the `free_slot` trampoline makes when SUNRPC gives it
//! back, and what [`FreeSlot::reset`] needs.

use super::rqst::Rqst;
use super::xprt::{spin_lock, spin_unlock, Xprt};
use crate::bindings;
use crate::compat::init::PinInit;
use core::cell::UnsafeCell;
use core::pin::Pin;
use core::ptr::{addr_of, addr_of_mut, NonNull};
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec};
use kernel::prelude::*;
use kernel::types::Opaque;

/// An RPC task, seen from the transport: what the `alloc_slot` and
/// `connect` trampolines hand it.
///
/// # Invariants
///
/// The wrapped `rpc_task` is alive and a `&Task` exists only while the
/// task itself runs the op it was passed to (SUNRPC calls `alloc_slot`
/// from `xprt_reserve` and `connect` from `xprt_connect`, both in the
/// task's own `__rpc_execute`), so its fields are the caller's to write.
#[repr(transparent)]
pub struct Task(Opaque<bindings::rpc_task>);

impl Task {
    /// # Safety
    ///
    /// `ptr` points to a live `rpc_task` that is running the op the
    /// reference is passed to, and `'a` does not outlive that op.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_task) -> &'a Task {
        // SAFETY: transparent wrapper; validity per the caller.
        unsafe { &*ptr.cast::<Task>() }
    }

    pub(super) fn raw(&self) -> *mut bindings::rpc_task {
        self.0.get()
    }

    /// Sets `tk_status`.
    pub fn set_status(&self, status: i32) {
        // SAFETY: the task is alive and runs the caller (type invariant).
        unsafe { (*self.raw()).tk_status = status };
    }
}

/// A request slot: an `rpc_rqst`, the slot's position in its pool, then
/// the transport's state `S`.
///
/// Pinned: SUNRPC holds pointers to the `rpc_rqst` while a task owns it.
/// While no task holds it, its pool ([`SlotPool`](super::pool::SlotPool))
/// holds it as a [`FreeSlot`].
///
/// `#[repr(C)]` with `rqst` and `index` first: their offsets do not
/// depend on `S`, so a request found by XID maps back to its slot's index
/// without knowing the transport's type ([`SlotBox::index_of`]).
#[repr(C)]
#[pin_data]
pub struct SlotBox<S> {
    rqst: Opaque<bindings::rpc_rqst>,
    /// Position in the transport's pool (a tag, as `blk_mq`'s).
    index: u16,
    /// The request's Call and Reply buffers, reached only through the
    /// [`BufRqst`](super::rqst::BufRqst) of the slot's `->buf_alloc`.
    bufs: UnsafeCell<CallBuffers>,
    /// The transport's per-request state.
    #[pin]
    pub data: S,
}

// SAFETY: the `rpc_rqst` is only touched by SUNRPC under its own rules
// (one task owns a request at a time) and by the transport on that task's
// behalf; the buffers only by the owning task's `->buf_alloc` (through its
// `BufRqst`) and by the drop of the box; `S` carries its own
// synchronisation.
unsafe impl<S: Send> Send for SlotBox<S> {}
// SAFETY: as above.
unsafe impl<S: Sync> Sync for SlotBox<S> {}

/// A request's Call and Reply buffers (`rq_buffer`, `rq_rbuffer`), kept
/// with its slot from one RPC to the next and grown when an RPC needs
/// more ([`BufRqst::use_slot_buffers`](super::rqst::BufRqst::use_slot_buffers)).
/// The transport reads neither: it sees the encoded Call and the Reply
/// through the request's `xdr_buf`s.
pub struct CallBuffers {
    pub(super) send: KVec<u8>,
    pub(super) recv: KVec<u8>,
}

impl<S> SlotBox<S> {
    /// Allocates a pinned slot with a zeroed `rpc_rqst`, at position
    /// `index` of its pool, with Call and Reply buffers of `buf_size`
    /// bytes each.
    pub fn new<E>(index: u16, buf_size: usize, data: impl PinInit<S, E>) -> Result<Pin<KBox<Self>>>
    where
        Error: From<E>,
    {
        let bufs = CallBuffers {
            send: KVec::from_elem(0, buf_size, GFP_KERNEL)?,
            recv: KVec::from_elem(0, buf_size, GFP_KERNEL)?,
        };
        KBox::try_pin_init(
            try_pin_init!(SlotBox {
                rqst: Opaque::new(bindings::rpc_rqst::default()),
                index,
                bufs: UnsafeCell::new(bufs),
                data <- data,
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The slot's buffers, for the `buf_alloc` trampoline's
    /// [`BufRqst`](super::rqst::BufRqst).
    pub(super) fn bufs(&self) -> &UnsafeCell<CallBuffers> {
        &self.bufs
    }

    /// The slot's position in its pool.
    pub fn index(&self) -> u16 {
        self.index
    }

    /// The pool position of the slot whose `rpc_rqst` is `rq`, whatever
    /// the transport's state type.
    ///
    /// # Safety
    ///
    /// `rq` is the `rpc_rqst` of a live `SlotBox` (of any `S`).
    pub(super) unsafe fn index_of(rq: *mut bindings::rpc_rqst) -> u16 {
        // SAFETY: `index` follows `rqst` in the `#[repr(C)]` box, at an
        // offset that does not depend on `S`; `SlotBox<()>` has it there
        // too, and the slot is alive (per the caller). Only that field is
        // read (through a raw pointer, no reference to the whole box).
        unsafe { *addr_of!((*rq.cast::<SlotBox<()>>()).index) }
    }

    /// The slot's request, for the trampolines that hand it to the
    /// transport wrapped in the handle of their context.
    pub(super) fn rqst(&self) -> &Rqst {
        // SAFETY: the rqst is owned by this box and alive with it.
        unsafe { Rqst::from_raw(self.rqst.get()) }
    }

    /// Forgets the request's congestion-window slot: credits are valid for
    /// one connection only, and the next connection starts with `cong = 0`
    /// (RFC 8166 §3.3.3). Without this, releasing the slot later would
    /// underflow `xprt->cong` and block every send. As C's
    /// `rpcrdma_req_reset`, called on every slot when a connection is torn
    /// down, whether a task holds the slot or not; unlike it, the store is
    /// made under `transport_lock`, which serialises it with the other
    /// writers of `rq_cong` (`xprt_request_get_cong`, and
    /// `xprt_release_rqst_cong` in `xprt_release`, which runs without
    /// XPRT_LOCKED).
    ///
    /// Unlike the other slot operations this one stays `unsafe`: it is
    /// made on every slot, also on those a task holds, for which there is
    /// no [`FreeSlot`] and no other handle the transport could show; and
    /// it is sound only if the lock it takes is the one every writer of
    /// this `rq_cong` takes, i.e. if `xprt` is the transport the slot is
    /// lent to, which neither the slot nor `&Xprt` records (the array of
    /// all slots that knows it is the transport's own).
    ///
    /// # Safety
    ///
    /// The slot belongs to `xprt` (its tasks reach it through `xprt`'s
    /// `alloc_slot`).
    pub(super) unsafe fn reset_cong(&self, xprt: &Xprt) {
        // SAFETY: the slot is alive; every writer of `rq_cong` of a slot
        // of `xprt` holds `xprt`'s `transport_lock` (per the caller), held
        // across the store ([`FreeSlot::reset`] leaves `rq_cong` alone).
        unsafe {
            let lock = addr_of_mut!((*xprt.as_raw()).transport_lock);
            spin_lock(lock);
            (*self.rqst.get()).rq_cong = 0;
            spin_unlock(lock);
        }
    }

    /// # Safety
    ///
    /// `rq` must be the `rpc_rqst` of a live `SlotBox<S>`.
    pub(super) unsafe fn from_rqst<'a>(rq: *mut bindings::rpc_rqst) -> &'a SlotBox<S> {
        // SAFETY: `rqst` is at offset 0 of the `#[repr(C)]` box.
        unsafe { &*rq.cast::<SlotBox<S>>() }
    }
}

/// A request slot that is not lent to SUNRPC: an owned handle to a
/// [`SlotBox`] that no task holds. A [`SlotPool`](super::pool::SlotPool)
/// keeps its free slots as these; [`task_set_slot`] and
/// [`wake_up_backlog`] consume one to lend the slot to SUNRPC, and the
/// `free_slot` trampoline makes one again when SUNRPC gives the slot back.
///
/// The handle does not own the slot's memory (the pool's slot array
/// does, for the transport's lifetime): what it owns is the right to use
/// or lend the slot. Only [`FreeSlot::new`] (`unsafe`, for the pool that
/// makes each slot's one handle) and the `free_slot` trampoline make one.
///
/// # Invariants
///
/// The pointer is to a live, pinned `SlotBox<S>` that no task holds
/// (SUNRPC never had it, or gave it back through `free_slot`) and for
/// which no other `FreeSlot` exists. The slot stays alive and pinned for
/// as long as the handle exists and, once [`task_set_slot`] or
/// [`wake_up_backlog`] consumed it, until SUNRPC gives it back through
/// the `free_slot` op of the transport it was lent to; it is lent only to
/// the transport it belongs to (the one whose `alloc_slot` and
/// `free_slot` ops the slot's pool serves).
pub(super) struct FreeSlot<S>(NonNull<SlotBox<S>>);

// SAFETY: the handle is the sole user of a slot no task holds (type
// invariant); sending it sends that right, and `SlotBox<S>` is `Send`
// for `S: Send`.
unsafe impl<S: Send> Send for FreeSlot<S> {}
// SAFETY: `&FreeSlot` gives only `&SlotBox<S>`, which is `Sync` for
// `S: Sync`.
unsafe impl<S: Sync> Sync for FreeSlot<S> {}

impl<S> FreeSlot<S> {
    /// Makes the handle of a slot of a transport's pool.
    ///
    /// # Safety
    ///
    /// - No task holds the slot (it was never lent to SUNRPC, or SUNRPC
    ///   gave it back through `free_slot`), and no other `FreeSlot` of it
    ///   exists: the pool makes one handle per slot, once.
    /// - The slot stays alive and pinned for as long as the handle exists
    ///   and, once lent to SUNRPC, until SUNRPC gives it back through the
    ///   transport's `free_slot` op: a transport frees its slots no
    ///   earlier than its `destroy`, which SUNRPC calls only after every
    ///   task, and so every slot, is released.
    /// - The handle goes only to the transport the slot belongs to (its
    ///   [`task_set_slot`] in `alloc_slot` with that transport's task, its
    ///   [`wake_up_backlog`], its pool).
    pub(super) unsafe fn new(slot: Pin<&SlotBox<S>>) -> Self {
        // INVARIANT: per the caller.
        FreeSlot(NonNull::from(slot.get_ref()))
    }

    /// The handle of a slot SUNRPC gives back through `free_slot`.
    ///
    /// # Safety
    ///
    /// `rq` is the `rpc_rqst` of a `SlotBox<S>` that a
    /// [`task_set_slot`] or [`wake_up_backlog`] of this transport lent to
    /// SUNRPC, and SUNRPC is giving it back now (its `free_slot` op): the
    /// task that held it is done with it.
    pub(super) unsafe fn from_rqst(rq: *mut bindings::rpc_rqst) -> Self {
        // INVARIANT: the slot was made free by SUNRPC returning it; the
        // handle that lent it was consumed then, so this is the only one;
        // liveness and where the handle may go hold as they did for the
        // handle that lent it.
        // SAFETY: `rqst` is at offset 0 of the `#[repr(C)]` box, and `rq`
        // is not null (per the caller).
        FreeSlot(unsafe { NonNull::new_unchecked(rq.cast::<SlotBox<S>>()) })
    }

    /// Zeroes the `rpc_rqst` for reuse, as the C client does on release,
    /// but for `rq_cong`: [`SlotBox::reset_cong`] may store to it at any
    /// time, under `transport_lock`, and it is 0 already (SUNRPC's
    /// `xprt_release` runs `xprt_release_rqst_cong`, the transport's
    /// `release_request` op, before `free_slot`).
    pub(super) fn reset(&mut self) {
        /// The size of what `_p` points to.
        const fn size_of_pointee<T>(_p: *const T) -> usize {
            core::mem::size_of::<T>()
        }
        let rq = self.rqst.get();
        let cong = core::mem::offset_of!(bindings::rpc_rqst, rq_cong);
        let end = core::mem::size_of::<bindings::rpc_rqst>();
        // SAFETY: the slot is alive and no task holds it (type
        // invariant), so SUNRPC does not touch the `rpc_rqst`; the two
        // ranges are within it and leave out `rq_cong`, the one field
        // another context writes while the slot is free.
        unsafe {
            let after = cong + size_of_pointee(addr_of!((*rq).rq_cong));
            let base = rq.cast::<u8>();
            core::ptr::write_bytes(base, 0, cong);
            core::ptr::write_bytes(base.add(after), 0, end - after);
        }
    }

    /// Gives up the handle for SUNRPC: the `rpc_rqst` to lend.
    fn into_rqst(self) -> *mut bindings::rpc_rqst {
        self.rqst.get()
    }
}

impl<S> core::ops::Deref for FreeSlot<S> {
    type Target = SlotBox<S>;

    fn deref(&self) -> &SlotBox<S> {
        // SAFETY: the slot is alive for as long as the handle exists
        // (type invariant).
        unsafe { self.0.as_ref() }
    }
}

/// Sets a task's request to `slot` (what `alloc_slot` does on success):
/// the slot is lent to SUNRPC until it gives it back through `free_slot`.
///
/// `task` is the task `alloc_slot` was called for, so the slot goes to
/// the transport whose `alloc_slot` runs, the one its pool serves
/// ([`FreeSlot`]'s invariant).
pub(super) fn task_set_slot<S>(task: &Task, slot: FreeSlot<S>) {
    let rq = slot.into_rqst();
    // SAFETY: the task runs the caller (type invariant of `Task`); the
    // slot is free and stays alive until SUNRPC gives it back
    // (`FreeSlot`'s invariant, whose handle is consumed here).
    unsafe {
        (*task.raw()).tk_rqstp = rq;
        (*task.raw()).tk_status = 0;
    }
}

/// Queues a task on the transport's backlog (no slot free right now).
pub(super) fn task_add_backlog(xprt: &Xprt, task: &Task) {
    task.set_status(-(bindings::EAGAIN as i32));
    // SAFETY: both are alive.
    unsafe { bindings::xprt_add_backlog_noncongested(xprt.as_raw(), task.raw()) };
}

/// Hands `slot` to a task waiting on `xprt`'s backlog: `None` if one took
/// it (the slot is lent to SUNRPC until it gives it back through
/// `free_slot`), the handle back if none waits.
///
/// `xprt` is the transport the slot belongs to ([`FreeSlot`]'s
/// invariant): the caller's own.
pub(super) fn wake_up_backlog<S>(xprt: &Xprt, slot: FreeSlot<S>) -> Option<FreeSlot<S>> {
    let rq = slot.rqst.get();
    // SAFETY: both are alive; the slot is free and stays alive until
    // SUNRPC gives it back (`FreeSlot`'s invariant).
    if unsafe { bindings::xprt_wake_up_backlog(xprt.as_raw(), rq) } {
        // A waiter took it: the handle is used up.
        let _ = slot.into_rqst();
        None
    } else {
        Some(slot)
    }
}

/// The allocation flags for memory a running task needs (an RPC's
/// buffers in `buf_alloc`), after C's `rpc_task_gfp_mask()`.
///
/// In the task's own context (a synchronous RPC, e.g. `mount`) that is
/// `GFP_KERNEL`. In an rpciod worker C uses `GFP_KERNEL | __GFP_NORETRY |
/// __GFP_NOWARN`, so that an allocation cannot stall the workqueue that
/// writeback depends on; 6.12's `kernel::alloc::Flags` has no
/// `__GFP_NORETRY`, so this is `GFP_NOWAIT | __GFP_NOWARN` there, which
/// never sleeps. Either way a failure is `ENOMEM`, which `call_allocate`
/// retries after a short delay.
pub fn task_gfp() -> kernel::alloc::Flags {
    use kernel::alloc::flags::{__GFP_NOWARN, GFP_NOWAIT};
    // SAFETY: FFI call without preconditions (it reads `current->flags`).
    if unsafe { bindings::rpcrdma2_shim_task_gfp_is_kernel() } {
        GFP_KERNEL
    } else {
        GFP_NOWAIT | __GFP_NOWARN
    }
}
