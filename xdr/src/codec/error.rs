// SPDX-License-Identifier: GPL-2.0

//! Codec errors: a small `Copy` value saying what failed, in which item, and
//! at which byte offset of the buffer being decoded or encoded.
//!
//! [`Error::rdma2_err`] and [`Error::rdma1_err`] give the error code a
//! responder would report for a decoding failure (RFC 8166 §5, draft -00
//! §6.4.3); a requester never sends RDMA_ERROR and simply drops the message.

use core::fmt;

use super::v1;
use super::v2;

/// Result type of every fallible codec operation.
pub type Result<T> = core::result::Result<T, Error>;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The buffer ends inside the item.
    Truncated,
    /// An XDR `bool` or optional-data discriminant was neither 0 nor 1.
    BadDiscriminant(u32),
    /// A variable-length item's byte count runs past the end of the buffer.
    LengthOverrun(u32),
    /// A counted array's element count overflows or runs past the buffer.
    CountOverrun(u32),
    /// XDR roundup padding was not zero.
    NonZeroPadding,
    /// A Read segment's Position is not a multiple of four.
    MisalignedPosition(u32),
    /// This many bytes follow an item whose length the protocol fixes.
    TrailingBytes(usize),
    /// `rdma_vers` is not a version this decoder handles.
    UnsupportedVersion(u32),
    /// The header type (v1 `rdma_proc`, v2 `rdma_htype`) is not defined.
    UnknownHtype(u32),
    /// v1 `RDMA_MSGP` (2) or `RDMA_DONE` (3): RFC 5666 header types that
    /// RFC 8166 deprecated; recognised and rejected.
    ObsoleteV1Proc(u32),
    /// A v1 `rdma_err` other than `ERR_VERS` and `ERR_CHUNK`.
    UnknownV1ErrCode(u32),
    /// Reserved (undefined) bits are set in v2 `rdma_flags`.
    ReservedFlags(u32),
    /// v2 `F_MORE` is set on a header type that cannot be continued
    /// (only `RDMA2_MSG` and `RDMA2_CONNPROP` can).
    MoreNotAllowed(u32),
    /// v2 `F_MORE` is set but the chunk lists are not empty.
    MoreWithChunks,
    /// The `rdma_data` of a known transport property does not decode with the
    /// property's XDR typedef; carries the property id.
    BadPropVal(u32),
    /// RFC 8797 private data does not start with the Format Identifier.
    BadFormatId(u32),
    /// Encoder: the output buffer is too small; carries the length needed.
    BufferTooSmall(usize),
    /// Encoder: a value that the wire format cannot represent.
    Unrepresentable,
}

/// Which item was being decoded or encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// `rdma_xid`.
    Xid,
    /// `rdma_vers`.
    Vers,
    /// `rdma_credit`.
    Credit,
    /// `rdma_proc` / `rdma_htype`.
    Htype,
    /// v2 `rdma_flags`.
    Flags,
    /// v2 `rdma_inv_handle`.
    InvHandle,
    /// A Read list "present" discriminant.
    ReadList,
    /// A Read segment's Position.
    Position,
    /// An RDMA segment (handle, length, offset).
    Segment,
    /// A Write list "present" discriminant.
    WriteList,
    /// A Write chunk's segment count.
    SegmentCount,
    /// The Reply chunk "present" discriminant.
    ReplyChunk,
    /// The RPC message payload (v2 `rdma_rpc_first_word`).
    Payload,
    /// `rdma_err`.
    ErrCode,
    /// The body of an error (version range, counts, lengths).
    ErrBody,
    /// The element count of a `rpcrdma2_propset`.
    PropCount,
    /// `rpcrdma2_propval.rdma_which`.
    PropId,
    /// `rpcrdma2_propval.rdma_data`.
    PropData,
    /// The header as a whole (trailing bytes, header-type rules).
    Header,
    /// RFC 8797 private data.
    PrivateData,
    /// A generic XDR item decoded through [`super::stream`].
    Value,
    /// The encoder's output buffer.
    Output,
}

/// A codec error: what failed, in which item, at which byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The item being processed.
    pub item: Item,
    /// Byte offset of the item from the start of the buffer.
    pub offset: usize,
}

impl Error {
    /// Builds an error.
    pub const fn new(kind: ErrorKind, item: Item, offset: usize) -> Self {
        Self { kind, item, offset }
    }

    /// The `rdma_err` value a v2 responder returns in `RDMA2_ERROR` for this
    /// decoding failure, or `None` for encoder errors.
    ///
    /// Flag violations map to `RDMA2_ERR_INVAL_FLAG` (draft -00 §6.4.3 says
    /// `INVAL_HTYPE` for unrecognised flag combinations in one sentence and
    /// `INVAL_FLAG` everywhere else; we follow the latter, see
    /// Documentation/wire-formats.rst).
    pub const fn rdma2_err(&self) -> Option<u32> {
        match self.kind {
            ErrorKind::UnsupportedVersion(_) => Some(v2::ERR_VERS),
            ErrorKind::UnknownHtype(_) | ErrorKind::ObsoleteV1Proc(_) => Some(v2::ERR_INVAL_HTYPE),
            ErrorKind::ReservedFlags(_)
            | ErrorKind::MoreNotAllowed(_)
            | ErrorKind::MoreWithChunks => Some(v2::ERR_INVAL_FLAG),
            ErrorKind::BufferTooSmall(_) | ErrorKind::Unrepresentable => None,
            ErrorKind::Truncated
            | ErrorKind::BadDiscriminant(_)
            | ErrorKind::LengthOverrun(_)
            | ErrorKind::CountOverrun(_)
            | ErrorKind::NonZeroPadding
            | ErrorKind::MisalignedPosition(_)
            | ErrorKind::TrailingBytes(_)
            | ErrorKind::UnknownV1ErrCode(_)
            | ErrorKind::BadPropVal(_)
            | ErrorKind::BadFormatId(_) => Some(v2::ERR_BAD_XDR),
        }
    }

    /// The `rdma_err` value a v1 responder returns in `RDMA_ERROR`
    /// (`ERR_VERS` or `ERR_CHUNK`, RFC 8166 §5), or `None` for encoder errors.
    pub const fn rdma1_err(&self) -> Option<u32> {
        match self.kind {
            ErrorKind::UnsupportedVersion(_) => Some(v1::ERR_VERS),
            ErrorKind::BufferTooSmall(_) | ErrorKind::Unrepresentable => None,
            _ => Some(v1::ERR_CHUNK),
        }
    }

    /// True for failures of the peer's message (as opposed to encoder errors).
    pub const fn is_decode_error(&self) -> bool {
        self.rdma1_err().is_some()
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated => f.write_str("buffer truncated"),
            Self::BadDiscriminant(v) => write!(f, "discriminant {v} is not 0 or 1"),
            Self::LengthOverrun(v) => write!(f, "length {v} overruns the buffer"),
            Self::CountOverrun(v) => write!(f, "element count {v} overruns the buffer"),
            Self::NonZeroPadding => f.write_str("non-zero XDR padding"),
            Self::MisalignedPosition(v) => write!(f, "position {v} is not a multiple of 4"),
            Self::TrailingBytes(v) => write!(f, "{v} trailing bytes"),
            Self::UnsupportedVersion(v) => write!(f, "unsupported version {v}"),
            Self::UnknownHtype(v) => write!(f, "unknown header type {v}"),
            Self::ObsoleteV1Proc(v) => write!(f, "unsupported v1 procedure {v} (MSGP/DONE)"),
            Self::UnknownV1ErrCode(v) => write!(f, "unknown v1 error code {v}"),
            Self::ReservedFlags(v) => write!(f, "reserved flag bits {v:#x} set"),
            Self::MoreNotAllowed(v) => write!(f, "F_MORE set on header type {v}"),
            Self::MoreWithChunks => f.write_str("F_MORE set with non-empty chunk lists"),
            Self::BadPropVal(v) => write!(f, "malformed value for transport property {v}"),
            Self::BadFormatId(v) => write!(f, "format identifier {v:#010x} is not 0xf6ab0e18"),
            Self::BufferTooSmall(v) => write!(f, "output buffer too small ({v} bytes needed)"),
            Self::Unrepresentable => f.write_str("value not representable on the wire"),
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Self::Xid => "rdma_xid",
            Self::Vers => "rdma_vers",
            Self::Credit => "rdma_credit",
            Self::Htype => "header type",
            Self::Flags => "rdma_flags",
            Self::InvHandle => "rdma_inv_handle",
            Self::ReadList => "read list",
            Self::Position => "read position",
            Self::Segment => "RDMA segment",
            Self::WriteList => "write list",
            Self::SegmentCount => "segment count",
            Self::ReplyChunk => "reply chunk",
            Self::Payload => "RPC payload",
            Self::ErrCode => "rdma_err",
            Self::ErrBody => "error body",
            Self::PropCount => "property count",
            Self::PropId => "property id",
            Self::PropData => "property data",
            Self::Header => "header",
            Self::PrivateData => "private data",
            Self::Value => "XDR item",
            Self::Output => "output buffer",
        };
        f.write_str(s)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} at offset {}", self.item, self.kind, self.offset)
    }
}
