// SPDX-License-Identifier: GPL-2.0

//! The module's parameters. 6.12's `module!` declares none, so
//! `rpcrdma/shim.c` declares them with `module_param()` and these read
//! them. Replaced by `module!` parameters once the kernel crate has them
//! (`rust/kernel/module_param.rs`, after 6.12; they must support `bool`).

use crate::bindings;

/// `force_v1`: speak RPC-over-RDMA version 1 only (read at connect).
pub fn force_v1() -> bool {
    // SAFETY: FFI call without preconditions (a READ_ONCE of a static).
    unsafe { bindings::rpcrdma2_shim_param_force_v1() }
}

/// `frwr`: register chunks with FRWR; off, connections are inline only
/// (read at connect).
pub fn frwr() -> bool {
    // SAFETY: FFI call without preconditions (a READ_ONCE of a static).
    unsafe { bindings::rpcrdma2_shim_param_frwr() }
}

/// `cont_reply_pieces`: on version 2 with FRWR, Replies up to this many
/// continued pieces get no Reply chunk (read at mount).
pub fn cont_reply_pieces() -> u32 {
    // SAFETY: FFI call without preconditions (a READ_ONCE of a static).
    unsafe { bindings::rpcrdma2_shim_param_cont_reply_pieces() }
}

/// `ddp`: direct data placement allowed (read per RPC).
pub fn ddp() -> bool {
    // SAFETY: FFI call without preconditions (a READ_ONCE of a static).
    unsafe { bindings::rpcrdma2_shim_param_ddp() }
}

/// `max_mrs`: MRs per connection for chunks; 0 for the default sizing
/// (read at connect).
pub fn max_mrs() -> u32 {
    // SAFETY: FFI call without preconditions (a READ_ONCE of a static).
    unsafe { bindings::rpcrdma2_shim_param_max_mrs() }
}
