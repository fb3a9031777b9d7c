// SPDX-License-Identifier: GPL-2.0

//! Memory handed to a device, as both SUNRPC and ib_core see it: a piece
//! of a page ([`PageSeg`], what an `xdr_buf`'s page list gives and a
//! scatterlist takes), the page size, and what maps such memory for a
//! device to reach ([`MapTarget`], an FRWR MR). Here so that `sunrpc/`
//! walks a request's buffers into an MR and `ib/` maps them without one
//! importing the other.

use crate::bindings;
use kernel::prelude::*;

/// The kernel's page size (`kernel::page::PAGE_SIZE`).
pub fn page_size() -> usize {
    // Never 0: keeps divisions by it free of a panic path.
    kernel::page::PAGE_SIZE.max(1)
}

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

/// Something that maps memory for a device to reach (and a peer, through
/// it): an FRWR MR (`ib::mr::Mr`). The memory is named by the caller,
/// page by page or as one run of kernel memory; `tag` is the caller's
/// (RPC-over-RDMA puts the XID in the high half of the iova).
pub trait MapTarget {
    /// What the device may do with the memory.
    type Access: Copy;

    /// Pages one mapping can take.
    fn depth(&self) -> usize;

    /// Maps up to [`MapTarget::depth`] of `segs`; returns how many were
    /// mapped.
    ///
    /// # Safety
    ///
    /// Every page must stay allocated, and must not be used for anything
    /// else the peer must not see or change, until the mapping is undone
    /// ([`MapTarget::unmap`]) or the target dropped.
    unsafe fn map_pages(
        &mut self,
        segs: impl IntoIterator<Item = PageSeg>,
        access: Self::Access,
        tag: u32,
    ) -> Result<usize>;

    /// Maps `len` bytes of kernel memory at `ptr` (linear map: kmalloc,
    /// not vmalloc).
    ///
    /// # Safety
    ///
    /// As for [`MapTarget::map_pages`], for the bytes `[ptr, ptr + len)`.
    unsafe fn map_kva(
        &mut self,
        ptr: *const u8,
        len: usize,
        access: Self::Access,
        tag: u32,
    ) -> Result;

    /// Undoes a mapping the device can no longer reach (one never
    /// registered): what a caller does when it took only part of the
    /// memory.
    fn unmap(&mut self) -> Result;
}
