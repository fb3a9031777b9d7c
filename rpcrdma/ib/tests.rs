// SPDX-License-Identifier: GPL-2.0

//! KUnit: the RDMA layer against a real device, over loopback.
//!
//! Runs at insmod. Needs an RDMA device with an IPv4 address on its
//! netdev: in the test guest, soft-RoCE `rxe0` on `eth0`. The address is
//! taken from the device itself (the first IPv4 address of the netdev
//! under port 1 of the first device the module's `ib_client` saw), so the
//! test does not depend on interface names or on the guest's IP plan.
//! Without a device the cases fail and say so; they never skip.
//!
//! `loopback_rc` connects a client id to a listener on the same address
//! through rdma_cm, with private data both ways, posts Receives on both
//! sides, exchanges Sends both ways (one unsignalled Send retired by a
//! later signalled one), checks bytes and completions, disconnects, and
//! tears everything down checking that every posted context came back.

use super::client;
use super::cm::{CmEvent, CmHandler, CmId, ConnParam, SockAddr};
use super::dma::{DmaBuf, DmaDir};
use super::endpoint::Endpoint;
use super::listen::{Incoming, Listener};
use super::qp::{Qp, QpCaps, QpHandler};
use super::verbs::{Pd, PollContext};
use super::wc::{Completion, WcOpcode};
use super::wr::{RecvCtx, SendChain, SendCtx, SendWr, SgeList};
use super::{DeviceRef, Net};
use crate::bindings;
use crate::compat::kunit::{Failure, TestResult};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};

kunit_suite!(rpcrdma2_ib {
    sockaddr_ipv4_ipv6,
    rdma_device_present,
    loopback_rc,
    connect_without_listener_fails,
    cm_id_dropped_in_its_handler,
});

/// How long any one step may take (TCG guests are slow).
pub(super) const STEP_MS: u32 = 10_000;

/// Reports a failed step with its error and fails the case.
macro_rules! step {
    ($e:expr, $what:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => {
                $crate::compat::kunit::report(
                    module_path!(),
                    file!(),
                    line!(),
                    format_args!("{} failed: {:?}", $what, err),
                );
                return Err(Failure);
            }
        }
    };
}
pub(super) use step;

/// The first RDMA device and the IPv4 address of its port 1 netdev.
pub(super) fn device_and_ip() -> core::result::Result<(DeviceRef, [u8; 4]), Failure> {
    let devs = step!(client::devices(), "listing RDMA devices");
    let Some(dev) = devs.into_iter().next() else {
        kernel::kunit::err(format_args!(
            "    # no RDMA device is registered: load rdma_rxe and run 'rdma link add rxe0 type rxe netdev eth0' before loading rpcrdma2\n"
        ));
        return Err(Failure);
    };
    let ip = match dev.port_ipv4(1) {
        Ok(ip) => ip,
        Err(e) => {
            kernel::kunit::err(format_args!(
                "    # RDMA device {} has no IPv4 address on its port 1 netdev ({:?})\n",
                dev.name().to_str().unwrap_or("(not UTF-8)"),
                e
            ));
            return Err(Failure);
        }
    };
    Ok((dev, ip))
}

/// Fails the case if its thread has used more than half of its kernel
/// stack so far, or overran it.
///
/// Each case runs in a thread of its own, whose stack is zeroed when it is
/// allocated, so the lowest non-zero word is about the deepest the case
/// went (return addresses are never zero; locals that stayed zero at the
/// very bottom are not seen). Call it last. Kernel stacks are 16 KiB on x86_64 and, without
/// `CONFIG_VMAP_STACK` (the testbed kernel), have no guard page: a case
/// that runs off its stack silently corrupts whatever memory lies below,
/// often another task's stack, and the guest crashes somewhere else later.
/// The RDMA cases post and complete work through rxe on this stack.
pub(super) fn check_stack_headroom() -> TestResult {
    let mut end_intact = false;
    // SAFETY: only reads the current task's own (live) stack.
    let used = unsafe { bindings::rpcrdma2_shim_stack_max_used(&mut end_intact) } as usize;
    // SAFETY: no preconditions.
    let size = unsafe { bindings::rpcrdma2_shim_stack_size() } as usize;
    pr_info!("stack: at most {} of {} bytes used\n", used, size);
    kassert!(end_intact);
    kassert!(used <= size / 2);
    Ok(())
}

/// An rdma_cm event, copied out of the handler.
#[derive(Debug, PartialEq)]
pub(super) enum Seen {
    AddrResolved,
    RouteResolved,
    Established(KVec<u8>),
    Disconnected,
    /// An error event: name and status.
    Failed(&'static str, i32),
    Other,
}

/// Records CM events and lets the test wait for them.
#[pin_data]
pub(super) struct CmLog {
    #[pin]
    events: Mutex<KVec<Seen>>,
    #[pin]
    cv: CondVar,
}

impl CmLog {
    pub(super) fn new() -> Result<Arc<CmLog>> {
        Arc::pin_init(
            pin_init!(CmLog {
                events <- kernel::new_mutex!(KVec::new(), "rpcrdma2_test_cm"),
                cv <- kernel::new_condvar!("rpcrdma2_test_cm"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits for an event `pick` accepts (consuming earlier ones); returns
    /// it, or the first error event, or `None` on timeout.
    pub(super) fn wait(&self, pick: impl Fn(&Seen) -> bool) -> Option<Seen> {
        let mut left = kernel::time::msecs_to_jiffies(STEP_MS);
        let mut ev = self.events.lock();
        loop {
            let mut found = None;
            for (i, e) in ev.iter().enumerate() {
                if pick(e) || matches!(e, Seen::Failed(..)) {
                    found = Some(i);
                    break;
                }
            }
            if let Some(i) = found {
                // Remove events up to and including `i`.
                let mut rest = KVec::new();
                let mut hit = None;
                for (j, e) in core::mem::take(&mut *ev).into_iter().enumerate() {
                    if j == i {
                        hit = Some(e);
                    } else if j > i {
                        let _ = rest.push(e, GFP_KERNEL);
                    }
                }
                *ev = rest;
                return hit;
            }
            if left == 0 {
                return None;
            }
            match self.cv.wait_interruptible_timeout(&mut ev, left) {
                kernel::sync::CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                _ => left = 0,
            }
        }
    }
}

impl CmHandler for CmLog {
    fn event(&self, event: &CmEvent<'_>) {
        let seen = match event {
            CmEvent::AddrResolved => Seen::AddrResolved,
            CmEvent::RouteResolved => Seen::RouteResolved,
            CmEvent::Established { private_data } => {
                let mut v = KVec::new();
                let _ = v.extend_from_slice(private_data, GFP_KERNEL);
                Seen::Established(v)
            }
            CmEvent::Disconnected => Seen::Disconnected,
            CmEvent::AddrError { status } => Seen::Failed("ADDR_ERROR", *status),
            CmEvent::RouteError { status } => Seen::Failed("ROUTE_ERROR", *status),
            CmEvent::ConnectError { status } => Seen::Failed("CONNECT_ERROR", *status),
            CmEvent::Unreachable { status } => Seen::Failed("UNREACHABLE", *status),
            CmEvent::Rejected { reason, .. } => Seen::Failed("REJECTED", *reason),
            _ => Seen::Other,
        };
        let _ = self.events.lock().push(seen, GFP_KERNEL);
        self.cv.notify_all();
    }
}

/// A Receive buffer.
struct RecvBuf {
    buf: DmaBuf,
}

impl RecvCtx for KBox<RecvBuf> {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        sges.push_all(&self.buf)
    }
}

/// A Send buffer with `len` bytes of payload.
struct SendBuf {
    buf: DmaBuf,
    len: usize,
    tag: u32,
}

impl SendCtx for KBox<SendBuf> {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        sges.push(&self.buf, 0, self.len)
    }
}

/// What came back through the QP handler.
/// The tag of the zero-length RDMA Write of [`loopback_rc`].
const PROBE_TAG: u32 = 4;

#[derive(Default)]
struct QpLog {
    /// Successful Receives: payloads.
    received: KVec<KVec<u8>>,
    /// Failed Receives (flushed at teardown): statuses.
    recv_failed: KVec<u32>,
    /// Receives aborted (never posted or QP gone).
    recv_aborted: usize,
    /// Send completions: (tag, kind) with kind 0 = Done success,
    /// 1 = Retired, 2 = Done error, 3 = Aborted.
    sends: KVec<(u32, u8)>,
    /// Opcodes seen on successful completions were right.
    bad_opcode: bool,
}

#[pin_data]
struct QpShared {
    #[pin]
    log: Mutex<QpLog>,
    #[pin]
    cv: CondVar,
}

impl QpShared {
    fn new() -> Result<Arc<QpShared>> {
        Arc::pin_init(
            pin_init!(QpShared {
                log <- kernel::new_mutex!(QpLog::default(), "rpcrdma2_test_qp"),
                cv <- kernel::new_condvar!("rpcrdma2_test_qp"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits until `done` holds for the log; false on timeout.
    fn wait(&self, done: impl Fn(&QpLog) -> bool) -> bool {
        let mut left = kernel::time::msecs_to_jiffies(STEP_MS);
        let mut log = self.log.lock();
        while !done(&log) {
            if left == 0 {
                return false;
            }
            match self.cv.wait_interruptible_timeout(&mut log, left) {
                kernel::sync::CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                _ => left = 0,
            }
        }
        true
    }
}

struct TestQp(Arc<QpShared>);

impl QpHandler for TestQp {
    type SendCtx = KBox<SendBuf>;
    type RecvCtx = KBox<RecvBuf>;

    fn send_done(&self, _qp: &Qp<Self>, ctx: KBox<SendBuf>, c: Completion<'_>) {
        let mut log = self.0.log.lock();
        let kind = match c {
            Completion::Done(wc) if wc.is_success() => {
                let want = if ctx.tag == PROBE_TAG {
                    WcOpcode::RdmaWrite
                } else {
                    WcOpcode::Send
                };
                if wc.opcode() != want {
                    log.bad_opcode = true;
                }
                0
            }
            Completion::Retired => 1,
            Completion::Done(wc) => {
                pr_info!("test send {} failed: {}\n", ctx.tag, wc.status_msg());
                2
            }
            Completion::Aborted => 3,
        };
        let _ = log.sends.push((ctx.tag, kind), GFP_KERNEL);
        drop(log);
        self.0.cv.notify_all();
    }

    fn recv_done(&self, _qp: &Qp<Self>, ctx: KBox<RecvBuf>, c: Completion<'_>) {
        let mut log = self.0.log.lock();
        match c {
            Completion::Done(wc) if wc.is_success() => {
                if wc.opcode() != WcOpcode::Recv || wc.invalidated_rkey().is_some() {
                    log.bad_opcode = true;
                }
                let len = (wc.byte_len() as usize).min(ctx.buf.len());
                ctx.buf.sync_for_cpu(len);
                let mut v = KVec::new();
                let _ = v.extend_from_slice(&ctx.buf.as_slice()[..len], GFP_KERNEL);
                let _ = log.received.push(v, GFP_KERNEL);
            }
            Completion::Done(wc) => {
                let _ = log.recv_failed.push(wc.status(), GFP_KERNEL);
            }
            _ => log.recv_aborted += 1,
        }
        drop(log);
        self.0.cv.notify_all();
    }
}

const CAPS: QpCaps = QpCaps {
    max_send_wr: 8,
    max_recv_wr: 8,
    max_send_sge: 2,
    max_recv_sge: 1,
};
const RECVS: usize = 4;
const RECV_SIZE: usize = 1024;

type Ep = Endpoint<CmLog, TestQp>;

/// Posts `RECVS` Receives of `RECV_SIZE` bytes.
fn post_recvs(ep: &Ep) -> TestResult {
    let mut batch = super::wr::RecvBatch::new();
    for _ in 0..RECVS {
        let buf = step!(
            DmaBuf::new(ep.pd(), RECV_SIZE, DmaDir::FromDevice, GFP_KERNEL),
            "mapping a Receive buffer"
        );
        let ctx = step!(KBox::new(RecvBuf { buf }, GFP_KERNEL), "allocating");
        kassert!(batch.push(ctx).is_ok());
    }
    step!(ep.qp().post_recv(batch), "ib_post_recv");
    kassert_eq!(ep.qp().recv_outstanding(), RECVS);
    Ok(())
}

/// A Send context carrying `payload`.
fn send_buf(
    pd: &Arc<Pd>,
    payload: &[u8],
    tag: u32,
) -> core::result::Result<KBox<SendBuf>, Failure> {
    let mut buf = step!(
        DmaBuf::new(pd, payload.len().max(1), DmaDir::ToDevice, GFP_KERNEL),
        "mapping a Send buffer"
    );
    buf.as_mut_slice()[..payload.len()].copy_from_slice(payload);
    buf.sync_for_device(payload.len());
    Ok(step!(
        KBox::new(
            SendBuf {
                buf,
                len: payload.len(),
                tag
            },
            GFP_KERNEL
        ),
        "allocating"
    ))
}

/// Resolves `dst` on a new client id and builds its endpoint.
fn client_endpoint(
    dst: &SockAddr,
    cm: &Arc<CmLog>,
    qp: &Arc<QpShared>,
) -> core::result::Result<Ep, Failure> {
    let id = step!(CmId::new(Net::init(), cm.clone()), "rdma_create_id");
    step!(id.resolve_addr(None, dst, STEP_MS), "rdma_resolve_addr");
    kassert_eq!(
        cm.wait(|e| *e == Seen::AddrResolved),
        Some(Seen::AddrResolved)
    );
    step!(id.resolve_route(STEP_MS), "rdma_resolve_route");
    kassert_eq!(
        cm.wait(|e| *e == Seen::RouteResolved),
        Some(Seen::RouteResolved)
    );
    Ok(step!(
        Endpoint::new(id, &CAPS, PollContext::Workqueue, TestQp(qp.clone())),
        "creating the client endpoint"
    ))
}

/// Socket addresses: families, ports, text, and what `from_storage` takes.
fn sockaddr_ipv4_ipv6() -> TestResult {
    use core::fmt::Write;
    struct Buf([u8; 64], usize);
    impl Write for Buf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            let end = self.1 + s.len();
            self.0
                .get_mut(self.1..end)
                .ok_or(core::fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.1 = end;
            Ok(())
        }
    }
    let text = |a: &SockAddr| {
        let mut b = Buf([0; 64], 0);
        let _ = write!(b, "{}", a);
        b
    };

    let v4 = SockAddr::ipv4([192, 168, 100, 2], 20049);
    kassert_eq!(v4.family(), 2);
    kassert!(!v4.is_ipv6());
    kassert_eq!(v4.port(), 20049);
    let t = text(&v4);
    kassert_eq!(&t.0[..t.1], b"192.168.100.2:20049");

    let mut a6 = [0u8; 16];
    a6[0] = 0xfe;
    a6[1] = 0x80;
    a6[15] = 1;
    let v6 = SockAddr::ipv6(a6, 2049, 3);
    kassert_eq!(v6.family(), 10);
    kassert!(v6.is_ipv6());
    kassert_eq!(v6.port(), 2049);
    let t = text(&v6);
    kassert_eq!(&t.0[..t.1], b"[fe80:0:0:0:0:0:0:1]:2049");

    // A copy through a `sockaddr_storage` (as `rpc_xprt::addr` holds it)
    // keeps everything; other families are refused.
    let mut ss = crate::bindings::__kernel_sockaddr_storage::default();
    ss.__bindgen_anon_1.__bindgen_anon_1.ss_family = 10;
    kassert!(SockAddr::from_storage(&ss).is_ok());
    ss.__bindgen_anon_1.__bindgen_anon_1.ss_family = 1;
    kassert!(SockAddr::from_storage(&ss).is_err());
    Ok(())
}

/// A device-removal callback that must not be called during the test.
struct NoRemoval;

impl client::DeviceRemoval for NoRemoval {
    fn device_removed(&self) {
        pr_err!("test: unexpected device removal\n");
    }
}

/// There is an RDMA device with an IPv4 address to test on, and removal
/// callbacks can be registered on it.
fn rdma_device_present() -> TestResult {
    let (dev, ip) = device_and_ip()?;
    let notify: Arc<dyn client::DeviceRemoval> =
        step!(Arc::new(NoRemoval, GFP_KERNEL), "allocating");
    let reg = step!(
        client::RemovalRegistration::new(&dev, notify),
        "registering for device removal"
    );
    drop(reg);
    pr_info!(
        "testing on {} at {}.{}.{}.{} (virtual DMA: {})\n",
        dev.name(),
        ip[0],
        ip[1],
        ip[2],
        ip[3],
        dev.uses_virt_dma()
    );
    Ok(())
}

/// Connect, exchange Sends both ways, disconnect, tear down.
fn loopback_rc() -> TestResult {
    let (_dev, ip) = device_and_ip()?;
    const CLIENT_PD: &[u8] = b"rpcrdma2 client private data 0123456789";
    const SERVER_PD: &[u8] = b"rpcrdma2 server private data";
    const PING: &[u8] = b"ping: RPC-over-RDMA loopback from the client";
    const PONG: &[u8] = b"pong: and back from the server";

    let listener = step!(
        Listener::new(Net::init(), &SockAddr::ipv4(ip, 0), 4),
        "creating the listener"
    );
    let laddr = step!(listener.local_addr(), "reading the listener address");
    kassert!(laddr.port() != 0);
    let dst = SockAddr::ipv4(ip, laddr.port());
    pr_info!("loopback: listening on {}\n", laddr);

    let ccm = step!(CmLog::new(), "allocating");
    let cqp = step!(QpShared::new(), "allocating");
    let scm = step!(CmLog::new(), "allocating");
    let sqp = step!(QpShared::new(), "allocating");

    let client = client_endpoint(&dst, &ccm, &cqp)?;
    post_recvs(&client)?;
    let cparam = ConnParam::rpcrdma_client(client.device(), CLIENT_PD);
    step!(client.connect(&cparam), "rdma_connect");

    // Passive side: the request carries the client's private data.
    let req: Incoming = step!(
        listener.accept_next(STEP_MS),
        "waiting for the connect request"
    );
    let got = req.private_data();
    kassert!(got.len() >= CLIENT_PD.len());
    kassert_eq!(&got[..CLIENT_PD.len()], CLIENT_PD);
    kassert!(got[CLIENT_PD.len()..].iter().all(|b| *b == 0));
    let sid = step!(req.into_cm_id(scm.clone()), "taking the request");
    let server = step!(
        Endpoint::new(sid, &CAPS, PollContext::Workqueue, TestQp(sqp.clone())),
        "creating the server endpoint"
    );
    post_recvs(&server)?;
    let sparam = ConnParam {
        private_data: SERVER_PD,
        ..ConnParam::rpcrdma_client(server.device(), &[])
    };
    step!(server.accept(&sparam), "rdma_accept");

    // Both sides are up; the client got the server's private data.
    let est = ccm.wait(|e| matches!(e, Seen::Established(_)));
    let Some(Seen::Established(data)) = est else {
        kassert_eq!(est, Some(Seen::Established(KVec::new())));
        return Err(Failure);
    };
    kassert!(data.len() >= SERVER_PD.len());
    kassert_eq!(&data[..SERVER_PD.len()], SERVER_PD);
    kassert!(matches!(
        scm.wait(|e| matches!(e, Seen::Established(_))),
        Some(Seen::Established(_))
    ));
    kassert!(client.qp().qp_num() != 0);

    // Client -> server: an unsignalled Send, then a signalled one.
    let mut chain = SendChain::new();
    kassert!(chain
        .push(SendWr::send(send_buf(client.pd(), PING, 1)?))
        .is_ok());
    kassert!(chain
        .push(SendWr::send(send_buf(client.pd(), PING, 2)?).signaled())
        .is_ok());
    step!(client.qp().post_send(chain), "ib_post_send (client)");
    kassert!(cqp.wait(|l| l.sends.len() == 2));
    kassert!(sqp.wait(|l| l.received.len() == 2));
    {
        let log = cqp.log.lock();
        // The unsignalled Send is retired by the signalled one's completion.
        kassert_eq!(log.sends.as_slice(), &[(1, 1), (2, 0)][..]);
    }
    {
        let log = sqp.log.lock();
        for r in log.received.iter() {
            kassert_eq!(r.as_slice(), PING);
        }
    }

    // Server -> client.
    step!(
        server
            .qp()
            .post_send_one(SendWr::send(send_buf(server.pd(), PONG, 3)?).signaled()),
        "ib_post_send (server)"
    );
    kassert!(sqp.wait(|l| l.sends.len() == 1));
    kassert!(cqp.wait(|l| l.received.len() == 1));
    {
        let log = cqp.log.lock();
        kassert_eq!(log.received[0].as_slice(), PONG);
    }
    kassert_eq!(sqp.log.lock().sends.as_slice(), &[(3, 0)][..]);

    // A zero-length RDMA Write (the transport's keepalive probe): no rkey,
    // no SGE, acknowledged by the server's adapter, nothing received there.
    step!(
        client.qp().post_send_one(
            SendWr::zero_length_write(send_buf(client.pd(), PING, PROBE_TAG)?).signaled()
        ),
        "ib_post_send (zero-length RDMA Write)"
    );
    kassert!(cqp.wait(|l| l.sends.len() == 3));
    kassert_eq!(cqp.log.lock().sends.get(2).copied(), Some((PROBE_TAG, 0)));
    kassert_eq!(sqp.log.lock().received.len(), 2);

    // Disconnect: the client's DREQ reaches the server, whose disconnect
    // answers it (DREP), which completes the client's.
    step!(client.disconnect(), "rdma_disconnect (client)");
    kassert_eq!(
        scm.wait(|e| *e == Seen::Disconnected),
        Some(Seen::Disconnected)
    );
    step!(server.disconnect(), "rdma_disconnect (server)");
    kassert_eq!(
        ccm.wait(|e| *e == Seen::Disconnected),
        Some(Seen::Disconnected)
    );

    // Teardown drains: the Receives still posted come back flushed.
    drop(client);
    drop(server);
    drop(listener);
    for (name, shared, received) in [("client", &cqp, 1usize), ("server", &sqp, 2usize)] {
        let log = shared.log.lock();
        pr_info!(
            "loopback {}: {} received, {} flushed, {} aborted\n",
            name,
            log.received.len(),
            log.recv_failed.len(),
            log.recv_aborted
        );
        kassert_eq!(log.received.len(), received);
        kassert_eq!(
            log.received.len() + log.recv_failed.len() + log.recv_aborted,
            RECVS
        );
        kassert!(!log.bad_opcode);
    }
    kassert!(ccm
        .events
        .lock()
        .iter()
        .all(|e| !matches!(e, Seen::Failed(..))));
    // Nothing else holds the handlers: the ids and QPs released them.
    kassert!(Arc::into_unique_or_drop(ccm).is_some());
    kassert!(Arc::into_unique_or_drop(scm).is_some());
    kassert!(Arc::into_unique_or_drop(cqp).is_some());
    kassert!(Arc::into_unique_or_drop(sqp).is_some());
    check_stack_headroom()
}

/// Connecting to a port nobody listens on ends in an error event (a CM
/// reject on RoCE), not a hang, and the endpoint tears down cleanly. On
/// iWARP the connection is a TCP connection that siw opens inside
/// `rdma_connect`, which then fails at once with `ECONNREFUSED`.
fn connect_without_listener_fails() -> TestResult {
    let (_dev, ip) = device_and_ip()?;
    // Take a free port from a listener, then close it.
    let port = {
        let l = step!(
            Listener::new(Net::init(), &SockAddr::ipv4(ip, 0), 1),
            "creating a listener"
        );
        step!(l.local_addr(), "reading the listener address").port()
    };
    let cm = step!(CmLog::new(), "allocating");
    let qp = step!(QpShared::new(), "allocating");
    let ep = client_endpoint(&SockAddr::ipv4(ip, port), &cm, &qp)?;
    post_recvs(&ep)?;
    let param = ConnParam::rpcrdma_client(ep.device(), b"nobody home");
    match ep.connect(&param) {
        Err(e) if ep.device().is_iwarp() && e == crate::compat::errno::econnrefused() => {
            pr_info!("connect without listener: rdma_connect: ECONNREFUSED (iWARP)\n");
        }
        res => {
            step!(res, "rdma_connect");
            let ev = cm.wait(|e| matches!(e, Seen::Established(_)));
            pr_info!("connect without listener: {:?}\n", ev);
            kassert!(matches!(ev, Some(Seen::Failed(..))));
        }
    }
    drop(ep);
    let log = qp.log.lock();
    kassert_eq!(log.received.len(), 0);
    kassert_eq!(log.recv_failed.len() + log.recv_aborted, RECVS);
    Ok(())
}

/// Signals when the handler below is freed.
#[pin_data]
struct DropProbe {
    #[pin]
    dropped: Mutex<bool>,
    #[pin]
    cv: CondVar,
}

/// A handler that owns its own id and drops it on the first event.
#[pin_data(PinnedDrop)]
struct SelfDropping {
    #[pin]
    id: Mutex<Option<CmId<SelfDropping>>>,
    probe: Arc<DropProbe>,
}

impl CmHandler for SelfDropping {
    fn event(&self, _event: &CmEvent<'_>) {
        // Dropping the id here must neither deadlock nor leak.
        let id = self.id.lock().take();
        drop(id);
    }
}

#[pinned_drop]
impl PinnedDrop for SelfDropping {
    fn drop(self: Pin<&mut Self>) {
        *self.probe.dropped.lock() = true;
        self.probe.cv.notify_all();
    }
}

/// A `CmId` dropped inside its own event handler is destroyed after the
/// handler returns and releases its handler (no deadlock, no leak).
fn cm_id_dropped_in_its_handler() -> TestResult {
    let (_dev, ip) = device_and_ip()?;
    let probe = step!(
        Arc::pin_init(
            pin_init!(DropProbe {
                dropped <- kernel::new_mutex!(false, "rpcrdma2_test_probe"),
                cv <- kernel::new_condvar!("rpcrdma2_test_probe"),
            }),
            GFP_KERNEL
        ),
        "allocating"
    );
    let probe2 = probe.clone();
    let h = step!(
        Arc::pin_init(
            pin_init!(SelfDropping {
                id <- kernel::new_mutex!(None, "rpcrdma2_test_self"),
                probe: probe2,
            }),
            GFP_KERNEL
        ),
        "allocating"
    );
    let id = step!(CmId::new(Net::init(), h.clone()), "rdma_create_id");
    {
        let mut slot = h.id.lock();
        let id = slot.insert(id);
        // The handler waits for this lock, so it sees the id.
        step!(
            id.resolve_addr(None, &SockAddr::ipv4(ip, 20049), STEP_MS),
            "rdma_resolve_addr"
        );
    }
    drop(h);
    let mut left = kernel::time::msecs_to_jiffies(STEP_MS);
    let mut dropped = probe.dropped.lock();
    while !*dropped && left != 0 {
        left = match probe.cv.wait_interruptible_timeout(&mut dropped, left) {
            kernel::sync::CondVarTimeoutResult::Woken { jiffies } => jiffies,
            _ => 0,
        };
    }
    kassert!(*dropped);
    Ok(())
}
