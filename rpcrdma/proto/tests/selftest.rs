// SPDX-License-Identifier: GPL-2.0

//! Runs the core-only self tests (the ones the kernel also runs under
//! KUnit) one by one, so a failure names the test and the line.

use rpcrdma_proto::selftest::SELF_TESTS;

#[path = "common/selftests.rs"]
mod selftests;

#[test]
fn self_tests() {
    selftests::check_table(SELF_TESTS, rpcrdma_proto::selftest::run_all);
}
