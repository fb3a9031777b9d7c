// SPDX-License-Identifier: GPL-2.0

//! Fault injection: the points where tests make the transport fail on
//! purpose, each a kernel `fault_attr` under
//! `/sys/kernel/debug/rpcrdma2/` (`probability`, `interval`, `times`,
//! ...; see the kernel's Documentation/fault-injection/). They exist only
//! in a kernel with `CONFIG_FAULT_INJECTION_DEBUG_FS`; elsewhere no point
//! ever fires. Documentation/testing.rst lists the tests that use them.

use crate::bindings;

/// An injection point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Point {
    /// `fail_send_buf`: a Call finds no free Send buffer (as when every
    /// one is posted), so the transport waits for buffer space.
    SendBuf = bindings::rpcrdma2_fault_RPCRDMA2_FAULT_SEND_BUF,
    /// `fail_post_send`: the post of a Call's Send (with the REG_MRs
    /// chained before it) fails, as a post to a broken QP does.
    PostSend = bindings::rpcrdma2_fault_RPCRDMA2_FAULT_POST_SEND,
    /// `hold_conn`: a request's `buf_free` takes a reference to the
    /// current connection and holds it 2 s, whether or not the request
    /// has MRs to release (as an abandoned RPC's release on a slow
    /// invalidation would), so that the connection outlives a disconnect
    /// and a reconnect.
    HoldConn = bindings::rpcrdma2_fault_RPCRDMA2_FAULT_HOLD_CONN,
    /// `delay_flush`: the handler of a flushed Receive sleeps 2 s before
    /// it acts (as on a busy completion queue).
    DelayFlush = bindings::rpcrdma2_fault_RPCRDMA2_FAULT_DELAY_FLUSH,
}

/// Whether `p` fires now.
#[inline]
pub fn fires(p: Point) -> bool {
    // SAFETY: FFI call without preconditions (`should_fail` of a static
    // `fault_attr`, or `false`).
    unsafe { bindings::rpcrdma2_shim_should_fail(p as u32) }
}

/// Sleeps `ms` milliseconds where point `p` fires (process context).
pub fn delay_if(p: Point, ms: u32) {
    if fires(p) {
        sleep_ms(ms);
    }
}

/// Sleeps `ms` milliseconds (process context), for a point that fired.
pub fn sleep_ms(ms: u32) {
    // SAFETY: FFI call; callers are in process context (may sleep).
    unsafe { bindings::msleep(ms) };
}

/// Keeps the debugfs directory of the points while the module is loaded.
pub struct Registration;

impl Registration {
    /// Creates the points' debugfs files (nothing if debugfs is off).
    pub fn register() -> Self {
        // SAFETY: FFI call without preconditions; undone by `drop`.
        unsafe { bindings::rpcrdma2_shim_faults_init() };
        Registration
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: FFI call without preconditions (removes what `register`
        // created, if anything).
        unsafe { bindings::rpcrdma2_shim_faults_exit() };
    }
}
