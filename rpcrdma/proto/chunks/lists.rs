// SPDX-License-Identifier: GPL-2.0

//! The chunk lists of one Call ([`CallChunks`]), built from the segments
//! the transport registered for a [`ChunkPlan`]
//! ([`ChunkPlan::chunk_lists`]), and the v2 `rdma_inv_handle` that
//! offers remote invalidation.

use super::super::xdr::chunk::{ChunkLists, ReadSegment, Segment};
use super::super::xdr::header::Protocol;
use super::{CallForm, ChunkPlan, Part, PlanError, MAX_CHUNK_SEGS};

/// The chunk lists of one Call, built from registered segments: pass
/// [`CallChunks::lists`] as `MsgSpec::chunks` and
/// [`CallChunks::inv_handle`] as `MsgSpec::inv_handle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallChunks<'s> {
    reads: [ReadSegment; MAX_CHUNK_SEGS],
    nreads: usize,
    write: [&'s [Segment]; 1],
    has_write: bool,
    reply: Option<&'s [Segment]>,
    inv_handle: u32,
}

impl CallChunks<'_> {
    /// The lists for `encode_msg`.
    pub fn lists(&self) -> ChunkLists<'_> {
        ChunkLists {
            reads: self.reads.get(..self.nreads).unwrap_or(&[]),
            writes: if self.has_write { &self.write } else { &[] },
            reply: self.reply,
        }
    }

    /// v2 `rdma_inv_handle` (0: no remote invalidation).
    pub const fn inv_handle(&self) -> u32 {
        self.inv_handle
    }
}

impl ChunkPlan {
    /// Builds the chunk lists from `segs`, the segments the transport
    /// registered for [`Self::ranges`] (same order, same lengths). Called
    /// after registration, before encoding the header. With
    /// `remote_invalidation` ([`Thresholds::remote_invalidation`]) and
    /// version 2, `inv_handle` names one of the RPC's MRs: the Reply
    /// chunk's first, else the Write chunk's first, else the Read
    /// chunk's first (never the pad MR; never 0).
    ///
    /// [`Thresholds::remote_invalidation`]: super::super::inline::Thresholds::remote_invalidation
    pub fn chunk_lists<'s>(
        &self,
        segs: &'s [Segment],
        remote_invalidation: bool,
    ) -> Result<CallChunks<'s>, PlanError> {
        let ranges = self.ranges();
        if segs.len() != ranges.len() {
            return Err(PlanError::SegmentMismatch {
                index: u32::try_from(segs.len()).unwrap_or(u32::MAX),
            });
        }
        let mut index: u32 = 0;
        for (s, r) in segs.iter().zip(ranges) {
            if s.length != r.len {
                return Err(PlanError::SegmentMismatch { index });
            }
            index = index.saturating_add(1);
        }
        let (r, w, e) = self.split();
        let reads = segs.get(..r).unwrap_or(&[]);
        let write = segs.get(r..w).unwrap_or(&[]);
        let reply = segs.get(w..e).unwrap_or(&[]);
        let position = match self.call {
            CallForm::Read { position } => position,
            CallForm::Inline | CallForm::Long => 0,
        };
        let mut out = CallChunks {
            reads: [ReadSegment::default(); MAX_CHUNK_SEGS],
            nreads: 0,
            write: [write],
            has_write: !write.is_empty(),
            reply: if reply.is_empty() { None } else { Some(reply) },
            inv_handle: 0,
        };
        for (slot, s) in out.reads.iter_mut().zip(reads) {
            *slot = ReadSegment {
                position,
                target: *s,
            };
            out.nreads = out.nreads.saturating_add(1);
        }
        if out.nreads != reads.len() {
            return Err(PlanError::SegmentMismatch {
                index: u32::try_from(out.nreads).unwrap_or(u32::MAX),
            });
        }
        if remote_invalidation && self.protocol == Protocol::V2 {
            let own = |i: &usize| {
                ranges.get(*i).is_some_and(|rg| rg.part != Part::WritePad)
                    && segs.get(*i).is_some_and(|s| s.handle != 0)
            };
            out.inv_handle = (w..e)
                .chain(r..w)
                .chain(0..r)
                .find(own)
                .and_then(|i| segs.get(i))
                .map_or(0, |s| s.handle);
        }
        Ok(out)
    }
}
