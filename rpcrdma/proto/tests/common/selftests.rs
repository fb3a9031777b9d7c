// SPDX-License-Identifier: GPL-2.0

//! Shared by the host runners of the core-only self-test tables (the
//! ones the kernel runs under KUnit): every case one by one, so that a
//! failure names the test, its file and line; the table's `run_all`; and
//! the KUnit case names (valid, unique, NUL-terminated alike).

use rpcrdma_proto::xdr::selftest::{Failure, SelfTest};

/// Runs `table` case by case, then through `run_all`, and checks the
/// case names.
pub fn check_table(table: &[SelfTest], run_all: fn() -> Result<usize, (&'static str, Failure)>) {
    let mut failed = Vec::new();
    for t in table {
        if let Err(f) = (t.run)() {
            failed.push(format!("{}: {}:{}: {}", t.name, t.file, f.line, f.what));
        }
    }
    assert!(
        failed.is_empty(),
        "self tests failed:\n{}",
        failed.join("\n")
    );
    assert_eq!(run_all(), Ok(table.len()));
    let mut seen = std::collections::HashSet::new();
    for t in table {
        assert_eq!(t.c_name.to_str().unwrap(), t.name);
        assert!(seen.insert(t.name), "duplicate {}", t.name);
        assert!(t.name.len() < 256);
    }
}
