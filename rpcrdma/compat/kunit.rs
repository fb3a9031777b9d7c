// SPDX-License-Identifier: GPL-2.0

//! KUnit suites in Rust, one source form for Linux 6.12 and 7.3.
//!
//! A suite is declared with [`kunit_suite!`] (a list of test functions)
//! or [`kunit_table_suite!`] (one parameterized case over a static table);
//! what they expand to is chosen by the cfg `rpcrdma2_kernel_7_3`:
//!
//! - 7.3: [`kunit_suite!`] is the kernel's own `#[kunit_tests(suite)]`
//!   (`kernel::prelude::kunit_tests`, since 6.15) on a module of `#[test]`
//!   functions that call the listed cases. `#[kunit_tests]` has no
//!   parameterized cases, so [`kunit_table_suite!`] builds its case with
//!   the kernel's `kernel::kunit::kunit_case()` plus a `generate_params`
//!   (7.3's, which takes the running test first) and registers the suite
//!   with the kernel's `kernel::kunit_unsafe_test_suite!`.
//! - 6.12, which has neither, gets what C's `kunit_test_suites()` builds:
//!   a zero-terminated `kunit_case` array with a C-ABI trampoline per case,
//!   a `kunit_suite` pointing at it, and a pointer to the suite in the
//!   `.kunit_test_suites` section, which KUnit runs when the module is
//!   loaded and reports as KTAP in the kernel log.
//!
//! A test case is a plain `fn() -> TestResult`. The [`kassert!`] and
//! [`kassert_eq!`] macros print a KUnit-style failure message and return
//! early, so destructors run; the case is then marked failed: on 7.3 by
//! the `#[kunit_tests]` wrapper, which asserts (through KUnit) that the
//! case returned `Ok`; on 6.12 and for table entries by [`run_case`],
//! exactly as `kunit_set_failure()` does.

use core::fmt;
use kernel::bindings;

/// A failed test case; the failure has already been reported.
#[derive(Debug)]
pub struct Failure;

/// What a test case returns.
pub type TestResult = core::result::Result<(), Failure>;

/// Reports a failed assertion in KUnit's format.
pub fn report(case: &str, file: &str, line: u32, args: fmt::Arguments<'_>) {
    kernel::kunit::err(format_args!(
        "    # {}: ASSERTION FAILED at {}:{}\n    {}\n",
        case, file, line, args
    ));
}

/// Runs one case and records its outcome in the running test.
///
/// # Safety
///
/// `test` must be the `struct kunit` KUnit passed to the case.
pub unsafe fn run_case(test: *mut bindings::kunit, case: impl FnOnce() -> TestResult) {
    if case().is_err() {
        // SAFETY: `test` is valid (function precondition); this is
        // `kunit_set_failure()`, a WRITE_ONCE of the status.
        unsafe {
            core::ptr::addr_of_mut!((*test).status)
                .write_volatile(bindings::kunit_status_KUNIT_FAILURE)
        };
    }
}

/// A table-driven test: one entry of a parameterized KUnit case.
///
/// [`kunit_table_suite!`] runs every entry of a `&'static [T]` as one
/// parameter of a single case, so each entry is its own KTAP subtest.
pub trait TableTest: Sync + 'static {
    /// The entry's name, reported as the parameter description.
    fn name(&self) -> &'static core::ffi::CStr;
    /// Runs the entry; on failure it must already have reported why.
    fn run(&self) -> TestResult;
}

/// `kunit_case::generate_params` over a static table: returns the entry
/// after `prev` (the first for NULL) and writes its name into `desc`.
///
/// # Safety
///
/// `prev` is NULL or a pointer this function returned for the same
/// `table`; `desc` points to `KUNIT_PARAM_DESC_SIZE` writable bytes.
pub unsafe fn table_next<T: TableTest>(
    table: &'static [T],
    prev: *const core::ffi::c_void,
    desc: *mut kernel::ffi::c_char,
) -> *const core::ffi::c_void {
    let next = if prev.is_null() {
        0
    } else {
        let size = core::mem::size_of::<T>().max(1);
        (prev as usize - table.as_ptr() as usize) / size + 1
    };
    let Some(entry) = table.get(next) else {
        return core::ptr::null();
    };
    let name = entry.name().to_bytes();
    let len = name.len().min(bindings::KUNIT_PARAM_DESC_SIZE as usize - 1);
    // SAFETY: `desc` has KUNIT_PARAM_DESC_SIZE bytes (precondition) and
    // `len + 1` does not exceed that; the source is a valid `&[u8]`.
    unsafe {
        core::ptr::copy_nonoverlapping(name.as_ptr(), desc.cast::<u8>(), len);
        desc.add(len).write(0);
    }
    core::ptr::from_ref(entry).cast()
}

/// `kunit_case::run_case` for a table: runs the current parameter.
///
/// # Safety
///
/// `test` is the running test, whose `param_value` was returned by
/// [`table_next`] for a `&'static [T]`.
pub unsafe fn table_run<T: TableTest>(test: *mut bindings::kunit) {
    // SAFETY: `test` is valid and `param_value` points into a
    // `&'static [T]` (precondition).
    let entry = unsafe { &*(*test).param_value.cast::<T>() };
    // SAFETY: `test` is the running test (precondition).
    unsafe { run_case(test, || entry.run()) };
}

/// Turns a suite name into the fixed-size, NUL-padded array `kunit_suite`
/// holds. Fails the build for names of 256 bytes or more.
#[cfg(not(rpcrdma2_kernel_7_3))]
pub const fn suite_name(name: &str) -> [kernel::ffi::c_char; 256] {
    let bytes = name.as_bytes();
    assert!(bytes.len() < 256, "KUnit suite name too long");
    let mut out = [0; 256];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i] as kernel::ffi::c_char;
        i += 1;
    }
    out
}

/// Asserts that a condition holds; on failure reports it and fails the case.
#[macro_export]
macro_rules! kassert {
    ($cond:expr $(,)?) => {
        if !$cond {
            $crate::compat::kunit::report(
                module_path!(),
                file!(),
                line!(),
                format_args!("Expected {} to be true", stringify!($cond)),
            );
            return Err($crate::compat::kunit::Failure);
        }
    };
}

/// Asserts that two expressions are equal; on failure reports both values.
#[macro_export]
macro_rules! kassert_eq {
    ($left:expr, $right:expr $(,)?) => {
        match (&$left, &$right) {
            (l, r) => {
                if !(*l == *r) {
                    $crate::compat::kunit::report(
                        module_path!(),
                        file!(),
                        line!(),
                        format_args!(
                            "Expected {} == {}\n        left: {:?}\n        right: {:?}",
                            stringify!($left),
                            stringify!($right),
                            l,
                            r
                        ),
                    );
                    return Err($crate::compat::kunit::Failure);
                }
            }
        }
    };
}

/// The `kunit_suite` for the `CASES` array in scope and its entry in
/// `.kunit_test_suites` (what C's `kunit_test_suites()` emits). Internal
/// to [`kunit_suite!`] and [`kunit_table_suite!`] on 6.12.
#[cfg(not(rpcrdma2_kernel_7_3))]
#[doc(hidden)]
#[macro_export]
macro_rules! __kunit_suite_entry {
    ($suite:ident) => {
        static mut SUITE: kernel::bindings::kunit_suite = kernel::bindings::kunit_suite {
            name: $crate::compat::kunit::suite_name(stringify!($suite)),
            test_cases: core::ptr::addr_of_mut!(CASES).cast(),
            // SAFETY: all-zero is the valid "unset" value of the rest.
            ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
        };

        #[used]
        #[link_section = ".kunit_test_suites"]
        static mut ENTRY: *const kernel::bindings::kunit_suite = core::ptr::addr_of!(SUITE);
    };
}

/// Declares a KUnit suite with one parameterized case that runs every
/// entry of a static table (see [`TableTest`]).
///
/// ```ignore
/// kunit_table_suite!(rpcrdma2_xdr, codec_self_tests, SelfTestCase, TABLE);
/// ```
#[macro_export]
macro_rules! kunit_table_suite {
    ($suite:ident, $case:ident, $ty:ty, $table:expr) => {
        #[allow(non_snake_case, missing_docs)]
        mod $suite {
            use super::*;
            use kernel::bindings::{kunit, kunit_case};

            const TABLE: &'static [$ty] = $table;

            /// `generate_params` over the table.
            ///
            /// # Safety
            ///
            /// Called by KUnit with its previous parameter and a
            /// `KUNIT_PARAM_DESC_SIZE` buffer.
            #[cfg(not(rpcrdma2_kernel_7_3))]
            unsafe extern "C" fn params(
                prev: *const core::ffi::c_void,
                desc: *mut kernel::ffi::c_char,
            ) -> *const core::ffi::c_void {
                // SAFETY: KUnit honours `table_next`'s contract.
                unsafe { $crate::compat::kunit::table_next(TABLE, prev, desc) }
            }

            /// `generate_params` over the table (7.3 passes the test first).
            ///
            /// # Safety
            ///
            /// Called by KUnit with its previous parameter and a
            /// `KUNIT_PARAM_DESC_SIZE` buffer.
            #[cfg(rpcrdma2_kernel_7_3)]
            unsafe extern "C" fn params(
                _test: *mut kunit,
                prev: *const core::ffi::c_void,
                desc: *mut kernel::ffi::c_char,
            ) -> *const core::ffi::c_void {
                // SAFETY: KUnit honours `table_next`'s contract.
                unsafe { $crate::compat::kunit::table_next(TABLE, prev, desc) }
            }

            /// Runs the current table entry.
            ///
            /// # Safety
            ///
            /// Called by KUnit with the running test.
            unsafe extern "C" fn run(test: *mut kunit) {
                // SAFETY: `param_value` came from `params` over TABLE.
                unsafe { $crate::compat::kunit::table_run::<$ty>(test) }
            }

            #[cfg(not(rpcrdma2_kernel_7_3))]
            static mut CASES: [kunit_case; 2] = [
                kunit_case {
                    run_case: Some(run),
                    name: concat!(stringify!($case), "\0").as_ptr().cast(),
                    generate_params: Some(params),
                    // SAFETY: all-zero is the valid "unset" value of the rest.
                    ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
                },
                // SAFETY: an all-zero case terminates the array.
                unsafe { core::mem::MaybeUninit::zeroed().assume_init() },
            ];

            #[cfg(not(rpcrdma2_kernel_7_3))]
            $crate::__kunit_suite_entry!($suite);

            /// The case's name.
            #[cfg(rpcrdma2_kernel_7_3)]
            const NAME: &core::ffi::CStr = match core::ffi::CStr::from_bytes_with_nul(
                concat!(stringify!($case), "\0").as_bytes(),
            ) {
                Ok(name) => name,
                Err(_) => panic!("KUnit case name with a NUL byte"),
            };

            #[cfg(rpcrdma2_kernel_7_3)]
            static mut CASES: [kunit_case; 2] = [
                kunit_case {
                    generate_params: Some(params),
                    ..kernel::kunit::kunit_case(NAME, run)
                },
                pin_init::zeroed(),
            ];

            #[cfg(rpcrdma2_kernel_7_3)]
            kernel::kunit_unsafe_test_suite!($suite, CASES);
        }
    };
}

/// Declares a KUnit suite from test functions in the current module.
///
/// ```ignore
/// kunit_suite!(rpcrdma2_example { case_one, case_two });
/// fn case_one() -> TestResult { kassert!(1 + 1 == 2); Ok(()) }
/// ```
///
/// Creates a module named after the suite holding the C-ABI trampolines,
/// the case array, the suite and its `.kunit_test_suites` entry (6.12).
#[cfg(not(rpcrdma2_kernel_7_3))]
#[macro_export]
macro_rules! kunit_suite {
    ($suite:ident { $($case:ident),+ $(,)? }) => {
        #[allow(non_snake_case, missing_docs)]
        mod $suite {
            use kernel::bindings::{kunit, kunit_case};

            $(
                /// KUnit entry point for the case of the same name.
                ///
                /// # Safety
                ///
                /// Called by KUnit with the running test.
                unsafe extern "C" fn $case(test: *mut kunit) {
                    // SAFETY: KUnit passes the running test.
                    unsafe { $crate::compat::kunit::run_case(test, super::$case) }
                }
            )+

            const N: usize = [$(stringify!($case)),+].len();

            const fn case(
                name: &'static core::ffi::CStr,
                run: unsafe extern "C" fn(*mut kunit),
            ) -> kunit_case {
                kunit_case {
                    run_case: Some(run),
                    name: name.as_ptr().cast(),
                    // SAFETY: all-zero is the valid "unset" value of the
                    // remaining fields, as in C's designated initialisers.
                    ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
                }
            }

            static mut CASES: [kunit_case; N + 1] = [
                $(case(
                    // SAFETY: the literal is NUL-terminated with no interior NUL.
                    unsafe {
                        core::ffi::CStr::from_bytes_with_nul_unchecked(
                            concat!(stringify!($case), "\0").as_bytes(),
                        )
                    },
                    $case,
                ),)+
                // SAFETY: an all-zero case terminates the array.
                unsafe { core::mem::MaybeUninit::zeroed().assume_init() },
            ];

            $crate::__kunit_suite_entry!($suite);
        }
    };
}

/// Declares a KUnit suite from test functions in the current module.
///
/// ```ignore
/// kunit_suite!(rpcrdma2_example { case_one, case_two });
/// fn case_one() -> TestResult { kassert!(1 + 1 == 2); Ok(()) }
/// ```
///
/// Creates a module named after the suite, under the kernel's
/// `#[kunit_tests]`, with a `#[test]` function per case that runs it (7.3).
#[cfg(rpcrdma2_kernel_7_3)]
#[macro_export]
macro_rules! kunit_suite {
    ($suite:ident { $($case:ident),+ $(,)? }) => {
        #[kernel::prelude::kunit_tests($suite)]
        mod $suite {
            $(
                #[test]
                fn $case() -> $crate::compat::kunit::TestResult {
                    super::$case()
                }
            )+
        }
    };
}
