// SPDX-License-Identifier: GPL-2.0

//! KUnit case `frwr_loopback` of suite `rpcrdma2_frwr` (see `mr_tests.rs`,
//! which has its fixture): registration, remote access, three ways of
//! invalidation, reuse refusal, a failing access after invalidation and
//! recovery of a broken MR, each phase a function of its own.

use super::super::census::{self, Kind};
use super::super::dma::DmaDir;
use super::super::mr::caps::FastRegCaps;
use super::super::mr::inv::{invalidate_sync, post_local_inv};
use super::super::mr::pool::MrPool;
use super::super::mr::{find_by_rkey, page_size, Mr, MrAccess, MrState, PageSeg, RemoteRegion};
use super::super::tests::{check_stack_headroom, device_and_ip, step};
use super::super::wc::WcOpcode;
use super::super::wr::{SendChain, SendWr};
use super::{
    b_pattern, buf, connect_pair, seg_bytes, seg_from, sends, Ctx, Pages, Pair, RECVS, XID,
};
use crate::compat::kunit::{Failure, TestResult};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Registration, remote access, three ways of invalidation, reuse refusal,
/// a failing access after invalidation, and recovery of a broken MR.
///
/// Each phase is a function of its own that is never inlined, and the
/// chains are boxed: a KUnit case runs on a 16 KiB kernel stack without a
/// guard page (no `CONFIG_VMAP_STACK` in the testbed), and all of this in
/// one frame (9.4 KiB) plus a post and rxe under it once ran off the end
/// of the stack and corrupted the memory below it (see design-ib.rst).
pub(super) fn frwr_loopback() -> TestResult {
    // Declared first so that it is dropped last, after every MR.
    let mut pages = Pages::new()?;
    let (dev, ip) = device_and_ip()?;
    let caps = step!(FastRegCaps::query(&dev).ok_or(EINVAL), "FRWR device query");
    let p = connect_pair(&dev, ip)?;
    // The client's MRs: A (kmalloc buffer, the peer writes), B (three
    // page pieces, the peer reads), C (small buffer, async LOCAL_INV).
    let pool = step!(
        MrPool::new(p.client.pd(), super::test_shape(&caps), 4),
        "allocating the MR pool"
    );
    kassert_eq!(pool.available(), 4);
    let (sa, sb, sc, b_len) = register_and_advertise(&p, &pool, &mut pages)?;
    server_write_read(&p, sa, sb, b_len)?;
    let (a, b) = remote_and_sync_invalidation(&p, sa, sb)?;
    let c = async_invalidation(&p, sc)?;
    reg_ref_outlives_holder(&p, &pool)?;
    write_after_invalidation(&p, sa)?;
    unmap_all(&pool, a, b, c)?;
    broken_mr(&p, &pool)?;
    flushed_unsignalled(&p, &pool)?;

    let _ = p.server.disconnect();
    let Pair {
        client,
        server,
        listener,
        cs,
        ss,
    } = p;
    drop(client);
    drop(server);
    drop(listener);
    for (name, s, sent) in [("client", &cs, 0usize), ("server", &ss, 0usize)] {
        let log = s.log.lock();
        pr_info!(
            "frwr {}: {} received, {} flushed/aborted, {} send completions\n",
            name,
            log.received.len(),
            log.recv_other,
            log.sends.len()
        );
        kassert_eq!(log.received.len() + log.recv_other, RECVS);
        kassert_eq!(log.mrs.len(), sent);
    }
    drop(pool);
    kassert!(Arc::into_unique_or_drop(cs).is_some());
    kassert!(Arc::into_unique_or_drop(ss).is_some());
    check_stack_headroom()
}

/// Maps A, B and C from `pool` and posts REG_MR x3 chained in front of the
/// Send that advertises them (one post); returns their segments and B's
/// length. The MRs end up `Registered` in the client's log.
#[inline(never)]
fn register_and_advertise(
    p: &Pair,
    pool: &MrPool,
    pages: &mut Pages,
) -> core::result::Result<(RemoteRegion, RemoteRegion, RemoteRegion, usize), Failure> {
    const A_LEN: usize = 6000;
    let mut a = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    let mut a_buf = step!(KVec::from_elem(0xaau8, A_LEN, GFP_KERNEL), "allocating");
    a_buf[0] = 0xab;
    kassert!(a.map_buf(a_buf, MrAccess::RemoteWrite, XID).is_ok());
    kassert_eq!(a.state(), MrState::Mapped);
    // Mapping twice is refused, and the buffer comes back.
    let again = step!(KVec::from_elem(0u8, 16, GFP_KERNEL), "allocating");
    kassert!(matches!(a.map_buf(again, MrAccess::RemoteWrite, XID), Err((_, b)) if b.len() == 16));

    let ps = page_size();
    let mut pos = 0;
    for (pg, range) in [(0usize, 100..ps), (1, 0..ps), (2, 0..500)] {
        for x in pages.bytes(pg)[range].iter_mut() {
            *x = b_pattern(pos);
            pos += 1;
        }
    }
    let b_len = pos;
    let segs = [
        PageSeg {
            page: pages.0[0],
            offset: 100,
            len: (ps - 100) as u32,
        },
        PageSeg {
            page: pages.0[1],
            offset: 0,
            len: ps as u32,
        },
        PageSeg {
            page: pages.0[2],
            offset: 0,
            len: 500,
        },
    ];
    let mut b = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    // SAFETY: `pages` outlives every MR of this test (frwr_loopback
    // declares it first) and is not touched by the CPU while B is mapped.
    let n = step!(
        unsafe { b.map_pages(segs, MrAccess::RemoteRead, XID + 1) },
        "mapping pages"
    );
    kassert_eq!(n, 3);

    let mut c = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    let c_buf = step!(KVec::from_elem(0xccu8, 512, GFP_KERNEL), "allocating");
    kassert!(c.map_buf(c_buf, MrAccess::RemoteWrite, XID + 2).is_ok());

    let (sa, sb, sc) = match (a.region(), b.region(), c.region()) {
        (Some(x), Some(y), Some(z)) => (x, y, z),
        _ => {
            kassert!(false);
            return Err(Failure);
        }
    };
    pr_info!("frwr: A {:x?} B {:x?} C {:x?}\n", sa, sb, sc);
    kassert_eq!(sa.length as usize, A_LEN);
    kassert_eq!(sb.length as usize, b_len);
    kassert_eq!(sc.length, 512);
    kassert_eq!(
        (sa.iova >> 32, sb.iova >> 32, sc.iova >> 32),
        (0x1234_5678, 0x1234_5679, 0x1234_567a)
    );
    kassert_eq!(sa.rkey, a.rkey());
    kassert!(sa.rkey != sb.rkey && sb.rkey != sc.rkey);

    // REG_MR x3 chained in front of the Send that advertises them: one post.
    let mut ad = KVec::new();
    for s in [&sa, &sb, &sc] {
        step!(seg_bytes(s, &mut ad), "encoding");
    }
    let ad_ctx = buf(p.client.pd(), ad.len(), DmaDir::ToDevice, 1, |i| ad[i])?;
    let mut chain = step!(SendChain::new_boxed(GFP_KERNEL), "allocating");
    kassert!(chain.push(SendWr::reg_mr(Ctx::Reg(a.share()))).is_ok());
    kassert!(chain.push(SendWr::reg_mr(Ctx::Reg(b.share()))).is_ok());
    kassert!(chain.push(SendWr::reg_mr(Ctx::Reg(c.share()))).is_ok());
    kassert!(chain.push(SendWr::send(ad_ctx).signaled()).is_ok());
    step!(
        p.client.qp().post_send_chain(&mut chain),
        "posting REG_MR x3 + Send"
    );
    kassert!(chain.is_empty());
    // Registered from the post on: the MRs stayed here.
    kassert!([&a, &b, &c]
        .iter()
        .all(|m| m.state() == MrState::Registered));
    kassert!(sends(&p.cs, 4));
    {
        let mut log = p.cs.log.lock();
        // The three unsignalled REG_MRs were retired by the Send's completion.
        kassert_eq!(
            log.sends.as_slice(),
            &[
                (sa.rkey, 1, None),
                (sb.rkey, 1, None),
                (sc.rkey, 1, None),
                (1, 0, Some(WcOpcode::Send))
            ][..]
        );
        // Their retirement changed nothing.
        kassert!([&a, &b, &c]
            .iter()
            .all(|m| m.state() == MrState::Registered));
        // Kept in the log for the phases that follow.
        for m in [a, b, c] {
            step!(log.mrs.push(m, GFP_KERNEL), "allocating");
        }
    }
    Ok((sa, sb, sc, b_len))
}

/// The server reads the advertisement, RDMA-Writes a pattern into A and
/// RDMA-Reads B (bytes checked).
#[inline(never)]
fn server_write_read(p: &Pair, sa: RemoteRegion, sb: RemoteRegion, b_len: usize) -> TestResult {
    kassert!(p.ss.wait(|l| !l.received.is_empty()));
    let (ra, rb) = {
        let log = p.ss.log.lock();
        let msg = &log.received[0].0;
        kassert_eq!(msg.len(), 48);
        (seg_from(&msg[0..16]), seg_from(&msg[16..32]))
    };
    kassert_eq!(ra, Some(sa));
    kassert_eq!(rb, Some(sb));
    let w = buf(
        p.server.pd(),
        sa.length as usize,
        DmaDir::ToDevice,
        10,
        |i| (i as u8) ^ 0x5a,
    )?;
    let r = buf(p.server.pd(), b_len, DmaDir::FromDevice, 11, |_| 0)?;
    let mut chain = step!(SendChain::new_boxed(GFP_KERNEL), "allocating");
    kassert!(chain.push(SendWr::rdma_write(w, sa.iova, sa.rkey)).is_ok());
    kassert!(chain
        .push(SendWr::rdma_read(r, sb.iova, sb.rkey).signaled())
        .is_ok());
    step!(
        p.server.qp().post_send_chain(&mut chain),
        "posting RDMA Write + Read"
    );
    kassert!(sends(&p.ss, 2));
    let log = p.ss.log.lock();
    kassert_eq!(
        log.sends.as_slice(),
        &[(10, 1, None), (11, 0, Some(WcOpcode::RdmaRead))][..]
    );
    kassert_eq!(log.reads.len(), 1);
    let data = &log.reads[0].1;
    kassert_eq!(data.len(), b_len);
    let bad = data
        .iter()
        .enumerate()
        .position(|(i, x)| *x != b_pattern(i));
    kassert_eq!(bad, None);
    Ok(())
}

/// Send With Invalidate of B's rkey (remote invalidation), synchronous
/// LOCAL_INV of A, and REG_MR of the invalidated A refused; returns A and
/// B, both `Invalidated`.
#[inline(never)]
fn remote_and_sync_invalidation(
    p: &Pair,
    sa: RemoteRegion,
    sb: RemoteRegion,
) -> core::result::Result<(Mr, Mr), Failure> {
    let (cs, client) = (&p.cs, &p.client);
    let inv = buf(p.server.pd(), 8, DmaDir::ToDevice, 12, |_| 0x11)?;
    step!(
        p.server
            .qp()
            .post_send_one(SendWr::send_with_inv(inv, sb.rkey).signaled()),
        "posting Send With Invalidate"
    );
    kassert!(cs.wait(|l| !l.received.is_empty()));
    let got_inv = cs.log.lock().received[0].1;
    kassert_eq!(got_inv, Some(sb.rkey));
    let mut b = step!(cs.take_mr(sb.rkey).ok_or(ENOENT), "finding B");
    let a = step!(cs.take_mr(sa.rkey).ok_or(ENOENT), "finding A");
    {
        let set = [&a, &b];
        kassert_eq!(find_by_rkey(sb.rkey, set), Some(1));
        kassert_eq!(find_by_rkey(sb.rkey ^ 0xff, [&a, &b]), None);
    }
    kassert!(b.remote_invalidated(sa.rkey).is_err());
    step!(b.remote_invalidated(sb.rkey), "remote invalidation of B");
    kassert_eq!(b.state(), MrState::Invalidated);
    kassert!(b.remote_invalidated(sb.rkey).is_err());

    // Synchronous LOCAL_INV of A.
    let mut list = KVec::new();
    step!(list.push(a, GFP_KERNEL), "allocating");
    let back = match invalidate_sync(client.qp(), list, Ctx::Mr) {
        Ok(v) => v,
        Err((e, _)) => {
            kassert_eq!(e, ENOMEM);
            return Err(Failure);
        }
    };
    kassert_eq!(back.len(), 1);
    let Some(a) = back.into_iter().next() else {
        return Err(Failure);
    };
    kassert_eq!(a.state(), MrState::Invalidated);
    // An invalidated MR is refused for registration (the WR comes back
    // aborted, the MR unchanged) and for mapping.
    let before = cs.log.lock().sends.len();
    let res = client
        .qp()
        .post_send_one(SendWr::reg_mr(Ctx::Reg(a.share())));
    kassert_eq!(res, Err(EBUSY));
    kassert!(sends(cs, before + 1));
    kassert_eq!(cs.log.lock().sends[before], (sa.rkey, 3, None));
    kassert_eq!(a.state(), MrState::Invalidated);
    Ok((a, b))
}

/// Asynchronous LOCAL_INV of C: comes back through send_done, last.
#[inline(never)]
fn async_invalidation(p: &Pair, sc: RemoteRegion) -> core::result::Result<Mr, Failure> {
    let cs = &p.cs;
    let c = step!(cs.take_mr(sc.rkey).ok_or(ENOENT), "finding C");
    let mut list = KVec::new();
    step!(list.push(c, GFP_KERNEL), "allocating");
    step!(
        post_local_inv(p.client.qp(), list, Ctx::Mr),
        "posting LOCAL_INV"
    );
    kassert!(cs.wait(|l| l.inv_last));
    let c = step!(cs.take_mr(sc.rkey).ok_or(ENOENT), "finding C");
    kassert_eq!(c.state(), MrState::Invalidated);
    Ok(c)
}

/// The server's RDMA Write through A's invalidated rkey fails.
#[inline(never)]
fn write_after_invalidation(p: &Pair, sa: RemoteRegion) -> TestResult {
    let w = buf(p.server.pd(), 64, DmaDir::ToDevice, 13, |_| 0x33)?;
    step!(
        p.server
            .qp()
            .post_send_one(SendWr::rdma_write(w, sa.iova, sa.rkey).signaled()),
        "posting RDMA Write after invalidation"
    );
    kassert!(sends(&p.ss, 4));
    let log = p.ss.log.lock();
    pr_info!("frwr: write after invalidation: {:?}\n", log.sends[3]);
    kassert_eq!(log.sends[2], (12, 0, Some(WcOpcode::Send)));
    if p.server.device().is_iwarp() {
        // iWARP does not acknowledge RDMA Writes: the Write completes at
        // the sender and the target refuses it with a TERMINATE (invalid
        // STag). unmap_all() shows that A's memory did not take it.
        kassert_eq!((log.sends[3].0, log.sends[3].1), (13, 0));
    } else {
        kassert_eq!((log.sends[3].0, log.sends[3].1), (13, 2));
    }
    Ok(())
}

/// Unmapped, A's memory shows the first Write and not the refused one,
/// C's is untouched; all three go back to the pool.
#[inline(never)]
fn unmap_all(pool: &MrPool, mut a: Mr, mut b: Mr, mut c: Mr) -> TestResult {
    let a_bytes = step!(a.unmap(), "unmapping A");
    let Some(a_bytes) = a_bytes else {
        kassert!(false);
        return Err(Failure);
    };
    let bad = a_bytes
        .iter()
        .enumerate()
        .position(|(i, x)| *x != (i as u8) ^ 0x5a);
    kassert_eq!(bad, None);
    kassert_eq!(step!(b.unmap(), "unmapping B").map(|v| v.len()), None);
    let c_bytes = step!(c.unmap(), "unmapping C");
    kassert!(c_bytes.is_some_and(|v| v.iter().all(|x| *x == 0xcc)));
    kassert!(a.unmap().is_err());
    pool.put(a);
    pool.put(b);
    pool.put(c);
    kassert_eq!((pool.available(), pool.lost()), (4, 0));
    Ok(())
}

/// A REG_MR's context holds the MR's hardware object, not the MR: the
/// holder may give the MR up (here to the pool, still registered, which
/// drops it) while the unsignalled REG_MR is in the Send queue; the
/// `ib_mr` and its DMA mapping go only when the WR is retired, by the
/// next signalled completion (a zero-length Write's). Runs while the
/// QP is healthy (the failed Write after invalidation breaks the
/// connection).
#[inline(never)]
fn reg_ref_outlives_holder(p: &Pair, pool: &MrPool) -> TestResult {
    let cs = &p.cs;
    let free = pool.available();
    let mut f = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    let f_buf = step!(KVec::from_elem(0u8, 64, GFP_KERNEL), "allocating");
    kassert!(f.map_buf(f_buf, MrAccess::RemoteRead, XID + 5).is_ok());
    let fk = f.rkey();
    let held = || (census::held(Kind::Mr), census::held(Kind::MrMapping));
    let (mrs, maps) = held();
    let before = cs.log.lock().sends.len();
    step!(
        p.client
            .qp()
            .post_send_one(SendWr::reg_mr(Ctx::Reg(f.share()))),
        "posting REG_MR"
    );
    kassert_eq!(f.state(), MrState::Registered);
    // Registered: the pool drops it (lost until a refill), but the Send
    // queue still holds its hardware object.
    pool.put(f);
    kassert_eq!(pool.lost(), 1);
    kassert_eq!(held(), (mrs, maps));
    kassert_eq!(cs.log.lock().sends.len(), before);
    let probe = buf(p.client.pd(), 8, DmaDir::ToDevice, 6, |_| 0)?;
    step!(
        p.client
            .qp()
            .post_send_one(SendWr::zero_length_write(probe).signaled()),
        "posting a zero-length Write"
    );
    kassert!(sends(cs, before + 2));
    kassert_eq!(cs.log.lock().sends[before], (fk, 1, None));
    kassert_eq!(held(), (mrs - 1, maps - 1));
    kassert_eq!(step!(pool.refill(), "refilling the pool"), 1);
    kassert_eq!((pool.available(), pool.lost()), (free, 0));
    Ok(())
}

/// A registration the QP flushes (the client's QP is in the error state
/// after its disconnect) leaves the MR Broken: the pool deregisters it
/// and a refill replaces it.
#[inline(never)]
fn broken_mr(p: &Pair, pool: &MrPool) -> TestResult {
    let (cs, client) = (&p.cs, &p.client);
    step!(client.disconnect(), "rdma_disconnect (client)");
    let mut d = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    let d_buf = step!(KVec::from_elem(0u8, 64, GFP_KERNEL), "allocating");
    kassert!(d.map_buf(d_buf, MrAccess::RemoteRead, XID + 3).is_ok());
    let dk = d.rkey();
    let before = cs.log.lock().sends.len();
    let res = client
        .qp()
        .post_send_one(SendWr::reg_mr(Ctx::Reg(d.share())).signaled());
    kassert!(sends(cs, before + 1));
    kassert_eq!(cs.log.lock().sends[before].0, dk);
    pr_info!(
        "frwr: REG_MR after disconnect: post {:?}, MR {:?}\n",
        res,
        d.state()
    );
    let state = d.state();
    pool.put(d);
    if state == MrState::Broken {
        kassert_eq!((pool.available(), pool.lost()), (3, 1));
        kassert_eq!(step!(pool.refill(), "refilling the pool"), 1);
    } else {
        // Never posted: the MR was unmapped and reused.
        kassert_eq!(state, MrState::Mapped);
    }
    kassert_eq!((pool.available(), pool.lost()), (4, 0));
    Ok(())
}

/// An unsignalled REG_MR chained before a signalled Send on the client's
/// QP, in the error state since `broken_mr`'s disconnect: the provider
/// completes every flushed WR, signalled or not, so the REG_MR's context
/// comes back with its own failed completion (or aborted, if the post was
/// refused), never as retired by the Send's completion. A flush thus
/// cannot make an unsignalled REG_MR's MR count as registered.
#[inline(never)]
fn flushed_unsignalled(p: &Pair, pool: &MrPool) -> TestResult {
    let cs = &p.cs;
    let mut e = step!(pool.get().ok_or(ENOMEM), "taking an MR");
    let e_buf = step!(KVec::from_elem(0u8, 64, GFP_KERNEL), "allocating");
    kassert!(e.map_buf(e_buf, MrAccess::RemoteRead, XID + 4).is_ok());
    let ek = e.rkey();
    let send = buf(p.client.pd(), 16, DmaDir::ToDevice, 5, |_| 0)?;
    let before = cs.log.lock().sends.len();
    let mut chain = step!(SendChain::new_boxed(GFP_KERNEL), "allocating");
    kassert!(chain.push(SendWr::reg_mr(Ctx::Reg(e.share()))).is_ok());
    kassert!(chain.push(SendWr::send(send).signaled()).is_ok());
    let res = p.client.qp().post_send_chain(&mut chain);
    kassert!(sends(cs, before + 2));
    let (reg, snd) = {
        let log = cs.log.lock();
        let find = |tag: u32| {
            log.sends
                .iter()
                .skip(before)
                .find(|s| s.0 == tag)
                .map(|s| s.1)
        };
        (find(ek), find(5))
    };
    pr_info!(
        "frwr: REG_MR + Send on a QP in error: post {:?}, REG_MR kind {:?}, Send kind {:?}\n",
        res,
        reg,
        snd
    );
    // 2: a failed (flushed) completion of its own; 3: aborted (the post
    // was refused). Never 1 (retired by a later completion as successful).
    if res.is_ok() {
        kassert_eq!((reg, snd), (Some(2), Some(2)));
    } else {
        kassert_eq!((reg, snd), (Some(3), Some(3)));
    }
    // Flushed: Broken; refused: Mapped again.
    kassert!(
        e.state()
            == if res.is_ok() {
                MrState::Broken
            } else {
                MrState::Mapped
            }
    );
    pool.put(e);
    let _ = pool.refill();
    kassert_eq!((pool.available(), pool.lost()), (4, 0));
    Ok(())
}
