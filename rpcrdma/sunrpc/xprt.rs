// SPDX-License-Identifier: GPL-2.0

//! `struct rpc_xprt`, `rpc_rqst` and `rpc_task` behind safe types, and the
//! `rpc_xprt_ops` table as trampolines into a safe [`Transport`] trait.
//!
//! # Memory layout
//!
//! `xprt_alloc()` zero-allocates the transport with `rpc_xprt` at offset 0
//! and `xprt_free()` releases it with `kfree_rcu()`. The Rust transport
//! therefore lives in the same allocation: [`XprtBox<T>`] is `#[repr(C)]`
//! with the `rpc_xprt` first and `T` after it, initialised in place by
//! [`XprtBox::create`] and dropped in place by the `destroy` trampoline,
//! never by Rust's allocator.
//!
//! Request slots work the same way: a [`SlotBox<S>`] is an `rpc_rqst`
//! followed by the transport's per-request state `S`; `alloc_slot` hands
//! its `rpc_rqst` to SUNRPC and every later callback maps the `rpc_rqst`
//! back to its `SlotBox` (what C does with `container_of`).

use crate::bindings;
use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::{addr_of_mut, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec};
use kernel::init::PinInit;
use kernel::prelude::*;
use kernel::types::Opaque;

/// `RPC_CWNDSHIFT`: one request's share of the congestion window.
pub const RPC_CWNDSHIFT: u32 = bindings::RPC_CWNDSHIFT;

/// `spin_lock()` on one of SUNRPC's C spinlocks (`transport_lock`,
/// `queue_lock`), through the kernel crate's helper.
///
/// # Safety
///
/// `lock` points to an initialised `spinlock_t` that outlives the call;
/// the caller does not hold it already and may spin (no sleeping
/// while it is held).
unsafe fn spin_lock(lock: *mut bindings::spinlock_t) {
    // SAFETY: per the function's contract; the module's and the kernel
    // crate's bindings describe the same C `spinlock_t`.
    unsafe { kernel::bindings::spin_lock(lock.cast()) }
}

/// `spin_unlock()` of a lock taken with [`spin_lock`].
///
/// # Safety
///
/// The caller holds `lock`, taken with [`spin_lock`].
unsafe fn spin_unlock(lock: *mut bindings::spinlock_t) {
    // SAFETY: per the function's contract, as in `spin_lock`.
    unsafe { kernel::bindings::spin_unlock(lock.cast()) }
}

/// A transport instance, seen from SUNRPC: the `struct rpc_xprt`.
///
/// # Invariants
///
/// The wrapped `rpc_xprt` was initialised by `xprt_alloc()` and is alive.
#[repr(transparent)]
pub struct Xprt(Opaque<bindings::rpc_xprt>);

// SAFETY: SUNRPC uses an `rpc_xprt` from many threads; every mutation
// below goes through SUNRPC's own locking or atomic bit operations.
unsafe impl Send for Xprt {}
// SAFETY: as above.
unsafe impl Sync for Xprt {}

impl Xprt {
    /// The raw pointer, for calls into SUNRPC.
    pub fn as_raw(&self) -> *mut bindings::rpc_xprt {
        self.0.get()
    }

    /// Is the transport marked connected?
    pub fn connected(&self) -> bool {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::rpcrdma2_shim_xprt_connected(self.as_raw()) != 0 }
    }

    /// Marks the transport connected (tasks may send).
    pub fn set_connected(&self) {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::rpcrdma2_shim_xprt_set_connected(self.as_raw()) }
    }

    /// Marks the transport not connected.
    pub fn clear_connected(&self) {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::rpcrdma2_shim_xprt_clear_connected(self.as_raw()) }
    }

    /// Asks SUNRPC to close the connection (autoclose, then `close`).
    pub fn force_disconnect(&self) {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::xprt_force_disconnect(self.as_raw()) }
    }

    /// Wakes tasks waiting on the transport's pending queue with `status`.
    pub fn wake_pending_tasks(&self, status: i32) {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::xprt_wake_pending_tasks(self.as_raw(), status) }
    }

    /// Tells SUNRPC that a connection is closed (after `close`).
    pub fn disconnect_done(&self) {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::xprt_disconnect_done(self.as_raw()) }
    }

    /// Wakes a task waiting for send buffer space.
    pub fn write_space(&self) {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::xprt_write_space(self.as_raw()) };
    }

    /// The destination address (`xprt->addr`).
    pub fn dst_addr(&self) -> Result<crate::ib::cm::SockAddr> {
        // SAFETY: the xprt is alive; `addr` is set at creation and only
        // its port changes later (set_port, serialised by SUNRPC).
        crate::ib::cm::SockAddr::from_storage(unsafe { &(*self.as_raw()).addr })
    }

    /// The network namespace the transport was created in.
    pub fn net(&self) -> &crate::ib::Net {
        // SAFETY: the xprt holds a reference on its namespace for its
        // whole life (xprt_alloc's get_net, put in xprt_free).
        unsafe { crate::ib::Net::from_raw((*self.as_raw()).xprt_net) }
    }

    /// Puts the current task to sleep until [`Xprt::write_space`].
    pub fn wait_for_buffer_space(&self) {
        // SAFETY: the xprt is alive; called from send_request, under the
        // send lock as xprt_wait_for_buffer_space() requires.
        unsafe { bindings::xprt_wait_for_buffer_space(self.as_raw()) }
    }

    /// Records a successful connect: cookie, count and time (what the C
    /// transports' connect workers do).
    pub fn record_connect(&self) {
        // SAFETY: the xprt is alive; the connect worker holds the connect
        // lock (XPRT_LOCKED), which serialises these fields.
        unsafe {
            let x = self.as_raw();
            (*x).connect_cookie = (*x).connect_cookie.wrapping_add(1);
            (*x).stat.connect_count += 1;
            let now = bindings::rpcrdma2_shim_jiffies();
            (*x).stat.connect_time += now.wrapping_sub((*x).stat.connect_start);
        }
    }

    /// Marks the end of a connection (close): the next reconnect starts
    /// without delay and requests queued on the old one are retransmitted.
    pub fn record_close(&self) {
        // SAFETY: the xprt is alive; close runs under XPRT_LOCKED.
        unsafe {
            let x = self.as_raw();
            (*x).reestablish_timeout = 0;
            (*x).connect_cookie = (*x).connect_cookie.wrapping_add(1);
        }
    }

    /// The generic part of the mountstats `xprt:` line, formatted as the
    /// C transports do.
    pub fn write_generic_stats(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        // SAFETY: the xprt is alive; a racy snapshot of counters is what
        // the C transports print too.
        let (st, last_used) = unsafe { ((*self.as_raw()).stat, (*self.as_raw()).last_used) };
        let hz = bindings::HZ as usize;
        let idle = if self.connected() {
            // SAFETY: FFI call without preconditions.
            (unsafe { bindings::rpcrdma2_shim_jiffies() }.wrapping_sub(last_used) as isize)
                / hz as isize
        } else {
            0
        };
        write!(
            out,
            "\txprt:\trdma 0 {} {} {} {} {} {} {} {} {} ",
            st.bind_count,
            st.connect_count,
            st.connect_time / hz,
            idle,
            st.sends,
            st.recvs,
            st.bad_xids,
            st.req_u,
            st.bklog_u
        )
    }

    /// The connection cookie (bumped on every (re)connect and close).
    pub fn connect_cookie(&self) -> u32 {
        // SAFETY: the xprt is alive; a racy read of a counter is what C does.
        unsafe { core::ptr::read_volatile(addr_of_mut!((*self.as_raw()).connect_cookie)) }
    }

    /// Sets the congestion window to `credits` requests, under
    /// `transport_lock` as `rpcrdma_update_cwnd()` does. With `reset`,
    /// also forgets all outstanding congestion (a new connection).
    pub fn set_cwnd(&self, credits: u32, reset: bool) {
        let x = self.as_raw();
        // SAFETY: the xprt is alive; cwnd and cong are protected by
        // transport_lock, which we hold across the update.
        unsafe {
            let lock = addr_of_mut!((*x).transport_lock);
            spin_lock(lock);
            if reset {
                (*x).cong = 0;
            }
            (*x).cwnd = (credits as usize) << RPC_CWNDSHIFT;
            spin_unlock(lock);
        }
    }

    /// Lowers `xprt->max_payload` (the largest RPC payload the upper
    /// layer plans for, `rpc_max_payload()`) to `bytes`; never raises it.
    /// Returns true if it changed. The upper layer reads it when it sizes
    /// its I/O (NFS: at mount), so a lower value applies from then on.
    pub fn lower_max_payload(&self, bytes: usize) -> bool {
        let x = self.as_raw();
        // SAFETY: the xprt is alive; max_payload is a plain word that
        // SUNRPC reads without a lock (rpc_max_payload) and only the
        // transport writes after creation.
        unsafe {
            let p = addr_of_mut!((*x).max_payload);
            if bytes < p.read() {
                p.write(bytes);
                return true;
            }
        }
        false
    }

    /// Finds the request waiting for `xid` (network byte order) and runs
    /// `f` on it with the request pinned and `queue_lock` released, as the
    /// reply handlers of the C transports do. Returns `None` if no request
    /// waits for `xid`.
    pub fn with_rqst<R>(&self, xid: u32, f: impl FnOnce(&Rqst) -> R) -> Option<R> {
        let x = self.as_raw();
        // SAFETY: the xprt is alive. `xprt_lookup_rqst` and
        // `xprt_pin_rqst` require `queue_lock`; the pinned request stays
        // valid until `xprt_unpin_rqst`, which also needs the lock.
        unsafe {
            let lock = addr_of_mut!((*x).queue_lock);
            spin_lock(lock);
            let rq = bindings::xprt_lookup_rqst(x, xid);
            if rq.is_null() {
                spin_unlock(lock);
                return None;
            }
            bindings::xprt_pin_rqst(rq);
            spin_unlock(lock);
            let ret = f(Rqst::from_raw(rq));
            spin_lock(lock);
            bindings::xprt_unpin_rqst(rq);
            spin_unlock(lock);
            Some(ret)
        }
    }
}

/// Which `xdr_buf` of a request: the Call (`rq_snd_buf`) or the Reply
/// (`rq_rcv_buf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdrSide {
    /// `rq_snd_buf`.
    Call,
    /// `rq_rcv_buf` (whose memory `rq_private_buf` shares).
    Reply,
}

/// An RPC request, seen from SUNRPC: the `struct rpc_rqst`.
///
/// # Invariants
///
/// The wrapped `rpc_rqst` is alive.
#[repr(transparent)]
pub struct Rqst(Opaque<bindings::rpc_rqst>);

impl Rqst {
    /// # Safety
    ///
    /// `ptr` points to a live `rpc_rqst` for the lifetime `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_rqst) -> &'a Rqst {
        // SAFETY: transparent wrapper; validity per the caller.
        unsafe { &*ptr.cast::<Rqst>() }
    }

    fn raw(&self) -> *mut bindings::rpc_rqst {
        self.0.get()
    }

    /// The raw pointer, for calls into SUNRPC.
    pub fn as_raw(&self) -> *mut bindings::rpc_rqst {
        self.raw()
    }

    /// The XID in network byte order, as it is on the wire.
    pub fn xid(&self) -> u32 {
        // SAFETY: the rqst is alive (type invariant).
        unsafe { (*self.raw()).rq_xid }
    }

    /// The `tk_pid` of the task that owns the request (0 if none).
    pub fn task_id(&self) -> u32 {
        // SAFETY: the rqst is alive (type invariant); `rq_task` is set
        // while a task owns it and is then alive.
        unsafe {
            let task = (*self.raw()).rq_task;
            if task.is_null() {
                0
            } else {
                u32::from((*task).tk_pid)
            }
        }
    }

    /// The length of the RPC Call message in `rq_snd_buf`.
    pub fn call_len(&self) -> usize {
        // SAFETY: the rqst is alive (type invariant).
        unsafe { (*self.raw()).rq_snd_buf.len as usize }
    }

    /// The capacity of the reply buffer (`rq_rcv_buf.buflen`).
    pub fn reply_buflen(&self) -> usize {
        // SAFETY: the rqst is alive (type invariant).
        unsafe { (*self.raw()).rq_rcv_buf.buflen as usize }
    }

    fn xdr_buf(&self, side: XdrSide) -> *mut bindings::xdr_buf {
        // SAFETY: the rqst is alive (type invariant); only the address is
        // taken.
        unsafe {
            match side {
                XdrSide::Call => addr_of_mut!((*self.raw()).rq_snd_buf),
                XdrSide::Reply => addr_of_mut!((*self.raw()).rq_rcv_buf),
            }
        }
    }

    /// The geometry of both `xdr_buf`s and their DDP eligibility, for
    /// chunk planning: the Call's pages are NFS WRITE data when
    /// `rq_snd_buf` is flagged `XDRBUF_WRITE`, the Reply's pages receive
    /// READ (or READLINK) data when `rq_rcv_buf` is flagged
    /// `XDRBUF_READ`; DDP is off under GSS integrity and privacy.
    pub fn chunk_rpc(&self) -> crate::proto::Rpc {
        let flags = |side| {
            // SAFETY: as below.
            unsafe { (*self.xdr_buf(side)).flags }
        };
        let geo = |side| {
            // SAFETY: the rqst is alive and owned by the sending task,
            // which does not change its buffers while it is being sent.
            let b = unsafe { &*self.xdr_buf(side) };
            let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            crate::proto::Geometry {
                head: len(b.head[0].iov_len),
                page_base: b.page_base,
                page_len: b.page_len,
                tail: len(b.tail[0].iov_len),
            }
        };
        // SAFETY: the rqst is alive and has a credential while it is being
        // sent (`rq_cred` is set in `rpc_init_task`/`call_refresh`).
        let ddp_allowed = unsafe { bindings::rpcrdma2_shim_rqst_ddp_allowed(self.raw()) };
        crate::proto::Rpc {
            call: geo(XdrSide::Call),
            call_ddp: flags(XdrSide::Call) & bindings::XDRBUF_WRITE != 0,
            reply: geo(XdrSide::Reply),
            reply_buflen: u32::try_from(self.reply_buflen()).unwrap_or(u32::MAX),
            reply_ddp: flags(XdrSide::Reply) & bindings::XDRBUF_READ != 0,
            ddp_allowed,
        }
    }

    /// Allocates the missing pages of a receive buffer flagged
    /// `XDRBUF_SPARSE_PAGES` (the upper layer frees them); `ENOBUFS` when
    /// a page cannot be had without sleeping.
    pub fn fill_sparse_pages(&self) -> Result {
        // SAFETY: the rqst is alive and owned by the sending task.
        let ret =
            unsafe { bindings::rpcrdma2_shim_fill_sparse_pages(self.xdr_buf(XdrSide::Reply)) };
        kernel::error::to_result(ret)
    }

    /// Copies the inline part of the Call described by `layout` (head
    /// bytes, the pages or none of them, then tail bytes from
    /// `tail_offset`) into `out`, which must be exactly `layout.len()`
    /// bytes.
    pub fn copy_call_layout(&self, out: &mut [u8], layout: &crate::proto::SendLayout) -> Result {
        if out.len() != layout.len() as usize {
            return Err(EINVAL);
        }
        // SAFETY: the rqst is alive and owned by the sending task.
        let (head_len, page_len) = unsafe {
            let b = &*self.xdr_buf(XdrSide::Call);
            (
                u32::try_from(b.head[0].iov_len).map_err(|_| EINVAL)?,
                b.page_len,
            )
        };
        if layout.head > head_len || (layout.pages != 0 && layout.pages != page_len) {
            return Err(EINVAL);
        }
        let tail_at = head_len
            .checked_add(page_len)
            .and_then(|n| n.checked_add(layout.tail_offset))
            .ok_or(EINVAL)?;
        let parts = [
            (0, layout.head),
            (head_len, layout.pages),
            (tail_at, layout.tail),
        ];
        let mut at = 0usize;
        for (base, len) in parts {
            if len == 0 {
                continue;
            }
            let dst = out.get_mut(at..at + len as usize).ok_or(EINVAL)?;
            // SAFETY: the rqst is alive; `dst` is valid for `len` bytes
            // and `read_bytes_from_xdr_buf` checks the range against the
            // buffer.
            let ret = unsafe {
                bindings::read_bytes_from_xdr_buf(
                    addr_of_mut!((*self.raw()).rq_snd_buf),
                    base,
                    dst.as_mut_ptr().cast(),
                    len,
                )
            };
            kernel::error::to_result(ret)?;
            at += len as usize;
        }
        Ok(())
    }

    /// Starts assembling a Reply whose payload the responder wrote into
    /// the reply pages through a Write chunk: `head` goes to the start of
    /// the receive buffer (a head shorter than `head[0].iov_len` trims
    /// `head[0]`, in `rq_rcv_buf` and `rq_private_buf` alike, so that the
    /// pages follow it directly, as C `rpcrdma_inline_fixup` does), and the
    /// `written` payload bytes are already in the pages. The `tail_len`
    /// inline bytes after the payload belong right after the payload and
    /// its XDR roundup, where a contiguous Reply has them; that offset
    /// (which may lie in the pages) and the Reply's length for
    /// [`Rqst::complete`] are returned. The caller writes the tail there
    /// with [`Rqst::write_reply_at`] once the pages are no longer mapped
    /// for DMA (unmapping a bounce-buffered mapping copies the device's
    /// view back over the pages).
    ///
    /// `EINVAL` if `written` exceeds the pages or the parts do not fit.
    pub fn place_written(&self, head: &[u8], written: u32, tail_len: u32) -> Result<(u32, u32)> {
        let h = u32::try_from(head.len()).map_err(|_| EINVAL)?;
        // SAFETY: the rqst is alive and pinned by the caller of
        // `with_rqst`; no one else touches its receive buffer until it is
        // completed.
        unsafe {
            let rcv = addr_of_mut!((*self.raw()).rq_rcv_buf);
            let private = addr_of_mut!((*self.raw()).rq_private_buf);
            if written > (*rcv).page_len {
                return Err(EINVAL);
            }
            let planned = (*rcv).head[0].iov_len;
            if head.len() < planned {
                if tail_len != 0 {
                    return Err(EINVAL);
                }
                let delta = planned - head.len();
                for b in [rcv, private] {
                    (*b).head[0].iov_len = head.len();
                    (*b).buflen = (*b).buflen.saturating_sub(delta as u32);
                }
            } else if head.len() != planned {
                return Err(EINVAL);
            }
        }
        let payload_end = h
            .checked_add(written.checked_next_multiple_of(4).ok_or(EINVAL)?)
            .ok_or(EINVAL)?;
        let total = payload_end.checked_add(tail_len).ok_or(EINVAL)?;
        if total as usize > self.reply_buflen() {
            return Err(crate::compat::errno::emsgsize());
        }
        self.write_reply_at(0, head)?;
        Ok((payload_end, total))
    }

    /// Writes `bytes` at offset `at` of the Reply (`rq_private_buf`,
    /// which shares its memory with `rq_rcv_buf`); `EMSGSIZE` past its
    /// end.
    pub fn write_reply_at(&self, at: u32, bytes: &[u8]) -> Result {
        let len = u32::try_from(bytes.len()).map_err(|_| EINVAL)?;
        if len == 0 {
            return Ok(());
        }
        if at as usize + bytes.len() > self.reply_buflen() {
            return Err(crate::compat::errno::emsgsize());
        }
        // SAFETY: the rqst is alive and pinned by the caller of
        // `with_rqst`; `bytes` is valid for `len` bytes; the function
        // checks the range against the xdr_buf.
        let ret = unsafe {
            bindings::write_bytes_to_xdr_buf(
                addr_of_mut!((*self.raw()).rq_private_buf),
                at,
                bytes.as_ptr().cast_mut().cast(),
                len,
            )
        };
        kernel::error::to_result(ret)
    }

    /// Maps `range` of the `side` buffer into `mr` for the peer to access
    /// as `access` (the iova tagged with `xid`, host order), building the
    /// page list in `pages` (which needs room for the range's pages: the
    /// chunk plan sizes ranges by the FRWR depth, and the caller sizes
    /// `pages` by it, so no allocation happens here). `EINVAL` for a range
    /// outside the buffer, `ENOMEM` if `pages` is too small, `EIO` if the
    /// MR took only part of it.
    ///
    /// The caller must invalidate (or drop) the MR before the request is
    /// completed or its buffers freed: the memory belongs to the request.
    pub fn map_range(
        &self,
        side: XdrSide,
        range: &crate::proto::Range,
        mr: &mut crate::ib::mr::Mr,
        access: crate::ib::mr::MrAccess,
        xid: u32,
        pages: &mut KVec<crate::ib::mr::PageSeg>,
    ) -> Result {
        use crate::proto::Part;
        // SAFETY: as in `chunk_rpc`.
        let b = unsafe { &*self.xdr_buf(side) };
        let off = range.offset as usize;
        let len = range.len as usize;
        let end = off.checked_add(len).ok_or(EINVAL)?;
        match range.part {
            Part::Head | Part::Tail => {
                let iov = if range.part == Part::Head {
                    &b.head[0]
                } else {
                    &b.tail[0]
                };
                if iov.iov_base.is_null() || end > iov.iov_len || len == 0 {
                    return Err(EINVAL);
                }
                // The kvec is kmalloc'ed memory of the request
                // (`rq_buffer` / `rq_rbuffer`), valid until `buf_free`.
                // SAFETY: `[off, end)` lies in that kvec; the caller
                // invalidates the MR before `buf_free` (see above).
                unsafe {
                    mr.map_kva(
                        iov.iov_base.cast::<u8>().cast_const().add(off),
                        len,
                        access,
                        xid,
                    )
                }
            }
            Part::Pages => {
                if end > b.page_len as usize || len == 0 || b.pages.is_null() {
                    return Err(EINVAL);
                }
                let ps = crate::ib::mr::page_size();
                let start = (b.page_base as usize).checked_add(off).ok_or(EINVAL)?;
                let (mut idx, mut in_page) = (start / ps, start % ps);
                let npages = (in_page + len).div_ceil(ps);
                if npages > pages.capacity() {
                    return Err(ENOMEM);
                }
                // SAFETY: 0 is within the capacity; `PageSeg` is `Copy`, so
                // the old entries need no drop.
                unsafe { pages.set_len(0) };
                let segs = pages;
                let mut left = len;
                while left > 0 {
                    let take = (ps - in_page).min(left);
                    // SAFETY: `idx` indexes the page array, which covers
                    // `page_base + page_len` bytes (checked above).
                    let page = unsafe { *b.pages.add(idx) };
                    segs.push(
                        crate::ib::mr::PageSeg {
                            page,
                            offset: in_page as u32,
                            len: take as u32,
                        },
                        // Within the capacity checked above: never allocates.
                        kernel::alloc::flags::GFP_NOWAIT,
                    )?;
                    left -= take;
                    idx += 1;
                    in_page = 0;
                }
                // SAFETY: the pages belong to the request until it
                // completes; the caller invalidates the MR before that.
                let n = unsafe { mr.map_pages(segs, access, xid)? };
                if n != segs.len() {
                    let _ = mr.unmap();
                    return Err(EIO);
                }
                Ok(())
            }
            Part::WritePad => Err(EINVAL),
        }
    }

    /// The call and reply sizes SUNRPC asks `buf_alloc` for.
    pub fn buffer_sizes(&self) -> (usize, usize) {
        // SAFETY: the rqst is alive (type invariant).
        unsafe { ((*self.raw()).rq_callsize, (*self.raw()).rq_rcvsize) }
    }

    /// Sets `rq_buffer`/`rq_rbuffer` (the Call encode and Reply decode
    /// buffers).
    ///
    /// # Safety
    ///
    /// The buffers must hold `rq_callsize` and `rq_rcvsize` bytes and stay
    /// valid until `buf_free`.
    pub unsafe fn set_buffers(&self, send: *mut u8, recv: *mut u8) {
        // SAFETY: the rqst is alive; buffer validity per the caller.
        unsafe {
            (*self.raw()).rq_buffer = send.cast();
            (*self.raw()).rq_rbuffer = recv.cast();
        }
    }

    /// Copies the whole RPC Call (`rq_snd_buf`: head, pages, tail) into
    /// `out`, which must hold exactly [`Rqst::call_len`] bytes.
    pub fn copy_call(&self, out: &mut [u8]) -> Result {
        if out.len() != self.call_len() {
            return Err(EINVAL);
        }
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        // SAFETY: the rqst is alive; `out` is valid for `len` bytes and
        // `read_bytes_from_xdr_buf` checks the range against the buffer.
        let ret = unsafe {
            bindings::read_bytes_from_xdr_buf(
                addr_of_mut!((*self.raw()).rq_snd_buf),
                0,
                out.as_mut_ptr().cast(),
                len,
            )
        };
        kernel::error::to_result(ret)
    }

    /// Copies bytes `offset..offset + out.len()` of the RPC Call
    /// (`rq_snd_buf`) into `out` (a piece of a continued Call).
    pub fn copy_call_range(&self, out: &mut [u8], offset: u32) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end as usize > self.call_len() {
            return Err(EINVAL);
        }
        // SAFETY: the rqst is alive and owned by the sending task; `out`
        // is valid for `len` bytes and `read_bytes_from_xdr_buf` checks the
        // range against the buffer.
        let ret = unsafe {
            bindings::read_bytes_from_xdr_buf(
                addr_of_mut!((*self.raw()).rq_snd_buf),
                offset,
                out.as_mut_ptr().cast(),
                len,
            )
        };
        kernel::error::to_result(ret)
    }

    /// Copies a received RPC Reply into the request's receive buffer
    /// (`rq_private_buf`, which shares its memory with `rq_rcv_buf`).
    /// Fails with `EMSGSIZE` if it does not fit.
    pub fn copy_reply(&self, data: &[u8]) -> Result {
        self.write_reply_at(0, data)
    }

    /// Completes the request with a reply of `len` bytes (or a negative
    /// errno as status), waking its task. Takes `queue_lock`.
    pub fn complete(&self, xprt: &Xprt, len: i32) {
        // SAFETY: the rqst is alive and pinned; `xprt_complete_rqst`
        // requires `queue_lock`, held across the call.
        unsafe {
            let lock = addr_of_mut!((*xprt.as_raw()).queue_lock);
            spin_lock(lock);
            bindings::xprt_complete_rqst((*self.raw()).rq_task, len);
            spin_unlock(lock);
        }
    }

    /// Ends the RPC with the transport error `errno` (a bad or
    /// RDMA_ERROR reply): the task exits with `errno`, exactly once.
    ///
    /// The error is recorded as the task's terminal `tk_rpc_status`, not
    /// in `tk_status` as the C client's `out_badheader` does: a reply may
    /// be handled before the task has run `call_transmit_status()`, which
    /// clears `tk_status`; the RPC would then look unanswered and be sent
    /// again on a new connection. `__rpc_execute()` ends a task whose
    /// `tk_rpc_status` is set before its next action, whatever that is.
    /// The request is then completed with no reply bytes, which takes it
    /// off the receive queue and wakes the task.
    pub fn fail(&self, xprt: &Xprt, errno: i32) {
        // SAFETY: the rqst is alive and pinned; its task is alive while
        // the request is queued for a reply, and the shim only does an
        // atomic compare-and-exchange on its `tk_rpc_status`.
        unsafe { bindings::rpcrdma2_shim_task_set_rpc_status((*self.raw()).rq_task, errno) };
        self.complete(xprt, 0);
    }

    /// Completes the request without a reply so that SUNRPC transmits it
    /// again: `errno` (`-EAGAIN`) is its status; if the send path clears
    /// that status first, the missing reply makes `call_decode()` retry
    /// all the same. For Calls the server did not execute (the v2 probe
    /// answered by ERR_VERS); see [`Rqst::allow_resend`].
    pub fn retry(&self, xprt: &Xprt, errno: i32) {
        // SAFETY: the rqst is alive and pinned; its task is alive while
        // the request is queued for a reply.
        unsafe { (*(*self.raw()).rq_task).tk_status = errno };
        self.complete(xprt, 0);
    }

    /// Lets the next transmission of this request through the
    /// same-connection retransmit check: used when the server rejected
    /// the previous one without executing it (the v2 probe answered by
    /// ERR_VERS), so credit accounting is not at stake.
    pub fn allow_resend(&self, xprt: &Xprt) {
        // SAFETY: the rqst is alive and pinned; its task waits for the
        // reply, so no transmission races with this store.
        unsafe { (*self.raw()).rq_connect_cookie = xprt.connect_cookie().wrapping_sub(1) };
    }

    /// Forgets the request's congestion-window slot: credits are valid for
    /// one connection only, and the next connection starts with `cong = 0`
    /// (RFC 8166 §3.3.3). Without this, releasing the slot later would
    /// underflow `xprt->cong` and block every send.
    pub fn reset_cong(&self) {
        // SAFETY: the rqst is alive (slots live as long as the transport);
        // called from close, under XPRT_LOCKED, as the C client does.
        unsafe { (*self.raw()).rq_cong = 0 };
    }

    /// The connect cookie recorded when the request was last sent.
    pub fn connect_cookie(&self) -> u32 {
        // SAFETY: the rqst is alive (type invariant).
        unsafe { (*self.raw()).rq_connect_cookie }
    }

    /// Records a transmission: time stamp and bytes sent.
    pub fn mark_sent(&self, bytes: usize) {
        // SAFETY: the rqst is alive; the transport holds the send lock.
        unsafe {
            (*self.raw()).rq_xtime = bindings::ktime_get();
            (*self.raw()).rq_xmit_bytes_sent += bytes;
        }
    }

    /// Does the RPC expect a reply?
    pub fn reply_expected(&self) -> bool {
        // SAFETY: the rqst and its task are alive while it is being sent.
        unsafe { bindings::rpcrdma2_shim_rpc_reply_expected((*self.raw()).rq_task) != 0 }
    }
}

/// An RPC task, seen from the transport.
///
/// # Invariants
///
/// The wrapped `rpc_task` is alive.
#[repr(transparent)]
pub struct Task(Opaque<bindings::rpc_task>);

impl Task {
    /// # Safety
    ///
    /// `ptr` points to a live `rpc_task` for the lifetime `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_task) -> &'a Task {
        // SAFETY: transparent wrapper; validity per the caller.
        unsafe { &*ptr.cast::<Task>() }
    }

    fn raw(&self) -> *mut bindings::rpc_task {
        self.0.get()
    }

    /// Sets `tk_status`.
    pub fn set_status(&self, status: i32) {
        // SAFETY: the task is alive and owned by the caller's context.
        unsafe { (*self.raw()).tk_status = status };
    }

    /// The task's request.
    pub fn rqst(&self) -> Option<&Rqst> {
        // SAFETY: the task is alive; `tk_rqstp` is NULL or a live rqst
        // owned by the task.
        let rq = unsafe { (*self.raw()).tk_rqstp };
        // SAFETY: non-NULL `tk_rqstp` is live while the task holds it.
        (!rq.is_null()).then(|| unsafe { Rqst::from_raw(rq) })
    }
}

/// A request slot: an `rpc_rqst` followed by the transport's state `S`.
///
/// Pinned: SUNRPC holds pointers to the `rpc_rqst` while a task owns it.
#[repr(C)]
#[pin_data]
pub struct SlotBox<S> {
    rqst: Opaque<bindings::rpc_rqst>,
    /// The transport's per-request state.
    #[pin]
    pub data: S,
}

// SAFETY: the `rpc_rqst` is only touched by SUNRPC under its own rules
// (one task owns a request at a time) and by the transport on that task's
// behalf; `S` carries its own synchronisation.
unsafe impl<S: Send> Send for SlotBox<S> {}
// SAFETY: as above.
unsafe impl<S: Sync> Sync for SlotBox<S> {}

impl<S> SlotBox<S> {
    /// Allocates a pinned slot with a zeroed `rpc_rqst`.
    pub fn new<E>(data: impl PinInit<S, E>) -> Result<Pin<KBox<Self>>>
    where
        Error: From<E>,
    {
        KBox::try_pin_init(
            try_pin_init!(SlotBox {
                rqst: Opaque::new(bindings::rpc_rqst::default()),
                data <- data,
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The slot's request.
    pub fn rqst(&self) -> &Rqst {
        // SAFETY: the rqst is owned by this box and alive with it.
        unsafe { Rqst::from_raw(self.rqst.get()) }
    }

    /// Zeroes the `rpc_rqst` for reuse, as the C client does on release.
    pub fn reset(&self) {
        // SAFETY: the slot is not in use by SUNRPC (it is being returned
        // to the pool), so nothing else accesses the rqst.
        unsafe { core::ptr::write_bytes(self.rqst.get(), 0, 1) };
    }

    /// # Safety
    ///
    /// `rq` must be the `rpc_rqst` of a live `SlotBox<S>`.
    unsafe fn from_rqst<'a>(rq: *mut bindings::rpc_rqst) -> &'a SlotBox<S> {
        // SAFETY: `rqst` is at offset 0 of the `#[repr(C)]` box.
        unsafe { &*rq.cast::<SlotBox<S>>() }
    }
}

/// Sets a task's request to `slot` (what `alloc_slot` does on success).
pub fn task_set_slot<S>(task: &Task, slot: &SlotBox<S>) {
    // SAFETY: the task is alive; the transport keeps every slot alive
    // until `destroy`, after the last task released it.
    unsafe {
        (*task.raw()).tk_rqstp = slot.rqst.get();
        (*task.raw()).tk_status = 0;
    }
}

/// Queues a task on the transport's backlog (no slot free right now).
pub fn task_add_backlog(xprt: &Xprt, task: &Task) {
    task.set_status(-(bindings::EAGAIN as i32));
    // SAFETY: both are alive.
    unsafe { bindings::xprt_add_backlog_noncongested(xprt.as_raw(), task.raw()) };
}

/// Hands `slot` to a task waiting on the backlog; returns whether one
/// took it.
pub fn wake_up_backlog<S>(xprt: &Xprt, slot: &SlotBox<S>) -> bool {
    // SAFETY: both are alive; the slot is free (owned by the caller).
    unsafe { bindings::xprt_wake_up_backlog(xprt.as_raw(), slot.rqst.get()) }
}

/// Tries to take a congestion-window slot for `rqst` (send path).
pub fn request_get_cong(xprt: &Xprt, rqst: &Rqst) -> bool {
    // SAFETY: both are alive; the caller holds the send lock.
    unsafe { bindings::xprt_request_get_cong(xprt.as_raw(), rqst.raw()) }
}

/// The reconnect delay SUNRPC computed (jiffies), and back-off for the next.
pub fn reconnect_delay_and_backoff(xprt: &Xprt, init_to: usize) -> usize {
    // SAFETY: the xprt is alive.
    unsafe {
        let d = bindings::xprt_reconnect_delay(xprt.as_raw());
        bindings::xprt_reconnect_backoff(xprt.as_raw(), init_to);
        d
    }
}

/// Clears `XPRT_CONNECTING` (end of a connect attempt).
pub fn clear_connecting(xprt: &Xprt) {
    // SAFETY: the xprt is alive.
    unsafe { bindings::rpcrdma2_shim_xprt_clear_connecting(xprt.as_raw()) }
}

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

    /// Gives `task` a slot ([`task_set_slot`]) or queues it on the backlog.
    fn alloc_slot(this: &XprtBox<Self>, task: &Task);
    /// Takes back a slot SUNRPC is done with.
    fn free_slot(this: &XprtBox<Self>, slot: &SlotBox<Self::Slot>);
    /// rpcbind found the server's port.
    fn set_port(this: &XprtBox<Self>, port: u16);
    /// Starts (re)connecting; the connect lock is the caller's to take.
    fn connect(this: &XprtBox<Self>, task: &Task);
    /// Sets up the request's Call and Reply buffers.
    fn buf_alloc(this: &XprtBox<Self>, slot: &SlotBox<Self::Slot>) -> Result;
    /// Releases what `buf_alloc` set up.
    fn buf_free(this: &XprtBox<Self>, slot: &SlotBox<Self::Slot>);
    /// Marshals and sends the request (errno contract as in xprt.h).
    fn send_request(this: &XprtBox<Self>, slot: &SlotBox<Self::Slot>) -> Result;
    /// An RPC timed out while connected.
    fn timer(this: &XprtBox<Self>);
    /// Closes the connection (autoclose or device removal).
    fn close(this: &XprtBox<Self>);
    /// Adjusts connect timeouts (jiffies).
    fn set_connect_timeout(this: &XprtBox<Self>, connect: usize, reconnect: usize);
    /// Prints the mountstats `xprt:` line.
    fn print_stats(this: &XprtBox<Self>, seq: &mut SeqFile<'_>);
    /// Simulates a connection loss.
    fn inject_disconnect(this: &XprtBox<Self>);
    /// The connect worker runs (process context, may sleep).
    fn connect_worker(this: &XprtBox<Self>);
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
    fn bc_send_reply(_this: &XprtBox<Self>, _rqst: &Rqst) -> Result {
        Err(EIO)
    }
    /// SUNRPC is done with backchannel request `rq` (`bc_free_rqst`).
    fn bc_free_rqst(_this: &XprtBox<Self>, rq: KBox<super::bc::BcRqst>) {
        drop(rq);
    }
    /// The last session using the backchannel is gone (`bc_destroy`).
    fn bc_destroy(_this: &XprtBox<Self>) {}
}

/// A transport instance: `rpc_xprt`, then the connect worker, then `T`.
///
/// # Invariants
///
/// Lives in memory from `xprt_alloc()`; `data` is initialised from
/// [`XprtBox::create`] until the `destroy` trampoline drops it.
#[repr(C)]
pub struct XprtBox<T: Transport> {
    xprt: Xprt,
    connect_work: Opaque<bindings::delayed_work>,
    /// Live [`XprtRef`]s; `destroy` waits for zero before freeing.
    refs: AtomicUsize,
    /// A per-transport copy of the RPC timeout once `set_connect_timeout`
    /// shortened it (`xprt->timeout` then points here).
    timeout: Opaque<bindings::rpc_timeout>,
    /// The transport's state.
    pub data: T,
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

    /// Allocates and initialises a transport: generic `rpc_xprt` fields,
    /// the destination address and display strings, the ops table, the
    /// connect worker, then `T` from `init`. Returns the raw `rpc_xprt`
    /// for the class's setup to hand to SUNRPC.
    pub fn create(
        p: &CreateParams<'_>,
        init: impl PinInit<T, Error>,
    ) -> Result<*mut bindings::rpc_xprt> {
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
        Ok(x.as_ptr())
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
            bindings::rpcrdma2_shim_init_connect_work((*this).connect_work.get());
            addr_of_mut!((*this).refs).write(AtomicUsize::new(0));
            // (`timeout` is plain data, zeroed by xprt_alloc, unused until
            // set_connect_timeout.)
            // In place: the box never moves until xprt_free().
            init.__pinned_init(addr_of_mut!((*this).data))?;
            // A promoted constant: `'static`, like the C transports' tables.
            let ops: &'static bindings::rpc_xprt_ops = &OpsTable::<T>::OPS;
            (*x).ops = ops;
        }
        Ok(())
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
        unsafe { bindings::rpcrdma2_shim_queue_connect_work(self.connect_work.get(), delay) }
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
    unsafe fn from_xprt<'a>(x: *mut bindings::rpc_xprt) -> &'a Self {
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
    to_initval: 60 * bindings::HZ as usize,
    to_maxval: 60 * bindings::HZ as usize,
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
unsafe fn free_addresses(x: *mut bindings::rpc_xprt) {
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

/// The `rpc_xprt_ops` of transport type `T`.
struct OpsTable<T>(PhantomData<T>);

impl<T: Transport> OpsTable<T> {
    const OPS: bindings::rpc_xprt_ops = bindings::rpc_xprt_ops {
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
    unsafe { T::alloc_slot(XprtBox::from_xprt(x), Task::from_raw(task)) }
}

/// # Safety
///
/// Called by SUNRPC through the ops table, see above.
unsafe extern "C" fn free_slot<T: Transport>(
    x: *mut bindings::rpc_xprt,
    rq: *mut bindings::rpc_rqst,
) {
    // SAFETY: see above.
    unsafe { T::free_slot(XprtBox::from_xprt(x), SlotBox::from_rqst(rq)) }
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
    match T::buf_alloc(this, slot) {
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
        // is alive while its task sends it.
        let r = unsafe { T::bc_send_reply(XprtBox::from_xprt((*rq).rq_xprt), Rqst::from_raw(rq)) };
        return match r {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
    }
    // SAFETY: see above.
    let (this, slot) = unsafe { slot_of::<T>(rq) };
    match T::send_request(this, slot) {
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
    // SAFETY: see above.
    unsafe { T::close(XprtBox::from_xprt(x)) }
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
unsafe extern "C" fn destroy<T: Transport>(x: *mut bindings::rpc_xprt) {
    // Stop the connect worker, let T tear down, drop T in place, free the
    // strings and the allocation (kfree_rcu), drop the module reference
    // taken in `create`.
    // SAFETY: see above; SUNRPC makes no further calls with `x`.
    unsafe {
        let this = XprtBox::<T>::from_xprt(x);
        bindings::rpcrdma2_shim_cancel_connect_work(this.connect_work.get());
        T::destroy(this);
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
        free_addresses(x);
        bindings::xprt_free(x);
        bindings::rpcrdma2_shim_module_put();
    }
}

/// The connect worker's entry for transport type `T`.
///
/// # Safety
///
/// `dwork` is the `connect_work` of a live `XprtBox<T>`.
pub unsafe fn connect_worker_entry<T: Transport>(dwork: *mut bindings::delayed_work) {
    let off = core::mem::offset_of!(XprtBox<T>, connect_work);
    // SAFETY: container_of: `dwork` is the field at `off` in the box.
    let this = unsafe { &*dwork.cast::<u8>().sub(off).cast::<XprtBox<T>>() };
    T::connect_worker(this)
}
