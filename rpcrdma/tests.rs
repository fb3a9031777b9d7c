// SPDX-License-Identifier: GPL-2.0

//! KUnit suites that run when the module's KUnit variant is loaded
//! (`cfg(rpcrdma2_kunit)`, built by `make modules-kunit`).

use crate::compat::kunit::{Failure as TestFailure, TestResult};
use crate::sunrpc;
use crate::sunrpc::xprt_box::Unpublished;
use crate::transport::RdmaXprt;
use kernel::c_str;

use crate::proto::connprop::selftest::SELF_TESTS as CONNPROP_SELF_TESTS;
use crate::proto::recovery::selftest::SELF_TESTS as RECOVERY_SELF_TESTS;
use crate::proto::selftest::SELF_TESTS as PROTO_SELF_TESTS;
use crate::xdr::selftest::{SelfTest, SELF_TESTS};

/// Each self test of the codec and of the protocol logic is a KUnit
/// parameter.
impl crate::compat::kunit::TableTest for SelfTest {
    fn name(&self) -> &'static core::ffi::CStr {
        self.c_name
    }

    fn run(&self) -> TestResult {
        (self.run)().map_err(|f| {
            crate::compat::kunit::report(
                self.name,
                self.file,
                f.line,
                format_args!("check failed: {}", f.what),
            );
            crate::compat::kunit::Failure
        })
    }
}

kunit_table_suite!(rpcrdma2_xdr, codec_self_tests, SelfTest, SELF_TESTS);

kunit_table_suite!(rpcrdma2_proto, proto_self_tests, SelfTest, PROTO_SELF_TESTS);

kunit_table_suite!(
    rpcrdma2_recovery,
    recovery_self_tests,
    SelfTest,
    RECOVERY_SELF_TESTS
);

kunit_table_suite!(
    rpcrdma2_connprop,
    connprop_self_tests,
    SelfTest,
    CONNPROP_SELF_TESTS
);

kunit_suite!(rpcrdma2_xprt {
    create_formats_ipv4_addresses,
    slots_cycle_through_ops_table,
    slot_reset_leaves_rq_cong_to_reset_cong,
    connect_timeout_shortens_rpc_timeout,
    hz_is_the_kernels,
    close_reason_first_cause_flushed_gives_way,
    frwr_sizing_of_the_device,
    cm_unreachable_timeout_is_etimedout,
    slot_owners_follow_their_connection,
});

/// `conn::SlotOwners`: a slot holds registrations from the claim of the
/// connection that made it active until that same connection's disown;
/// another connection's disown (an older one draining late) leaves it;
/// a slot beyond the table is not known, so `buf_free` looks.
fn slot_owners_follow_their_connection() -> TestResult {
    let o = crate::conn::SlotOwners::new(4).map_err(|_| TestFailure)?;
    kassert!(!o.may_hold(1));
    o.test_claim(1, 7);
    kassert!(o.may_hold(1));
    kassert!(!o.may_hold(0) && !o.may_hold(2));
    o.test_disown(1, 8);
    kassert!(o.may_hold(1));
    // Connection 9 sent the RPC again; 7's late drain must not clear it.
    o.test_claim(1, 9);
    o.test_disown(1, 7);
    kassert!(o.may_hold(1));
    o.test_disown(1, 9);
    kassert!(!o.may_hold(1));
    kassert!(o.may_hold(4));
    Ok(())
}

fn test_xprt() -> Result<
    (
        core::pin::Pin<kernel::alloc::KBox<sunrpc::testing::TestCreateArgs>>,
        Unpublished<RdmaXprt>,
    ),
    TestFailure,
> {
    // 192.0.2.1 (TEST-NET-1): never contacted, nothing connects here.
    let args =
        sunrpc::testing::TestCreateArgs::ipv4(0xc000_0201, 20049).map_err(|_| TestFailure)?;
    let x = crate::transport::create(&args.get()).map_err(|_| TestFailure)?;
    let x = Unpublished::from_new(x);
    Ok((args, x))
}

/// A new transport carries the display strings SUNRPC and mountstats use.
fn create_formats_ipv4_addresses() -> TestResult {
    use crate::bindings as b;
    let (_args, x) = test_xprt()?;
    kassert_eq!(
        x.display(b::rpc_display_format_t_RPC_DISPLAY_ADDR),
        Some("192.0.2.1")
    );
    kassert_eq!(
        x.display(b::rpc_display_format_t_RPC_DISPLAY_PORT),
        Some("20049")
    );
    kassert_eq!(
        x.display(b::rpc_display_format_t_RPC_DISPLAY_HEX_ADDR),
        Some("c0000201")
    );
    kassert_eq!(
        x.display(b::rpc_display_format_t_RPC_DISPLAY_HEX_PORT),
        Some("4e51")
    );
    kassert_eq!(
        x.display(b::rpc_display_format_t_RPC_DISPLAY_PROTO),
        Some("rdma")
    );
    kassert_eq!(
        x.display(b::rpc_display_format_t_RPC_DISPLAY_NETID),
        Some("rdma")
    );
    kassert!(!x.get().xprt().connected());
    Ok(())
}

/// Every request slot can be taken and returned through the ops table,
/// and the pool is whole again afterwards (destroy checks it).
fn slots_cycle_through_ops_table() -> TestResult {
    let (_args, x) = test_xprt()?;
    for _ in 0..(2 * crate::transport::DEFAULT_MAX_REQUESTS) {
        kassert!(x.cycle_slot());
    }
    kassert_eq!(
        x.get().data.free_slots(),
        usize::from(crate::transport::DEFAULT_MAX_REQUESTS)
    );
    Ok(())
}

/// A slot given back is zeroed but for `rq_cong`, the one field another
/// context may store to while the slot is free: `reset_slots_cong` clears
/// it, under `transport_lock`, on free slots as on held ones. (SUNRPC's
/// `xprt_release` clears it before `free_slot`; `with_slots` does not.)
fn slot_reset_leaves_rq_cong_to_reset_cong() -> TestResult {
    let (_args, x) = test_xprt()?;
    let n = usize::from(crate::transport::DEFAULT_MAX_REQUESTS);
    kassert_eq!(x.get().data.free_slots(), n);
    let took = x
        .with_slots(n, |rq| {
            rq.rq_cong = 1;
            rq.rq_xid = 0x1234_5678;
            rq.rq_retries = 3;
        })
        .map_err(|_| TestFailure)?;
    kassert_eq!(took, n);
    let (mut cong, mut zeroed) = (0, 0);
    x.with_slots(n, |rq| {
        cong += usize::from(rq.rq_cong == 1);
        zeroed += usize::from(rq.rq_xid == 0 && rq.rq_retries == 0);
    })
    .map_err(|_| TestFailure)?;
    kassert_eq!((cong, zeroed), (n, n));
    x.get().reset_slots_cong();
    let mut left = 0;
    x.with_slots(n, |rq| left += usize::from(rq.rq_cong != 0))
        .map_err(|_| TestFailure)?;
    kassert_eq!(left, 0);
    kassert_eq!(x.get().data.free_slots(), n);
    Ok(())
}

/// set_connect_timeout: a shorter connect timeout shortens the RPC timeout
/// (not below 10 s) and caps the reconnect back-off; a longer one changes
/// nothing.
fn connect_timeout_shortens_rpc_timeout() -> TestResult {
    let hz = crate::sunrpc::HZ;
    let (_args, x) = test_xprt()?;
    kassert_eq!(x.timeouts(), (60 * hz, 60 * hz, 60 * hz));
    x.set_connect_timeout(120 * hz, 120 * hz);
    kassert_eq!(x.timeouts(), (60 * hz, 60 * hz, 60 * hz));
    x.set_connect_timeout(3 * hz, 30 * hz);
    kassert_eq!(x.timeouts(), (10 * hz, 3 * hz, 30 * hz));
    x.set_connect_timeout(20 * hz, 20 * hz);
    kassert_eq!(x.timeouts(), (10 * hz, 3 * hz, 20 * hz));
    Ok(())
}

/// The jiffies per second every timeout is computed with are the kernel's
/// (`CONFIG_HZ`), not the 100 of the user-space header that bindgen gives
/// the `HZ` macro (with 100, a 60 s RPC timeout would be 24 s on a 250 Hz
/// kernel).
fn hz_is_the_kernels() -> TestResult {
    kassert_eq!(
        crate::sunrpc::HZ,
        kernel::time::msecs_to_jiffies(1000) as usize
    );
    Ok(())
}

/// A connection request that got no answer (the CM's UNREACHABLE with
/// status -ETIMEDOUT) fails with -ETIMEDOUT, as a TCP SYN timeout does,
/// not with the -ENETUNREACH after which SUNRPC delays every task 3 s; any
/// other UNREACHABLE status stays -ENETUNREACH.
fn cm_unreachable_timeout_is_etimedout() -> TestResult {
    use crate::compat::errno::{enetunreach, etimedout};
    use crate::connect::unreachable_errno;
    kassert_eq!(
        unreachable_errno(etimedout().to_errno()),
        etimedout().to_errno()
    );
    kassert_eq!(
        unreachable_errno(kernel::error::code::EINVAL.to_errno()),
        enetunreach().to_errno()
    );
    kassert_eq!(unreachable_errno(0), enetunreach().to_errno());
    Ok(())
}

/// The reason a connection ends: the first cause noted wins, except that
/// a flushed completion gives way to a cause noted later (an iWARP peer's
/// close flushes the QP before the CM reports the disconnect); reported
/// once.
fn close_reason_first_cause_flushed_gives_way() -> TestResult {
    use crate::why::{CloseWhy, Why};
    let w = CloseWhy::default();
    kassert_eq!(w.report(Why::Close), Some(Why::Close));
    kassert_eq!(w.report(Why::Close), None);
    w.note(Why::PeerDisconnected);
    kassert_eq!(w.report(Why::Close), None);

    let w = CloseWhy::default();
    w.note(Why::Flushed);
    w.note(Why::Flushed);
    w.note(Why::PeerDisconnected);
    w.note(Why::RecvError);
    kassert_eq!(w.report(Why::Close), Some(Why::PeerDisconnected));

    let w = CloseWhy::default();
    w.note(Why::SendError);
    w.note(Why::Flushed);
    w.note(Why::PeerDisconnected);
    kassert_eq!(w.report(Why::Close), Some(Why::SendError));

    let w = CloseWhy::default();
    w.note(Why::Flushed);
    kassert_eq!(w.report(Why::Destroy), Some(Why::Flushed));
    Ok(())
}

/// The FRWR sizing a connection on the test device (rxe0 in the guest)
/// gets (`conn::frwr_sizing`: the device's numbers through
/// `proto::chunks::sizing`, whose arithmetic the `frwr_sizing` self test
/// covers): a depth of at most 257 pages whose `max_segs` MRs carry 260
/// pages, as `frwr_query_device()` requires.
fn frwr_sizing_of_the_device() -> TestResult {
    let devs = crate::ib::client::devices().map_err(|_| TestFailure)?;
    let Some(dev) = devs.into_iter().next() else {
        kernel::kunit::err(format_args!(
            "    # no RDMA device is registered: load rdma_rxe and run 'rdma link add rxe0 type rxe netdev eth0' before loading rpcrdma2\n"
        ));
        return Err(TestFailure);
    };
    let Some((caps, s)) = crate::conn::frwr_sizing(&dev) else {
        kernel::kunit::err(format_args!(
            "    # device {} cannot register chunks\n",
            dev.name().to_str().unwrap_or("(not UTF-8)")
        ));
        return Err(TestFailure);
    };
    kernel::pr_info!("frwr: {} {:?} {:?}\n", dev.name(), caps, s);
    kassert!(s.depth >= 1 && s.depth <= 257);
    kassert!(s.max_segs * s.depth >= 260);
    kassert!(s.max_segs >= 3 && s.max_segs <= 16);
    Ok(())
}

kunit_suite!(rpcrdma2_class {
    netid_rdma_is_ours,
    netid_rdma6_is_ours,
    unknown_netid_is_enoent,
    setup_creates_transport,
});

/// `proto=rdma` resolves to ident 256 while the module is loaded.
fn netid_rdma_is_ours() -> TestResult {
    kassert_eq!(
        sunrpc::testing::find_transport_ident(c_str!("rdma")),
        Ok(256)
    );
    Ok(())
}

/// `proto=rdma6` (IPv6) resolves to the same class.
fn netid_rdma6_is_ours() -> TestResult {
    kassert_eq!(
        sunrpc::testing::find_transport_ident(c_str!("rdma6")),
        Ok(256)
    );
    Ok(())
}

/// A netid nobody registers is reported as ENOENT, not as ours.
fn unknown_netid_is_enoent() -> TestResult {
    kassert_eq!(
        sunrpc::testing::find_transport_ident(c_str!("rdma2-no-such-netid")),
        Err(kernel::error::code::ENOENT)
    );
    Ok(())
}

/// The class's setup, called through the C ABI as SUNRPC calls it,
/// returns a real, unconnected transport (not an `ERR_PTR`).
fn setup_creates_transport() -> TestResult {
    let args =
        sunrpc::testing::TestCreateArgs::ipv4(0xc000_0201, 20049).map_err(|_| TestFailure)?;
    let x = sunrpc::testing::call_class_setup(args.get().raw());
    kassert!(x.is_ok());
    let Ok(x) = x else { return Err(TestFailure) };
    // SAFETY: `x` was created by our setup and is not given to SUNRPC.
    let x = unsafe { Unpublished::<RdmaXprt>::new(x) }.ok_or(TestFailure)?;
    kassert!(!x.get().xprt().connected());
    Ok(())
}
