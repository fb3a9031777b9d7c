// SPDX-License-Identifier: GPL-2.0

//! The handles of a request being transmitted: a forward Call
//! ([`TxRqst`]) and a backchannel reply ([`BcTxRqst`]).

use super::{Rqst, RqstShape, XdrBufShape, XdrPart, XdrRange, XdrSide};
use crate::bindings;
use crate::mem::{page_size, MapTarget, PageSeg};
use core::ptr::addr_of_mut;
use kernel::prelude::*;

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
    pub(in crate::sunrpc) unsafe fn new(rqst: &'a Rqst) -> Self {
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
    pub fn map_range<M: MapTarget>(
        &self,
        side: XdrSide,
        range: &XdrRange,
        mr: &mut M,
        access: M::Access,
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
                let ps = page_size();
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
                    let seg = PageSeg {
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
        self.0.copy_call_range(out, offset)
    }

    /// Copies `out.len()` bytes at `at` of the Call (`rq_snd_buf`) into
    /// `out` (`read_bytes_from_xdr_buf` checks the range).
    fn read_call(&self, at: u32, out: &mut [u8]) -> Result {
        // SAFETY: the rqst is alive and being transmitted by its task
        // (type invariant), which does not change its buffers meanwhile.
        unsafe { super::read_xdr(addr_of_mut!((*self.raw()).rq_snd_buf), at, out) }
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
    pub(in crate::sunrpc) unsafe fn new(rqst: &'a Rqst) -> Self {
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

    /// Copies bytes `offset..offset + out.len()` of the RPC message in
    /// `rq_snd_buf` (the callback's Reply) into `out` (a piece of a
    /// continued reply).
    pub fn copy_call_range(&self, out: &mut [u8], offset: u32) -> Result {
        self.0.copy_call_range(out, offset)
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
