// SPDX-License-Identifier: GPL-2.0

//! Raw C bindings for sunrpc, ib_core and rdma_cm.
//!
//! Generated at build time by the module-local bindgen step in `Kbuild`
//! from `rpcrdma/bindings.h`; the output is a build product and is not
//! committed. Only the wrapper modules (`sunrpc`, `ib`) use these directly.

// Besides clippy::all, the lints 7.3's kernel Makefile adds (cast_lossless,
// ptr_as_ptr, ...) fire on bindgen's output (bitfield accessors, casts in
// generated helpers): allowed here, for both kernels.
#[allow(
    dead_code,
    clippy::all,
    clippy::as_ptr_cast_mut,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ptr_cast_constness,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unnecessary_transmutes
)]
mod raw {
    use kernel::ffi;

    // The kernel's bindgen parameters blocklist these; define them as the
    // kernel crate does.
    type __kernel_size_t = usize;
    type __kernel_ssize_t = isize;
    type __kernel_ptrdiff_t = isize;

    include!("bindings_generated.rs");
}

pub use raw::*;
