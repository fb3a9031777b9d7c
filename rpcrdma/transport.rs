// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA transport built on the safe wrappers.
//!
//! [`RdmaXprt`] implements [`Transport`] for SUNRPC. Requests come from a
//! pool of preallocated slots, each with its Call and Reply buffers, so
//! the send path does not allocate.

use crate::bindings;
use crate::sunrpc::xprt::{self, SeqFile, SlotBox, Task, Transport, XprtBox};
use crate::sunrpc::XprtCreate;
use core::pin::Pin;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec};
use kernel::init::PinInit;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::SpinLock;

/// Default number of concurrent requests (the C client's
/// `rdma_slot_table_entries` default).
pub const DEFAULT_MAX_REQUESTS: u16 = 128;
/// Largest RPC payload: 256 data pages plus one, as the C client.
pub const MAX_PAYLOAD: usize = 257 << kernel::page::PAGE_SHIFT;
/// Initial Call/Reply buffer size of a slot; grown on demand in buf_alloc.
const SLOT_BUF_SIZE: usize = 2048;

/// Per-request state after each `rpc_rqst`.
#[pin_data]
pub struct Slot {
    /// Position in [`RdmaXprt::slots`].
    index: u16,
    /// Call and Reply encode/decode buffers (`rq_buffer`, `rq_rbuffer`).
    /// Only the task that owns the slot uses them; the lock documents and
    /// enforces that without unsafe code.
    #[pin]
    bufs: SpinLock<SlotBufs>,
}

struct SlotBufs {
    send: KVec<u8>,
    recv: KVec<u8>,
}

/// Free slot indices: a stack over a fixed array (6.12's `KVec` has no
/// `pop`, and a fixed array never allocates on the hot path).
struct FreeList {
    idx: KVec<u16>,
    top: usize,
}

impl FreeList {
    fn full(n: u16) -> Result<Self> {
        let mut idx = KVec::with_capacity(n.into(), GFP_KERNEL)?;
        for i in 0..n {
            idx.push(i, GFP_KERNEL)?;
        }
        Ok(FreeList { idx, top: n.into() })
    }

    fn pop(&mut self) -> Option<u16> {
        self.top = self.top.checked_sub(1)?;
        self.idx.as_slice().get(self.top).copied()
    }

    fn push(&mut self, i: u16) {
        if let Some(e) = self.idx.as_mut_slice().get_mut(self.top) {
            *e = i;
            self.top += 1;
        }
    }
}

/// Transport statistics (the mountstats `xprt: rdma` line).
#[derive(Default)]
pub struct Stats {
    /// Bytes of RPC Calls sent inline.
    pub req_bytes: AtomicU64,
    /// Bytes of RPC Replies received inline.
    pub reply_bytes: AtomicU64,
    /// Bytes by which buf_alloc had to grow buffers (C: hardway).
    pub hardway: AtomicU64,
    /// Marshaling failures.
    pub failed_marshal: AtomicU64,
    /// Malformed or unexpected replies.
    pub bad_reply: AtomicU64,
}

/// The rpcrdma2 transport instance.
#[pin_data]
pub struct RdmaXprt {
    /// Every request slot, fixed for the transport's lifetime.
    slots: KVec<Pin<KBox<SlotBox<Slot>>>>,
    #[pin]
    free: SpinLock<FreeList>,
    stats: Stats,
}

impl RdmaXprt {
    fn new(max_reqs: u16) -> impl PinInit<Self, Error> {
        try_pin_init!(RdmaXprt {
            slots: Self::new_slots(max_reqs)?,
            free <- new_spinlock!(FreeList::full(max_reqs)?, "rpcrdma2_free_slots"),
            stats: Stats::default(),
        }? Error)
    }

    fn new_slots(n: u16) -> Result<KVec<Pin<KBox<SlotBox<Slot>>>>> {
        let mut slots = KVec::with_capacity(n.into(), GFP_KERNEL)?;
        for index in 0..n {
            let bufs = SlotBufs {
                send: KVec::from_elem(0, SLOT_BUF_SIZE, GFP_KERNEL)?,
                recv: KVec::from_elem(0, SLOT_BUF_SIZE, GFP_KERNEL)?,
            };
            slots.push(
                SlotBox::<Slot>::new(pin_init!(Slot {
                    index,
                    bufs <- new_spinlock!(bufs, "rpcrdma2_slot_bufs"),
                }))?,
                GFP_KERNEL,
            )?;
        }
        Ok(slots)
    }

    /// How many request slots are free.
    pub fn free_slots(&self) -> usize {
        self.free.lock().top
    }

    fn take_slot(&self) -> Option<&SlotBox<Slot>> {
        let i = self.free.lock().pop()?;
        self.slots.as_slice().get(usize::from(i)).map(|s| &**s)
    }

    fn put_slot(&self, slot: &SlotBox<Slot>) {
        slot.reset();
        self.free.lock().push(slot.data.index);
    }
}

impl Transport for RdmaXprt {
    type Slot = Slot;

    fn alloc_slot(this: &XprtBox<Self>, task: &Task) {
        if let Some(slot) = this.data.take_slot() {
            xprt::task_set_slot(task, slot);
            return;
        }
        xprt::task_add_backlog(this.xprt(), task);
        // A slot freed between the pop and joining the backlog would have
        // found no waiter: check again, as the C client does.
        if let Some(slot) = this.data.take_slot() {
            if !xprt::wake_up_backlog(this.xprt(), slot) {
                this.data.put_slot(slot);
            }
        }
    }

    fn free_slot(this: &XprtBox<Self>, slot: &SlotBox<Slot>) {
        if !xprt::wake_up_backlog(this.xprt(), slot) {
            this.data.put_slot(slot);
        }
    }

    fn set_port(this: &XprtBox<Self>, port: u16) {
        this.update_port(port);
    }

    fn connect(this: &XprtBox<Self>, _task: &Task) {
        this.xprt().wake_pending_tasks(crate::errno::eprotonosupport().to_errno());
    }

    fn buf_alloc(this: &XprtBox<Self>, slot: &SlotBox<Slot>) -> Result {
        let (call, reply) = slot.rqst().buffer_sizes();
        let mut guard = slot.data.bufs.lock();
        let bufs = &mut *guard;
        for (buf, want) in [(&mut bufs.send, call), (&mut bufs.recv, reply)] {
            if buf.len() < want {
                *buf = KVec::from_elem(0, want, GFP_KERNEL).map_err(|_| ENOMEM)?;
                this.data.stats.hardway.fetch_add(want as u64, Relaxed);
            }
        }
        let mut bufs = guard;
        let (send, recv) = (bufs.send.as_mut_ptr(), bufs.recv.as_mut_ptr());
        drop(bufs);
        // SAFETY: the buffers live in the slot, hold at least the requested
        // sizes, and only this slot's owner replaces them (in the next
        // buf_alloc, which SUNRPC issues only after buf_free).
        unsafe { slot.rqst().set_buffers(send, recv) };
        Ok(())
    }

    fn buf_free(_this: &XprtBox<Self>, _slot: &SlotBox<Slot>) {}

    fn send_request(_this: &XprtBox<Self>, _slot: &SlotBox<Slot>) -> Result {
        Err(crate::errno::enotconn())
    }

    fn timer(this: &XprtBox<Self>) {
        // RDMA has no keepalive: a timeout while connected forces a
        // reconnect, which retransmits everything pending.
        this.xprt().force_disconnect();
    }

    fn close(this: &XprtBox<Self>) {
        this.xprt().disconnect_done();
    }

    fn set_connect_timeout(_this: &XprtBox<Self>, _connect: usize, _reconnect: usize) {}

    fn print_stats(this: &XprtBox<Self>, seq: &mut SeqFile<'_>) {
        use core::fmt::Write;
        let s = &this.data.stats;
        // The C client's layout (transport.c xprt_rdma_print_stats).
        let _ = write!(
            seq,
            "\txprt:\trdma 0 0 0 0 0 0 0 0 0 0 0 0 0 {} {} 0 0 0 {} {} 0 0 0 0 0 0 0\n",
            s.req_bytes.load(Relaxed),
            s.reply_bytes.load(Relaxed),
            s.failed_marshal.load(Relaxed),
            s.bad_reply.load(Relaxed),
        );
    }

    fn inject_disconnect(this: &XprtBox<Self>) {
        this.xprt().force_disconnect();
    }

    fn connect_worker(_this: &XprtBox<Self>) {}

    fn destroy(this: &XprtBox<Self>) {
        let free = this.data.free.lock().top;
        let all = this.data.slots.len();
        if free != all {
            pr_err!("destroy: {} of {} request slots still in use\n", all - free, all);
        }
    }
}

/// RPC timeouts, as the C client (xprt_rdma.h): jiffies.
fn params<'a>(args: &'a XprtCreate<'a>) -> xprt::CreateParams<'a> {
    let hz = kernel::bindings::HZ as usize;
    xprt::CreateParams {
        args,
        max_reqs: DEFAULT_MAX_REQUESTS.into(),
        timeout: 60 * hz,
        bind_timeout: 60 * hz,
        reestablish_timeout: 5 * hz,
        idle_timeout: 5 * 60 * hz,
        max_payload: MAX_PAYLOAD,
    }
}

/// Creates a transport instance for `args` (not yet connected).
pub fn create(args: &XprtCreate<'_>) -> Result<*mut bindings::rpc_xprt> {
    XprtBox::<RdmaXprt>::create(&params(args), RdmaXprt::new(DEFAULT_MAX_REQUESTS))
}

/// Creates a transport instance for `args`.
///
/// The data path does not exist yet: every setup fails with
/// `EPROTONOSUPPORT` and says so in the kernel log.
pub fn setup(args: &XprtCreate<'_>) -> Result<*mut bindings::rpc_xprt> {
    pr_err!(
        "transport setup (ident {}): the RPC-over-RDMA data path is not implemented yet (-EPROTONOSUPPORT)\n",
        args.ident()
    );
    Err(crate::errno::eprotonosupport())
}
