// SPDX-License-Identifier: GPL-2.0

//! KUnit: FRWR memory registration against a real device, over loopback.
//!
//! `frwr_loopback` connects a client and a server endpoint on the test
//! device (rxe0 in the guest), registers a kmalloc buffer and a page list
//! with REG_MR chained in front of a Send that advertises them, lets the
//! server RDMA Write into one and RDMA Read from the other, invalidates
//! with Send With Invalidate (remote), LOCAL_INV waited for (sync) and
//! LOCAL_INV with a completion (async), checks that an invalidated MR is
//! refused for reuse and that the server's access through an invalidated
//! rkey fails, that a REG_MR's context keeps the MR's hardware object
//! (not the MR) until it is retired, and that a registration flushed by a
//! dead QP makes the MR `Broken`, which the pool deregisters and
//! replaces.
//!
//! This file has the suite, the cases that need no connection
//! (`frwr_caps`, `frwr_map_rules`) and the fixture of the loopback case
//! (the QP handler and its log, buffers, test pages, the connected
//! [`Pair`]); `mr_tests/loopback.rs` has `frwr_loopback` and its phases.

mod loopback;

use self::loopback::frwr_loopback;
use super::cm::{CmId, ConnParam, SockAddr};
use super::dma::{DmaBuf, DmaDir};
use super::endpoint::Endpoint;
use super::listen::{Incoming, Listener};
use super::mr::caps::{FastRegCaps, MrShape};
use super::mr::inv::MrWr;
use super::mr::pool::MrPool;
use super::mr::{page_size, Mr, MrAccess, MrRef, MrState, PageSeg, RemoteRegion};
use super::qp::{Qp, QpCaps, QpHandler};
use super::tests::{device_and_ip, step, CmLog, Seen, STEP_MS};
use super::verbs::{Pd, PollContext};
use super::wc::{Completion, WcOpcode};
use super::wr::{RecvBatch, RecvCtx, SendCtx, SgeList};
use super::{DeviceRef, Net};
use crate::bindings;
use crate::compat::kunit::{Failure, TestResult};
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};

kunit_suite!(rpcrdma2_frwr {
    frwr_caps,
    frwr_map_rules,
    frwr_loopback,
});

/// Most pages per MR in this suite's cases (the device's page list
/// length if that is less): deeper than any page list they map, and small
/// enough that the depth-limit check in `frwr_map_rules` maps few pieces.
/// How deep an MR is is its user's choice, not this layer's.
const TEST_DEPTH: u32 = 32;

/// The shape of this suite's MRs on a device that offers `caps`.
fn test_shape(caps: &FastRegCaps) -> MrShape {
    caps.shape(caps.max_page_list_len.min(TEST_DEPTH))
}

/// What the device offers for fast registration (logged), and the shape
/// of the MRs made with it.
fn frwr_caps() -> TestResult {
    let (dev, _) = device_and_ip()?;
    let caps = step!(FastRegCaps::query(&dev).ok_or(EINVAL), "FRWR device query");
    pr_info!("frwr: {} {:?}\n", dev.name(), caps);
    kassert!(caps.max_page_list_len >= 1);
    // The MR type follows the device's SG_GAPS; the depth is the caller's.
    kassert_eq!(
        caps.shape(32),
        MrShape {
            depth: 32,
            sg_gaps: caps.sg_gaps
        }
    );
    let shape = test_shape(&caps);
    kassert!(shape.depth >= 1 && shape.depth <= caps.max_page_list_len);
    let pd = step!(Pd::new(&dev), "ib_alloc_pd");
    let mr = step!(Mr::new(&pd, &shape), "allocating an MR");
    kassert_eq!(mr.depth(), shape.depth as usize);
    kassert_eq!(mr.state(), MrState::Free);
    Ok(())
}

/// Mapping without a connection: page-contiguity breaks, the depth
/// limit, the XID and key bump, and the states that refuse an operation.
fn frwr_map_rules() -> TestResult {
    let pages = Pages::new()?;
    let (dev, _) = device_and_ip()?;
    let caps = step!(FastRegCaps::query(&dev).ok_or(EINVAL), "FRWR device query");
    let shape = test_shape(&caps);
    let pd = step!(Pd::new(&dev), "ib_alloc_pd");
    let pool = step!(MrPool::new(&pd, shape, 2), "allocating the MR pool");
    kassert_eq!(*pool.shape(), shape);
    let mut mr = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    kassert_eq!(mr.state(), MrState::Free);
    kassert!(mr.region().is_none());
    kassert!(mr.unmap().is_err());
    let ps = page_size() as u32;
    let p = pages.0;
    let seg = |i: usize, offset: u32, len: u32| PageSeg {
        page: p[i],
        offset,
        len,
    };

    // A piece that ends inside its page ends the MR (without SG_GAPS).
    let rkey0 = mr.rkey();
    // SAFETY: `pages` outlives the MRs (declared first).
    let n = step!(
        unsafe { mr.map_pages([seg(0, 0, 100), seg(1, 0, ps)], MrAccess::RemoteWrite, 7) },
        "mapping"
    );
    kassert_eq!(n, if caps.sg_gaps { 2 } else { 1 });
    let s = step!(mr.region().ok_or(EINVAL), "segment");
    kassert_eq!(s.iova >> 32, 7);
    kassert_eq!(s.length, if caps.sg_gaps { 100 + ps } else { 100 });
    // The key's low byte moved on by one; the rest stayed.
    kassert_eq!(s.rkey, (rkey0 & !0xff) | (rkey0.wrapping_add(1) & 0xff));
    kassert_eq!(mr.state(), MrState::Mapped);
    // Mapped: no second mapping, no remote invalidation; unmap is fine.
    // SAFETY: as above.
    kassert!(unsafe { mr.map_pages([seg(0, 0, ps)], MrAccess::RemoteRead, 1) }.is_err());
    kassert!(mr.remote_invalidated(s.rkey).is_err());
    kassert!(step!(mr.unmap(), "unmapping").is_none());
    kassert_eq!(mr.state(), MrState::Free);

    // A piece that starts inside its page starts a new MR.
    // SAFETY: as above.
    let n = step!(
        unsafe { mr.map_pages([seg(0, 0, ps), seg(1, 8, 8)], MrAccess::RemoteRead, 8) },
        "mapping"
    );
    kassert_eq!(n, if caps.sg_gaps { 2 } else { 1 });
    // The pool takes a Mapped MR back (unmapping it).
    pool.put(mr);
    kassert_eq!((pool.available(), pool.lost()), (2, 0));

    // No more than `depth` pieces, and a piece must stay in its page.
    let mut mr = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    let mut many = KVec::new();
    for _ in 0..shape.depth + 3 {
        step!(many.push(seg(2, 0, ps), GFP_KERNEL), "allocating");
    }
    // SAFETY: as above (the same page several times is fine for the test).
    let n = step!(
        unsafe { mr.map_pages(many.iter().copied(), MrAccess::RemoteRead, 9) },
        "mapping"
    );
    kassert_eq!(n, shape.depth as usize);
    kassert_eq!(mr.region().map(|s| s.length), Some(shape.depth * ps));
    kassert!(mr.unmap().is_ok());
    let r = {
        // SAFETY: as above (the pages outlive the mapping attempt).
        unsafe { mr.map_pages([seg(0, 8, ps)], MrAccess::RemoteRead, 1) }
    };
    kassert_eq!(r, Err(EINVAL));
    let r = {
        // SAFETY: an empty list maps nothing.
        unsafe { mr.map_pages(core::iter::empty(), MrAccess::RemoteRead, 1) }
    };
    kassert_eq!(r, Err(EINVAL));
    kassert_eq!(mr.state(), MrState::Free);
    // A buffer larger than the MR's depth is refused and comes back.
    let big = step!(
        KVec::from_elem(0u8, (shape.depth as usize + 1) * ps as usize, GFP_KERNEL),
        "allocating"
    );
    kassert!(matches!(mr.map_buf(big, MrAccess::RemoteWrite, 1), Err((e, _)) if e == EINVAL));
    pool.put(mr);
    kassert_eq!((pool.available(), pool.lost()), (2, 0));
    Ok(())
}

/// What the test handler got back.
#[derive(Default)]
struct Log {
    /// Send-queue completions: (tag, kind, opcode of a Done) with kind
    /// 0 = Done success, 1 = Retired, 2 = Done error, 3 = Aborted.
    sends: KVec<(u32, u8, Option<WcOpcode>)>,
    /// MRs handed back by LOCAL_INV WRs, or kept here by the test.
    mrs: KVec<Mr>,
    /// Whether an [`MrWr::is_last`] came back.
    inv_last: bool,
    /// Successful Receives: payload and invalidated rkey.
    received: KVec<(KVec<u8>, Option<u32>)>,
    /// Receives that failed or were aborted.
    recv_other: usize,
    /// RDMA Read sinks that came back (tag, bytes).
    reads: KVec<(u32, KVec<u8>)>,
}

#[pin_data]
struct Shared {
    #[pin]
    log: Mutex<Log>,
    #[pin]
    cv: CondVar,
}

impl Shared {
    fn new() -> Result<Arc<Shared>> {
        Arc::pin_init(
            pin_init!(Shared {
                log <- kernel::new_mutex!(Log::default(), "rpcrdma2_frwr_log"),
                cv <- kernel::new_condvar!("rpcrdma2_frwr_log"),
            }),
            GFP_KERNEL,
        )
    }

    fn wait(&self, done: impl Fn(&Log) -> bool) -> bool {
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

    /// Takes the MR with `rkey` out of the log.
    fn take_mr(&self, rkey: u32) -> Option<Mr> {
        let mut log = self.log.lock();
        let all = core::mem::take(&mut log.mrs);
        let mut found = None;
        for mr in all {
            if found.is_none() && mr.rkey() == rkey {
                found = Some(mr);
            } else {
                let _ = log.mrs.push(mr, GFP_KERNEL);
            }
        }
        found
    }
}

/// A DMA buffer for a Send, an RDMA Write source or an RDMA Read sink.
struct Buf {
    buf: DmaBuf,
    len: usize,
    tag: u32,
}

/// The client's and server's Send-queue contexts.
enum Ctx {
    Send(KBox<Buf>),
    /// A REG_MR: the MR stays with the test.
    Reg(MrRef),
    /// A LOCAL_INV: owns the MR.
    Mr(MrWr),
}

impl SendCtx for Ctx {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        match self {
            Ctx::Send(b) => sges.push(&b.buf, 0, b.len),
            Ctx::Reg(_) | Ctx::Mr(_) => Ok(()),
        }
    }

    fn mr(&self) -> Option<&MrRef> {
        match self {
            Ctx::Reg(r) => Some(r),
            Ctx::Mr(w) => SendCtx::mr(w),
            Ctx::Send(_) => None,
        }
    }
}

struct RecvBuf {
    buf: DmaBuf,
}

impl RecvCtx for KBox<RecvBuf> {
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result {
        sges.push_all(&self.buf)
    }
}

struct FrwrQp(Arc<Shared>);

impl QpHandler for FrwrQp {
    type SendCtx = Ctx;
    type RecvCtx = KBox<RecvBuf>;

    fn send_done(&self, _qp: &Qp<Self>, ctx: Ctx, c: Completion<'_>) {
        let (kind, opcode) = match &c {
            Completion::Done(wc) if wc.is_success() => (0, Some(wc.opcode())),
            Completion::Retired => (1, None),
            Completion::Done(wc) => {
                pr_info!("frwr test: WR failed: {}\n", wc.status_msg());
                (2, None)
            }
            Completion::Aborted => (3, None),
        };
        let mut log = self.0.log.lock();
        match ctx {
            Ctx::Send(b) => {
                if opcode == Some(WcOpcode::RdmaRead) {
                    b.buf.sync_for_cpu(b.len);
                    let mut v = KVec::new();
                    let _ = v.extend_from_slice(&b.buf.as_slice()[..b.len], GFP_KERNEL);
                    let _ = log.reads.push((b.tag, v), GFP_KERNEL);
                }
                let _ = log.sends.push((b.tag, kind, opcode), GFP_KERNEL);
            }
            Ctx::Reg(r) => {
                let _ = log.sends.push((r.rkey(), kind, opcode), GFP_KERNEL);
            }
            Ctx::Mr(w) => {
                let tag = w.mr().rkey();
                let last = w.is_last();
                let _ = log.sends.push((tag, kind, opcode), GFP_KERNEL);
                if let Some(mr) = w.done() {
                    let _ = log.mrs.push(mr, GFP_KERNEL);
                    log.inv_last |= last;
                }
            }
        }
        drop(log);
        self.0.cv.notify_all();
    }

    fn recv_done(&self, _qp: &Qp<Self>, ctx: KBox<RecvBuf>, c: Completion<'_>) {
        let mut log = self.0.log.lock();
        match c {
            Completion::Done(wc) if wc.is_success() => {
                let len = (wc.byte_len() as usize).min(ctx.buf.len());
                ctx.buf.sync_for_cpu(len);
                let mut v = KVec::new();
                let _ = v.extend_from_slice(&ctx.buf.as_slice()[..len], GFP_KERNEL);
                let _ = log.received.push((v, wc.invalidated_rkey()), GFP_KERNEL);
            }
            _ => log.recv_other += 1,
        }
        drop(log);
        self.0.cv.notify_all();
    }
}

const CAPS: QpCaps = QpCaps {
    max_send_wr: 16,
    max_recv_wr: 8,
    max_send_sge: 2,
    max_recv_sge: 1,
};
const RECVS: usize = 4;
const XID: u32 = 0x1234_5678;

type Ep = Endpoint<CmLog, FrwrQp>;

fn post_recvs(ep: &Ep) -> TestResult {
    let mut batch = RecvBatch::new();
    for _ in 0..RECVS {
        let buf = step!(
            DmaBuf::new(ep.pd(), 256, DmaDir::FromDevice, GFP_KERNEL),
            "mapping a Receive buffer"
        );
        let ctx = step!(KBox::new(RecvBuf { buf }, GFP_KERNEL), "allocating");
        kassert!(batch.push(ctx).is_ok());
    }
    step!(ep.qp().post_recv(batch), "ib_post_recv");
    Ok(())
}

/// A buffer of `len` bytes (`fill(i)` each) for the device to read, or a
/// zeroed one for it to write (`dir` FromDevice).
fn buf(
    pd: &Arc<Pd>,
    len: usize,
    dir: DmaDir,
    tag: u32,
    fill: impl Fn(usize) -> u8,
) -> core::result::Result<Ctx, Failure> {
    let mut b = step!(DmaBuf::new(pd, len, dir, GFP_KERNEL), "mapping a buffer");
    if dir == DmaDir::ToDevice {
        for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
            *x = fill(i);
        }
        b.sync_for_device(len);
    }
    let b = step!(
        KBox::new(Buf { buf: b, len, tag }, GFP_KERNEL),
        "allocating"
    );
    Ok(Ctx::Send(b))
}

/// Pages from the page allocator, freed on drop.
struct Pages([*mut bindings::page; 3]);

impl Pages {
    fn new() -> core::result::Result<Pages, Failure> {
        let mut p = Pages([core::ptr::null_mut(); 3]);
        for slot in p.0.iter_mut() {
            // SAFETY: no preconditions; may return NULL.
            *slot = unsafe { bindings::rpcrdma2_shim_alloc_page() };
            kassert!(!slot.is_null());
        }
        Ok(p)
    }

    /// The bytes of page `i`.
    fn bytes(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: the page is ours and mapped in the linear map (lowmem on
        // x86_64); `&mut self` makes the borrow unique.
        unsafe {
            let a = bindings::rpcrdma2_shim_page_address(self.0[i]).cast::<u8>();
            core::slice::from_raw_parts_mut(a, page_size())
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        for p in self.0 {
            if !p.is_null() {
                // SAFETY: allocated by `rpcrdma2_shim_alloc_page()`; no MR
                // maps it any more (the test drops its MRs first: `Pages`
                // is created before and so dropped after them).
                unsafe { bindings::rpcrdma2_shim_free_page(p) };
            }
        }
    }
}

/// The page-list pattern, as a function of the byte's position in the MR.
fn b_pattern(i: usize) -> u8 {
    (i as u8).wrapping_mul(7).wrapping_add((i >> 8) as u8)
}

fn seg_bytes(s: &RemoteRegion, out: &mut KVec<u8>) -> Result {
    out.extend_from_slice(&s.rkey.to_be_bytes(), GFP_KERNEL)?;
    out.extend_from_slice(&s.length.to_be_bytes(), GFP_KERNEL)?;
    out.extend_from_slice(&s.iova.to_be_bytes(), GFP_KERNEL)?;
    Ok(())
}

fn seg_from(b: &[u8]) -> Option<RemoteRegion> {
    Some(RemoteRegion {
        rkey: u32::from_be_bytes(b.get(0..4)?.try_into().ok()?),
        length: u32::from_be_bytes(b.get(4..8)?.try_into().ok()?),
        iova: u64::from_be_bytes(b.get(8..16)?.try_into().ok()?),
    })
}

/// Waits for `n` Send-queue completions in `s`.
fn sends(s: &Shared, n: usize) -> bool {
    s.wait(|l| l.sends.len() >= n)
}

/// The connected client and server of [`frwr_loopback`] (fields drop in
/// this order: the endpoints before their listener).
struct Pair {
    client: Ep,
    server: Ep,
    listener: Listener,
    /// What the client's and the server's QP handlers got back.
    cs: Arc<Shared>,
    ss: Arc<Shared>,
}

/// Connects a client endpoint to a server endpoint through a listener on
/// `ip`, with Receives posted on both.
#[inline(never)]
fn connect_pair(dev: &DeviceRef, ip: [u8; 4]) -> core::result::Result<Pair, Failure> {
    let listener = step!(
        Listener::new(Net::init(), &SockAddr::ipv4(ip, 0), 4),
        "creating the listener"
    );
    let port = step!(listener.local_addr(), "reading the listener address").port();
    let ccm = step!(CmLog::new(), "allocating");
    let scm = step!(CmLog::new(), "allocating");
    let cs = step!(Shared::new(), "allocating");
    let ss = step!(Shared::new(), "allocating");

    let id = step!(CmId::new(Net::init(), ccm.clone()), "rdma_create_id");
    step!(
        id.resolve_addr(None, &SockAddr::ipv4(ip, port), STEP_MS),
        "rdma_resolve_addr"
    );
    kassert_eq!(
        ccm.wait(|e| *e == Seen::AddrResolved),
        Some(Seen::AddrResolved)
    );
    step!(id.resolve_route(STEP_MS), "rdma_resolve_route");
    kassert_eq!(
        ccm.wait(|e| *e == Seen::RouteResolved),
        Some(Seen::RouteResolved)
    );
    let client = step!(
        Endpoint::new(id, &CAPS, PollContext::Workqueue, FrwrQp(cs.clone())),
        "creating the client endpoint"
    );
    post_recvs(&client)?;
    // The client answers RDMA Reads (responder resources), as an NFS client.
    let cparam = ConnParam::rpcrdma_client(client.device(), b"frwr");
    kassert!(cparam.responder_resources > 0);
    step!(client.connect(&cparam), "rdma_connect");

    let req: Incoming = step!(
        listener.accept_next(STEP_MS),
        "waiting for the connect request"
    );
    let sid = step!(req.into_cm_id(scm.clone()), "taking the request");
    let server = step!(
        Endpoint::new(sid, &CAPS, PollContext::Workqueue, FrwrQp(ss.clone())),
        "creating the server endpoint"
    );
    post_recvs(&server)?;
    // The server issues RDMA Reads: it needs an initiator depth.
    let sparam = ConnParam {
        initiator_depth: dev.max_qp_rd_atom().clamp(1, 4) as u8,
        ..ConnParam::rpcrdma_client(server.device(), &[])
    };
    step!(server.accept(&sparam), "rdma_accept");
    kassert!(matches!(
        ccm.wait(|e| matches!(e, Seen::Established(_))),
        Some(Seen::Established(_))
    ));
    kassert!(matches!(
        scm.wait(|e| matches!(e, Seen::Established(_))),
        Some(Seen::Established(_))
    ));
    Ok(Pair {
        client,
        server,
        listener,
        cs,
        ss,
    })
}
