// SPDX-License-Identifier: GPL-2.0

//! FRWR memory registration: MRs, their pool, and invalidation.
//!
//! An [`Mr`] is one `ib_alloc_mr()` fast-registration MR with its own
//! scatterlist, owned by one holder at a time (it is not `Clone`). Its life
//! is a state machine ([`MrState`]):
//!
//! ```text
//!            map_pages / map_buf              REG_MR posted
//!   Free ------------------------> Mapped ----------------> RegPosted
//!    ^  <------------------------   |  ^                       |  |
//!    |        unmap                 |  +------ Aborted --------+  | error
//!    |                              |                   ok |       v
//!    |                              |                      v     Broken
//!    |          unmap            Registered <--- Aborted ---+       ^
//!    +---------------------- Invalidated <--- ok --- InvPosted ----+ error
//!                                  ^          LOCAL_INV   ^
//!                                  |  Send With Invalidate |
//!                                  +---- Registered -------+
//! ```
//!
//! - `map_*` builds the scatterlist, `ib_dma_map_sg()`s it and
//!   `ib_map_mr_sg()`s it with `PAGE_SIZE` pages, puts the caller's tag in
//!   the high 32 bits of the iova and bumps the key's low byte
//!   (`ib_update_fast_reg_key()`), as `frwr_map()` does. The
//!   [`RemoteRegion`] (rkey, length, iova) is what the peer needs to reach
//!   the memory; a user advertises it in its own protocol.
//! - A [`SendOp::RegMr`](super::wr::SendOp::RegMr) WR whose context owns
//!   the MR (see [`MrWr`], [`super::wr::SendCtx::mr`]) registers it; a
//!   [`SendOp::LocalInv`](super::wr::SendOp::LocalInv) invalidates it.
//!   The posting path and the completion path of [`super::qp::Qp`] move
//!   the state, before the context comes back to the handler: a WR that
//!   completed (or was retired by a later completion) succeeded, an error
//!   or flush completion makes the MR `Broken`, and a WR that was never
//!   posted (`Aborted`) leaves it where it was.
//! - Remote invalidation (the peer's Send With Invalidate, seen as
//!   [`super::wc::WorkCompletion::invalidated_rkey`] on a Receive):
//!   [`find_by_rkey`] finds the MR, [`Mr::remote_invalidated`] moves it on.
//! - `unmap` (`ib_dma_unmap_sg()`) only from `Mapped` or `Invalidated`:
//!   the peer can no longer reach the memory. Then the MR is `Free` again.
//! - A `Broken` MR (registration or invalidation failed or was flushed)
//!   is never reused: [`MrPool::put`] deregisters it and [`MrPool::refill`]
//!   allocates a replacement. Dropping an MR deregisters it
//!   (`ib_dereg_mr()`) *before* unmapping its memory, so a still-registered
//!   MR can be dropped safely (this is what happens at disconnect).
//!
//! One job per file: this one is the MR and its state machine (mapping,
//! the bookkeeping of the posting and completion paths, remote
//! invalidation); [`caps`] reads what the device offers for fast
//! registration ([`caps::FastRegCaps`]) and has the shape an MR is
//! allocated with ([`caps::MrShape`]); [`pool`] keeps a connection's MRs
//! ([`pool::MrPool`]); [`inv`] has the context of a REG_MR or LOCAL_INV WR
//! ([`inv::MrWr`]) and posts invalidations.
//!
//! [`MrWr`]: inv::MrWr
//! [`MrPool::put`]: pool::MrPool::put
//! [`MrPool::refill`]: pool::MrPool::refill

pub mod caps;
pub mod inv;
pub mod pool;

pub use crate::mem::{page_size, PageSeg};

use self::caps::MrShape;
use super::from_err_ptr;
use super::verbs::Pd;
use super::wc::Completion;
use crate::bindings;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// What the peer may do with a registered MR.
///
/// The same on every transport, iWARP included: iWARP wants remote write
/// access on the *sink* of an RDMA Read (its Read Response is placed into
/// the sink's STag), and the sinks are the peer's own memory (svcrdma's
/// rw API adds `IB_ACCESS_REMOTE_WRITE` on iWARP); an MR here is only the
/// source of the peer's RDMA Read or the sink of its RDMA Write, as in
/// the C client's `frwr_map()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrAccess {
    /// The peer RDMA-Writes into it (RPC-over-RDMA: Write and Reply
    /// chunks):
    /// `IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE`, `DMA_FROM_DEVICE`.
    RemoteWrite,
    /// The peer RDMA-Reads from it (RPC-over-RDMA: Read chunks):
    /// `IB_ACCESS_REMOTE_READ`, `DMA_TO_DEVICE`.
    RemoteRead,
}

impl MrAccess {
    fn flags(self) -> i32 {
        match self {
            MrAccess::RemoteWrite => {
                (bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE
                    | bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE) as i32
            }
            MrAccess::RemoteRead => bindings::ib_access_flags_IB_ACCESS_REMOTE_READ as i32,
        }
    }

    fn dma_dir(self) -> bindings::dma_data_direction {
        match self {
            MrAccess::RemoteWrite => bindings::dma_data_direction_DMA_FROM_DEVICE,
            MrAccess::RemoteRead => bindings::dma_data_direction_DMA_TO_DEVICE,
        }
    }
}

/// Where the peer reaches a mapped MR: what an RDMA Read or Write from
/// the other side names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteRegion {
    /// The rkey after the key bump.
    pub rkey: u32,
    /// The bytes registered.
    pub length: u32,
    /// The iova of the first byte (the tag passed to `map_*` in the high
    /// 32 bits).
    pub iova: u64,
}

/// Where an [`Mr`] is in its life (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MrState {
    /// Not mapped; may be mapped.
    Free = 0,
    /// DMA-mapped and `ib_map_mr_sg()`'d; may be registered or unmapped.
    Mapped = 1,
    /// A REG_MR WR is outstanding.
    RegPosted = 2,
    /// Registered: the peer may access it under [`RemoteRegion::rkey`].
    Registered = 3,
    /// A LOCAL_INV WR is outstanding.
    InvPosted = 4,
    /// Invalidated (locally or by the peer); may be unmapped.
    Invalidated = 5,
    /// A REG_MR or LOCAL_INV failed or was flushed: the hardware state is
    /// unknown, so it is only ever deregistered.
    Broken = 6,
}

impl MrState {
    fn from_u8(v: u8) -> MrState {
        match v {
            0 => MrState::Free,
            1 => MrState::Mapped,
            2 => MrState::RegPosted,
            3 => MrState::Registered,
            4 => MrState::InvPosted,
            5 => MrState::Invalidated,
            _ => MrState::Broken,
        }
    }
}

/// The MR operation a Send-queue WR started (recorded in its ring slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MrOp {
    Reg,
    Inv,
}

/// What an `ib_reg_wr` needs.
pub(crate) struct RegInfo {
    pub(crate) mr: *mut bindings::ib_mr,
    pub(crate) key: u32,
    pub(crate) access: i32,
}

/// An FRWR memory region with its scatterlist.
///
/// # Invariants
///
/// `mr` was returned by `ib_alloc_mr()` on `pd` with room for
/// `sg.len()` pages and is deregistered only in `drop`. `sg` was set up
/// with `sg_init_table()` and is never resized. When `mapped > 0`, the
/// first `mapped` entries are DMA-mapped for `pd`'s device in direction
/// `dir` and the memory they name stays valid until they are unmapped
/// (owned in `owned`, or guaranteed by the caller of an `unsafe` map).
/// The state is `Free` exactly when `mapped == 0`.
pub struct Mr {
    mr: NonNull<bindings::ib_mr>,
    sg: KVec<bindings::scatterlist>,
    mapped: u32,
    dir: bindings::dma_data_direction,
    access: MrAccess,
    sg_gaps: bool,
    state: AtomicU8,
    owned: Option<KVec<u8>>,
    /// The rkey and, while mapped, the segment, copied out of the
    /// `ib_mr` when they change (through `&mut self`): a provider may
    /// rewrite `ib_mr` fields while it executes a REG_MR, so shared
    /// readers never look into it.
    rkey: u32,
    region: RemoteRegion,
    pd: Arc<Pd>,
}

// SAFETY: an `ib_mr` may be used and deregistered from any thread; the
// scatterlist holds page links and DMA addresses, no thread-bound data.
unsafe impl Send for Mr {}
// SAFETY: shared access reads fields that only `&mut self` methods
// write, or the atomic state.
unsafe impl Sync for Mr {}

impl Mr {
    /// Allocates an MR of `shape.depth` pages (at least 1) on `pd`.
    pub fn new(pd: &Arc<Pd>, shape: &MrShape) -> Result<Mr> {
        let depth = shape.depth.max(1);
        let mut sg = KVec::with_capacity(depth as usize, GFP_KERNEL)?;
        for _ in 0..depth {
            sg.push(bindings::scatterlist::default(), GFP_KERNEL)?;
        }
        // SAFETY: `sg` has `depth` writable entries.
        unsafe { bindings::rpcrdma2_shim_sg_init_table(sg.as_mut_ptr(), depth) };
        let ty = if shape.sg_gaps {
            bindings::ib_mr_type_IB_MR_TYPE_SG_GAPS
        } else {
            bindings::ib_mr_type_IB_MR_TYPE_MEM_REG
        };
        // SAFETY: the PD is live and its device registered.
        let ptr = unsafe { bindings::ib_alloc_mr(pd.as_ptr(), ty, depth) };
        let mr = from_err_ptr(ptr).inspect_err(|e| {
            pr_err!(
                "ib_alloc_mr({} pages) on {} failed ({})\n",
                depth,
                pd.device().name(),
                e.to_errno()
            )
        })?;
        super::census::enter(super::census::Kind::Mr);
        // SAFETY: `ib_alloc_mr()` returned a valid MR, not yet in use.
        let rkey = unsafe { (*mr.as_ptr()).rkey };
        // INVARIANT: fresh MR with a fresh table of `depth` entries.
        Ok(Mr {
            mr,
            sg,
            mapped: 0,
            dir: bindings::dma_data_direction_DMA_NONE,
            access: MrAccess::RemoteRead,
            sg_gaps: shape.sg_gaps,
            state: AtomicU8::new(MrState::Free as u8),
            owned: None,
            rkey,
            region: RemoteRegion::default(),
            pd: pd.clone(),
        })
    }

    /// The state.
    pub fn state(&self) -> MrState {
        MrState::from_u8(self.state.load(Ordering::Acquire))
    }

    fn set_state(&self, s: MrState) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// Moves `from` to `to`; `EBUSY` (and a log line) otherwise.
    fn transition(&self, from: MrState, to: MrState, what: &str) -> Result {
        match self
            .state
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            Err(cur) => {
                pr_err!(
                    "MR {:#x}: {} needs state {:?}, it is {:?} (-EBUSY)\n",
                    self.rkey(),
                    what,
                    from,
                    MrState::from_u8(cur)
                );
                Err(EBUSY)
            }
        }
    }

    /// The PD the MR belongs to.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// Pages the MR can map.
    pub fn depth(&self) -> usize {
        self.sg.len()
    }

    /// The current rkey.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// The access the current mapping grants.
    pub fn access(&self) -> MrAccess {
        self.access
    }

    /// Where the peer reaches the MR, while it is mapped (in any state
    /// from `Mapped` to `Invalidated`).
    pub fn region(&self) -> Option<RemoteRegion> {
        (self.mapped != 0).then_some(self.region)
    }

    /// Maps up to [`Mr::depth`] of `segs` (taken one by one, so that a
    /// caller can produce them as it goes, without a list of its own) for
    /// the peer to access as `access`, with `tag` in the high 32 bits of the iova (the C client
    /// puts the RPC's XID there; a peer's access to a stale mapping then
    /// misses). Without SG_GAPS, stops after
    /// a segment that does not end at a page boundary or before one that
    /// does not start at one (the next MR takes the rest, as in C).
    /// Returns how many segments were mapped.
    ///
    /// Fails with `EBUSY` unless the MR is [`MrState::Free`], `EINVAL` for
    /// an empty list or a segment that leaves its page, `EIO` when DMA
    /// mapping or `ib_map_mr_sg()` fails (the MR stays `Free`).
    ///
    /// # Safety
    ///
    /// Every page must stay allocated, and must not be used for anything
    /// else the peer must not see or change, until the MR is unmapped
    /// ([`Mr::unmap`]) or dropped.
    pub unsafe fn map_pages(
        &mut self,
        segs: impl IntoIterator<Item = PageSeg>,
        access: MrAccess,
        tag: u32,
    ) -> Result<usize> {
        self.check_free()?;
        let psize = page_size() as u64;
        let cap = self.sg.len();
        let mut segs = segs.into_iter().peekable();
        let mut i = 0;
        while i < cap {
            let Some(s) = segs.next() else { break };
            if s.page.is_null() || s.len == 0 || u64::from(s.offset) + u64::from(s.len) > psize {
                pr_err!(
                    "MR: page segment {} [+{}, {} bytes] is empty or leaves its page (-EINVAL)\n",
                    i,
                    s.offset,
                    s.len
                );
                return Err(EINVAL);
            }
            // SAFETY: `i < cap == sg.len()`; the page is valid (caller).
            unsafe {
                bindings::rpcrdma2_shim_sg_set_page(
                    self.sg.as_mut_ptr().add(i),
                    s.page,
                    s.len,
                    s.offset,
                )
            };
            i += 1;
            if self.sg_gaps {
                continue;
            }
            let ends_in_page = (u64::from(s.offset) + u64::from(s.len)) % psize != 0;
            let next_offset = segs.peek().map_or(0, |n| n.offset);
            if (i < cap && next_offset != 0) || ends_in_page {
                break;
            }
        }
        if i == 0 {
            return Err(EINVAL);
        }
        self.map_sg(i as u32, access, tag)?;
        Ok(i)
    }

    /// Maps `len` bytes of kernel memory at `ptr` (linear map: kmalloc,
    /// not vmalloc) as one scatterlist entry.
    ///
    /// # Safety
    ///
    /// As for [`Mr::map_pages`], for the bytes `[ptr, ptr + len)`.
    pub unsafe fn map_kva(
        &mut self,
        ptr: *const u8,
        len: usize,
        access: MrAccess,
        tag: u32,
    ) -> Result {
        self.check_free()?;
        let psize = page_size();
        let first = (ptr as usize) % psize;
        let pages = (first + len).div_ceil(psize);
        if len == 0 || len > u32::MAX as usize || pages > self.sg.len() {
            pr_err!(
                "MR: {} bytes at page offset {} do not fit {} pages (-EINVAL)\n",
                len,
                first,
                self.sg.len()
            );
            return Err(EINVAL);
        }
        // SAFETY: the table has at least one entry; the buffer is valid
        // (caller); the shim refuses addresses outside the linear map.
        let ret = unsafe {
            bindings::rpcrdma2_shim_sg_set_buf(self.sg.as_mut_ptr(), ptr.cast(), len as u32)
        };
        kernel::error::to_result(ret)
            .inspect_err(|_| pr_err!("MR: buffer is not in the kernel's linear map (-EINVAL)\n"))?;
        self.map_sg(1, access, tag)
    }

    /// Maps an owned kmalloc buffer; the MR keeps it until [`Mr::unmap`]
    /// gives it back (or drops it). On failure the buffer comes back.
    pub fn map_buf(
        &mut self,
        buf: KVec<u8>,
        access: MrAccess,
        tag: u32,
    ) -> core::result::Result<(), (Error, KVec<u8>)> {
        if self.owned.is_some() {
            return Err((EBUSY, buf));
        }
        // SAFETY: the buffer is a kmalloc allocation that the MR owns from
        // here until it is unmapped (or the MR deregistered and dropped),
        // and it is never resized meanwhile.
        match unsafe { self.map_kva(buf.as_ptr(), buf.len(), access, tag) } {
            Ok(()) => {
                self.owned = Some(buf);
                Ok(())
            }
            Err(e) => Err((e, buf)),
        }
    }

    /// DMA-maps the first `nents` entries and loads them into the MR.
    fn map_sg(&mut self, nents: u32, access: MrAccess, tag: u32) -> Result {
        let dev = self.pd.device().as_ptr();
        let dir = access.dma_dir();
        // SAFETY: the first `nents` entries were just set; the device is
        // registered (the PD holds it).
        let dma_nents = unsafe {
            bindings::rpcrdma2_shim_dma_map_sg(dev, self.sg.as_mut_ptr(), nents as i32, dir)
        };
        if dma_nents <= 0 {
            pr_err!("ib_dma_map_sg of {} entries failed (-EIO)\n", nents);
            return Err(EIO);
        }
        let mr = self.mr.as_ptr();
        // SAFETY: the MR is live and not in use by the hardware (state
        // `Free`); the entries are DMA-mapped.
        let n = unsafe { bindings::rpcrdma2_shim_map_mr_sg(mr, self.sg.as_mut_ptr(), dma_nents) };
        if n != dma_nents {
            pr_err!(
                "ib_map_mr_sg mapped {} of {} entries (-EIO)\n",
                n,
                dma_nents
            );
            // SAFETY: mapped just above with the same arguments.
            unsafe {
                bindings::rpcrdma2_shim_dma_unmap_sg(dev, self.sg.as_mut_ptr(), nents as i32, dir)
            };
            return Err(EIO);
        }
        // SAFETY: the MR is ours and idle (`Free`, `&mut self`); these
        // are the C client's updates of `iova` and the key (frwr_map()).
        let region = unsafe {
            (*mr).iova = ((*mr).iova & 0xffff_ffff) | (u64::from(tag) << 32);
            let key = ((*mr).rkey as u8).wrapping_add(1);
            bindings::rpcrdma2_shim_update_fast_reg_key(mr, key);
            RemoteRegion {
                rkey: (*mr).rkey,
                length: (*mr).length as u32,
                iova: (*mr).iova,
            }
        };
        self.rkey = region.rkey;
        self.region = region;
        super::census::enter(super::census::Kind::MrMapping);
        // INVARIANT: `nents` entries are mapped in `dir`.
        self.mapped = nents;
        self.dir = dir;
        self.access = access;
        self.set_state(MrState::Mapped);
        Ok(())
    }

    /// Unmaps the memory (`ib_dma_unmap_sg()`) of an MR the peer cannot
    /// reach (`Mapped`, never registered, or `Invalidated`); the MR is
    /// `Free` again. Returns the buffer of [`Mr::map_buf`], if any.
    ///
    /// Fails with `EBUSY` in any other state: a registered MR must be
    /// invalidated first, a broken one only deregistered (dropped).
    pub fn unmap(&mut self) -> Result<Option<KVec<u8>>> {
        match self.state() {
            MrState::Mapped | MrState::Invalidated => {}
            s => {
                pr_err!("MR {:#x}: unmap while {:?} (-EBUSY)\n", self.rkey(), s);
                return Err(EBUSY);
            }
        }
        self.unmap_sg();
        self.set_state(MrState::Free);
        Ok(self.owned.take())
    }

    fn unmap_sg(&mut self) {
        if self.mapped == 0 {
            return;
        }
        // SAFETY: the first `mapped` entries are mapped in `dir` (type
        // invariant); the device is registered.
        unsafe {
            bindings::rpcrdma2_shim_dma_unmap_sg(
                self.pd.device().as_ptr(),
                self.sg.as_mut_ptr(),
                self.mapped as i32,
                self.dir,
            )
        };
        super::census::leave(super::census::Kind::MrMapping);
        // INVARIANT: nothing is mapped any more.
        self.mapped = 0;
    }

    /// A mapping needs a `Free` MR: `EBUSY` (logged) otherwise.
    fn check_free(&self) -> Result {
        let state = self.state();
        if state != MrState::Free {
            pr_err!("MR {:#x}: map while {:?} (-EBUSY)\n", self.rkey(), state);
            return Err(EBUSY);
        }
        Ok(())
    }

    /// The peer invalidated `rkey` with Send With Invalidate: a
    /// `Registered` MR with that rkey becomes `Invalidated`.
    ///
    /// Fails with `EINVAL` when the rkey is not this MR's, `EBUSY` when
    /// the MR is not registered.
    pub fn remote_invalidated(&mut self, rkey: u32) -> Result {
        if rkey != self.rkey() {
            return Err(EINVAL);
        }
        self.transition(
            MrState::Registered,
            MrState::Invalidated,
            "remote invalidation",
        )
    }

    /// Posting a REG_MR: `Mapped` → `RegPosted`.
    pub(crate) fn begin_reg(&self) -> Result<RegInfo> {
        self.transition(MrState::Mapped, MrState::RegPosted, "REG_MR")?;
        Ok(RegInfo {
            mr: self.mr.as_ptr(),
            key: self.rkey(),
            access: self.access.flags(),
        })
    }

    /// Posting a LOCAL_INV: `Registered` → `InvPosted`; the rkey.
    pub(crate) fn begin_inv(&self) -> Result<u32> {
        self.transition(MrState::Registered, MrState::InvPosted, "LOCAL_INV")?;
        Ok(self.rkey())
    }

    /// The WR that started `op` came back with `c`.
    pub(crate) fn end_op(&self, op: MrOp, c: &Completion<'_>) {
        let (pending, ok, undo) = match op {
            MrOp::Reg => (MrState::RegPosted, MrState::Registered, MrState::Mapped),
            MrOp::Inv => (
                MrState::InvPosted,
                MrState::Invalidated,
                MrState::Registered,
            ),
        };
        let to = match c {
            Completion::Done(wc) if wc.is_success() => ok,
            Completion::Retired => ok,
            Completion::Done(wc) => {
                if !wc.is_flushed() {
                    pr_err!(
                        "MR {:#x}: {:?} failed: {} (vendor error {:#x})\n",
                        self.rkey(),
                        op,
                        wc.status_msg(),
                        wc.vendor_err()
                    );
                }
                MrState::Broken
            }
            Completion::Aborted => undo,
        };
        let _ = self.transition(pending, to, "completion");
    }
}

impl crate::mem::MapTarget for Mr {
    type Access = MrAccess;

    fn depth(&self) -> usize {
        Mr::depth(self)
    }

    unsafe fn map_pages(
        &mut self,
        segs: impl IntoIterator<Item = PageSeg>,
        access: MrAccess,
        tag: u32,
    ) -> Result<usize> {
        // SAFETY: the caller keeps the pages as `Mr::map_pages` requires.
        unsafe { Mr::map_pages(self, segs, access, tag) }
    }

    unsafe fn map_kva(&mut self, ptr: *const u8, len: usize, access: MrAccess, tag: u32) -> Result {
        // SAFETY: the caller keeps the bytes as `Mr::map_kva` requires.
        unsafe { Mr::map_kva(self, ptr, len, access, tag) }
    }

    fn unmap(&mut self) -> Result {
        Mr::unmap(self).map(drop)
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // Deregister first: after this the peer cannot reach the memory,
        // whatever the state was; then unmap, then free `owned`.
        // SAFETY: the MR is ours (type invariant) and no WR names it (a
        // posted WR's context owns the `Mr`, so it is not dropped before
        // the WR came back).
        let ret = unsafe { bindings::rpcrdma2_shim_dereg_mr(self.mr.as_ptr()) };
        if ret != 0 {
            pr_err!("ib_dereg_mr failed ({})\n", ret);
        }
        super::census::leave(super::census::Kind::Mr);
        self.unmap_sg();
    }
}

/// The index of the MR in `mrs` whose rkey the peer invalidated
/// ([`super::wc::WorkCompletion::invalidated_rkey`]), if any.
pub fn find_by_rkey<'a>(rkey: u32, mrs: impl IntoIterator<Item = &'a Mr>) -> Option<usize> {
    mrs.into_iter()
        .position(|m| m.state() == MrState::Registered && m.rkey() == rkey)
}
