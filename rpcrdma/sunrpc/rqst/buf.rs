// SPDX-License-Identifier: GPL-2.0

//! The handle of a request whose buffers are being set up ([`BufRqst`]).

use super::super::slot::{task_gfp, CallBuffers};
use super::Rqst;
use core::cell::UnsafeCell;
use kernel::prelude::*;

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
    pub(in crate::sunrpc) unsafe fn new(rqst: &'a Rqst, bufs: &'a UnsafeCell<CallBuffers>) -> Self {
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
