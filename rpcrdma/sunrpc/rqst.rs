// SPDX-License-Identifier: GPL-2.0

//! `struct rpc_rqst` behind the safe [`Rqst`], and the handles whose type
//! says in which context the transport holds a request. Tasks and request
//! slots are in [`super::slot`].
//!
//! A request's buffers are described in SUNRPC's own terms: the shape of
//! each `xdr_buf` ([`XdrBufShape`], both in [`RqstShape`]) and ranges in
//! one of its three parts ([`XdrRange`], [`XdrPart`]). What a transport
//! makes of them (chunks, for RPC-over-RDMA) is the transport's business.

use super::slot::{task_gfp, CallBuffers};
use super::xprt::{spin_lock, spin_unlock, Xprt};
use crate::bindings;
use core::cell::UnsafeCell;
use core::ptr::{addr_of_mut, NonNull};
use kernel::prelude::*;
use kernel::types::Opaque;

/// Which `xdr_buf` of a request: the Call (`rq_snd_buf`) or the Reply
/// (`rq_rcv_buf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdrSide {
    /// `rq_snd_buf`.
    Call,
    /// `rq_rcv_buf` (whose memory `rq_private_buf` shares).
    Reply,
}

/// The shape of an `xdr_buf`: the lengths of its three parts (`head[0]`,
/// the page list, `tail[0]`) and the flags that say what its pages hold.
/// Lengths that do not fit in a `u32` read as `u32::MAX`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XdrBufShape {
    /// `head[0].iov_len`.
    pub head_len: u32,
    /// `page_base`: offset of the first byte of page data in the first
    /// page of the page list.
    pub page_base: u32,
    /// `page_len`.
    pub page_len: u32,
    /// `tail[0].iov_len`.
    pub tail_len: u32,
    /// `len`: the length of the message in the buffer.
    pub len: u32,
    /// `buflen`: the buffer's capacity.
    pub buflen: u32,
    /// `flags & XDRBUF_WRITE`: the pages hold data written by the upper
    /// layer (NFS WRITE payload).
    pub write_pages: bool,
    /// `flags & XDRBUF_READ`: the pages receive data read by the upper
    /// layer (NFS READ or READLINK payload).
    pub read_pages: bool,
}

/// The shape of both `xdr_buf`s of a request, and whether its
/// credential's auth flavour touches the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqstShape {
    /// `rq_snd_buf`: the Call.
    pub call: XdrBufShape,
    /// `rq_rcv_buf`: the Reply.
    pub reply: XdrBufShape,
    /// `RPCAUTH_AUTH_DATATOUCH` of the credential's auth: GSS integrity
    /// or privacy, whose checksums cover the payload, so the payload must
    /// pass through the auth's wrap and unwrap.
    pub auth_datatouch: bool,
}

/// One of the three parts of an `xdr_buf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdrPart {
    /// `head[0]`; offsets are from `iov_base`.
    Head,
    /// The page list; offsets are from the first byte of page data
    /// (`page_base`), so offset `o` is in page `(page_base + o) /
    /// PAGE_SIZE`.
    Pages,
    /// `tail[0]`; offsets are from `iov_base`.
    Tail,
}

/// A byte range inside one part of an `xdr_buf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XdrRange {
    /// The part.
    pub part: XdrPart,
    /// Offset in the part.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
}

/// An RPC request, seen from SUNRPC: the `struct rpc_rqst`.
///
/// A transport never gets a bare `&Rqst`: it gets a handle whose type
/// says in which context it holds the request, and which derefs to
/// `Rqst` for the read-only accessors below. [`TxRqst`]: being
/// transmitted (`send_request`; [`BcTxRqst`] for a backchannel reply);
/// [`ReplyRqst`]: found by XID and pinned
/// for a reply; [`BufRqst`]: its buffers being set
/// up (`buf_alloc`). What changes the request is on the handle of the
/// context it is sound in.
///
/// # Invariants
///
/// The wrapped `rpc_rqst` is alive, and a task owns it for as long as the
/// reference exists (each handle's invariant says how), so the fields its
/// owner set (XID, lengths, sizes, cookie) are stable.
#[repr(transparent)]
pub struct Rqst(Opaque<bindings::rpc_rqst>);

impl Rqst {
    /// # Safety
    ///
    /// `ptr` points to a live `rpc_rqst` for the lifetime `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rpc_rqst) -> &'a Rqst {
        // SAFETY: transparent wrapper; validity per the caller.
        unsafe { &*ptr.cast::<Rqst>() }
    }

    pub(super) fn raw(&self) -> *mut bindings::rpc_rqst {
        self.0.get()
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

    /// The connect cookie recorded when the request was last sent.
    pub fn connect_cookie(&self) -> u32 {
        // SAFETY: the rqst is alive (type invariant).
        unsafe { (*self.raw()).rq_connect_cookie }
    }

    /// The shape of the `side` buffer.
    ///
    /// The caller holds a `TxRqst` or a `ReplyRqst`: in both contexts
    /// nothing changes the buffer's geometry but the handle itself (see
    /// `shape` of each).
    fn xdr_shape(&self, side: XdrSide) -> XdrBufShape {
        // SAFETY: the rqst is alive (type invariant); the geometry is
        // stable in the caller's context (above).
        let b = unsafe { &*self.xdr_buf(side) };
        let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        XdrBufShape {
            head_len: len(b.head[0].iov_len),
            page_base: b.page_base,
            page_len: b.page_len,
            tail_len: len(b.tail[0].iov_len),
            len: b.len,
            buflen: b.buflen,
            write_pages: b.flags & bindings::XDRBUF_WRITE != 0,
            read_pages: b.flags & bindings::XDRBUF_READ != 0,
        }
    }

    /// The shape of both buffers and the auth's data touch (see
    /// [`RqstShape`]); the caller holds a `TxRqst` or a `ReplyRqst`.
    fn shape(&self) -> RqstShape {
        // SAFETY: the rqst is alive and a forward request owned by its
        // task (the caller holds a `TxRqst` or a `ReplyRqst`), so it has a
        // credential: `call_refresh` binds `rq_cred` before
        // `call_allocate`, and `xprt_release` drops it only after the
        // request is unpinned.
        let auth_datatouch = unsafe { bindings::rpcrdma2_shim_rqst_auth_datatouch(self.raw()) };
        RqstShape {
            call: self.xdr_shape(XdrSide::Call),
            reply: self.xdr_shape(XdrSide::Reply),
            auth_datatouch,
        }
    }

    /// Writes `bytes` at offset `at` of the Reply (`rq_private_buf`,
    /// which shares its memory with `rq_rcv_buf`); `EMSGSIZE` past its
    /// end.
    fn write_reply_at(&self, at: u32, bytes: &[u8]) -> Result {
        let len = u32::try_from(bytes.len()).map_err(|_| EINVAL)?;
        if len == 0 {
            return Ok(());
        }
        if at as usize + bytes.len() > self.reply_buflen() {
            return Err(crate::compat::errno::emsgsize());
        }
        // SAFETY: the rqst is alive and pinned (the caller holds a
        // `ReplyRqst`); `bytes` is valid for `len` bytes; the function
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

    /// Tries to take a congestion-window slot for the request
    /// (`xprt_request_get_cong` on its own transport).
    fn get_cong(&self) -> bool {
        // SAFETY: the rqst is alive and its `rq_xprt` set (the caller
        // holds a `TxRqst` or a `BcTxRqst`); the call takes that transport's `transport_lock`.
        unsafe { bindings::xprt_request_get_cong((*self.raw()).rq_xprt, self.raw()) }
    }

    /// Copies the whole RPC Call (`rq_snd_buf`: head, pages, tail) into
    /// `out`, which must hold exactly [`Rqst::call_len`] bytes.
    fn copy_call(&self, out: &mut [u8]) -> Result {
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

    /// Records a transmission: time stamp and bytes sent.
    fn mark_sent(&self, bytes: usize) {
        // SAFETY: the rqst is alive and being transmitted under
        // XPRT_LOCKED (the caller holds a `TxRqst` or a `BcTxRqst`): only
        // the sender writes these.
        unsafe {
            (*self.raw()).rq_xtime = bindings::ktime_get();
            (*self.raw()).rq_xmit_bytes_sent += bytes;
        }
    }
}

/// A request being transmitted: what the `send_request` trampoline hands
/// the transport for one of its slots (a forward Call).
///
/// # Invariants
///
/// SUNRPC's `->send_request` is running for this request and the handle
/// does not outlive that call: the request's task owns it, holds
/// XPRT_LOCKED (`xprt_transmit` via `xprt_prepare_transmit` /
/// `xprt_lock_write`), and does not encode or free its buffers until the
/// call returns; its `rq_xprt` and `rq_cred` are set.
pub struct TxRqst<'a>(&'a Rqst);

impl<'a> TxRqst<'a> {
    /// # Safety
    ///
    /// `rqst` is the argument of a running `->send_request` call, and the
    /// handle is used only during that call.
    pub(super) unsafe fn new(rqst: &'a Rqst) -> Self {
        // INVARIANT: per the caller.
        TxRqst(rqst)
    }

    /// The shape of both `xdr_buf`s and whether the auth touches the
    /// data (see [`RqstShape`]).
    pub fn shape(&self) -> RqstShape {
        // The sending task does not change its buffers while it is being
        // sent (type invariant).
        self.0.shape()
    }

    /// The shape of the `side` buffer alone.
    pub fn xdr_shape(&self, side: XdrSide) -> XdrBufShape {
        // As `shape`.
        self.0.xdr_shape(side)
    }

    /// Tries to take a congestion-window slot for the request
    /// (`xprt_request_get_cong` on its own transport).
    pub fn get_cong(&self) -> bool {
        self.0.get_cong()
    }

    /// Records a transmission: time stamp and bytes sent.
    pub fn mark_sent(&self, bytes: usize) {
        self.0.mark_sent(bytes)
    }

    /// Allocates the missing pages of a receive buffer flagged
    /// `XDRBUF_SPARSE_PAGES` (the upper layer frees them); `ENOBUFS` when
    /// a page cannot be had without sleeping.
    pub fn fill_sparse_pages(&self) -> Result {
        // SAFETY: the rqst is alive and being transmitted by its task
        // (type invariant), which does not change its buffers meanwhile.
        let ret =
            unsafe { bindings::rpcrdma2_shim_fill_sparse_pages(self.xdr_buf(XdrSide::Reply)) };
        kernel::error::to_result(ret)
    }

    /// Copies `out.len()` bytes at `offset` of `part` of the Call
    /// (`rq_snd_buf`) into `out`; `EINVAL` if they are not all inside
    /// that part.
    pub fn copy_call_part(&self, out: &mut [u8], part: XdrPart, offset: u32) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        let shape = self.0.xdr_shape(XdrSide::Call);
        let (base, part_len) = match part {
            XdrPart::Head => (0, shape.head_len),
            XdrPart::Pages => (shape.head_len, shape.page_len),
            XdrPart::Tail => (
                shape.head_len.checked_add(shape.page_len).ok_or(EINVAL)?,
                shape.tail_len,
            ),
        };
        if offset.checked_add(len).ok_or(EINVAL)? > part_len {
            return Err(EINVAL);
        }
        if len == 0 {
            return Ok(());
        }
        self.read_call(base.checked_add(offset).ok_or(EINVAL)?, out)
    }

    /// Maps `range` of the `side` buffer into `mr` for the peer to access
    /// as `access` (the iova tagged with `xid`, host order), its pages
    /// handed to the MR one by one (no page list of its own, so no
    /// allocation and no lock). `EINVAL` for a range outside the buffer,
    /// `ENOMEM` if it has more pages than the MR's depth (the chunk plan
    /// sizes ranges by it), `EIO` if the MR took only part of it.
    ///
    /// The caller must invalidate (or drop) the MR before the request is
    /// completed or its buffers freed: the memory belongs to the request.
    pub fn map_range(
        &self,
        side: XdrSide,
        range: &XdrRange,
        mr: &mut crate::ib::mr::Mr,
        access: crate::ib::mr::MrAccess,
        xid: u32,
    ) -> Result {
        // SAFETY: as in `xdr_shape`.
        let b = unsafe { &*self.xdr_buf(side) };
        let off = range.offset as usize;
        let len = range.len as usize;
        let end = off.checked_add(len).ok_or(EINVAL)?;
        match range.part {
            XdrPart::Head | XdrPart::Tail => {
                let iov = if range.part == XdrPart::Head {
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
            XdrPart::Pages => {
                if end > b.page_len as usize || len == 0 || b.pages.is_null() {
                    return Err(EINVAL);
                }
                let ps = crate::ib::mr::page_size();
                let start = (b.page_base as usize).checked_add(off).ok_or(EINVAL)?;
                let (mut idx, mut in_page) = (start / ps, start % ps);
                let npages = (in_page + len).div_ceil(ps);
                if npages > mr.depth() {
                    return Err(ENOMEM);
                }
                let pages = b.pages;
                let mut left = len;
                let segs = core::iter::from_fn(|| {
                    if left == 0 {
                        return None;
                    }
                    let take = (ps - in_page).min(left);
                    // SAFETY: `idx` indexes the page array, which covers
                    // `page_base + page_len` bytes (checked above), and
                    // `left` ends the walk at the range's last byte.
                    let page = unsafe { *pages.add(idx) };
                    let seg = crate::ib::mr::PageSeg {
                        page,
                        offset: in_page as u32,
                        len: take as u32,
                    };
                    left -= take;
                    idx += 1;
                    in_page = 0;
                    Some(seg)
                });
                // SAFETY: the pages belong to the request until it
                // completes; the caller invalidates the MR before that.
                let n = unsafe { mr.map_pages(segs, access, xid)? };
                if n != npages {
                    let _ = mr.unmap();
                    return Err(EIO);
                }
                Ok(())
            }
        }
    }

    /// Copies bytes `offset..offset + out.len()` of the RPC Call
    /// (`rq_snd_buf`) into `out` (a piece of a continued Call).
    pub fn copy_call_range(&self, out: &mut [u8], offset: u32) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end as usize > self.call_len() {
            return Err(EINVAL);
        }
        self.read_call(offset, out)
    }

    /// Copies `out.len()` bytes at `at` of the Call (`rq_snd_buf`) into
    /// `out` (`read_bytes_from_xdr_buf` checks the range).
    fn read_call(&self, at: u32, out: &mut [u8]) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        // SAFETY: the rqst is alive and being transmitted by its task
        // (type invariant), which does not change its buffers meanwhile;
        // `out` is valid for `len` bytes and `read_bytes_from_xdr_buf`
        // checks the range against the buffer.
        let ret = unsafe {
            bindings::read_bytes_from_xdr_buf(
                addr_of_mut!((*self.raw()).rq_snd_buf),
                at,
                out.as_mut_ptr().cast(),
                len,
            )
        };
        kernel::error::to_result(ret)
    }

    /// Does the RPC expect a reply?
    pub fn reply_expected(&self) -> bool {
        // SAFETY: the rqst and its task are alive while it is being sent
        // (type invariant).
        unsafe { bindings::rpcrdma2_shim_rpc_reply_expected((*self.raw()).rq_task) != 0 }
    }
}

impl core::ops::Deref for TxRqst<'_> {
    type Target = Rqst;

    fn deref(&self) -> &Rqst {
        self.0
    }
}

/// A backchannel reply being transmitted: what the `send_request`
/// trampoline hands the transport for a [`super::bc::BcRqst`], whose
/// `rq_snd_buf` holds the RPC Reply to a reverse-direction Call.
///
/// Unlike a [`TxRqst`] it has no credential and no Reply buffer to place
/// chunks in, so it offers only what sending an inline reply needs.
///
/// # Invariants
///
/// SUNRPC's `->send_request` is running for this backchannel request (its
/// callback task sends the reply, holding XPRT_LOCKED) and the handle
/// does not outlive that call; its `rq_xprt` is set (`BcRqst::load`).
pub struct BcTxRqst<'a>(&'a Rqst);

impl<'a> BcTxRqst<'a> {
    /// # Safety
    ///
    /// `rqst` is a backchannel request that is the argument of a running
    /// `->send_request` call, and the handle is used only during that
    /// call.
    pub(super) unsafe fn new(rqst: &'a Rqst) -> Self {
        // INVARIANT: per the caller.
        BcTxRqst(rqst)
    }

    /// Tries to take a congestion-window slot for the request
    /// (`xprt_request_get_cong` on its own transport).
    pub fn get_cong(&self) -> bool {
        self.0.get_cong()
    }

    /// Copies the whole RPC Call (`rq_snd_buf`: head, pages, tail) into
    /// `out`, which must hold exactly [`Rqst::call_len`] bytes.
    pub fn copy_call(&self, out: &mut [u8]) -> Result {
        self.0.copy_call(out)
    }

    /// Records a transmission: time stamp and bytes sent.
    pub fn mark_sent(&self, bytes: usize) {
        self.0.mark_sent(bytes)
    }

    /// Gives back the congestion-window slot [`BcTxRqst::get_cong`] took (a
    /// backchannel reply holds it only while it is being sent, as in the
    /// C client, whose backchannel task releases it right after
    /// transmission).
    pub fn put_cong(&self) {
        // SAFETY: the rqst is alive and its `rq_xprt` set (type
        // invariant); the shim takes `transport_lock`.
        unsafe { bindings::rpcrdma2_shim_put_cong(self.raw()) }
    }
}

impl core::ops::Deref for BcTxRqst<'_> {
    type Target = Rqst;

    fn deref(&self) -> &Rqst {
        self.0
    }
}

/// A request a reply arrived for: found by XID on its transport's receive
/// queue and pinned (`xprt_pin_rqst`), as the C transports' reply
/// handlers do; only [`crate::sunrpc::xprt_box::XprtRef::find_reply`]
/// makes one. The handle owns the pin: [`ReplyRqst::complete`] (and
/// [`ReplyRqst::fail`], [`ReplyRqst::retry`]) complete the request and
/// unpin it under one `queue_lock`; dropping the handle only unpins it.
/// It may be kept past the reply handler (while the RPC's MRs are
/// invalidated): the request's task waits for the unpin before it
/// encodes, transmits again or releases the request.
///
/// # Invariants
///
/// `rqst` is a forward request found by `xprt_lookup_rqst` on its
/// transport `(*rqst).rq_xprt` and pinned once for the handle: it stays
/// alive (and so does the transport its task references), its task waits
/// for the reply and does not encode, free or release it, and no one else
/// writes its receive buffer until it is completed. It is the `rpc_rqst`
/// of a [`super::slot::SlotBox`] at position `index` of its pool.
pub struct ReplyRqst {
    rqst: NonNull<bindings::rpc_rqst>,
    index: u16,
}

// SAFETY: the pinned request may be completed or unpinned from any
// context that may take `queue_lock` (a spinlock, taken with bottom
// halves enabled as the C reply handlers do).
unsafe impl Send for ReplyRqst {}
// Not `Sync`: `&ReplyRqst` writes the request's receive buffer
// (`copy_reply`, `write_reply_at`, `place_written`), so two threads
// sharing one handle could race on it.

impl ReplyRqst {
    /// # Safety
    ///
    /// `rqst` was found by `xprt_lookup_rqst` on its transport and pinned
    /// once for this handle (the pin is the handle's to drop); it is the
    /// `rpc_rqst` of a `SlotBox` at position `index` of its pool.
    pub(super) unsafe fn new(rqst: NonNull<bindings::rpc_rqst>, index: u16) -> Self {
        // INVARIANT: per the caller.
        ReplyRqst { rqst, index }
    }

    fn rqst(&self) -> &Rqst {
        // SAFETY: alive while pinned (type invariant).
        unsafe { Rqst::from_raw(self.rqst.as_ptr()) }
    }

    /// The position of the request's slot in its pool
    /// ([`super::slot::SlotBox::index`]): what the transport keeps per
    /// request is found from it without a lookup.
    pub fn slot(&self) -> u16 {
        self.index
    }

    /// Takes `queue_lock` of the request's transport, runs `f` on the
    /// request, unpins it and releases the lock; the handle is used up.
    fn end(self, f: impl FnOnce(*mut bindings::rpc_rqst)) {
        let rq = self.rqst.as_ptr();
        core::mem::forget(self);
        // SAFETY: the request is alive and pinned (type invariant), so its
        // transport is alive; `xprt_complete_rqst` and `xprt_unpin_rqst`
        // require `queue_lock`, held across both. The pin is this
        // handle's, given up here once (the handle is forgotten, so its
        // `Drop` does not unpin again).
        unsafe {
            let lock = addr_of_mut!((*(*rq).rq_xprt).queue_lock);
            spin_lock(lock);
            f(rq);
            bindings::xprt_unpin_rqst(rq);
            spin_unlock(lock);
        }
    }

    /// As [`TxRqst::shape`]: a pinned request is not encoded again
    /// (`call_encode` first dequeues it, which waits for the unpin).
    pub fn shape(&self) -> RqstShape {
        self.rqst().shape()
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
    /// [`ReplyRqst::complete`] are returned. The caller writes the tail there
    /// with [`ReplyRqst::write_reply_at`] once the pages are no longer mapped
    /// for DMA (unmapping a bounce-buffered mapping copies the device's
    /// view back over the pages).
    ///
    /// `EINVAL` if `written` exceeds the pages or the parts do not fit.
    pub fn place_written(&self, head: &[u8], written: u32, tail_len: u32) -> Result<(u32, u32)> {
        let h = u32::try_from(head.len()).map_err(|_| EINVAL)?;
        // SAFETY: the rqst is alive and pinned (type invariant); no one
        // else touches its receive buffer until it is completed.
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

    /// Copies a received RPC Reply into the request's receive buffer
    /// (`rq_private_buf`, which shares its memory with `rq_rcv_buf`).
    /// Fails with `EMSGSIZE` if it does not fit.
    pub fn copy_reply(&self, data: &[u8]) -> Result {
        self.rqst().write_reply_at(0, data)
    }

    /// Completes the request with a reply of `len` bytes (or a negative
    /// errno as status), waking its task, and unpins it: one `queue_lock`.
    pub fn complete(self, len: i32) {
        // SAFETY: `end` holds `queue_lock` and the request is pinned, so
        // its task is alive and waits for the reply.
        self.end(|rq| unsafe { bindings::xprt_complete_rqst((*rq).rq_task, len) });
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
    pub fn fail(self, errno: i32) {
        // SAFETY: the rqst is alive and pinned (type invariant); its task is alive while
        // the request is queued for a reply, and the shim only does an
        // atomic compare-and-exchange on its `tk_rpc_status`.
        unsafe { bindings::rpcrdma2_shim_task_set_rpc_status((*self.raw()).rq_task, errno) };
        self.complete(0);
    }

    /// Completes the request without a reply so that SUNRPC transmits it
    /// again: `errno` (`-EAGAIN`) is its status; if the send path clears
    /// that status first, the missing reply makes `call_decode()` retry
    /// all the same. For Calls the server did not execute (the v2 probe
    /// answered by ERR_VERS); see [`ReplyRqst::allow_resend`].
    pub fn retry(self, errno: i32) {
        // SAFETY: the rqst is alive and pinned (type invariant); its task is alive while
        // the request is queued for a reply.
        unsafe { (*(*self.raw()).rq_task).tk_status = errno };
        self.complete(0);
    }

    /// Lets the next transmission of this request through the
    /// same-connection retransmit check: used when the server rejected
    /// the previous one without executing it (the v2 probe answered by
    /// ERR_VERS), so credit accounting is not at stake.
    pub fn allow_resend(&self) {
        // SAFETY: the rqst is alive and pinned (type invariant), and so is
        // its transport; its task waits for the reply, so no transmission
        // races with this store.
        unsafe {
            let x = &*(*self.raw()).rq_xprt.cast::<Xprt>();
            (*self.raw()).rq_connect_cookie = x.connect_cookie().wrapping_sub(1);
        }
    }

    /// Writes `bytes` at offset `at` of the Reply (`rq_private_buf`,
    /// which shares its memory with `rq_rcv_buf`); `EMSGSIZE` past its
    /// end.
    pub fn write_reply_at(&self, at: u32, bytes: &[u8]) -> Result {
        // Pinned, and completed at most once (type invariant).
        self.rqst().write_reply_at(at, bytes)
    }
}

impl Drop for ReplyRqst {
    /// Unpins the request without completing it (the reply was dropped,
    /// or the RPC is sent again or abandoned another way).
    fn drop(&mut self) {
        let rq = self.rqst.as_ptr();
        // SAFETY: alive and pinned by this handle (type invariant), so is
        // its transport; `xprt_unpin_rqst` requires `queue_lock`.
        unsafe {
            let lock = addr_of_mut!((*(*rq).rq_xprt).queue_lock);
            spin_lock(lock);
            bindings::xprt_unpin_rqst(rq);
            spin_unlock(lock);
        }
    }
}

impl core::ops::Deref for ReplyRqst {
    type Target = Rqst;

    fn deref(&self) -> &Rqst {
        self.rqst()
    }
}

/// A request whose buffers are being set up: what the `buf_alloc`
/// trampoline hands the transport, with its slot's Call and Reply
/// buffers ([`CallBuffers`]).
///
/// # Invariants
///
/// SUNRPC's `->buf_alloc` is running for the request (in `call_allocate`
/// of the task that owns it, before its Call is encoded) and the handle
/// does not outlive that call; `bufs` are the buffers of the request's
/// slot, which nothing else reaches meanwhile.
pub struct BufRqst<'a> {
    rqst: &'a Rqst,
    bufs: &'a UnsafeCell<CallBuffers>,
}

impl<'a> BufRqst<'a> {
    /// # Safety
    ///
    /// `rqst` is the request of a running `->buf_alloc` call, `bufs` the
    /// buffers of its slot, and the handle is used only during that call.
    pub(super) unsafe fn new(rqst: &'a Rqst, bufs: &'a UnsafeCell<CallBuffers>) -> Self {
        // INVARIANT: per the caller.
        BufRqst { rqst, bufs }
    }

    /// The call and reply sizes SUNRPC asks `buf_alloc` for.
    pub fn buffer_sizes(&self) -> (usize, usize) {
        // SAFETY: the rqst is alive and owned by the calling task, which
        // set both sizes before `call_allocate` (type invariant).
        unsafe { ((*self.raw()).rq_callsize, (*self.raw()).rq_rcvsize) }
    }

    /// Gives the request its slot's Call and Reply buffers
    /// (`rq_buffer`, `rq_rbuffer`), first growing either that is smaller
    /// than the sizes SUNRPC asks for (with [`task_gfp`]; `ENOMEM` if
    /// that fails, which `call_allocate` retries). Returns how many bytes
    /// were allocated: 0 in the common case, which takes no lock (the
    /// buffers are the slot owner's alone).
    pub fn use_slot_buffers(self) -> Result<usize> {
        let (call, reply) = self.buffer_sizes();
        // SAFETY: only the `BufRqst` of the slot's running `->buf_alloc`
        // reaches the buffers (type invariant), and it is consumed here.
        let bufs = unsafe { &mut *self.bufs.get() };
        let gfp = task_gfp();
        let mut grown = 0;
        for (v, want) in [(&mut bufs.send, call), (&mut bufs.recv, reply)] {
            if v.len() < want {
                // The old buffer is not in use: SUNRPC calls `buf_alloc`
                // again for a slot only after `buf_free`.
                *v = KVec::from_elem(0, want, gfp).map_err(|_| ENOMEM)?;
                grown += want;
            }
        }
        // SAFETY: the rqst is alive and owned by the calling task, which
        // reads the buffers only after `buf_alloc` returns (type
        // invariant); they hold the sizes asked for and stay in the slot,
        // unchanged until the slot's next `buf_alloc` (after `buf_free`).
        unsafe {
            (*self.raw()).rq_buffer = bufs.send.as_mut_ptr().cast();
            (*self.raw()).rq_rbuffer = bufs.recv.as_mut_ptr().cast();
        }
        Ok(grown)
    }
}

impl core::ops::Deref for BufRqst<'_> {
    type Target = Rqst;

    fn deref(&self) -> &Rqst {
        self.rqst
    }
}
