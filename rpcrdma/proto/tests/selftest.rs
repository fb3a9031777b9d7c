// SPDX-License-Identifier: GPL-2.0

//! Runs the core-only self tests (the ones the kernel also runs under
//! KUnit) one by one, so a failure names the test and the line.

use rpcrdma_proto::selftest::SELF_TESTS;

#[test]
fn self_tests() {
    let mut failed = Vec::new();
    for t in SELF_TESTS {
        if let Err(f) = (t.run)() {
            failed.push(format!("{}: selftest.rs:{}: {}", t.name, f.line, f.what));
        }
    }
    assert!(
        failed.is_empty(),
        "self tests failed:\n{}",
        failed.join("\n")
    );
}

#[test]
fn run_all_counts() {
    assert_eq!(rpcrdma_proto::selftest::run_all(), Ok(SELF_TESTS.len()));
}

#[test]
fn kunit_case_names() {
    let mut seen = std::collections::HashSet::new();
    for t in SELF_TESTS {
        assert_eq!(t.c_name.to_str().unwrap(), t.name);
        assert!(seen.insert(t.name), "duplicate {}", t.name);
        assert!(t.name.len() < 256);
    }
}
