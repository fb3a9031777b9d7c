// SPDX-License-Identifier: GPL-2.0

//! Backchannel requests: the `rpc_rqst`s that carry reverse-direction
//! Calls (NFSv4.1 callbacks) to SUNRPC's callback service and their
//! replies back to the transport.
//!
//! A [`BcRqst`] is an `rpc_rqst` with two page-sized buffers: the Call,
//! copied out of the Receive buffer it arrived in (so that the Receive
//! is posted again at once), and the Reply, which the callback service
//! encodes into `rq_snd_buf`. [`BcRqst::queue`] hands it to the service
//! (`svc_process_bc` runs the callback and an RPC task sends the reply
//! through the transport's `send_request`, see [`is_backchannel`]); the
//! task's release gives it back through `->bc_free_rqst`
//! ([`BcRqst::from_returned`]). Between the two, SUNRPC owns it.

use super::xprt::Xprt;
use crate::bindings;
use kernel::alloc::{Flags, KBox, KVec};
use kernel::prelude::*;
use kernel::types::Opaque;

/// Size of each backchannel buffer: a page, as SUNRPC's own backchannel
/// requests (`svcxdr_init_encode` assumes the reply head is a page).
pub const BUF_SIZE: usize = kernel::page::PAGE_SIZE;

/// A backchannel request (see the module documentation).
///
/// # Invariants
///
/// `rqst` is first (`#[repr(C)]`), so the `rpc_rqst` SUNRPC hands back
/// maps to its `BcRqst`. `call` and `reply` hold [`BUF_SIZE`] bytes each
/// and never reallocate.
#[repr(C)]
pub struct BcRqst {
    rqst: Opaque<bindings::rpc_rqst>,
    call: KVec<u8>,
    reply: KVec<u8>,
}

// SAFETY: the `rpc_rqst` is used by one owner at a time: the transport
// while the `BcRqst` is in its pool, SUNRPC between `queue` and
// `->bc_free_rqst`.
unsafe impl Send for BcRqst {}
// SAFETY: as above; shared references do not mutate.
unsafe impl Sync for BcRqst {}

/// Sets `buf` to one head `kvec` of `len` bytes at `base` in a buffer of
/// `buflen` bytes (C: `xdr_buf_init` plus the length).
fn init_xdr_buf(buf: &mut bindings::xdr_buf, base: *mut u8, len: usize, buflen: usize) {
    *buf = bindings::xdr_buf::default();
    buf.head[0].iov_base = base.cast();
    buf.head[0].iov_len = len;
    buf.buflen = buflen as u32;
    buf.len = len as u32;
}

impl BcRqst {
    /// Allocates a request with its two buffers.
    pub fn new(flags: Flags) -> Result<KBox<Self>> {
        let call = KVec::from_elem(0u8, BUF_SIZE, flags)?;
        let reply = KVec::from_elem(0u8, BUF_SIZE, flags)?;
        Ok(KBox::new(
            BcRqst {
                rqst: Opaque::new(bindings::rpc_rqst::default()),
                call,
                reply,
            },
            flags,
        )?)
    }

    /// Loads reverse-direction Call `call` (the RPC message, XID first;
    /// `xid` in host order) for transport `xprt`: a fresh `rpc_rqst` whose
    /// `rq_rcv_buf` / `rq_private_buf` hold the Call and whose
    /// `rq_snd_buf` is the empty Reply buffer, as `svc_process_bc`
    /// expects. Fails with `EMSGSIZE` if the Call exceeds [`BUF_SIZE`].
    pub fn load(&mut self, xprt: &Xprt, xid: u32, call: &[u8]) -> Result {
        let dst = self
            .call
            .get_mut(..call.len())
            .ok_or(crate::compat::errno::emsgsize())?;
        dst.copy_from_slice(call);
        let cbase = self.call.as_mut_ptr();
        let rbase = self.reply.as_mut_ptr();
        let rq = self.rqst.get();
        // Zeroing is what `kzalloc` gives SUNRPC's own backchannel
        // requests; the buffers outlive the request's time with SUNRPC
        // (they are freed only with the `BcRqst`).
        // SAFETY: the transport owns this request (it is not queued): no
        // one else accesses it.
        unsafe {
            core::ptr::write_bytes(rq, 0, 1);
            (*rq).rq_xprt = xprt.as_raw();
            (*rq).rq_xid = xid.to_be();
            (*rq).rq_connect_cookie = xprt.connect_cookie();
            init_xdr_buf(&mut (*rq).rq_rcv_buf, cbase, call.len(), BUF_SIZE);
            init_xdr_buf(&mut (*rq).rq_private_buf, cbase, call.len(), BUF_SIZE);
            init_xdr_buf(&mut (*rq).rq_snd_buf, rbase, BUF_SIZE, BUF_SIZE);
            (*rq).rq_snd_buf.len = 0;
        }
        Ok(())
    }

    /// Hands the loaded request to the transport's callback service
    /// (which wakes a callback thread). Gives it back if the transport has
    /// no callback service.
    pub fn queue(this: KBox<Self>) -> core::result::Result<(), KBox<Self>> {
        let raw = KBox::into_raw(this);
        // SAFETY: `raw` is a live, loaded request (`load` set `rq_xprt` to
        // a live transport). On success SUNRPC owns it until
        // `->bc_free_rqst`, where `from_returned` takes it back.
        let ok = unsafe { bindings::rpcrdma2_shim_bc_queue((*raw).rqst.get()) };
        if ok {
            Ok(())
        } else {
            // SAFETY: not queued: still ours, from `into_raw` above.
            Err(unsafe { KBox::from_raw(raw) })
        }
    }

    /// Takes back a request SUNRPC is done with (`->bc_free_rqst`).
    ///
    /// # Safety
    ///
    /// `rq` is the `rpc_rqst` of a `BcRqst` handed to SUNRPC by
    /// [`BcRqst::queue`] of this module, not yet taken back.
    pub unsafe fn from_returned(rq: *mut bindings::rpc_rqst) -> KBox<Self> {
        // SAFETY: per the contract: `rqst` is at offset 0 and the box came
        // from `KBox::into_raw` in `queue`.
        unsafe { KBox::from_raw(rq.cast::<BcRqst>()) }
    }
}

/// Is `rq` a backchannel request (its RPC task sends a reply to a
/// reverse-direction Call), as opposed to one of the transport's slots?
///
/// # Safety
///
/// `rq` points to a live `rpc_rqst`.
pub unsafe fn is_backchannel(rq: *mut bindings::rpc_rqst) -> bool {
    // SAFETY: per the contract; the shim only tests a bit.
    unsafe { bindings::rpcrdma2_shim_rqst_is_bc(rq) }
}

/// Does the transport have a callback service (an NFSv4.1 session set up
/// its backchannel)?
pub fn has_service(xprt: &Xprt) -> bool {
    // SAFETY: the xprt is alive; the shim reads one pointer.
    unsafe { bindings::rpcrdma2_shim_bc_has_service(xprt.as_raw()) }
}

/// The `rpc_xprt` of backchannel request `rq`.
///
/// # Safety
///
/// `rq` is a live `rpc_rqst` whose `rq_xprt` is set.
pub unsafe fn xprt_of(rq: *mut bindings::rpc_rqst) -> *mut bindings::rpc_xprt {
    // SAFETY: per the contract.
    unsafe { (*rq).rq_xprt }
}

/// Drops a transport reference (`xprt_put`): the one
/// `rpcrdma2_shim_bc_queue` took for a request, after it came back.
///
/// # Safety
///
/// `xprt` is a transport the caller holds such a reference on; it may be
/// freed by the call.
pub unsafe fn xprt_put(xprt: *mut bindings::rpc_xprt) {
    // SAFETY: per the contract.
    unsafe { bindings::xprt_put(xprt) }
}
