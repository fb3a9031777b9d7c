// SPDX-License-Identifier: GPL-2.0

//! `struct rpc_xprt` behind the safe [`Xprt`]: its state bits, locks,
//! counters and the SUNRPC calls a transport makes on it.
//!
//! The other jobs of the SUNRPC client transport switch live next door:
//! requests and slots in [`super::rqst`], the `rpc_xprt_ops` table and the
//! [`Transport`](super::transport::Transport) trait it calls in
//! [`super::transport`], and the transport's allocation in
//! [`super::xprt_box`].

use crate::bindings;
use core::ptr::addr_of_mut;
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
pub(super) unsafe fn spin_lock(lock: *mut bindings::spinlock_t) {
    // SAFETY: per the function's contract; the module's and the kernel
    // crate's bindings describe the same C `spinlock_t`.
    unsafe { kernel::bindings::spin_lock(lock.cast()) }
}

/// `spin_unlock()` of a lock taken with [`spin_lock`].
///
/// # Safety
///
/// The caller holds `lock`, taken with [`spin_lock`].
pub(super) unsafe fn spin_unlock(lock: *mut bindings::spinlock_t) {
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

    /// Whether requests wait for replies (SUNRPC's receive queue is not
    /// empty); a snapshot, read without SUNRPC's lock.
    pub fn awaiting_replies(&self) -> bool {
        // SAFETY: the xprt is alive (type invariant).
        unsafe { bindings::rpcrdma2_shim_xprt_awaiting_replies(self.as_raw()) }
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
    pub fn dst_addr(&self) -> Result<crate::net::SockAddr> {
        // SAFETY: the xprt is alive; `addr` is set at creation and only
        // its port changes later (set_port, serialised by SUNRPC).
        crate::net::SockAddr::from_storage(unsafe { &(*self.as_raw()).addr })
    }

    /// The network namespace the transport was created in.
    pub fn net(&self) -> &crate::net::Net {
        // SAFETY: the xprt holds a reference on its namespace for its
        // whole life (xprt_alloc's get_net, put in xprt_free).
        unsafe { crate::net::Net::from_raw((*self.as_raw()).xprt_net) }
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
        let hz = super::HZ;
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
