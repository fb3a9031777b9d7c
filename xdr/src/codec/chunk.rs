// SPDX-License-Identifier: GPL-2.0

//! The segment / chunk model shared by v1 and v2.
//!
//! Both versions encode the Read list, the Write list and the Reply chunk
//! identically (RFC 8166; draft -00 §6.3.3: v2 only adds
//! `rdma_inv_handle` in front):
//!
//! ```text
//! read list   := { 1, position, handle, length, offset(hyper) }* 0
//! write list  := { 1, count, { handle, length, offset }[count] }* 0
//! reply chunk := 0 | 1, count, { handle, length, offset }[count]
//! ```
//!
//! Encoders take a [`ChunkLists`] description made of plain slices, so the
//! transport builds a v1 or a v2 header from the same registered-memory
//! description. Decoders return [`ChunkListsView`]: validated, zero-copy views
//! whose iterators walk the received bytes without allocating.

use super::error::{Error, ErrorKind, Item, Result};
use super::stream::{XdrReader, XdrWriter};

/// Encoded size of an RDMA segment (handle, length, offset).
pub const SEGMENT_SIZE: usize = 16;
/// Encoded size of one Read list entry: discriminant, position, segment.
pub const READ_ENTRY_SIZE: usize = 24;

/// An RDMA segment: a registered memory region (RFC 8166 §3.4.3, draft -00 §4.4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Steering tag (R_key) of the registered region.
    pub handle: u32,
    /// Length of the region in bytes.
    pub length: u32,
    /// Offset or virtual address of the region.
    pub offset: u64,
}

/// A Read segment: an RDMA segment and the XDR position of its chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadSegment {
    /// Byte offset of the chunk in the unreduced Payload stream; a multiple
    /// of four. Zero for a Position-Zero Read chunk (a Long call).
    pub position: u32,
    /// The memory to be read.
    pub target: Segment,
}

/// Chunk lists to encode: a description in plain slices.
///
/// `reads` is the flat Read list: consecutive segments with the same
/// position form one Read chunk. `writes` is the Write list, one slice of
/// segments per Write chunk. `reply` is the optional Reply chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkLists<'c> {
    /// Read list (flattened Read segments).
    pub reads: &'c [ReadSegment],
    /// Write list: one entry per Write chunk.
    pub writes: &'c [&'c [Segment]],
    /// Reply chunk.
    pub reply: Option<&'c [Segment]>,
}

impl<'c> ChunkLists<'c> {
    /// No chunks at all: three empty lists.
    pub const EMPTY: ChunkLists<'static> = ChunkLists {
        reads: &[],
        writes: &[],
        reply: None,
    };

    /// True when all three lists are empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.reply.is_none()
    }

    /// Encoded size in bytes, or `None` if it would overflow `usize`.
    pub fn encoded_len(&self) -> Option<usize> {
        // Three list terminators / absent markers.
        let mut len: usize = 12;
        len = len.checked_add(self.reads.len().checked_mul(READ_ENTRY_SIZE)?)?;
        for chunk in self.writes {
            // present discriminant + count + segments
            len = len.checked_add(chunk.len().checked_mul(SEGMENT_SIZE)?.checked_add(8)?)?;
        }
        if let Some(reply) = self.reply {
            // count; the present discriminant replaces the absent marker
            len = len.checked_add(reply.len().checked_mul(SEGMENT_SIZE)?.checked_add(4)?)?;
        }
        Some(len)
    }

    /// Encodes the three lists. Checks the whole size first, so on error
    /// nothing useful has been written. Rejects Read positions that are not
    /// multiples of four, so that whatever encodes also decodes.
    pub fn encode(&self, w: &mut XdrWriter<'_>) -> Result<()> {
        let len = self.encoded_len().ok_or(Error::new(
            ErrorKind::Unrepresentable,
            Item::Output,
            w.position(),
        ))?;
        w.reserve(len)?;
        for rs in self.reads {
            if rs.position & 3 != 0 {
                return Err(Error::new(
                    ErrorKind::MisalignedPosition(rs.position),
                    Item::Position,
                    w.position(),
                ));
            }
        }
        for rs in self.reads {
            w.put_bool(true)?;
            w.put_u32(rs.position)?;
            put_segment(w, &rs.target)?;
        }
        w.put_bool(false)?;
        for chunk in self.writes {
            w.put_bool(true)?;
            put_segments(w, chunk)?;
        }
        w.put_bool(false)?;
        match self.reply {
            Some(chunk) => {
                w.put_optional(true)?;
                put_segments(w, chunk)
            }
            None => w.put_optional(false),
        }
    }
}

#[inline]
fn put_segment(w: &mut XdrWriter<'_>, s: &Segment) -> Result<()> {
    w.put_u32(s.handle)?;
    w.put_u32(s.length)?;
    w.put_u64(s.offset)
}

#[inline]
fn put_segments(w: &mut XdrWriter<'_>, segs: &[Segment]) -> Result<()> {
    let n = u32::try_from(segs.len())
        .map_err(|_| Error::new(ErrorKind::Unrepresentable, Item::SegmentCount, w.position()))?;
    w.put_u32(n)?;
    for s in segs {
        put_segment(w, s)?;
    }
    Ok(())
}

#[inline]
fn be32<const N: usize>(b: &[u8; N], at: usize) -> u32 {
    b.get(at..)
        .and_then(|r| r.first_chunk::<4>())
        .map_or(0, |x| u32::from_be_bytes(*x))
}

#[inline]
fn be64<const N: usize>(b: &[u8; N], at: usize) -> u64 {
    b.get(at..)
        .and_then(|r| r.first_chunk::<8>())
        .map_or(0, |x| u64::from_be_bytes(*x))
}

#[inline]
fn segment_at<const N: usize>(b: &[u8; N], at: usize) -> Segment {
    Segment {
        handle: be32(b, at),
        length: be32(b, at.wrapping_add(4)),
        offset: be64(b, at.wrapping_add(8)),
    }
}

/// Decodes one RDMA segment.
#[inline]
pub fn decode_segment(r: &mut XdrReader<'_>) -> Result<Segment> {
    let b = r
        .bytes(SEGMENT_SIZE, Item::Segment)?
        .first_chunk::<SEGMENT_SIZE>()
        .ok_or(r.error(ErrorKind::Truncated, Item::Segment))?;
    Ok(segment_at(b, 0))
}

/// A decoded Read list: a view over the received entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadList<'a> {
    /// `len() * READ_ENTRY_SIZE` bytes: `{1, position, segment}` entries,
    /// without the terminating 0.
    raw: &'a [u8],
}

impl<'a> ReadList<'a> {
    /// Decodes and validates a Read list (every discriminant 0 or 1, every
    /// position a multiple of four, no overrun).
    pub fn decode(r: &mut XdrReader<'a>) -> Result<Self> {
        let start = r.position();
        let buf = r.buffer();
        let n = r.chain(Item::ReadList, |r| {
            let at = r.position();
            let pos = r.u32(Item::Position)?;
            if pos & 3 != 0 {
                return Err(Error::new(
                    ErrorKind::MisalignedPosition(pos),
                    Item::Position,
                    at,
                ));
            }
            decode_segment(r).map(|_| ())
        })?;
        let len = n.saturating_mul(READ_ENTRY_SIZE);
        let raw = buf
            .get(start..)
            .and_then(|b| b.get(..len))
            .ok_or(r.error(ErrorKind::Truncated, Item::ReadList))?;
        Ok(Self { raw })
    }

    /// Number of Read segments.
    #[inline]
    pub const fn len(&self) -> usize {
        self.raw.len() / READ_ENTRY_SIZE
    }

    /// True if the list is empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The encoded entries (without the list terminator).
    #[inline]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterates over the Read segments in list order.
    #[inline]
    pub fn iter(&self) -> ReadSegments<'a> {
        ReadSegments {
            entries: self.raw.as_chunks::<READ_ENTRY_SIZE>().0.iter(),
        }
    }

    /// Iterates over Read chunks: runs of consecutive segments that share a
    /// position.
    #[inline]
    pub fn chunks(&self) -> ReadChunks<'a> {
        ReadChunks {
            entries: self.raw.as_chunks::<READ_ENTRY_SIZE>().0,
        }
    }
}

impl<'a> IntoIterator for ReadList<'a> {
    type Item = ReadSegment;
    type IntoIter = ReadSegments<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[inline]
fn read_entry(e: &[u8; READ_ENTRY_SIZE]) -> ReadSegment {
    ReadSegment {
        position: be32(e, 4),
        target: segment_at(e, 8),
    }
}

/// Iterator over the segments of a [`ReadList`].
#[derive(Clone, Debug)]
pub struct ReadSegments<'a> {
    entries: core::slice::Iter<'a, [u8; READ_ENTRY_SIZE]>,
}

impl Iterator for ReadSegments<'_> {
    type Item = ReadSegment;

    #[inline]
    fn next(&mut self) -> Option<ReadSegment> {
        self.entries.next().map(read_entry)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for ReadSegments<'_> {}

/// One Read chunk: consecutive Read segments with the same position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadChunk<'a> {
    position: u32,
    entries: &'a [[u8; READ_ENTRY_SIZE]],
}

impl<'a> ReadChunk<'a> {
    /// Position of the chunk in the Payload stream.
    #[inline]
    pub const fn position(&self) -> u32 {
        self.position
    }

    /// Number of segments.
    #[inline]
    pub const fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false: a chunk has at least one segment.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The segments of the chunk.
    #[inline]
    pub fn segments(&self) -> impl ExactSizeIterator<Item = Segment> + 'a {
        self.entries.iter().map(|e| segment_at(e, 8))
    }

    /// Sum of the segment lengths.
    pub fn total_len(&self) -> u64 {
        self.segments()
            .map(|s| u64::from(s.length))
            .fold(0, u64::saturating_add)
    }
}

/// Iterator over the chunks of a [`ReadList`].
#[derive(Clone, Debug)]
pub struct ReadChunks<'a> {
    entries: &'a [[u8; READ_ENTRY_SIZE]],
}

impl<'a> Iterator for ReadChunks<'a> {
    type Item = ReadChunk<'a>;

    fn next(&mut self) -> Option<ReadChunk<'a>> {
        let first = self.entries.first()?;
        let position = be32(first, 4);
        let n = self
            .entries
            .iter()
            .take_while(|e| be32(e, 4) == position)
            .count();
        let (this, rest) = self.entries.split_at_checked(n)?;
        self.entries = rest;
        Some(ReadChunk {
            position,
            entries: this,
        })
    }
}

/// A decoded Write chunk (also the Reply chunk): a counted array of segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteChunk<'a> {
    /// `len() * SEGMENT_SIZE` bytes of segments.
    raw: &'a [u8],
}

impl<'a> WriteChunk<'a> {
    /// Decodes a segment count and that many segments.
    pub fn decode(r: &mut XdrReader<'a>) -> Result<Self> {
        let n = r.array_count(SEGMENT_SIZE, Item::SegmentCount)?;
        // array_count() checked that n * SEGMENT_SIZE fits in the buffer.
        let raw = r.bytes(n.saturating_mul(SEGMENT_SIZE), Item::Segment)?;
        Ok(Self { raw })
    }

    /// Number of segments (zero for an "empty" Write chunk).
    #[inline]
    pub const fn len(&self) -> usize {
        self.raw.len() / SEGMENT_SIZE
    }

    /// True for an empty Write chunk (zero segments).
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The encoded segments (without the count).
    #[inline]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterates over the segments in array order.
    #[inline]
    pub fn iter(&self) -> Segments<'a> {
        Segments {
            segs: self.raw.as_chunks::<SEGMENT_SIZE>().0.iter(),
        }
    }

    /// Sum of the segment lengths (the bytes written, in a reply).
    pub fn total_len(&self) -> u64 {
        self.iter()
            .map(|s| u64::from(s.length))
            .fold(0, u64::saturating_add)
    }
}

impl<'a> IntoIterator for WriteChunk<'a> {
    type Item = Segment;
    type IntoIter = Segments<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over the segments of a [`WriteChunk`].
#[derive(Clone, Debug)]
pub struct Segments<'a> {
    segs: core::slice::Iter<'a, [u8; SEGMENT_SIZE]>,
}

impl Iterator for Segments<'_> {
    type Item = Segment;

    #[inline]
    fn next(&mut self) -> Option<Segment> {
        self.segs.next().map(|b| segment_at(b, 0))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.segs.size_hint()
    }
}

impl ExactSizeIterator for Segments<'_> {}

/// A decoded Write list: a view over the received Write chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteList<'a> {
    /// The entries `{1, count, segments}*` without the terminator.
    raw: &'a [u8],
    chunks: usize,
}

impl<'a> WriteList<'a> {
    /// Decodes and validates a Write list.
    pub fn decode(r: &mut XdrReader<'a>) -> Result<Self> {
        let start = r.position();
        let buf = r.buffer();
        let mut end = start;
        let chunks = r.chain(Item::WriteList, |r| {
            WriteChunk::decode(r)?;
            end = r.position();
            Ok(())
        })?;
        let raw = buf
            .get(start..end)
            .ok_or(r.error(ErrorKind::Truncated, Item::WriteList))?;
        Ok(Self { raw, chunks })
    }

    /// Number of Write chunks.
    #[inline]
    pub const fn len(&self) -> usize {
        self.chunks
    }

    /// True if the list is empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.chunks == 0
    }

    /// The encoded entries (without the list terminator).
    #[inline]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterates over the Write chunks in list order.
    #[inline]
    pub fn iter(&self) -> WriteChunks<'a> {
        WriteChunks {
            r: XdrReader::new(self.raw),
            left: self.chunks,
        }
    }
}

impl<'a> IntoIterator for WriteList<'a> {
    type Item = WriteChunk<'a>;
    type IntoIter = WriteChunks<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over the chunks of a [`WriteList`].
#[derive(Clone, Debug)]
pub struct WriteChunks<'a> {
    r: XdrReader<'a>,
    left: usize,
}

impl<'a> Iterator for WriteChunks<'a> {
    type Item = WriteChunk<'a>;

    fn next(&mut self) -> Option<WriteChunk<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left = self.left.saturating_sub(1);
        // The list was validated when decoded: these cannot fail.
        self.r.bool(Item::WriteList).ok()?;
        WriteChunk::decode(&mut self.r).ok()
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for WriteChunks<'_> {}

/// Decoded chunk lists: Read list, Write list and Reply chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkListsView<'a> {
    /// The Read list.
    pub reads: ReadList<'a>,
    /// The Write list.
    pub writes: WriteList<'a>,
    /// The Reply chunk, if present.
    pub reply: Option<WriteChunk<'a>>,
}

impl<'a> ChunkListsView<'a> {
    /// Decodes and validates the three lists.
    #[inline]
    pub fn decode(r: &mut XdrReader<'a>) -> Result<Self> {
        // Fast path: most headers carry three empty lists (three zero words).
        if r.rest().first_chunk::<12>() == Some(&[0u8; 12]) {
            r.bytes(12, Item::ReadList)?;
            return Ok(Self::default());
        }
        Self::decode_lists(r)
    }

    fn decode_lists(r: &mut XdrReader<'a>) -> Result<Self> {
        let reads = ReadList::decode(r)?;
        let writes = WriteList::decode(r)?;
        let reply = if r.optional(Item::ReplyChunk)? {
            Some(WriteChunk::decode(r)?)
        } else {
            None
        };
        Ok(Self {
            reads,
            writes,
            reply,
        })
    }

    /// True when all three lists are empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.reply.is_none()
    }
}
