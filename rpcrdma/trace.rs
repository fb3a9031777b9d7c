// SPDX-License-Identifier: GPL-2.0

//! The module's tracepoints (trace system `rpcrdma2`), fired from Rust.
//!
//! The events are defined with `TRACE_EVENT` in `rpcrdma/trace.h` and
//! documented in Documentation/admin-guide.rst; `rpcrdma/trace.c` gives
//! each an out-of-line wrapper. Each function here first reads the event's
//! static-key counter (what `static_key_enabled()` reads): a disabled event
//! costs a load and a branch, and its arguments (strings formatted from an
//! address, say) are not even computed. Linux 6.13's
//! `kernel::tracepoint::declare_trace!` (a patched jump label) replaces
//! this file's [`enabled`] when the module moves past 6.12.
//!
//! Field conventions, as the C client's `rpcrdma` events: `xid` in host
//! order, `task` the `tk_pid`, `conn` a connection id unique while the
//! module is loaded (see [`next_conn_id`]).

use crate::bindings;
use crate::proto::recovery::{Recovery, State};
use crate::proto::{CallForm, ChunkPlan, Range, ReplyForm};
use crate::xdr::header::{ErrorBody, Protocol};
use crate::xdr::props::TransportProperties;
use crate::xdr::pvtdata::Peer;
use core::ffi::CStr;
use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use kernel::ffi::c_char;

/// Tracepoint index into `rpcrdma2_trace_keys` (trace_shim.h's enum).
#[derive(Clone, Copy)]
#[repr(u32)]
enum Tp {
    Connect = bindings::rpcrdma2_tp_RPCRDMA2_TP_connect,
    ConnectError = bindings::rpcrdma2_tp_RPCRDMA2_TP_connect_error,
    Disconnect = bindings::rpcrdma2_tp_RPCRDMA2_TP_disconnect,
    Pvtdata = bindings::rpcrdma2_tp_RPCRDMA2_TP_pvtdata,
    Version = bindings::rpcrdma2_tp_RPCRDMA2_TP_version,
    Connprop = bindings::rpcrdma2_tp_RPCRDMA2_TP_connprop,
    Credits = bindings::rpcrdma2_tp_RPCRDMA2_TP_credits,
    Marshal = bindings::rpcrdma2_tp_RPCRDMA2_TP_marshal,
    Reply = bindings::rpcrdma2_tp_RPCRDMA2_TP_reply,
    PeerError = bindings::rpcrdma2_tp_RPCRDMA2_TP_peer_error,
    MrReg = bindings::rpcrdma2_tp_RPCRDMA2_TP_mr_reg,
    MrInv = bindings::rpcrdma2_tp_RPCRDMA2_TP_mr_inv,
    Piece = bindings::rpcrdma2_tp_RPCRDMA2_TP_piece,
    Grant = bindings::rpcrdma2_tp_RPCRDMA2_TP_grant,
    Reconnect = bindings::rpcrdma2_tp_RPCRDMA2_TP_reconnect,
    BcCall = bindings::rpcrdma2_tp_RPCRDMA2_TP_bc_call,
    BcReply = bindings::rpcrdma2_tp_RPCRDMA2_TP_bc_reply,
    CreditWait = bindings::rpcrdma2_tp_RPCRDMA2_TP_credit_wait,
    Keepalive = bindings::rpcrdma2_tp_RPCRDMA2_TP_keepalive,
    PostSend = bindings::rpcrdma2_tp_RPCRDMA2_TP_post_send,
}

/// True if tracepoint `tp` has a probe attached.
#[inline(always)]
fn enabled(tp: Tp) -> bool {
    // SAFETY: `rpcrdma2_trace_keys` is a constant array, defined in
    // trace.c, of pointers to the static keys of this module's
    // tracepoints, which live as long as the module's code.
    let keys = unsafe { &*core::ptr::addr_of!(bindings::rpcrdma2_trace_keys) };
    let Some(&key) = keys.get(tp as usize) else {
        return false;
    };
    // SAFETY: `key` points to a live, aligned `atomic_t`; a volatile load
    // of its counter is `atomic_read()`, which `static_key_enabled()` uses.
    unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*key).counter)) > 0 }
}

/// True if any event of a received message is on (the reply handler
/// skips the work of describing the message otherwise).
pub fn received_enabled() -> bool {
    enabled(Tp::Reply)
        || enabled(Tp::Credits)
        || enabled(Tp::Version)
        || enabled(Tp::PeerError)
        || enabled(Tp::Connprop)
}

/// True if `rpcrdma2_mr_inv` is on (its XID costs a lock to look up).
pub fn mr_inv_enabled() -> bool {
    enabled(Tp::MrInv)
}

static CONN_IDS: AtomicU32 = AtomicU32::new(0);

/// A new connection id for the `conn` field of the events (and the
/// connect log line).
pub fn next_conn_id() -> u32 {
    // Never 0 (`conn::SlotOwners` takes 0 for "no connection").
    loop {
        let id = CONN_IDS.fetch_add(1, Relaxed).wrapping_add(1);
        if id != 0 {
            return id;
        }
    }
}

/// A NUL-terminated string formatted on the stack (truncated to fit).
struct CBuf {
    b: [u8; 64],
    len: usize,
}

impl CBuf {
    fn new(args: fmt::Arguments<'_>) -> Self {
        let mut s = CBuf { b: [0; 64], len: 0 };
        let _ = fmt::write(&mut s, args);
        s
    }

    fn as_ptr(&self) -> *const c_char {
        self.b.as_ptr().cast()
    }
}

impl fmt::Write for CBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &c in s.as_bytes() {
            // Keep the last byte for the terminating NUL.
            let Some(dst) = self.b.get_mut(self.len).filter(|_| self.len + 1 < 64) else {
                return Err(fmt::Error);
            };
            *dst = if c == 0 { b'?' } else { c };
            self.len += 1;
        }
        Ok(())
    }
}

fn vers(p: Protocol) -> u32 {
    p.vers()
}

/// A connection is up (`peer` is formatted only when the event is on).
pub fn connect(
    conn: u32,
    peer: &dyn fmt::Display,
    v: Protocol,
    send: u32,
    recv: u32,
    credits: u32,
) {
    if enabled(Tp::Connect) {
        let peer = CBuf::new(format_args!("{}", peer));
        // SAFETY: `peer` is NUL-terminated and outlives the call.
        unsafe {
            bindings::rpcrdma2_trace_connect(conn, peer.as_ptr(), vers(v), send, recv, credits)
        };
    }
}

/// A connection attempt failed at `step`.
pub fn connect_error(peer: &dyn fmt::Display, step: &CStr, status: i32) {
    if enabled(Tp::ConnectError) {
        let peer = CBuf::new(format_args!("{}", peer));
        // SAFETY: both strings are NUL-terminated and outlive the call.
        unsafe {
            bindings::rpcrdma2_trace_connect_error(peer.as_ptr(), step.as_ptr().cast(), status)
        };
    }
}

/// Connection `conn` ends.
pub fn disconnect(conn: u32, reason: &CStr) {
    if enabled(Tp::Disconnect) {
        // SAFETY: `reason` is NUL-terminated and outlives the call.
        unsafe { bindings::rpcrdma2_trace_disconnect(conn, reason.as_ptr().cast()) };
    }
}

/// The keepalive probe of connection `conn`: `what` happened to it.
pub fn keepalive(conn: u32, what: &CStr) {
    if enabled(Tp::Keepalive) {
        // SAFETY: `what` is NUL-terminated and outlives the call.
        unsafe { bindings::rpcrdma2_trace_keepalive(conn, what.as_ptr().cast()) };
    }
}

/// The transport connects again; `conn` ended for `reason`.
pub fn reconnect(conn: u32, reason: &CStr) {
    if enabled(Tp::Reconnect) {
        // SAFETY: `reason` is NUL-terminated and outlives the call.
        unsafe { bindings::rpcrdma2_trace_reconnect(conn, reason.as_ptr().cast()) };
    }
}

/// The peer's RFC 8797 private data.
pub fn pvtdata(conn: u32, peer: &Peer) {
    if enabled(Tp::Pvtdata) {
        let p = peer.or_v1_defaults();
        let present = matches!(peer, Peer::Valid(_));
        // SAFETY: plain values.
        unsafe {
            bindings::rpcrdma2_trace_pvtdata(
                conn,
                present,
                p.send_size,
                p.recv_size,
                p.remote_invalidate,
            )
        };
    }
}

/// Connection `conn` settled on version `v`, `how`.
pub fn version(conn: u32, v: Protocol, how: &CStr) {
    if enabled(Tp::Version) {
        // SAFETY: `how` is NUL-terminated and outlives the call.
        unsafe { bindings::rpcrdma2_trace_version(conn, vers(v), how.as_ptr().cast()) };
    }
}

/// True if the connprop tracepoint is on.
pub fn connprop_enabled() -> bool {
    enabled(Tp::Connprop)
}

/// Transport properties (RDMA2_CONNPROP) `dir` ("sent": ours;
/// "received": the peer's).
pub fn connprop(conn: u32, dir: &CStr, p: &TransportProperties) {
    if enabled(Tp::Connprop) {
        // SAFETY: plain values; `dir` is NUL-terminated and outlives the
        // call.
        unsafe {
            bindings::rpcrdma2_trace_connprop(
                conn,
                dir.as_ptr().cast(),
                p.max_send_size,
                p.recv_buf_size,
                p.max_segment_size,
                p.max_segment_count,
                p.reverse_request_support,
            )
        };
    }
}

/// The credit window is now `credits` (after the message `xid`; 0 for an
/// asynchronous grant).
pub fn credits(conn: u32, xid: u32, credits: u32) {
    if enabled(Tp::Credits) {
        // SAFETY: plain values.
        unsafe { bindings::rpcrdma2_trace_credits(conn, xid, credits) };
    }
}

/// The marshalling decision for a Call.
#[allow(clippy::too_many_arguments)]
pub fn marshal(
    conn: u32,
    task: u32,
    xid: u32,
    v: Protocol,
    plan: &ChunkPlan,
    rpc_len: u32,
    probe: bool,
    recovery: &State,
) {
    if enabled(Tp::Marshal) {
        let hints = CBuf::new(format_args!("{}", recovery.hints()));
        let call: &CStr = match plan.call() {
            CallForm::Inline => c"inline",
            CallForm::Read { .. } => c"read",
            CallForm::Long => c"long",
        };
        let reply: &CStr = match plan.reply() {
            ReplyForm::Inline => c"inline",
            ReplyForm::Write => c"write",
            ReplyForm::Long => c"long",
        };
        let n = |r: &[Range]| u32::try_from(r.len()).unwrap_or(u32::MAX);
        // SAFETY: the strings are static and NUL-terminated.
        unsafe {
            bindings::rpcrdma2_trace_marshal(
                conn,
                task,
                xid,
                vers(v),
                call.as_ptr().cast(),
                reply.as_ptr().cast(),
                plan.header_len(),
                rpc_len,
                plan.send_layout().len(),
                n(plan.read_ranges()),
                n(plan.write_ranges()),
                n(plan.reply_ranges()),
                probe,
                recovery.resends(),
                hints.as_ptr(),
            )
        };
    }
}

/// The Send of Call `xid` is posted after `mrs` chained REG_MRs,
/// `signaled` or not, with `free` Send buffers left free.
pub fn post_send(conn: u32, task: u32, xid: u32, mrs: usize, signaled: bool, free: usize) {
    if enabled(Tp::PostSend) {
        let mrs = u32::try_from(mrs).unwrap_or(u32::MAX);
        let free = u32::try_from(free).unwrap_or(u32::MAX);
        // SAFETY: plain values.
        unsafe { bindings::rpcrdma2_trace_post_send(conn, task, xid, mrs, signaled, free) };
    }
}

/// A received message of `len` bytes, classified as `class`; `status`
/// is the errno an RPC is failed with (0 otherwise).
pub fn reply(conn: u32, xid: u32, v: Option<Protocol>, class: &CStr, len: usize, status: i32) {
    if enabled(Tp::Reply) {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        // SAFETY: `class` is NUL-terminated and outlives the call.
        unsafe {
            bindings::rpcrdma2_trace_reply(
                conn,
                xid,
                v.map_or(0, vers),
                class.as_ptr().cast(),
                len,
                status,
            )
        };
    }
}

/// The peer answered `xid` with a transport error; `recovery` is what
/// the transport does about it (`None`: the error answers no RPC and is
/// dropped).
pub fn peer_error(conn: u32, xid: u32, v: Protocol, body: &ErrorBody, recovery: Option<&Recovery>) {
    if enabled(Tp::PeerError) {
        let name = CBuf::new(format_args!("{}", body.name(v)));
        let action = match recovery {
            Some(Recovery::Resend { kind, .. }) => {
                CBuf::new(format_args!("resend:{}", kind.name()))
            }
            Some(Recovery::Fail { .. }) => CBuf::new(format_args!("fail")),
            None => CBuf::new(format_args!("drop")),
        };
        // SAFETY: `name` and `action` are NUL-terminated and outlive the
        // call.
        unsafe {
            bindings::rpcrdma2_trace_peer_error(
                conn,
                xid,
                vers(v),
                body.code(),
                name.as_ptr(),
                action.as_ptr(),
            )
        };
    }
}

/// An MR of RPC `xid` was registered.
pub fn mr_reg(conn: u32, xid: u32, handle: u32, length: u32, offset: u64) {
    if enabled(Tp::MrReg) {
        // SAFETY: plain values.
        unsafe { bindings::rpcrdma2_trace_mr_reg(conn, xid, handle, length, offset) };
    }
}

/// `n` MRs of RPC `xid` are invalidated, `how` (`remote`: `handle` by
/// the peer's Send With Invalidate; `local`; `sync`).
pub fn mr_inv(conn: u32, xid: u32, how: &CStr, handle: u32, n: u32) {
    if enabled(Tp::MrInv) {
        // SAFETY: `how` is NUL-terminated and outlives the call.
        unsafe { bindings::rpcrdma2_trace_mr_inv(conn, xid, how.as_ptr().cast(), handle, n) };
    }
}

/// A piece of continued message `xid`: `dir` is `call` (sent) or `reply`
/// (received); `offset` and `len` in the RPC message; `more`: `F_MORE`.
pub fn piece(conn: u32, xid: u32, dir: &CStr, offset: u32, len: u32, more: bool) {
    if enabled(Tp::Piece) {
        // SAFETY: `dir` is NUL-terminated and outlives the call.
        unsafe {
            bindings::rpcrdma2_trace_piece(conn, xid, dir.as_ptr().cast(), offset, len, more)
        };
    }
}

/// We sent an asynchronous credit grant (`rdma_credit` = `word`).
pub fn grant(conn: u32, word: u32) {
    if enabled(Tp::Grant) {
        let c = crate::xdr::header::Credits::from_word(word);
        // SAFETY: plain values.
        unsafe { bindings::rpcrdma2_trace_grant(conn, u32::from(c.granted), u32::from(c.max)) };
    }
}

/// A message for Call `xid` (0: a backchannel reply) waits for version 2
/// credits; `c` is the credit state that made it wait.
pub fn credit_wait(conn: u32, xid: u32, c: &crate::proto::credits::CreditState) {
    if enabled(Tp::CreditWait) {
        // SAFETY: plain values.
        unsafe {
            bindings::rpcrdma2_trace_credit_wait(
                conn,
                xid,
                c.outstanding(),
                c.limit(),
                c.consumed(),
                c.posted(),
            )
        };
    }
}

/// A reverse-direction Call `xid` of `len` bytes arrived on `conn` in
/// version `v`: `outcome` says what became of it.
pub fn bc_call(conn: u32, xid: u32, v: Option<Protocol>, len: usize, outcome: &CStr) {
    if enabled(Tp::BcCall) {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        // SAFETY: `outcome` is NUL-terminated and outlives the call.
        unsafe {
            bindings::rpcrdma2_trace_bc_call(
                conn,
                xid,
                v.map_or(0, vers),
                len,
                outcome.as_ptr().cast(),
            )
        };
    }
}

/// The reply to reverse-direction Call `xid` (`len` bytes): `outcome`.
pub fn bc_reply(conn: u32, xid: u32, v: Option<Protocol>, len: usize, outcome: &CStr) {
    if enabled(Tp::BcReply) {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        // SAFETY: `outcome` is NUL-terminated and outlives the call.
        unsafe {
            bindings::rpcrdma2_trace_bc_reply(
                conn,
                xid,
                v.map_or(0, vers),
                len,
                outcome.as_ptr().cast(),
            )
        };
    }
}
