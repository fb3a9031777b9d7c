// SPDX-License-Identifier: GPL-2.0

//! `struct rpc_rqst` behind the safe [`Rqst`], and the handles whose type
//! says in which context the transport holds a request, one file each:
//! [`TxRqst`] and [`BcTxRqst`] (`tx.rs`), [`ReplyRqst`] (`reply.rs`),
//! [`BufRqst`] (`buf.rs`). Tasks and request slots are in
//! [`super::slot`].
//!
//! A request's buffers are described in SUNRPC's own terms: the shape of
//! each `xdr_buf` ([`XdrBufShape`], both in [`RqstShape`]) and ranges in
//! one of its three parts ([`XdrRange`], [`XdrPart`]). What a transport
//! makes of them (chunks, for RPC-over-RDMA) is the transport's business.

use crate::bindings;
use core::ptr::addr_of_mut;
use kernel::prelude::*;
use kernel::types::Opaque;

mod buf;
mod reply;
mod tx;

pub use buf::BufRqst;
pub use reply::ReplyRqst;
pub use tx::{BcTxRqst, TxRqst};

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

/// Copies `out.len()` bytes from offset `at` of `buf` into `out`
/// (`read_bytes_from_xdr_buf`, which checks the range against the
/// buffer).
///
/// # Safety
///
/// `buf` is an `xdr_buf` of a live request whose owner does not change
/// it meanwhile.
unsafe fn read_xdr(buf: *mut bindings::xdr_buf, at: u32, out: &mut [u8]) -> Result {
    let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
    // SAFETY: `buf` is valid and stable per the caller; `out` is valid
    // for `len` bytes.
    let ret = unsafe { bindings::read_bytes_from_xdr_buf(buf, at, out.as_mut_ptr().cast(), len) };
    kernel::error::to_result(ret)
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

    /// Copies `out.len()` bytes from offset `at` of the Reply
    /// (`rq_private_buf`) into `out`; `EMSGSIZE` past its end.
    fn read_reply_at(&self, at: u32, out: &mut [u8]) -> Result {
        if at as usize + out.len() > self.reply_buflen() {
            return Err(crate::compat::errno::emsgsize());
        }
        // SAFETY: the rqst is alive and pinned (the caller holds a
        // `ReplyRqst`): no one else writes its receive buffer.
        unsafe { read_xdr(addr_of_mut!((*self.raw()).rq_private_buf), at, out) }
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
        // SAFETY: the rqst is alive and its owner (the caller's handle)
        // does not change its Call meanwhile.
        unsafe { read_xdr(addr_of_mut!((*self.raw()).rq_snd_buf), 0, out) }
    }

    /// Copies bytes `offset..offset + out.len()` of the RPC Call
    /// (`rq_snd_buf`) into `out`; `EINVAL` past its end.
    fn copy_call_range(&self, out: &mut [u8], offset: u32) -> Result {
        let len = u32::try_from(out.len()).map_err(|_| EINVAL)?;
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end as usize > self.call_len() {
            return Err(EINVAL);
        }
        // SAFETY: the rqst is alive and its owner (the caller's handle)
        // does not change its Call meanwhile.
        unsafe { read_xdr(addr_of_mut!((*self.raw()).rq_snd_buf), offset, out) }
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
