// SPDX-License-Identifier: GPL-2.0

//! `ForeignOwnable`'s raw pointer: `*const c_void` on 6.12 (what
//! `into_foreign` returns and `from_foreign`/`borrow` take), `*mut c_void`
//! on 7.3. The module keeps `*mut c_void`, the type of the C fields that
//! hold it (`rdma_cm_id::context`); a `*mut` passed where 6.12 takes a
//! `*const` coerces, so only `into_foreign` needs a shim. Replaced by
//! `ForeignOwnable::into_foreign` once 6.12 is not built.

use core::ffi::c_void;
use kernel::types::ForeignOwnable;

/// `v.into_foreign()` as a `*mut c_void` on both kernels.
#[inline]
pub fn into_foreign<T: ForeignOwnable>(v: T) -> *mut c_void {
    #[cfg(not(rpcrdma2_kernel_7_3))]
    let p = v.into_foreign().cast_mut();
    #[cfg(rpcrdma2_kernel_7_3)]
    let p = v.into_foreign();
    p
}
