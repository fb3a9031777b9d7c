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
//!   `ib_map_mr_sg()`s it with `PAGE_SIZE` pages, puts the RPC's XID in the
//!   high 32 bits of the iova and bumps the key's low byte
//!   (`ib_update_fast_reg_key()`), as `frwr_map()` does. The
//!   [`Segment`] (handle, length, offset) is what the chunk encoder puts
//!   on the wire.
//! - A [`SendOp::RegMr`](super::qp::SendOp::RegMr) WR whose context owns
//!   the MR (see [`MrWr`], [`super::qp::SendCtx::mr`]) registers it; a
//!   [`SendOp::LocalInv`](super::qp::SendOp::LocalInv) invalidates it.
//!   The posting path and the completion path of [`super::qp::Qp`] move
//!   the state, before the context comes back to the handler: a WR that
//!   completed (or was retired by a later completion) succeeded, an error
//!   or flush completion makes the MR `Broken`, and a WR that was never
//!   posted (`Aborted`) leaves it where it was.
//! - Remote invalidation (the peer's Send With Invalidate, seen as
//!   [`super::qp::WorkCompletion::invalidated_rkey`] on a Receive):
//!   [`find_by_rkey`] finds the MR, [`Mr::remote_invalidated`] moves it on.
//! - `unmap` (`ib_dma_unmap_sg()`) only from `Mapped` or `Invalidated`:
//!   the peer can no longer reach the memory. Then the MR is `Free` again.
//! - A `Broken` MR (registration or invalidation failed or was flushed)
//!   is never reused: [`MrPool::put`] deregisters it and [`MrPool::refill`]
//!   allocates a replacement. Dropping an MR deregisters it
//!   (`ib_dereg_mr()`) *before* unmapping its memory, so a still-registered
//!   MR can be dropped safely (this is what happens at disconnect).

use super::qp::{Completion, Qp, QpHandler, SendChain, SendCtx, SendWr};
use super::verbs::Pd;
use super::{from_err_ptr, Device};
use crate::bindings;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use kernel::alloc::flags::GFP_NOWAIT;
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};

/// `RPCRDMA_MAX_DATA_SEGS` for 4 KiB pages: a 1 MiB payload at any offset.
pub const MAX_DATA_SEGS: u32 = 257;
/// `RPCRDMA_MAX_HDR_SEGS`: chunk segments per RPC-over-RDMA header.
pub const MAX_HDR_SEGS: u32 = 16;
/// `RPCRDMA_MAX_SEGS`: data pages plus head and tail.
pub const MAX_SEGS: u32 = MAX_DATA_SEGS + 3;

/// What a device offers for FRWR, sized as `frwr_query_device()` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrwrCaps {
    /// Pages per MR (`re_max_fr_depth`): `max_sge_rd` when it is larger
    /// than [`MAX_HDR_SEGS`] (a quirk for devices that perform best with
    /// small MRs), else `max_fast_reg_page_list_len`; at most
    /// [`MAX_DATA_SEGS`].
    pub depth: u32,
    /// `IB_MR_TYPE_SG_GAPS` (`IBK_SG_GAPS_REG`): segments need not be
    /// page-contiguous.
    pub sg_gaps: bool,
    /// MRs one RPC may need (`re_max_rdma_segs`): ⌈[`MAX_DATA_SEGS`] /
    /// depth⌉ + 2 (head and tail of a Reply chunk), at most
    /// [`MAX_HDR_SEGS`].
    pub max_segs: u32,
    /// Send-queue WRs one RPC may need: the Send, a REG_MR and a
    /// LOCAL_INV for head and tail, and for each MR of the page list
    /// (7 + 2n, as the C client counts).
    pub send_wrs_per_rpc: u32,
}

impl FrwrCaps {
    /// Checks that `dev` can do FRWR for NFS and sizes the MRs.
    ///
    /// Fails with `EINVAL` without `IB_DEVICE_MEM_MGT_EXTENSIONS` and
    /// `ENOMEM` when `max_segs * depth` cannot cover [`MAX_SEGS`] pages.
    pub fn query(dev: &Device) -> Result<FrwrCaps> {
        // SAFETY: the device is registered (the caller borrows it); its
        // `attrs` are set before registration and not changed after.
        let attrs = unsafe { &(*dev.as_ptr()).attrs };
        let mem_mgt = attrs.device_cap_flags
            & (bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64)
            != 0;
        if !mem_mgt || attrs.max_fast_reg_page_list_len == 0 {
            pr_err!("FRWR is not supported by device {} (-EINVAL)\n", dev.name());
            return Err(EINVAL);
        }
        let sg_gaps =
            attrs.kernel_cap_flags & (bindings::ib_kernel_cap_flags_IBK_SG_GAPS_REG as u64) != 0;
        let sge_rd = attrs.max_sge_rd.max(0) as u32;
        let depth = if sge_rd > MAX_HDR_SEGS {
            sge_rd
        } else {
            attrs.max_fast_reg_page_list_len
        }
        .min(MAX_DATA_SEGS);
        Self::from_limits(depth, sg_gaps).inspect_err(|_| {
            pr_err!(
                "device {}: FRWR depth {} cannot register {} pages per RPC (-ENOMEM)\n",
                dev.name(),
                depth,
                MAX_SEGS
            )
        })
    }

    /// The sizing arithmetic of [`FrwrCaps::query`] for a given depth.
    pub fn from_limits(depth: u32, sg_gaps: bool) -> Result<FrwrCaps> {
        if depth == 0 {
            return Err(EINVAL);
        }
        let depth = depth.min(MAX_DATA_SEGS);
        let mut wrs = 7;
        if depth < MAX_DATA_SEGS {
            let mut delta = (MAX_DATA_SEGS - depth) as i64;
            while delta > 0 {
                wrs += 2;
                delta -= i64::from(depth);
            }
        }
        let max_segs = (MAX_DATA_SEGS.div_ceil(depth) + 2).min(MAX_HDR_SEGS);
        if max_segs * depth < MAX_SEGS {
            return Err(ENOMEM);
        }
        Ok(FrwrCaps {
            depth,
            sg_gaps,
            max_segs,
            send_wrs_per_rpc: wrs,
        })
    }
}

/// What the peer may do with a registered MR.
///
/// The same on every transport, iWARP included: iWARP wants remote write
/// access on the *sink* of an RDMA Read (its Read Response is placed into
/// the sink's STag), and the sinks are the server's (svcrdma's rw API adds
/// `IB_ACCESS_REMOTE_WRITE` on iWARP); the client's MRs are only Read
/// chunk sources and RDMA Write sinks, as in the C client's `frwr_map()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrAccess {
    /// The peer RDMA-Writes into it (Write and Reply chunks):
    /// `IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE`, `DMA_FROM_DEVICE`.
    RemoteWrite,
    /// The peer RDMA-Reads from it (Read chunks): `IB_ACCESS_REMOTE_READ`,
    /// `DMA_TO_DEVICE`.
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

/// A registered chunk segment (RFC 8166 `xdr_rdma_segment`): the codec's
/// own type, so [`Mr::segment`] feeds the chunk encoder directly. For an
/// MR, `handle` is the rkey after the key bump, `length` the bytes
/// registered and `offset` the iova of the first byte (XID in the high
/// 32 bits).
pub use crate::xdr::chunk::Segment;

/// A piece of a page, as an `xdr_buf`'s page list gives it.
#[derive(Clone, Copy, Debug)]
pub struct PageSeg {
    /// The page.
    pub page: *mut bindings::page,
    /// Offset in the page.
    pub offset: u32,
    /// Bytes, with `offset + len <= PAGE_SIZE`.
    pub len: u32,
}

// SAFETY: a `struct page` pointer names a kernel page, which may be used
// from any thread; `PageSeg` only carries it (the users of the page are
// the `unsafe` mapping functions, whose callers vouch for its lifetime).
unsafe impl Send for PageSeg {}
// SAFETY: as above; shared access only reads the pointer value.
unsafe impl Sync for PageSeg {}

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
    /// Registered: the peer may access it under [`Segment::handle`].
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
    seg: Segment,
    pd: Arc<Pd>,
}

// SAFETY: an `ib_mr` may be used and deregistered from any thread; the
// scatterlist holds page links and DMA addresses, no thread-bound data.
unsafe impl Send for Mr {}
// SAFETY: shared access reads fields that only `&mut self` methods
// write, or the atomic state.
unsafe impl Sync for Mr {}

/// The kernel's page size (`kernel::page::PAGE_SIZE`).
pub fn page_size() -> usize {
    // Never 0: keeps divisions by it free of a panic path.
    kernel::page::PAGE_SIZE.max(1)
}

impl Mr {
    /// Allocates an MR of `caps.depth` pages on `pd`.
    pub fn new(pd: &Arc<Pd>, caps: &FrwrCaps) -> Result<Mr> {
        let depth = caps.depth.clamp(1, MAX_DATA_SEGS);
        let mut sg = KVec::with_capacity(depth as usize, GFP_KERNEL)?;
        for _ in 0..depth {
            sg.push(bindings::scatterlist::default(), GFP_KERNEL)?;
        }
        // SAFETY: `sg` has `depth` writable entries.
        unsafe { bindings::rpcrdma2_shim_sg_init_table(sg.as_mut_ptr(), depth) };
        let ty = if caps.sg_gaps {
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
            sg_gaps: caps.sg_gaps,
            state: AtomicU8::new(MrState::Free as u8),
            owned: None,
            rkey,
            seg: Segment::default(),
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

    /// The segment to advertise, while the MR is mapped (in any state
    /// from `Mapped` to `Invalidated`).
    pub fn segment(&self) -> Option<Segment> {
        (self.mapped != 0).then_some(self.seg)
    }

    /// Maps up to [`Mr::depth`] of `segs` for the peer to access as
    /// `access`, tagging the iova with `xid` (host order: the number whose
    /// big-endian encoding is the RPC's XID on the wire, `be32_to_cpu(rq_xid)`). Without SG_GAPS, stops after
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
        segs: &[PageSeg],
        access: MrAccess,
        xid: u32,
    ) -> Result<usize> {
        self.check_free()?;
        let psize = page_size() as u64;
        let n = segs.len().min(self.sg.len());
        if n == 0 {
            return Err(EINVAL);
        }
        let mut i = 0;
        while i < n {
            let Some(&s) = segs.get(i) else { break };
            if s.page.is_null() || s.len == 0 || u64::from(s.offset) + u64::from(s.len) > psize {
                pr_err!(
                    "MR: page segment {} [+{}, {} bytes] is empty or leaves its page (-EINVAL)\n",
                    i,
                    s.offset,
                    s.len
                );
                return Err(EINVAL);
            }
            // SAFETY: `i < n <= sg.len()`; the page is valid (caller).
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
            let next_offset = segs.get(i).map_or(0, |n| n.offset);
            if (i < n && next_offset != 0) || ends_in_page {
                break;
            }
        }
        self.map_sg(i as u32, access, xid)?;
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
        xid: u32,
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
        self.map_sg(1, access, xid)
    }

    /// Maps an owned kmalloc buffer; the MR keeps it until [`Mr::unmap`]
    /// gives it back (or drops it). On failure the buffer comes back.
    pub fn map_buf(
        &mut self,
        buf: KVec<u8>,
        access: MrAccess,
        xid: u32,
    ) -> core::result::Result<(), (Error, KVec<u8>)> {
        if self.owned.is_some() {
            return Err((EBUSY, buf));
        }
        // SAFETY: the buffer is a kmalloc allocation that the MR owns from
        // here until it is unmapped (or the MR deregistered and dropped),
        // and it is never resized meanwhile.
        match unsafe { self.map_kva(buf.as_ptr(), buf.len(), access, xid) } {
            Ok(()) => {
                self.owned = Some(buf);
                Ok(())
            }
            Err(e) => Err((e, buf)),
        }
    }

    /// DMA-maps the first `nents` entries and loads them into the MR.
    fn map_sg(&mut self, nents: u32, access: MrAccess, xid: u32) -> Result {
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
        let seg = unsafe {
            (*mr).iova = ((*mr).iova & 0xffff_ffff) | (u64::from(xid) << 32);
            let key = ((*mr).rkey as u8).wrapping_add(1);
            bindings::rpcrdma2_shim_update_fast_reg_key(mr, key);
            Segment {
                handle: (*mr).rkey,
                length: (*mr).length as u32,
                offset: (*mr).iova,
            }
        };
        self.rkey = seg.handle;
        self.seg = seg;
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
/// ([`super::qp::WorkCompletion::invalidated_rkey`]), if any.
pub fn find_by_rkey<'a>(rkey: u32, mrs: impl IntoIterator<Item = &'a Mr>) -> Option<usize> {
    mrs.into_iter()
        .position(|m| m.state() == MrState::Registered && m.rkey() == rkey)
}

/// A pool of FRWR MRs for one connection (one PD).
///
/// The C client keeps `re_max_rdma_segs` MRs per refresh and grows on
/// demand; here the owner chooses the size (for example
/// `max_requests * caps.max_segs`, bounded by memory). MRs that came back
/// `Broken` or still registered are deregistered, not reused, and
/// [`MrPool::refill`] replaces them (call it in process context, e.g. on
/// reconnect). A new connection has a new PD and so a new pool.
///
/// # Invariants
///
/// Every MR in `free` is `Free` and belongs to `pd`.
#[pin_data]
pub struct MrPool {
    pd: Arc<Pd>,
    caps: FrwrCaps,
    size: usize,
    lost: AtomicUsize,
    #[pin]
    free: Mutex<FreeList>,
}

/// A stack of MRs in `size` preallocated slots: `slots[..n]` are `Some`,
/// the rest `None` (so giving an MR back never allocates).
struct FreeList {
    slots: KVec<Option<Mr>>,
    n: usize,
}

impl FreeList {
    fn pop(&mut self) -> Option<Mr> {
        let i = self.n.checked_sub(1)?;
        let mr = self.slots.get_mut(i)?.take();
        self.n = i;
        mr
    }

    /// Gives `mr` back if there is a free slot.
    fn push(&mut self, mr: Mr) -> core::result::Result<(), Mr> {
        match self.slots.get_mut(self.n) {
            Some(slot) => {
                *slot = Some(mr);
                self.n += 1;
                Ok(())
            }
            None => Err(mr),
        }
    }
}

impl MrPool {
    /// Allocates `size` MRs of `caps.depth` pages on `pd`.
    pub fn new(pd: &Arc<Pd>, caps: FrwrCaps, size: usize) -> Result<Arc<MrPool>> {
        let mut slots = KVec::with_capacity(size, GFP_KERNEL)?;
        for _ in 0..size {
            slots.push(Some(Mr::new(pd, &caps)?), GFP_KERNEL)?;
        }
        let v = FreeList { slots, n: size };
        Arc::pin_init(
            pin_init!(MrPool {
                pd: pd.clone(),
                caps,
                size,
                lost: AtomicUsize::new(0),
                free <- kernel::new_mutex!(v, "rpcrdma2_mr_pool"),
            }),
            GFP_KERNEL,
        )
    }

    /// The sizing the MRs were made with.
    pub fn caps(&self) -> &FrwrCaps {
        &self.caps
    }

    /// Takes a `Free` MR; `None` when the pool is empty.
    pub fn get(&self) -> Option<Mr> {
        self.free.lock().pop()
    }

    /// Gives an MR back. A `Mapped` or `Invalidated` one is unmapped
    /// first (its owned buffer, if any, is freed); any other state means
    /// the peer may still reach it or its hardware state is unknown, so it
    /// is deregistered and counted as lost until [`MrPool::refill`].
    pub fn put(&self, mut mr: Mr) {
        if !core::ptr::eq(&**mr.pd(), &*self.pd) {
            pr_err!(
                "MR {:#x} returned to the pool of another PD; deregistered\n",
                mr.rkey()
            );
            return;
        }
        let reusable = match mr.state() {
            MrState::Free => true,
            MrState::Mapped | MrState::Invalidated => mr.unmap().is_ok(),
            _ => false,
        };
        if reusable {
            // A slot is free unless more MRs come back than were taken;
            // an extra one is deregistered like a broken one.
            if self.free.lock().push(mr).is_ok() {
                return;
            }
        } else {
            drop(mr);
        }
        self.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// The number of MRs the pool holds when all are back.
    pub fn size(&self) -> usize {
        self.size
    }

    /// MRs available now.
    pub fn available(&self) -> usize {
        self.free.lock().n
    }

    /// MRs deregistered by [`MrPool::put`] and not replaced yet.
    pub fn lost(&self) -> usize {
        self.lost.load(Ordering::Relaxed)
    }

    /// Allocates replacements for lost MRs; returns how many.
    pub fn refill(&self) -> Result<usize> {
        let mut done = 0;
        while self.lost.load(Ordering::Relaxed) > 0 {
            let mr = Mr::new(&self.pd, &self.caps)?;
            self.lost.fetch_sub(1, Ordering::Relaxed);
            // Dropped (deregistered) if there is no slot.
            let _ = self.free.lock().push(mr);
            done += 1;
        }
        Ok(done)
    }
}

/// Collects the MRs of a synchronous invalidation.
#[pin_data]
pub struct InvWait {
    #[pin]
    mrs: Mutex<KVec<Mr>>,
    #[pin]
    cv: CondVar,
}

/// The Send-queue context of a REG_MR or LOCAL_INV WR: owns its MR.
///
/// The transport's [`QpHandler::SendCtx`] wraps it (e.g. an enum variant)
/// and returns [`MrWr::mr`] from [`SendCtx::mr`]; its `send_done` calls
/// [`MrWr::done`] to take the MR back.
pub struct MrWr {
    mr: Mr,
    wait: Option<Arc<InvWait>>,
    last: bool,
}

impl MrWr {
    /// A context for `mr`.
    pub fn new(mr: Mr) -> MrWr {
        MrWr {
            mr,
            wait: None,
            last: false,
        }
    }

    /// The MR (for [`SendCtx::mr`]).
    pub fn mr(&self) -> &Mr {
        &self.mr
    }

    /// Whether this is the last LOCAL_INV of a chain posted by
    /// [`post_local_inv`]: all earlier ones have come back already (Send
    /// queues complete in order), so the invalidation is complete.
    pub fn is_last(&self) -> bool {
        self.last
    }

    /// Ends the WR: gives the MR back (its state says how the WR went),
    /// or `None` when it belongs to an [`invalidate_sync`] waiter.
    pub fn done(self) -> Option<Mr> {
        match self.wait {
            None => Some(self.mr),
            Some(w) => {
                // Capacity was reserved for the whole chain.
                let _ = w.mrs.lock().push(self.mr, GFP_KERNEL);
                w.cv.notify_all();
                None
            }
        }
    }
}

impl SendCtx for MrWr {
    fn mr(&self) -> Option<&Mr> {
        Some(&self.mr)
    }
}

fn post_inv_chain<Q: QpHandler>(
    qp: &Qp<Q>,
    mrs: KVec<Mr>,
    wait: Option<&Arc<InvWait>>,
    mut wrap: impl FnMut(MrWr) -> Q::SendCtx,
) -> Result {
    let total = mrs.len();
    let mut res = Ok(());
    // On the heap: a chain of MRs is a few KiB. Without memory, the WRs
    // are posted one by one.
    let mut chain = SendChain::new_boxed(GFP_NOWAIT).ok();
    for (i, mr) in mrs.into_iter().enumerate() {
        let last = i + 1 == total;
        let ctx = wrap(MrWr {
            mr,
            wait: wait.cloned(),
            last,
        });
        if res.is_err() {
            // An earlier chain failed: hand the rest back untouched.
            qp.handler().send_done(qp, ctx, Completion::Aborted);
            continue;
        }
        res = qp.post_batched(chain.as_deref_mut(), SendWr::local_inv(ctx), last);
    }
    res
}

/// Posts LOCAL_INV for `mrs` (all `Registered`) in as few posts as
/// possible; only the last WR of each post is signalled. Each MR comes
/// back to the handler's `send_done` in its [`MrWr`] (made into the
/// handler's context by `wrap`); the last one has [`MrWr::is_last`].
/// This is the asynchronous invalidation of `frwr_unmap_async()`.
///
/// On failure every MR not posted still comes back, as
/// [`Completion::Aborted`] (its state unchanged).
pub fn post_local_inv<Q: QpHandler>(
    qp: &Qp<Q>,
    mrs: KVec<Mr>,
    wrap: impl FnMut(MrWr) -> Q::SendCtx,
) -> Result {
    post_inv_chain(qp, mrs, None, wrap)
}

/// Invalidates `mrs` and waits until every WR came back
/// (`frwr_unmap_sync()`, for an RPC that is abandoned); returns the MRs,
/// each `Invalidated` or, if its LOCAL_INV failed, `Broken` (or still
/// `Registered` if it could not be posted). The handler must hand each
/// [`MrWr`] to [`MrWr::done`]. Must not be called from a [`QpHandler`]
/// callback. Fails (with the MRs untouched) only if it cannot allocate.
pub fn invalidate_sync<Q: QpHandler>(
    qp: &Qp<Q>,
    mrs: KVec<Mr>,
    wrap: impl FnMut(MrWr) -> Q::SendCtx,
) -> core::result::Result<KVec<Mr>, (Error, KVec<Mr>)> {
    let n = mrs.len();
    let wait = match KVec::with_capacity(n, GFP_KERNEL)
        .map_err(Error::from)
        .and_then(|v| {
            Arc::pin_init(
                pin_init!(InvWait {
                    mrs <- kernel::new_mutex!(v, "rpcrdma2_inv_wait"),
                    cv <- kernel::new_condvar!("rpcrdma2_inv_wait"),
                }),
                GFP_KERNEL,
            )
        }) {
        Ok(w) => w,
        Err(e) => return Err((e, mrs)),
    };
    let _ = post_inv_chain(qp, mrs, Some(&wait), wrap);
    let mut got = wait.mrs.lock();
    while got.len() < n {
        wait.cv.wait(&mut got);
    }
    Ok(core::mem::take(&mut *got))
}
