// SPDX-License-Identifier: GPL-2.0

//! What the Linux 6.12 `kernel` crate lacks, in one place.
//!
//! Each item says what replaces it and from which kernel, so that moving
//! the module to a newer base is a matter of deleting this directory's
//! entries one by one. "Not in 6.12" was checked against `rust/kernel/`
//! of 6.12.117; a later version named here was not re-checked in its
//! source, so confirm it before deleting.
//!
//! | item | 6.12 lacks | replaced by |
//! |------|------------|-------------|
//! | [`kunit`] (KUnit variant only) | `#[kunit_tests]` (7.3: used for [`kunit_suite!`]); parameterized Rust cases (7.3 neither) | `kernel::prelude::kunit_tests` (6.15) |
//! | [`errno`] | `EPROTONOSUPPORT`, `EMSGSIZE`, `ENOTCONN`, `ETIMEDOUT` ... in `kernel::error::code` | the same names in `kernel::error::code`, once listed there |
//! | [`print::ratelimit`] | rate-limited printing (`pr_*_ratelimited`) | the kernel crate's rate-limited print macros, once there |
//! | [`params`] | parameters in `module!` (the C side declares them in `shim.c`) | `module!` parameters (`rust/kernel/module_param.rs`, after 6.12; needs `bool`) |
//! | [`init`] | `kernel::init::{PinInit, init_array_from_fn}` are not in `kernel::init` on 7.3 | `pin_init::...` |
//! | [`fmt`] | 7.3's print macros take `kernel::fmt::Display` for `{}` | `kernel::fmt::Display` impls |
//! | [`vec`] | `KVec::set_len` (6.12) is `KVec::clear`/`inc_len` on 7.3 | `KVec::clear` |
//! | [`ib`] | `ib_device_attr` limits are `int` on 6.12, `u32` on 7.3 | `u32` accessors |
//! | [`foreign`] | `ForeignOwnable`'s pointer is `*const c_void` on 6.12, `*mut c_void` on 7.3 | `ForeignOwnable::into_foreign` |
//! | [`set_once`] | `kernel::sync::SetOnce` (7.3 has it, from 6.17) | `kernel::sync::SetOnce` |
//! | [`rpcrdma2_module!`] | `module!`'s `author:` is `authors: [..]` on 7.3 | `module!` with `authors` |
//!
//! Items that differ between 6.12 and 7.3 are chosen by the cfg
//! `rpcrdma2_kernel_7_3`, which `Kbuild` sets for 7.3 or later.
//!
//! `ERR_PTR` decoding is not here: 6.12 has `kernel::error::from_err_ptr`,
//! which the module uses. Nor are spinlocks (6.12's `kernel::bindings` has
//! the `spin_lock`/`spin_unlock` helpers the module uses on SUNRPC's C
//! locks) or `PAGE_SIZE` (`kernel::page`).

pub mod errno;
pub mod fmt;
pub mod foreign;
pub mod ib;
pub mod init;
// The KUnit kit: in the KUnit variant only, before the suites that use its
// macros.
#[cfg(rpcrdma2_kunit)]
#[macro_use]
pub mod kunit;
pub mod params;
pub mod print;
pub mod set_once;
pub mod vec;

/// `module!` with one author: the key is `author` on 6.12 and `authors` (a
/// list) on 7.3. The values pass through as single tokens (`tt`), which
/// both versions' `module!` parse as the literals they are.
#[cfg(not(rpcrdma2_kernel_7_3))]
macro_rules! rpcrdma2_module {
    (type: $t:tt, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        kernel::prelude::module! {
            type: $t,
            name: $n,
            author: $a,
            description: $d,
            license: $l,
        }
    };
}

/// `module!` with one author: the key is `author` on 6.12 and `authors` (a
/// list) on 7.3. The values pass through as single tokens (`tt`), which
/// both versions' `module!` parse as the literals they are.
#[cfg(rpcrdma2_kernel_7_3)]
macro_rules! rpcrdma2_module {
    (type: $t:tt, name: $n:tt, author: $a:tt, description: $d:tt, license: $l:tt $(,)?) => {
        kernel::prelude::module! {
            type: $t,
            name: $n,
            authors: [$a],
            description: $d,
            license: $l,
        }
    };
}
