// SPDX-License-Identifier: GPL-2.0

//! FRWR memory registration: MRs, their pool, and invalidation.
//!
//! An [`Mr`] is one `ib_alloc_mr()` fast-registration MR with its own
//! scatterlist, owned by one holder at a time (it is not `Clone`): the
//! holder maps, unmaps and hands it on. The hardware object (the
//! `ib_mr`, its state and the DMA mapping of its scatterlist) is shared,
//! reference-counted, with the Send-queue WRs that name it: a REG_MR's
//! context holds an [`MrRef`], which keeps the object alive until the WR
//! is retired but lets the holder keep the MR, as the C client's request
//! keeps its MRs from `frwr_map()` to the invalidation. The MR's life is
//! a state machine ([`MrState`]):
//!
//! ```text
//!            map_pages / map_buf              REG_MR posted
//!   Free ------------------------> Mapped ----------------> Registered
//!    ^  <------------------------   ^  (not posted: Aborted)   |    |
//!    |        unmap                 +--------------------------+    |
//!    |                                         LOCAL_INV posted     |
//!    |          unmap                          InvPosted <----------+
//!    +---------------------- Invalidated <-- ok --+  | error        |
//!                                  ^                 v              |
//!                                  |               Broken <-- REG_MR error
//!                                  +---- Send With Invalidate ------+
//! ```
//!
//! - `map_*` builds the scatterlist, `ib_dma_map_sg()`s it and
//!   `ib_map_mr_sg()`s it with `PAGE_SIZE` pages, puts the caller's tag in
//!   the high 32 bits of the iova and bumps the key's low byte
//!   (`ib_update_fast_reg_key()`), as `frwr_map()` does. The
//!   [`RemoteRegion`] (rkey, length, iova) is what the peer needs to reach
//!   the memory; a user advertises it in its own protocol.
//! - A [`SendOp::RegMr`](super::wr::SendOp::RegMr) WR whose context
//!   holds the MR's [`MrRef`] ([`Mr::share`], returned by
//!   [`super::wr::SendCtx::mr`]) registers it. The MR is `Registered`
//!   from the post on: a Send queue runs its WRs in order, so whatever the
//!   holder posts after it (the Send that advertises the rkey, a
//!   LOCAL_INV) runs after the registration, and a peer can use the rkey
//!   only after that Send. Its context's retirement changes nothing; an
//!   error completion makes the MR `Broken`; a WR that was never posted
//!   (`Aborted`) leaves it `Mapped` again.
//! - A [`SendOp::LocalInv`](super::wr::SendOp::LocalInv) invalidates it;
//!   its context owns the `Mr` ([`inv::MrWr`]) until the completion,
//!   which moves it to `Invalidated` (or `Broken`) before the context
//!   comes back to the handler.
//! - Remote invalidation (the peer's Send With Invalidate, seen as
//!   [`super::wc::WorkCompletion::invalidated_rkey`] on a Receive):
//!   [`Mr::remote_invalidated`] moves it on.
//! - `unmap` (`ib_dma_unmap_sg()`) only from `Mapped` or `Invalidated`:
//!   the peer can no longer reach the memory. Then the MR is `Free` again.
//! - A `Broken` MR (registration or invalidation failed or was flushed)
//!   is never reused: [`MrPool::put`] drops it and [`MrPool::refill`]
//!   allocates a replacement. The hardware object goes with the last
//!   reference (the holder's or a WR's): it is deregistered
//!   (`ib_dereg_mr()`) *before* its memory is unmapped, so a
//!   still-registered MR can be dropped safely (this is what happens at
//!   disconnect).
//!
//! One job per file: this one is the MR and its state machine (mapping,
//! the bookkeeping of the posting and completion paths, remote
//! invalidation); [`caps`] reads what the device offers for fast
//! registration ([`caps::FastRegCaps`]) and has the shape an MR is
//! allocated with ([`caps::MrShape`]); [`pool`] keeps a connection's MRs
//! ([`pool::MrPool`]); [`inv`] has the context of a LOCAL_INV WR
//! ([`inv::MrWr`]) and posts invalidations.
//!
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
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};
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
#[repr(u8)]
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
    fn from_u8(v: u8) -> MrAccess {
        if v == MrAccess::RemoteWrite as u8 {
            MrAccess::RemoteWrite
        } else {
            MrAccess::RemoteRead
        }
    }

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
    /// Its REG_MR is posted (it runs before anything posted after it):
    /// the peer may access it under [`RemoteRegion::rkey`].
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

/// The scatterlist of an MR and what is mapped of it.
struct Mapping {
    sg: KVec<bindings::scatterlist>,
    mapped: u32,
    dir: bindings::dma_data_direction,
    owned: Option<KVec<u8>>,
    /// While mapped, the segment, copied out of the `ib_mr` when it
    /// changes: a provider may rewrite `ib_mr` fields while it executes a
    /// REG_MR, so nobody reads them from there afterwards.
    region: RemoteRegion,
}

/// The hardware side of an MR, shared by its holder ([`Mr`]) and the
/// WRs that name it ([`MrRef`]).
///
/// # Invariants
///
/// `mr` was returned by `ib_alloc_mr()` on `pd` with room for
/// `map.sg.len()` pages and is deregistered only in `drop`. `map.sg` was
/// set up with `sg_init_table()` and is never resized. When
/// `map.mapped > 0`, the first `mapped` entries are DMA-mapped for
/// `pd`'s device in direction `map.dir` and the memory they name stays
/// valid until they are unmapped (owned in `map.owned`, or guaranteed by
/// the caller of an `unsafe` map). The state is `Free` exactly when
/// `map.mapped == 0`. `map` is only accessed through the one [`Mr`]
/// that holds this object (by `&mut`), or by `drop`: an [`MrRef`] reads
/// only the atomics and the immutable fields.
struct MrHw {
    mr: NonNull<bindings::ib_mr>,
    state: AtomicU8,
    /// The current rkey (written by the holder when it maps, read by the
    /// posting path and by remote invalidation).
    rkey: AtomicU32,
    /// The [`MrAccess`] of the current mapping.
    access: AtomicU8,
    sg_gaps: bool,
    map: UnsafeCell<Mapping>,
    pd: Arc<Pd>,
}

// SAFETY: an `ib_mr` may be used and deregistered from any thread; the
// scatterlist holds page links and DMA addresses, no thread-bound data.
unsafe impl Send for MrHw {}
// SAFETY: shared access reads the atomics and the fields that never
// change; `map` is reached only by its one holder (type invariant).
unsafe impl Sync for MrHw {}

impl MrHw {
    fn state(&self) -> MrState {
        MrState::from_u8(self.state.load(Ordering::Acquire))
    }

    fn set_state(&self, s: MrState) {
        self.state.store(s as u8, Ordering::Release);
    }

    fn rkey(&self) -> u32 {
        self.rkey.load(Ordering::Relaxed)
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

    /// Moves `from` to `to` if the MR is in `from`; nothing otherwise.
    fn move_if(&self, from: MrState, to: MrState) {
        let _ =
            self.state
                .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// Unmaps what is mapped of `map` (`ib_dma_unmap_sg()`) for `pd`'s
/// device.
fn unmap_sg(pd: &Pd, map: &mut Mapping) {
    if map.mapped == 0 {
        return;
    }
    // SAFETY: the first `mapped` entries are mapped in `dir` for `pd`'s
    // device (the invariant of the `MrHw` that `map` belongs to); the
    // device is registered.
    unsafe {
        bindings::rpcrdma2_shim_dma_unmap_sg(
            pd.device().as_ptr(),
            map.sg.as_mut_ptr(),
            map.mapped as i32,
            map.dir,
        )
    };
    super::census::leave(super::census::Kind::MrMapping);
    // INVARIANT: nothing is mapped any more.
    map.mapped = 0;
}

impl Drop for MrHw {
    fn drop(&mut self) {
        // Deregister first: after this the peer cannot reach the memory,
        // whatever the state was; then unmap, then free `owned`.
        // SAFETY: the MR is ours (type invariant) and no WR names it: a
        // posted WR's context holds a reference to this object until the
        // WR came back.
        let ret = unsafe { bindings::rpcrdma2_shim_dereg_mr(self.mr.as_ptr()) };
        if ret != 0 {
            pr_err!("ib_dereg_mr failed ({})\n", ret);
        }
        super::census::leave(super::census::Kind::Mr);
        unmap_sg(&self.pd, self.map.get_mut());
    }
}

/// A reference to an MR's hardware object, held by a REG_MR WR's
/// context: it keeps the `ib_mr` and the DMA mapping alive until the WR
/// is retired, and it is what the posting and completion paths of
/// [`super::qp::Qp`] move through the state machine. It never reaches the
/// scatterlist; the MR stays with its holder.
#[derive(Clone)]
pub struct MrRef(Arc<MrHw>);

impl MrRef {
    /// The state.
    pub fn state(&self) -> MrState {
        self.0.state()
    }

    /// The current rkey.
    pub fn rkey(&self) -> u32 {
        self.0.rkey()
    }

    /// The PD the MR belongs to.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.0.pd
    }

    /// Posting a REG_MR: `Mapped` → `Registered`.
    pub(crate) fn begin_reg(&self) -> Result<RegInfo> {
        self.0
            .transition(MrState::Mapped, MrState::Registered, "REG_MR")?;
        Ok(RegInfo {
            mr: self.0.mr.as_ptr(),
            key: self.rkey(),
            access: MrAccess::from_u8(self.0.access.load(Ordering::Relaxed)).flags(),
        })
    }

    /// Posting a LOCAL_INV: `Registered` → `InvPosted`; the rkey.
    pub(crate) fn begin_inv(&self) -> Result<u32> {
        self.0
            .transition(MrState::Registered, MrState::InvPosted, "LOCAL_INV")?;
        Ok(self.rkey())
    }

    /// The WR that started `op` came back with `c`.
    ///
    /// A REG_MR's retirement or success changes nothing (the MR is
    /// `Registered` since the post, and its holder may have moved it on
    /// since); its error makes the MR `Broken` whatever the holder did
    /// meanwhile (nothing it posted after the REG_MR ran); a REG_MR never
    /// posted leaves it `Mapped`. A LOCAL_INV moves `InvPosted` on.
    pub(crate) fn end_op(&self, op: MrOp, c: &Completion<'_>) {
        let failed = match c {
            Completion::Done(wc) if !wc.is_success() => {
                if !wc.is_flushed() {
                    pr_err!(
                        "MR {:#x}: {:?} failed: {} (vendor error {:#x})\n",
                        self.rkey(),
                        op,
                        wc.status_msg(),
                        wc.vendor_err()
                    );
                }
                true
            }
            _ => false,
        };
        match op {
            MrOp::Reg => match c {
                _ if failed => self.0.set_state(MrState::Broken),
                Completion::Aborted => self.0.move_if(MrState::Registered, MrState::Mapped),
                _ => {}
            },
            MrOp::Inv => {
                let to = match c {
                    _ if failed => MrState::Broken,
                    Completion::Aborted => MrState::Registered,
                    _ => MrState::Invalidated,
                };
                self.0.move_if(MrState::InvPosted, to);
            }
        }
    }
}

/// An FRWR memory region with its scatterlist: the one holder of an MR
/// (not `Clone`; see the module documentation).
///
/// # Invariants
///
/// `hw` is reached by no other `Mr` (the [`MrRef`]s of it are WR
/// contexts'), so `&mut self` may use `hw.map`.
pub struct Mr {
    hw: MrRef,
}

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
        // INVARIANT: fresh MR with a fresh table of `depth` entries, one
        // holder.
        let hw = MrHw {
            mr,
            state: AtomicU8::new(MrState::Free as u8),
            rkey: AtomicU32::new(rkey),
            access: AtomicU8::new(MrAccess::RemoteRead as u8),
            sg_gaps: shape.sg_gaps,
            map: UnsafeCell::new(Mapping {
                sg,
                mapped: 0,
                dir: bindings::dma_data_direction_DMA_NONE,
                owned: None,
                region: RemoteRegion::default(),
            }),
            pd: pd.clone(),
        };
        match Arc::new(hw, GFP_KERNEL) {
            Ok(hw) => Ok(Mr { hw: MrRef(hw) }),
            // The `ib_mr` went with it (deregistered in `MrHw::drop`).
            Err(e) => Err(e.into()),
        }
    }

    /// The mapping, for the holder.
    fn map(&mut self) -> &mut Mapping {
        self.parts().1
    }

    /// The hardware object and the mapping, for the holder.
    fn parts(&mut self) -> (&MrHw, &mut Mapping) {
        let hw = &*self.hw.0;
        // SAFETY: `self` is the one holder (type invariant), borrowed
        // mutably for as long as the result; no `MrRef` reaches `map`.
        (hw, unsafe { &mut *hw.map.get() })
    }

    /// The mapping, read by the holder.
    fn map_ref(&self) -> &Mapping {
        // SAFETY: as in `map`; shared, so nobody writes it meanwhile
        // (only `&mut self` does).
        unsafe { &*self.hw.0.map.get() }
    }

    /// A reference to the hardware object for a REG_MR's context (see
    /// [`MrRef`]); the MR stays here.
    pub fn share(&self) -> MrRef {
        self.hw.clone()
    }

    /// The hardware object, for a WR context that owns the whole MR
    /// ([`inv::MrWr`]).
    pub fn hw(&self) -> &MrRef {
        &self.hw
    }

    /// The state.
    pub fn state(&self) -> MrState {
        self.hw.state()
    }

    /// The PD the MR belongs to.
    pub fn pd(&self) -> &Arc<Pd> {
        self.hw.pd()
    }

    /// Pages the MR can map.
    pub fn depth(&self) -> usize {
        self.map_ref().sg.len()
    }

    /// The current rkey.
    pub fn rkey(&self) -> u32 {
        self.hw.rkey()
    }

    /// The access the current mapping grants.
    pub fn access(&self) -> MrAccess {
        MrAccess::from_u8(self.hw.0.access.load(Ordering::Relaxed))
    }

    /// Where the peer reaches the MR, while it is mapped (in any state
    /// from `Mapped` to `Invalidated`).
    pub fn region(&self) -> Option<RemoteRegion> {
        let m = self.map_ref();
        (m.mapped != 0).then_some(m.region)
    }

    /// Maps up to [`Mr::depth`] of `segs` (taken one by one, so that a
    /// caller can produce them as it goes, without a list of its own) for
    /// the peer to access as `access`, with `tag` in the high 32 bits of
    /// the iova (the C client puts the RPC's XID there; a peer's access to
    /// a stale mapping then misses). Without SG_GAPS, stops after a
    /// segment that does not end at a page boundary or before one that
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
    /// ([`Mr::unmap`]) or dropped and every WR that names it is back.
    pub unsafe fn map_pages(
        &mut self,
        segs: impl IntoIterator<Item = PageSeg>,
        access: MrAccess,
        tag: u32,
    ) -> Result<usize> {
        self.check_free()?;
        let psize = page_size() as u64;
        let sg_gaps = self.hw.0.sg_gaps;
        let map = self.map();
        let cap = map.sg.len();
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
                    map.sg.as_mut_ptr().add(i),
                    s.page,
                    s.len,
                    s.offset,
                )
            };
            i += 1;
            if sg_gaps {
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
        let map = self.map();
        if len == 0 || len > u32::MAX as usize || pages > map.sg.len() {
            pr_err!(
                "MR: {} bytes at page offset {} do not fit {} pages (-EINVAL)\n",
                len,
                first,
                map.sg.len()
            );
            return Err(EINVAL);
        }
        // SAFETY: the table has at least one entry; the buffer is valid
        // (caller); the shim refuses addresses outside the linear map.
        let ret = unsafe {
            bindings::rpcrdma2_shim_sg_set_buf(map.sg.as_mut_ptr(), ptr.cast(), len as u32)
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
        if self.map_ref().owned.is_some() {
            return Err((EBUSY, buf));
        }
        // SAFETY: the buffer is a kmalloc allocation that the MR owns from
        // here until it is unmapped (or the MR's hardware object is
        // deregistered and dropped), and it is never resized meanwhile.
        match unsafe { self.map_kva(buf.as_ptr(), buf.len(), access, tag) } {
            Ok(()) => {
                self.map().owned = Some(buf);
                Ok(())
            }
            Err(e) => Err((e, buf)),
        }
    }

    /// DMA-maps the first `nents` entries and loads them into the MR.
    fn map_sg(&mut self, nents: u32, access: MrAccess, tag: u32) -> Result {
        let (hw, map) = self.parts();
        let dev = hw.pd.device().as_ptr();
        let dir = access.dma_dir();
        // SAFETY: the first `nents` entries were just set; the device is
        // registered (the PD holds it).
        let dma_nents = unsafe {
            bindings::rpcrdma2_shim_dma_map_sg(dev, map.sg.as_mut_ptr(), nents as i32, dir)
        };
        if dma_nents <= 0 {
            pr_err!("ib_dma_map_sg of {} entries failed (-EIO)\n", nents);
            return Err(EIO);
        }
        let mr = hw.mr.as_ptr();
        // SAFETY: the MR is live and not in use by the hardware (state
        // `Free`: any REG_MR that named it ran before its invalidation);
        // the entries are DMA-mapped.
        let n = unsafe { bindings::rpcrdma2_shim_map_mr_sg(mr, map.sg.as_mut_ptr(), dma_nents) };
        if n != dma_nents {
            pr_err!(
                "ib_map_mr_sg mapped {} of {} entries (-EIO)\n",
                n,
                dma_nents
            );
            // SAFETY: mapped just above with the same arguments.
            unsafe {
                bindings::rpcrdma2_shim_dma_unmap_sg(dev, map.sg.as_mut_ptr(), nents as i32, dir)
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
        map.region = region;
        super::census::enter(super::census::Kind::MrMapping);
        // INVARIANT: `nents` entries are mapped in `dir`.
        map.mapped = nents;
        map.dir = dir;
        hw.rkey.store(region.rkey, Ordering::Relaxed);
        hw.access.store(access as u8, Ordering::Relaxed);
        hw.set_state(MrState::Mapped);
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
        let (hw, map) = self.parts();
        unmap_sg(&hw.pd, map);
        let owned = map.owned.take();
        hw.set_state(MrState::Free);
        Ok(owned)
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
        self.hw.0.transition(
            MrState::Registered,
            MrState::Invalidated,
            "remote invalidation",
        )
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

/// The index of the MR in `mrs` whose rkey the peer invalidated
/// ([`super::wc::WorkCompletion::invalidated_rkey`]), if any.
pub fn find_by_rkey<'a>(rkey: u32, mrs: impl IntoIterator<Item = &'a Mr>) -> Option<usize> {
    mrs.into_iter()
        .position(|m| m.state() == MrState::Registered && m.rkey() == rkey)
}
