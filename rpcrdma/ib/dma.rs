// SPDX-License-Identifier: GPL-2.0

//! DMA-mapped kernel buffers for Send and Receive.

use super::verbs::Pd;
use crate::bindings;
use kernel::alloc::Flags;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The direction of a streaming DMA mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaDir {
    /// The device reads the buffer (Send buffers): `DMA_TO_DEVICE`.
    ToDevice,
    /// The device writes the buffer (Receive buffers): `DMA_FROM_DEVICE`.
    FromDevice,
    /// Both: `DMA_BIDIRECTIONAL`.
    Bidirectional,
}

impl DmaDir {
    fn raw(self) -> bindings::dma_data_direction {
        match self {
            DmaDir::ToDevice => bindings::dma_data_direction_DMA_TO_DEVICE,
            DmaDir::FromDevice => bindings::dma_data_direction_DMA_FROM_DEVICE,
            DmaDir::Bidirectional => bindings::dma_data_direction_DMA_BIDIRECTIONAL,
        }
    }
}

/// A kmalloc'ed buffer, DMA-mapped with `ib_dma_map_single()` for the
/// device of a PD, with that PD's `local_dma_lkey` for SGEs.
///
/// The CPU side is plain byte access through `&self`/`&mut self`. The
/// device side is the SGEs built from it (see [`super::wr::SgeList`]):
/// a buffer posted in a work request belongs to that request's context
/// until the completion hands the context back, so the CPU cannot touch
/// it meanwhile. Call [`DmaBuf::sync_for_cpu`] after a Receive completed
/// and [`DmaBuf::sync_for_device`] after filling a Send buffer (both do
/// nothing on virtual-DMA devices such as rxe, but are required on real
/// hardware with non-coherent DMA or bounce buffers).
///
/// # Invariants
///
/// `buf` is a kmalloc'ed allocation of `buf.len() > 0` bytes, mapped at
/// `dma` for `pd`'s device in direction `dir` until `drop` unmaps it; `buf`
/// is never reallocated, so the mapping stays valid.
pub struct DmaBuf {
    buf: KVec<u8>,
    dma: u64,
    dir: DmaDir,
    pd: Arc<Pd>,
}

impl DmaBuf {
    /// Allocates `len` zeroed bytes with `flags` and maps them for `pd`'s
    /// device.
    pub fn new(pd: &Arc<Pd>, len: usize, dir: DmaDir, flags: Flags) -> Result<DmaBuf> {
        if len == 0 || len > u32::MAX as usize {
            pr_err!("DMA buffer of {} bytes: size out of range (-EINVAL)\n", len);
            return Err(EINVAL);
        }
        let mut buf = KVec::from_elem(0u8, len, flags).map_err(|e| {
            pr_err!("no memory for a {}-byte DMA buffer (-ENOMEM)\n", len);
            Error::from(e)
        })?;
        let mut dma = 0u64;
        let dev = pd.device();
        // SAFETY: the device is registered (the PD holds its registration
        // lock); `buf` is a live kmalloc allocation of `len` bytes.
        let ret = unsafe {
            bindings::rpcrdma2_shim_dma_map_single(
                dev.as_ptr(),
                buf.as_mut_ptr().cast(),
                len,
                dir.raw(),
                &mut dma,
            )
        };
        if ret != 0 {
            pr_err!(
                "ib_dma_map_single of {} bytes on {} failed ({})\n",
                len,
                dev.name(),
                ret
            );
            return Err(Error::from_errno(ret));
        }
        super::census::enter(super::census::Kind::DmaBuf);
        // INVARIANT: mapped just now; `buf` is never resized.
        Ok(DmaBuf {
            buf,
            dma,
            dir,
            pd: pd.clone(),
        })
    }

    /// The buffer's size in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Always false: buffers are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The DMA address of the first byte.
    pub fn dma_addr(&self) -> u64 {
        self.dma
    }

    /// The lkey SGEs use for this buffer.
    pub fn lkey(&self) -> u32 {
        self.pd.local_dma_lkey()
    }

    /// The PD the buffer's lkey belongs to.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The mapping direction.
    pub fn dir(&self) -> DmaDir {
        self.dir
    }

    /// The bytes, for the CPU.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// The bytes, for the CPU to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Makes the first `len` bytes (clamped to the buffer) visible to the
    /// CPU after the device wrote them.
    pub fn sync_for_cpu(&self, len: usize) {
        let len = len.min(self.len());
        // SAFETY: the mapping is live (type invariant) and `len` is within it.
        unsafe {
            bindings::rpcrdma2_shim_dma_sync_for_cpu(
                self.pd.device().as_ptr(),
                self.dma,
                len,
                self.dir.raw(),
            )
        };
    }

    /// Makes the first `len` bytes (clamped to the buffer) visible to the
    /// device after the CPU wrote them.
    pub fn sync_for_device(&self, len: usize) {
        let len = len.min(self.len());
        // SAFETY: the mapping is live (type invariant) and `len` is within it.
        unsafe {
            bindings::rpcrdma2_shim_dma_sync_for_device(
                self.pd.device().as_ptr(),
                self.dma,
                len,
                self.dir.raw(),
            )
        };
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and live (type invariant); the PD's
        // registration lock keeps the device valid. `buf` is freed after.
        unsafe {
            bindings::rpcrdma2_shim_dma_unmap_single(
                self.pd.device().as_ptr(),
                self.dma,
                self.buf.len(),
                self.dir.raw(),
            )
        };
        super::census::leave(super::census::Kind::DmaBuf);
    }
}
