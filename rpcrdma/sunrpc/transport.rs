// SPDX-License-Identifier: GPL-2.0

//! The `rpc_xprt_ops` table as trampolines into a safe [`Transport`] trait.
//!
//! SUNRPC calls a transport through the `rpc_xprt_ops` table that
//! [`XprtBox::create`] installs; each `unsafe extern "C"` trampoline here
//! maps its raw arguments back to the [`XprtBox`] and [`SlotBox`] they
//! live in and calls the [`Transport`] method of the same name. So do the
//! class's `setup` (installed by [`super::ClassRegistration::new`]) and
//! the connect worker (the work function `XprtBox::create` sets up): C
//! reaches the transport only through these function pointers, each
//! instantiated for the transport type, so nothing here names that type
//! and no `#[no_mangle]` entry point is needed.

use super::pool::SlotPool;
use super::rqst::{BcTxRqst, BufRqst, Rqst, TxRqst};
use super::slot::{FreeSlot, SlotBox, Task};
use super::xprt_box::{free_addresses, NewXprt, XprtBox};
use super::XprtCreate;
use crate::bindings;
use core::marker::PhantomData;
use core::ptr::addr_of_mut;
use core::sync::atomic::Ordering;
use kernel::alloc::KBox;
use kernel::prelude::*;

/// A `seq_file` the transport prints statistics to.
pub struct SeqFile<'a>(*mut bindings::seq_file, PhantomData<&'a ()>);

impl SeqFile<'_> {
    /// Writes `s` to the file.
    pub fn write_str(&mut self, s: &str) {
        // SAFETY: the seq_file is valid for the duration of print_stats;
        // `s` is valid for its length.
        unsafe { bindings::seq_write(self.0, s.as_ptr().cast(), s.len()) };
    }
}

impl core::fmt::Write for SeqFile<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        SeqFile::write_str(self, s);
        Ok(())
    }
}

/// What a transport implements; the `rpc_xprt_ops` trampolines call it.
///
/// Each method mirrors the op of the same name in `struct rpc_xprt_ops`
/// (include/linux/sunrpc/xprt.h) and is called in the same context.
pub trait Transport: Sized + Send + Sync + 'static {
    /// Per-request state stored after each `rpc_rqst`.
    type Slot: Send + Sync;
    /// State that only the holder of the transport send lock
    /// (`XPRT_LOCKED`) touches: handed, without a lock of its own, to
    /// [`Transport::send_request`], [`Transport::bc_send_reply`] and
    /// [`Transport::close`], which SUNRPC calls only under that lock;
    /// reset to its default before [`Transport::destroy`] returns.
    type Sender: Default + Send;

    /// `xprt_class::setup`: creates a transport instance for `args` with
    /// [`XprtBox::create`] (not yet connected); may sleep.
    fn setup(args: &XprtCreate<'_>) -> Result<NewXprt<Self>>;

    /// The transport's request slots: `alloc_slot` and `free_slot` lend
    /// and take them back (the transport implements neither).
    fn slots(&self) -> &SlotPool<Self::Slot>;
    /// rpcbind found the server's port.
    fn set_port(this: &XprtBox<Self>, port: u16);
    /// Starts (re)connecting; the connect lock is the caller's to take.
    fn connect(this: &XprtBox<Self>, task: &Task);
    /// Sets up the request's Call and Reply buffers.
    fn buf_alloc(this: &XprtBox<Self>, slot: &SlotBox<Self::Slot>, rqst: BufRqst<'_>) -> Result;
    /// Releases what `buf_alloc` set up.
    fn buf_free(this: &XprtBox<Self>, slot: &SlotBox<Self::Slot>);
    /// Marshals and sends the request (errno contract as in xprt.h).
    fn send_request(
        this: &XprtBox<Self>,
        slot: &SlotBox<Self::Slot>,
        rqst: TxRqst<'_>,
        sender: &mut Self::Sender,
    ) -> Result;
    /// An RPC timed out while connected.
    fn timer(this: &XprtBox<Self>);
    /// Closes the connection (autoclose or device removal).
    fn close(this: &XprtBox<Self>, sender: &mut Self::Sender);
    /// Adjusts connect timeouts (jiffies).
    fn set_connect_timeout(this: &XprtBox<Self>, connect: usize, reconnect: usize);
    /// Prints the mountstats `xprt:` line.
    fn print_stats(this: &XprtBox<Self>, seq: &mut SeqFile<'_>);
    /// Simulates a connection loss.
    fn inject_disconnect(this: &XprtBox<Self>);
    /// The connect worker runs (process context, may sleep).
    fn connect_worker(this: &XprtBox<Self>);
    /// The keepalive worker runs (process context), queued by
    /// [`XprtBox::queue_keepalive`]: `Some(delay)` runs it again after
    /// `delay` jiffies, `None` stops it until queued again.
    fn keepalive(_this: &XprtBox<Self>) -> Option<usize> {
        None
    }
    /// Tears down the transport's state before the memory is freed.
    fn destroy(this: &XprtBox<Self>);
    /// Largest backchannel (NFSv4.1 callback) message.
    fn bc_max_payload(this: &XprtBox<Self>) -> usize;
    /// Backchannel slots to offer in CREATE_SESSION.
    fn bc_num_slots(this: &XprtBox<Self>) -> u32;
    /// An NFSv4.1 session wants a backchannel of (at least) `min_reqs`
    /// requests (`bc_setup`; may sleep).
    fn bc_setup(_this: &XprtBox<Self>, _min_reqs: u32) -> Result {
        Ok(())
    }
    /// Sends the reply of a reverse-direction Call: `rqst` is a
    /// [`super::bc::BcRqst`] whose `rq_snd_buf` holds the RPC Reply
    /// (`send_request` of a backchannel request; errno contract as for
    /// `send_request`).
    fn bc_send_reply(
        _this: &XprtBox<Self>,
        _rqst: BcTxRqst<'_>,
        _sender: &mut Self::Sender,
    ) -> Result {
        Err(EIO)
    }
    /// SUNRPC is done with backchannel request `rq` (`bc_free_rqst`).
    fn bc_free_rqst(_this: &XprtBox<Self>, rq: KBox<super::bc::BcRqst>) {
        drop(rq);
    }
    /// The last session using the backchannel is gone (`bc_destroy`).
    fn bc_destroy(_this: &XprtBox<Self>) {}
}

/// The `rpc_xprt_ops` of transport type `T`.
pub(super) struct OpsTable<T>(PhantomData<T>);

impl<T: Transport> OpsTable<T> {
    pub(super) const OPS: bindings::rpc_xprt_ops = bindings::rpc_xprt_ops {
        reserve_xprt: Some(bindings::xprt_reserve_xprt_cong),
        release_xprt: Some(bindings::xprt_release_xprt_cong),
        alloc_slot: Some(alloc_slot::<T>),
        free_slot: Some(free_slot::<T>),
        rpcbind: Some(bindings::rpcb_getport_async),
        set_port: Some(set_port::<T>),
        connect: Some(connect::<T>),
        buf_alloc: Some(buf_alloc::<T>),
        buf_free: Some(buf_free::<T>),
        send_request: Some(send_request::<T>),
        wait_for_reply_request: Some(bindings::xprt_wait_for_reply_request_def),
        timer: Some(timer::<T>),
        release_request: Some(bindings::xprt_release_rqst_cong),
        close: Some(close::<T>),
        destroy: Some(destroy::<T>),
        set_connect_timeout: Some(set_connect_timeout::<T>),
        print_stats: Some(print_stats::<T>),
        enable_swap: None,
        disable_swap: None,
        inject_disconnect: Some(inject_disconnect::<T>),
        bc_setup: Some(bc_setup::<T>),
        bc_maxpayload: Some(bc_maxpayload::<T>),
        bc_num_slots: Some(bc_num_slots::<T>),
        bc_free_rqst: Some(bc_free_rqst::<T>),
        bc_destroy: Some(bc_destroy::<T>),
        // SAFETY: all-zero is "not implemented" (NULL) for the remaining
        // optional ops (set_buffer_size, get_srcaddr, backchannel, ...).
        ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
    };
}

// The trampolines. SUNRPC calls each with an `rpc_xprt` (or a task or
// rqst of one) that belongs to this class, i.e. lives in an `XprtBox<T>`
// (the ops table is installed only by `XprtBox::<T>::create`), and every
// `rpc_rqst` it passes came from `T::alloc_slot`, i.e. is a
// `SlotBox<T::Slot>` -- except the backchannel requests of
// `super::bc`, which reach `send_request` and `bc_free_rqst` only and are
// told apart by their RPC_BC_PA_IN_USE bit. Those are the safety
// arguments below.

/// # Safety
///
/// `rq` belongs to an `XprtBox<T>` and came from its `alloc_slot`.
unsafe fn slot_of<'a, T: Transport>(
    rq: *mut bindings::rpc_rqst,
) -> (&'a XprtBox<T>, &'a SlotBox<T::Slot>) {
    // SAFETY: per the function's contract.
    unsafe {
        (
            XprtBox::<T>::from_xprt((*rq).rq_xprt),
            SlotBox::from_rqst(rq),
        )
    }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn alloc_slot<T: Transport>(
    x: *mut bindings::rpc_xprt,
    task: *mut bindings::rpc_task,
) {
    // SAFETY: see above; the task is alive for the call.
    let (this, task) = unsafe { (XprtBox::<T>::from_xprt(x), Task::from_raw(task)) };
    this.data.slots().alloc(this.xprt(), task)
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn free_slot<T: Transport>(
    x: *mut bindings::rpc_xprt,
    rq: *mut bindings::rpc_rqst,
) {
    // SAFETY: see above; SUNRPC calls `free_slot` once for each slot
    // `alloc_slot` (or a backlog wake-up) lent it, when the task that held
    // it is done with it (`xprt_release`, after `buf_free`, with
    // `tk_rqstp` cleared), so the slot is free again.
    let (this, slot) = unsafe { (XprtBox::<T>::from_xprt(x), FreeSlot::from_rqst(rq)) };
    this.data.slots().release(this.xprt(), slot)
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn set_port<T: Transport>(x: *mut bindings::rpc_xprt, port: u16) {
    // SAFETY: see above.
    unsafe { T::set_port(XprtBox::from_xprt(x), port) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn connect<T: Transport>(
    x: *mut bindings::rpc_xprt,
    task: *mut bindings::rpc_task,
) {
    // SAFETY: see above.
    unsafe { T::connect(XprtBox::from_xprt(x), Task::from_raw(task)) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn buf_alloc<T: Transport>(task: *mut bindings::rpc_task) -> i32 {
    // SAFETY: SUNRPC calls buf_alloc with the task's rqst set.
    let (this, slot) = unsafe { slot_of::<T>((*task).tk_rqstp) };
    // SAFETY: this is `->buf_alloc` for the slot's request, which the
    // running task owns, with the slot's buffers; the handle lives for the
    // call below only.
    let rqst = unsafe { BufRqst::new(slot.rqst(), slot.bufs()) };
    match T::buf_alloc(this, slot, rqst) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn buf_free<T: Transport>(task: *mut bindings::rpc_task) {
    // SAFETY: SUNRPC calls buf_free with the task's rqst set.
    let (this, slot) = unsafe { slot_of::<T>((*task).tk_rqstp) };
    T::buf_free(this, slot)
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn send_request<T: Transport>(rq: *mut bindings::rpc_rqst) -> i32 {
    // SAFETY: SUNRPC passes a live rqst.
    if unsafe { super::bc::is_backchannel(rq) } {
        // SAFETY: a backchannel request of this transport (see above); it
        // is alive while its task sends it, which is this call: the
        // handle lives for the call only.
        // The sender state: `->send_request` runs under XPRT_LOCKED
        // (`xprt_transmit`, after `xprt_prepare_transmit` took it), and
        // this is the only reference made for the call.
        let r = unsafe {
            let this = XprtBox::<T>::from_xprt((*rq).rq_xprt);
            T::bc_send_reply(this, BcTxRqst::new(Rqst::from_raw(rq)), &mut *this.sender())
        };
        return match r {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
    }
    // SAFETY: see above.
    let (this, slot) = unsafe { slot_of::<T>(rq) };
    // SAFETY: this is `->send_request` for the slot's request; the handle
    // lives for the call below only.
    let rqst = unsafe { TxRqst::new(slot.rqst()) };
    // SAFETY: `->send_request` runs under XPRT_LOCKED (`xprt_transmit`,
    // after `xprt_prepare_transmit` took it); the only reference made for
    // the call.
    let sender = unsafe { &mut *this.sender() };
    match T::send_request(this, slot, rqst, sender) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn timer<T: Transport>(
    x: *mut bindings::rpc_xprt,
    _task: *mut bindings::rpc_task,
) {
    // SAFETY: see above.
    unsafe { T::timer(XprtBox::from_xprt(x)) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn close<T: Transport>(x: *mut bindings::rpc_xprt) {
    // SAFETY: see above; SUNRPC calls `->close` only from
    // `xprt_autoclose`, which holds XPRT_LOCKED (taken by
    // `xprt_schedule_autoclose_locked` or handed on by
    // `xprt_release_write`), so the sender state is this call's alone.
    unsafe {
        let this = XprtBox::<T>::from_xprt(x);
        T::close(this, &mut *this.sender())
    }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn set_connect_timeout<T: Transport>(
    x: *mut bindings::rpc_xprt,
    connect: usize,
    reconnect: usize,
) {
    // SAFETY: see above.
    unsafe { T::set_connect_timeout(XprtBox::from_xprt(x), connect, reconnect) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn print_stats<T: Transport>(
    x: *mut bindings::rpc_xprt,
    seq: *mut bindings::seq_file,
) {
    let mut seq = SeqFile(seq, PhantomData);
    // SAFETY: see above; the seq_file is valid for the call.
    unsafe { T::print_stats(XprtBox::from_xprt(x), &mut seq) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn inject_disconnect<T: Transport>(x: *mut bindings::rpc_xprt) {
    // SAFETY: see above.
    unsafe { T::inject_disconnect(XprtBox::from_xprt(x)) }
}

// The backchannel (NFSv4.1 callbacks): see `super::bc` and the transport.

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn bc_setup<T: Transport>(x: *mut bindings::rpc_xprt, min_reqs: u32) -> i32 {
    // SAFETY: see above.
    match unsafe { T::bc_setup(XprtBox::from_xprt(x), min_reqs) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn bc_maxpayload<T: Transport>(x: *mut bindings::rpc_xprt) -> usize {
    // SAFETY: see above.
    unsafe { T::bc_max_payload(XprtBox::from_xprt(x)) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn bc_num_slots<T: Transport>(x: *mut bindings::rpc_xprt) -> u32 {
    // SAFETY: see above.
    unsafe { T::bc_num_slots(XprtBox::from_xprt(x)) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table (from `xprt_release` of a
/// backchannel task or `svc_process_bc`), with a request of `super::bc`.
unsafe extern "C" fn bc_free_rqst<T: Transport>(rq: *mut bindings::rpc_rqst) {
    // SAFETY: per the function's contract: a `BcRqst` this transport
    // queued, coming back once.
    let x = unsafe { super::bc::xprt_of(rq) };
    // SAFETY: as above.
    let r = unsafe { super::bc::BcRqst::from_returned(rq) };
    // SAFETY: the transport is alive: the request holds a reference.
    T::bc_free_rqst(unsafe { XprtBox::from_xprt(x) }, r);
    // The reference `super::bc::BcRqst::queue` took; may free the
    // transport, so it comes last.
    // SAFETY: that reference is ours to drop.
    unsafe { super::bc::xprt_put(x) };
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn bc_destroy<T: Transport>(x: *mut bindings::rpc_xprt, _max_reqs: u32) {
    // SAFETY: see above.
    unsafe { T::bc_destroy(XprtBox::from_xprt(x)) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
pub(super) unsafe extern "C" fn destroy<T: Transport>(x: *mut bindings::rpc_xprt) {
    // Stop the connect worker, let T tear down, stop the keepalive
    // worker, drop T in place, free the strings and the allocation
    // (kfree_rcu), drop the module reference taken in `create`.
    // SAFETY: see above; SUNRPC makes no further calls with `x`.
    unsafe {
        let this = XprtBox::<T>::from_xprt(x);
        bindings::rpcrdma2_shim_cancel_delayed_work(this.connect_work.get());
        T::destroy(this);
        // What the sender kept (a connection, holding back-references)
        // goes before the wait for those below. `xprt_destroy` holds
        // XPRT_LOCKED for good and no task is left.
        *this.sender() = T::Sender::default();
        // After T's teardown, so that a keepalive it queued (or one that
        // queues itself again: cancel_delayed_work_sync() copes) cannot
        // outlive the box; one running meanwhile finds no connection.
        bindings::rpcrdma2_shim_cancel_delayed_work(this.keepalive_work.get());
        // Handlers of a torn-down connection may still be finishing; wait
        // (bounded) for their back-references. If one never goes away,
        // leak the transport rather than free memory still referenced.
        let refs: *mut usize = this.refs.as_ptr();
        let timeout = isize::try_from(kernel::time::msecs_to_jiffies(5000)).unwrap_or(isize::MAX);
        if bindings::rpcrdma2_shim_wait_zero(refs.cast(), timeout) == 0 {
            // Keep the module reference too: code of this module may
            // still run through those references.
            pr_err!(
                "destroy: {} connection references still held after 5 s; leaking the transport and pinning the module\n",
                this.refs.load(Ordering::Relaxed)
            );
            return;
        }
        core::ptr::drop_in_place(addr_of_mut!((*x.cast::<XprtBox<T>>()).data));
        core::ptr::drop_in_place(this.sender());
        free_addresses(x);
        bindings::xprt_free(x);
        bindings::rpcrdma2_shim_module_put();
    }
}

/// `xprt_class::setup` of the class registered for transport type `T`
/// (see [`super::ClassRegistration::new`]): an `ERR_PTR` on failure.
///
/// # Safety
///
/// Called by SUNRPC (`xprt_create_transport`) with `args` valid for the
/// duration of the call.
pub(super) unsafe extern "C" fn setup<T: Transport>(
    args: *mut bindings::xprt_create,
) -> *mut bindings::rpc_xprt {
    // SAFETY: the caller guarantees `args` is valid for the call.
    let args = unsafe { XprtCreate::from_raw(args) };
    match T::setup(&args) {
        // Handed to SUNRPC, which owns it from now on (`destroy`).
        Ok(x) => x.into_raw(),
        // An ERR_PTR: the negative errno cast to a pointer.
        Err(e) => e.to_errno() as isize as *mut bindings::rpc_xprt,
    }
}

/// The connect worker of an `XprtBox<T>`: the work function
/// `XprtBox::<T>::create` gives its `connect_work`.
///
/// # Safety
///
/// Called by the workqueue with the `work` of the `connect_work` of a
/// live `XprtBox<T>` (`destroy` cancels the work before the box goes).
pub(super) unsafe extern "C" fn connect_worker<T: Transport>(work: *mut bindings::work_struct) {
    let off = core::mem::offset_of!(XprtBox<T>, connect_work)
        + core::mem::offset_of!(bindings::delayed_work, work);
    // SAFETY: container_of: `work` is the `work` of the `delayed_work` at
    // `connect_work` in a live box (the caller's contract).
    let this = unsafe { &*work.cast::<u8>().sub(off).cast::<XprtBox<T>>() };
    T::connect_worker(this)
}

/// The keepalive worker of an `XprtBox<T>`: the work function
/// `XprtBox::<T>::create` gives its `keepalive_work`.
///
/// # Safety
///
/// Called by the workqueue with the `work` of the `keepalive_work` of a
/// live `XprtBox<T>` (`destroy` cancels the work before the box goes).
pub(super) unsafe extern "C" fn keepalive_worker<T: Transport>(work: *mut bindings::work_struct) {
    let off = core::mem::offset_of!(XprtBox<T>, keepalive_work)
        + core::mem::offset_of!(bindings::delayed_work, work);
    // SAFETY: container_of: `work` is the `work` of the `delayed_work` at
    // `keepalive_work` in a live box (the caller's contract).
    let this = unsafe { &*work.cast::<u8>().sub(off).cast::<XprtBox<T>>() };
    if let Some(delay) = T::keepalive(this) {
        this.queue_keepalive(delay);
    }
}
