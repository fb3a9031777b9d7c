// SPDX-License-Identifier: GPL-2.0

//! The handle of a request a reply arrived for ([`ReplyRqst`]).

use super::super::xprt::{spin_lock, spin_unlock, Xprt};
use super::{Rqst, RqstShape};
use crate::bindings;
use core::ptr::{addr_of_mut, NonNull};
use kernel::prelude::*;

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
    pub(in crate::sunrpc) unsafe fn new(rqst: NonNull<bindings::rpc_rqst>, index: u16) -> Self {
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

    /// Reads back `out.len()` bytes of the Reply from offset `at` (what
    /// [`ReplyRqst::write_reply_at`] placed); `EMSGSIZE` past its end.
    pub fn read_reply_at(&self, at: u32, out: &mut [u8]) -> Result {
        // Pinned: no one else writes the receive buffer (type invariant).
        self.rqst().read_reply_at(at, out)
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
