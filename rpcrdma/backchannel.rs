// SPDX-License-Identifier: GPL-2.0

//! The backchannel: NFSv4.1 callbacks over RPC-over-RDMA (RFC 8167).
//!
//! A reverse-direction Call arrives in one of the connection's Receives
//! (the reply handler sees [`crate::proto::Reply::ReverseCall`]);
//! [`Backchannel::receive_call`] copies it into a [`BcRqst`] from the
//! transport's pool and queues it for SUNRPC's callback service. A
//! callback thread runs it (`svc_process_bc`) and starts an RPC task that
//! sends the reply through the transport's `send_request`, which lands in
//! [`Backchannel::send_reply`]: an `RDMA_MSG` (`RDMA2_MSG` with
//! `F_RESPONSE`) with the RPC Reply inline, on the current connection, or
//! in version 2 a reply above the inline threshold continued over several
//! `RDMA2_MSG`s (-00 §6.5).
//! The task's release returns the request ([`Backchannel::put`]).
//! A Call continued over several Receives (version 2,
//! [`crate::proto::Reply::ReverseCallPiece`]) is first put together in
//! the transport's reassembly buffer ([`Backchannel::receive_piece`]).
//!
//! The protocol decisions (is it served, the reply's header and credit,
//! size limits, the Receives it needs) are in [`crate::proto::backchannel`].
//! The tracepoints `rpcrdma2_bc_call` and `rpcrdma2_bc_reply` say what
//! became of each Call and its reply.

use crate::proto;
use crate::proto::backchannel::{self as bcp, CallVerdict, ReplyError};
use crate::sunrpc::bc::{self, BcRqst, BUF_SIZE};
use crate::sunrpc::rqst::BcTxRqst;
use crate::sunrpc::xprt::Xprt;
use crate::trace;
use crate::xdr::header::Protocol;
use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use kernel::alloc::{
    flags::{GFP_KERNEL, GFP_NOWAIT},
    KBox, KVec,
};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};

/// Backchannel counters (mountstats, see Documentation/admin-guide.rst).
#[derive(Default)]
pub struct BcStats {
    /// Reverse-direction Calls handed to the callback service (C:
    /// `bcall_count`).
    pub calls: AtomicU64,
    /// Replies sent.
    pub replies: AtomicU64,
    /// Calls dropped: no callback service, too large, no memory, or
    /// beyond the outstanding limit; and replies that could not be sent
    /// (too large).
    pub dropped: AtomicU64,
}

/// Idle requests and how many are with SUNRPC.
struct Pool {
    /// A stack of idle requests (6.12's `KVec` has no `pop`).
    idle: KVec<Option<KBox<BcRqst>>>,
    top: usize,
    /// Requests with SUNRPC (queued, being served or replied to).
    outstanding: u32,
}

impl Pool {
    fn pop(&mut self) -> Option<KBox<BcRqst>> {
        self.top = self.top.checked_sub(1)?;
        self.idle.get_mut(self.top)?.take()
    }

    /// Gives `r` back; frees it if the pool is full.
    fn push(&mut self, r: KBox<BcRqst>) {
        if let Some(e) = self.idle.get_mut(self.top) {
            *e = Some(r);
            self.top += 1;
        }
    }
}

// A continued Call is reassembled into a buffer of `bcp::MAX_CALL` bytes
// and then loaded into a request's buffer of `BUF_SIZE`.
const _: () = assert!(bcp::MAX_CALL as usize <= BUF_SIZE);

/// The backchannel state of one transport (survives reconnects).
///
/// Locks: `assembly` is taken by the reply handler only, for a continued
/// Call (one handler runs at a time: a connection is drained before the
/// next one's handler runs; the lock makes that sound, it is never
/// contended), and is held while the completed Call is handed on, which
/// takes `pool` (`assembly` → `pool` → SUNRPC's backchannel locks).
#[pin_data]
pub struct Backchannel {
    #[pin]
    pool: SpinLock<Pool>,
    /// The continued reverse-direction Call being reassembled
    /// ([`bcp::MAX_CALL`] bytes).
    #[pin]
    assembly: SpinLock<KVec<u8>>,
    /// A session set up the backchannel (`bc_setup`).
    enabled: AtomicBool,
    /// Counters.
    pub stats: BcStats,
}

impl Backchannel {
    /// An empty backchannel (nothing allocated until `bc_setup`).
    pub fn new() -> Result<Arc<Self>> {
        let mut idle = KVec::with_capacity(bcp::MAX_OUTSTANDING as usize, GFP_KERNEL)?;
        for _ in 0..bcp::MAX_OUTSTANDING {
            idle.push(None, GFP_KERNEL)?;
        }
        let assembly = KVec::from_elem(0u8, bcp::MAX_CALL as usize, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Backchannel {
                pool <- new_spinlock!(Pool { idle, top: 0, outstanding: 0 }, "rpcrdma2_bc_pool"),
                assembly <- new_spinlock!(assembly, "rpcrdma2_bc_assembly"),
                enabled: AtomicBool::new(false),
                stats: BcStats::default(),
            }),
            GFP_KERNEL,
        )
    }

    /// `bc_setup`: preallocates [`bcp::SLOTS`] requests (process
    /// context); more are allocated on demand up to
    /// [`bcp::MAX_OUTSTANDING`], as the C client does.
    pub fn setup(&self, _min_reqs: u32) -> Result {
        loop {
            let have = {
                let p = self.pool.lock();
                p.top as u32 + p.outstanding
            };
            if have >= bcp::SLOTS {
                break;
            }
            let r = BcRqst::new(GFP_KERNEL)?;
            self.pool.lock().push(r);
        }
        self.enabled.store(true, Relaxed);
        Ok(())
    }

    /// `bc_destroy`: frees the idle requests (those with SUNRPC are freed
    /// when they come back, see [`Backchannel::put`]).
    pub fn destroy(&self) {
        self.enabled.store(false, Relaxed);
        loop {
            let r = self.pool.lock().pop();
            match r {
                Some(r) => drop(r),
                None => break,
            }
        }
    }

    /// A reverse-direction Call `xid` (host order) arrived on connection
    /// `conn` (version `vers`) of `xprt`: `payload` is the RPC Call
    /// message. Runs in the reply handler (CQ work); never sleeps.
    /// Returns true if the server sends more Calls than the slots
    /// offered: the caller disconnects (as the C client: "RPC/RDMA
    /// backchannel overflow").
    pub fn receive_call(
        &self,
        xprt: &Xprt,
        conn: u32,
        vers: Option<Protocol>,
        xid: u32,
        payload: &[u8],
    ) -> bool {
        let drop_call = |why: &CStr| {
            trace::bc_call(conn, xid, vers, payload.len(), why);
            self.drop_call(xid, why);
        };
        let outstanding = self.pool.lock().outstanding;
        let service = self.enabled.load(Relaxed) && bc::has_service(xprt);
        let limit = BUF_SIZE as u32;
        match bcp::check_call(payload.len(), limit, outstanding, service) {
            CallVerdict::Serve => {}
            CallVerdict::NoService => {
                drop_call(
                    c"dropped (no callback service: no NFSv4.1 session set up a backchannel)",
                );
                return false;
            }
            CallVerdict::TooBig { .. } => {
                drop_call(c"dropped (larger than a backchannel buffer)");
                return false;
            }
            CallVerdict::Overflow => {
                drop_call(c"dropped (too many callbacks outstanding: disconnecting)");
                return true;
            }
        }
        let r = match self.pool.lock().pop() {
            Some(r) => Ok(r),
            None => BcRqst::new(GFP_NOWAIT),
        };
        let mut r = match r {
            Ok(r) => r,
            Err(_) => {
                drop_call(c"dropped (no memory)");
                return false;
            }
        };
        if r.load(xprt, xid, payload).is_err() {
            self.pool.lock().push(r);
            drop_call(c"dropped (larger than a backchannel buffer)");
            return false;
        }
        self.pool.lock().outstanding += 1;
        // Traced before the callback service may answer it.
        trace::bc_call(conn, xid, vers, payload.len(), c"queued");
        match BcRqst::queue(r) {
            Ok(()) => {
                self.stats.calls.fetch_add(1, Relaxed);
            }
            Err(r) => {
                let mut p = self.pool.lock();
                p.outstanding = p.outstanding.saturating_sub(1);
                p.push(r);
                drop(p);
                drop_call(c"dropped (the callback service went away)");
            }
        }
        false
    }

    /// A piece of a continued reverse-direction Call `xid`
    /// ([`proto::Reply::ReverseCallPiece`]): its `payload` goes to
    /// `offset` of the reassembly buffer; with `last` (the Call's length)
    /// the Call is complete and goes on as one received in one message
    /// ([`Backchannel::receive_call`], whose answer this returns). Runs
    /// in the reply handler; never sleeps.
    #[allow(clippy::too_many_arguments)]
    pub fn receive_piece(
        &self,
        xprt: &Xprt,
        conn: u32,
        vers: Option<Protocol>,
        xid: u32,
        offset: u32,
        payload: &[u8],
        last: Option<u32>,
    ) -> bool {
        let mut a = self.assembly.lock();
        let at = offset as usize;
        // The protocol state keeps every piece within `bcp::MAX_CALL`.
        let Some(dst) = at
            .checked_add(payload.len())
            .and_then(|end| a.get_mut(at..end))
        else {
            drop(a);
            trace::bc_call(
                conn,
                xid,
                vers,
                payload.len(),
                c"dropped (beyond the reassembly buffer)",
            );
            self.drop_call(xid, c"dropped (beyond the reassembly buffer)");
            return false;
        };
        dst.copy_from_slice(payload);
        let Some(len) = last else {
            return false;
        };
        match a.get(..len as usize) {
            Some(call) => self.receive_call(xprt, conn, vers, xid, call),
            None => {
                drop(a);
                trace::bc_call(
                    conn,
                    xid,
                    vers,
                    len as usize,
                    c"dropped (beyond the reassembly buffer)",
                );
                self.drop_call(xid, c"dropped (beyond the reassembly buffer)");
                false
            }
        }
    }

    fn drop_call(&self, xid: u32, why: &CStr) {
        self.stats.dropped.fetch_add(1, Relaxed);
        if crate::compat::print::ratelimit() {
            pr_warn!(
                "backchannel: callback xid {:#010x} {}\n",
                xid,
                why.to_str().unwrap_or("dropped")
            );
        }
    }

    /// `bc_free_rqst`: SUNRPC is done with `r`.
    pub fn put(&self, r: KBox<BcRqst>) {
        let mut p = self.pool.lock();
        p.outstanding = p.outstanding.saturating_sub(1);
        if self.enabled.load(Relaxed) {
            p.push(r);
        } else {
            drop(p);
            drop(r);
        }
    }

    /// Sends the reply in `rqst` (a backchannel request's `rq_snd_buf`)
    /// on connection `conn_id` with `send` (the connection's
    /// `Conn::send_bc_reply`: one inline Send, or on version 2 a
    /// continued reply, as [`proto::Transport::prepare_bc_reply`] plans
    /// it), tracing and counting what became of it. `EMSGSIZE` if it does
    /// not fit inline in version 1 (not sent: RFC 8167 has no chunks for
    /// it), `ENOBUFS` if no Send buffer or v2 credit is free (also half-way
    /// through a continued reply: SUNRPC sends it again and it resumes),
    /// `ENOTCONN` if the connection is not up.
    pub fn send_reply(
        &self,
        conn_id: u32,
        proto_state: &SpinLock<proto::Transport>,
        rqst: &BcTxRqst<'_>,
        send: impl FnOnce(u32) -> Result<Protocol, SendError>,
    ) -> Result {
        let len = rqst.call_len();
        let xid = u32::from_be(rqst.xid());
        let outcome = |what: &CStr| {
            // Only on the error paths: the version costs the lock.
            let v = proto_state.lock().protocol();
            trace::bc_reply(conn_id, xid, v, len, what);
        };
        match send(xid) {
            Ok(protocol) => {
                trace::bc_reply(conn_id, xid, Some(protocol), len, c"sent");
                self.stats.replies.fetch_add(1, Relaxed);
                Ok(())
            }
            Err(SendError::Refused(ReplyError::NotConnected)) => {
                outcome(c"dropped (not connected: the server sends the Call again)");
                Err(crate::compat::errno::enotconn())
            }
            Err(SendError::Refused(ReplyError::NoCredits)) => {
                outcome(c"deferred (no version 2 credit)");
                Err(crate::compat::errno::enobufs())
            }
            Err(SendError::Refused(ReplyError::TooBig(t))) => {
                outcome(c"dropped (larger than the inline threshold)");
                self.stats.dropped.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "backchannel: the reply to callback xid {:#010x} ({} bytes) exceeds the inline limit of {} and version 1 cannot continue it (-EMSGSIZE): not sent\n",
                        xid,
                        t.len,
                        t.limit
                    );
                }
                Err(crate::compat::errno::emsgsize())
            }
            Err(SendError::Busy) => {
                outcome(c"deferred (no Send buffer)");
                Err(crate::compat::errno::enobufs())
            }
            Err(SendError::Failed(e)) => {
                outcome(c"dropped (posting failed: reconnecting)");
                Err(e)
            }
        }
    }
}

/// Why a connection sent nothing (more) of a reverse-direction reply
/// ([`Backchannel::send_reply`]'s `send`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// The protocol state refused it: not connected, no credit, or too
    /// large for version 1.
    Refused(ReplyError),
    /// No Send buffer is free, or another message is half sent: wait for
    /// buffer space and send again.
    Busy,
    /// Encoding or posting failed: the connection is about to be dropped.
    Failed(Error),
}

/// [`proto::backchannel::max_payload`] for thresholds `t`.
pub fn max_payload(t: &proto::Thresholds) -> usize {
    bcp::max_payload(t, kernel::page::PAGE_SIZE as u32) as usize
}
