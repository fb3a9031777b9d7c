// SPDX-License-Identifier: GPL-2.0

//! KUnit suites that run when the module is loaded (with `CONFIG_KUNIT`).

use crate::kunit::TestResult;
use crate::sunrpc;
use kernel::c_str;

use crate::xdr::selftest::{SelfTest, SELF_TESTS};

/// Each of the codec's known-answer self tests is a KUnit parameter.
impl crate::kunit::TableTest for SelfTest {
    fn name(&self) -> &'static core::ffi::CStr {
        self.c_name
    }

    fn run(&self) -> TestResult {
        (self.run)().map_err(|f| {
            crate::kunit::report(
                self.name,
                "xdr/src/codec/selftest.rs",
                f.line,
                format_args!("check failed: {}", f.what),
            );
            crate::kunit::Failure
        })
    }
}

kunit_table_suite!(rpcrdma2_xdr, codec_self_tests, SelfTest, SELF_TESTS);

kunit_suite!(rpcrdma2_class {
    netid_rdma_is_ours,
    netid_rdma6_is_ours,
    unknown_netid_is_enoent,
    setup_fails_until_data_path,
});

/// `proto=rdma` resolves to ident 256 while the module is loaded.
fn netid_rdma_is_ours() -> TestResult {
    kassert_eq!(sunrpc::find_transport_ident(c_str!("rdma")), Ok(256));
    Ok(())
}

/// `proto=rdma6` (IPv6) resolves to the same class.
fn netid_rdma6_is_ours() -> TestResult {
    kassert_eq!(sunrpc::find_transport_ident(c_str!("rdma6")), Ok(256));
    Ok(())
}

/// A netid nobody registers is reported as ENOENT, not as ours.
fn unknown_netid_is_enoent() -> TestResult {
    kassert_eq!(
        sunrpc::find_transport_ident(c_str!("rdma2-no-such-netid")),
        Err(kernel::error::code::ENOENT)
    );
    Ok(())
}

/// Until the data path exists, setup fails with exactly EPROTONOSUPPORT,
/// passed back through the C ABI as an `ERR_PTR`.
fn setup_fails_until_data_path() -> TestResult {
    let args = crate::bindings::xprt_create {
        ident: sunrpc::XPRT_TRANSPORT_RDMA,
        ..Default::default()
    };
    kassert_eq!(
        sunrpc::call_class_setup(&args).err(),
        Some(crate::errno::eprotonosupport())
    );
    Ok(())
}
