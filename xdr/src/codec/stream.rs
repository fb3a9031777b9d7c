// SPDX-License-Identifier: GPL-2.0

//! XDR (RFC 4506) primitives over byte slices.
//!
//! [`XdrReader`] decodes from a borrowed `&[u8]` without copying: variable
//! data comes back as sub-slices. [`XdrWriter`] encodes into a caller's
//! `&mut [u8]`. Both check every access; neither can panic. Errors carry the
//! byte offset of the item that failed.

use super::error::{Error, ErrorKind, Item, Result};

/// Size of one XDR unit.
pub const XDR_UNIT: usize = 4;

/// Rounds `len` up to a multiple of four, or `None` on overflow.
#[inline]
pub const fn xdr_roundup(len: usize) -> Option<usize> {
    match len.checked_add(3) {
        Some(v) => Some(v & !3),
        None => None,
    }
}

/// Number of zero pad bytes that follow `len` bytes of opaque data.
#[inline]
pub const fn xdr_pad(len: usize) -> usize {
    len.wrapping_neg() & 3
}

/// Converts a wire `u32` to `usize` (saturating; lossless on 32/64-bit).
#[inline]
pub fn usize_from(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A bounds-checked XDR decoder over a borrowed buffer.
///
/// Invariant: `rest` is a suffix of `buf`.
#[derive(Clone, Copy, Debug)]
pub struct XdrReader<'a> {
    buf: &'a [u8],
    rest: &'a [u8],
}

impl<'a> XdrReader<'a> {
    /// Starts decoding at the beginning of `buf`.
    #[inline]
    pub const fn new(buf: &'a [u8]) -> Self {
        Self { buf, rest: buf }
    }

    /// Byte offset of the next item.
    #[inline]
    pub const fn position(&self) -> usize {
        self.buf.len().saturating_sub(self.rest.len())
    }

    /// The whole buffer being decoded.
    #[inline]
    pub const fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// The undecoded rest of the buffer.
    #[inline]
    pub const fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Number of undecoded bytes.
    #[inline]
    pub const fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// An error of `kind` for `item` at the current position.
    #[inline]
    pub const fn error(&self, kind: ErrorKind, item: Item) -> Error {
        Error::new(kind, item, self.position())
    }

    /// Takes `n` raw bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, item: Item) -> Result<&'a [u8]> {
        match self.rest.split_at_checked(n) {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(head)
            }
            None => Err(self.error(ErrorKind::Truncated, item)),
        }
    }

    /// Decodes an unsigned 32-bit integer.
    #[inline]
    pub fn u32(&mut self, item: Item) -> Result<u32> {
        match self.rest.split_first_chunk::<4>() {
            Some((b, tail)) => {
                self.rest = tail;
                Ok(u32::from_be_bytes(*b))
            }
            None => Err(self.error(ErrorKind::Truncated, item)),
        }
    }

    /// Decodes an unsigned 64-bit integer (XDR `unsigned hyper`).
    #[inline]
    pub fn u64(&mut self, item: Item) -> Result<u64> {
        match self.rest.split_first_chunk::<8>() {
            Some((b, tail)) => {
                self.rest = tail;
                Ok(u64::from_be_bytes(*b))
            }
            None => Err(self.error(ErrorKind::Truncated, item)),
        }
    }

    /// Decodes an XDR `bool`, which must be exactly 0 or 1. Also used for the
    /// "present" discriminant of optional-data (`*`) items.
    #[inline]
    pub fn bool(&mut self, item: Item) -> Result<bool> {
        let at = self.position();
        match self.u32(item)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::new(ErrorKind::BadDiscriminant(v), item, at)),
        }
    }

    /// Decodes the "present" discriminant of optional-data (`T *item`):
    /// true if the item follows. Same wire form as [`Self::bool`].
    #[inline]
    pub fn optional(&mut self, item: Item) -> Result<bool> {
        self.bool(item)
    }

    /// Decodes fixed-length opaque data of `len` bytes followed by zero
    /// roundup padding; returns the data without the padding.
    pub fn opaque_fixed(&mut self, len: usize, item: Item) -> Result<&'a [u8]> {
        let at = self.position();
        let total =
            xdr_roundup(len).ok_or_else(|| self.error(ErrorKind::LengthOverrun(u32::MAX), item))?;
        let all = self.bytes(total, item)?;
        let (data, pad) =
            all.split_at_checked(len)
                .ok_or(Error::new(ErrorKind::Truncated, item, at))?;
        if pad.iter().any(|&b| b != 0) {
            return Err(Error::new(
                ErrorKind::NonZeroPadding,
                item,
                at.saturating_add(len),
            ));
        }
        Ok(data)
    }

    /// Decodes variable-length opaque data (`opaque<>`): a byte count, the
    /// bytes, and zero roundup padding.
    pub fn opaque_var(&mut self, item: Item) -> Result<&'a [u8]> {
        let at = self.position();
        let len = self.u32(item)?;
        let n = usize_from(len);
        match xdr_roundup(n) {
            Some(total) if total <= self.remaining() => self.opaque_fixed(n, item),
            _ => Err(Error::new(ErrorKind::LengthOverrun(len), item, at)),
        }
    }

    /// Decodes the element count of a counted array (`T<>`) whose elements
    /// are at least `min_elem_size` bytes each, rejecting counts whose
    /// elements cannot fit in the rest of the buffer (including counts whose
    /// byte size would overflow).
    pub fn array_count(&mut self, min_elem_size: usize, item: Item) -> Result<usize> {
        let at = self.position();
        let count = self.u32(item)?;
        let n = usize_from(count);
        match n.checked_mul(min_elem_size) {
            Some(bytes) if bytes <= self.remaining() => Ok(n),
            _ => Err(Error::new(ErrorKind::CountOverrun(count), item, at)),
        }
    }

    /// Walks a linked-list style optional chain (`struct list { T entry;
    /// list *next; }` reached through a `list *` pointer): reads a "present"
    /// discriminant, and while it is 1 calls `entry` to decode one element.
    /// Returns the number of elements. The loop is bounded by the buffer
    /// length because every element consumes at least one XDR unit.
    pub fn chain<F>(&mut self, item: Item, mut entry: F) -> Result<usize>
    where
        F: FnMut(&mut Self) -> Result<()>,
    {
        let mut n: usize = 0;
        while self.bool(item)? {
            entry(self)?;
            n = n.saturating_add(1);
        }
        Ok(n)
    }

    /// Fails with [`ErrorKind::TrailingBytes`] unless the whole buffer has
    /// been consumed.
    #[inline]
    pub fn finish(&self, item: Item) -> Result<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error(ErrorKind::TrailingBytes(n), item)),
        }
    }
}

/// A bounds-checked XDR encoder into a caller's buffer.
///
/// Invariant: `pos <= buf.len()`.
#[derive(Debug)]
pub struct XdrWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> XdrWriter<'a> {
    /// Starts encoding at the beginning of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Number of bytes written so far.
    #[inline]
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Checks that `n` more bytes fit, so that an encoder can fail before it
    /// writes anything.
    #[inline]
    pub fn reserve(&self, n: usize) -> Result<()> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.buf.len() => Ok(()),
            Some(end) => Err(self.too_small(end)),
            None => Err(self.too_small(usize::MAX)),
        }
    }

    #[inline]
    fn too_small(&self, need: usize) -> Error {
        Error::new(ErrorKind::BufferTooSmall(need), Item::Output, self.pos)
    }

    /// Writes raw bytes.
    #[inline]
    pub fn put_bytes(&mut self, data: &[u8]) -> Result<()> {
        let need = self.pos.saturating_add(data.len());
        match self
            .buf
            .get_mut(self.pos..)
            .and_then(|r| r.get_mut(..data.len()))
        {
            Some(dst) => {
                dst.copy_from_slice(data);
                self.pos = need;
                Ok(())
            }
            None => Err(self.too_small(need)),
        }
    }

    /// Encodes an unsigned 32-bit integer.
    #[inline]
    pub fn put_u32(&mut self, v: u32) -> Result<()> {
        match self
            .buf
            .get_mut(self.pos..)
            .and_then(|r| r.first_chunk_mut::<4>())
        {
            Some(dst) => {
                *dst = v.to_be_bytes();
                self.pos = self.pos.saturating_add(4);
                Ok(())
            }
            None => Err(self.too_small(self.pos.saturating_add(4))),
        }
    }

    /// Encodes an unsigned 64-bit integer (XDR `unsigned hyper`).
    #[inline]
    pub fn put_u64(&mut self, v: u64) -> Result<()> {
        match self
            .buf
            .get_mut(self.pos..)
            .and_then(|r| r.first_chunk_mut::<8>())
        {
            Some(dst) => {
                *dst = v.to_be_bytes();
                self.pos = self.pos.saturating_add(8);
                Ok(())
            }
            None => Err(self.too_small(self.pos.saturating_add(8))),
        }
    }

    /// Encodes an XDR `bool` (also an optional-data discriminant).
    #[inline]
    pub fn put_bool(&mut self, v: bool) -> Result<()> {
        self.put_u32(u32::from(v))
    }

    /// Encodes the "present" discriminant of optional-data (`T *item`).
    #[inline]
    pub fn put_optional(&mut self, present: bool) -> Result<()> {
        self.put_bool(present)
    }

    /// Encodes fixed-length opaque data followed by zero padding.
    pub fn put_opaque_fixed(&mut self, data: &[u8]) -> Result<()> {
        let total = xdr_roundup(data.len()).ok_or(self.too_small(usize::MAX))?;
        self.reserve(total)?;
        self.put_bytes(data)?;
        let zeros = [0u8; 3];
        self.put_bytes(zeros.get(..xdr_pad(data.len())).unwrap_or(&[]))
    }

    /// Encodes variable-length opaque data (`opaque<>`).
    pub fn put_opaque_var(&mut self, data: &[u8]) -> Result<()> {
        let len = u32::try_from(data.len())
            .map_err(|_| Error::new(ErrorKind::Unrepresentable, Item::Value, self.pos))?;
        let total = xdr_roundup(data.len())
            .and_then(|t| t.checked_add(4))
            .ok_or(self.too_small(usize::MAX))?;
        self.reserve(total)?;
        self.put_u32(len)?;
        self.put_opaque_fixed(data)
    }

    /// Finishes encoding; returns the number of bytes written.
    #[inline]
    pub const fn finish(self) -> usize {
        self.pos
    }
}
