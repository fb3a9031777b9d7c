// SPDX-License-Identifier: GPL-2.0

//! RDMA-CM private data for RPC-over-RDMA (RFC 8797 §4).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                 Format Identifier (0xf6ab0e18)                |
//! +---------------+-------------+-+---------------+---------------+
//! |  Version (1)  |  Reserved   |R|   Send Size   | Receive Size  |
//! +---------------+-------------+-+---------------+---------------+
//! ```
//!
//! R is the least significant bit of the flags octet (Linux:
//! `RPCRDMA_CMP_F_SND_W_INV_OK`). Sizes are encoded as `bytes / 1024 - 1`.
//! The same message is used on v1 and v2 connections.

use super::error::{Error, ErrorKind, Item, Result};

/// The Format Identifier.
pub const FORMAT_ID: u32 = 0xf6ab_0e18;
/// The only defined format version.
pub const FORMAT_VERSION: u8 = 1;
/// Encoded length of version-1 private data.
pub const LEN: usize = 8;
/// The R bit in the flags octet: the sender supports remote invalidation.
pub const FLAG_REMOTE_INVALIDATE: u8 = 0x01;
/// Smallest representable inline size.
pub const MIN_SIZE: u32 = 1024;
/// Largest representable inline size.
pub const MAX_SIZE: u32 = 256 * 1024;
/// The RPC-over-RDMA v1 default inline threshold (RFC 8166 §3.3.3), assumed
/// when the peer sends no valid private data (RFC 8797 §5.1).
pub const V1_DEFAULT_INLINE: u32 = 1024;

/// The contents of RFC 8797 private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrivateData {
    /// R: the sender supports remote invalidation (Send With Invalidate).
    pub remote_invalidate: bool,
    /// Largest Send, in bytes, the sender will post (1024..=262144).
    pub send_size: u32,
    /// Largest Receive, in bytes, the sender accepts (1024..=262144).
    pub recv_size: u32,
}

impl Default for PrivateData {
    fn default() -> Self {
        Self::V1_DEFAULTS
    }
}

/// Encodes an inline size as `size / 1024 - 1`. Sizes that are not a
/// multiple of 1024 round down (advertising less than is available is
/// always safe); sizes outside 1024..=262144 are unrepresentable.
pub fn encode_size(size: u32) -> Option<u8> {
    if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
        return None;
    }
    u8::try_from((size / 1024).saturating_sub(1)).ok()
}

/// Decodes an encoded size: `(v + 1) * 1024`.
pub fn decode_size(v: u8) -> u32 {
    // At most 256 * 1024: cannot overflow.
    u32::from(v).saturating_add(1).saturating_mul(1024)
}

impl PrivateData {
    /// What a peer that sent no valid private data is assumed to have sent
    /// (RFC 8797 §5.1): R clear, both sizes 1024.
    pub const V1_DEFAULTS: Self = Self {
        remote_invalidate: false,
        send_size: V1_DEFAULT_INLINE,
        recv_size: V1_DEFAULT_INLINE,
    };

    /// Encodes the 8-byte message into `buf`; returns 8.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize> {
        let unrep = Error::new(ErrorKind::Unrepresentable, Item::PrivateData, 6);
        let send = encode_size(self.send_size).ok_or(unrep)?;
        let recv = encode_size(self.recv_size).ok_or(Error { offset: 7, ..unrep })?;
        let out = buf.first_chunk_mut::<LEN>().ok_or(Error::new(
            ErrorKind::BufferTooSmall(LEN),
            Item::Output,
            0,
        ))?;
        let [m0, m1, m2, m3] = FORMAT_ID.to_be_bytes();
        let flags = if self.remote_invalidate {
            FLAG_REMOTE_INVALIDATE
        } else {
            0
        };
        *out = [m0, m1, m2, m3, FORMAT_VERSION, flags, send, recv];
        Ok(LEN)
    }

    /// Encodes into a fresh array.
    pub fn to_bytes(&self) -> Result<[u8; LEN]> {
        let mut b = [0u8; LEN];
        self.encode(&mut b)?;
        Ok(b)
    }

    /// Decodes private data at the start of `buf` (no search). Reserved bits
    /// are ignored; bytes after the eighth are ignored (CM private data is
    /// padded to a transport-defined size).
    pub fn decode_at(buf: &[u8]) -> Result<Self> {
        let b = buf.first_chunk::<LEN>().ok_or(Error::new(
            ErrorKind::Truncated,
            Item::PrivateData,
            0,
        ))?;
        let [m0, m1, m2, m3, version, flags, send, recv] = *b;
        let magic = u32::from_be_bytes([m0, m1, m2, m3]);
        if magic != FORMAT_ID {
            return Err(Error::new(
                ErrorKind::BadFormatId(magic),
                Item::PrivateData,
                0,
            ));
        }
        if version != FORMAT_VERSION {
            return Err(Error::new(
                ErrorKind::UnsupportedVersion(u32::from(version)),
                Item::PrivateData,
                4,
            ));
        }
        Ok(Self {
            remote_invalidate: flags & FLAG_REMOTE_INVALIDATE != 0,
            send_size: decode_size(send),
            recv_size: decode_size(recv),
        })
    }
}

/// What the peer's private data says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Valid RFC 8797 private data.
    Valid(PrivateData),
    /// The Format Identifier does not occur in the buffer.
    Absent,
    /// The Format Identifier occurs, but no occurrence is followed by a
    /// valid message (unknown version, or truncated); the error describes
    /// the first occurrence.
    Invalid(Error),
}

impl Peer {
    /// The parameters to use: the peer's, or the v1 defaults when its
    /// private data is absent or invalid (RFC 8797 §5.1).
    pub const fn or_v1_defaults(&self) -> PrivateData {
        match *self {
            Self::Valid(p) => p,
            Self::Absent | Self::Invalid(_) => PrivateData::V1_DEFAULTS,
        }
    }
}

/// Decodes the peer's private data (RFC 8797 §5.2): searches `buf` for the
/// Format Identifier at any byte offset and parses the octets from there.
/// If an occurrence does not parse, the search continues after it (other
/// layers' private data may contain the same four octets by chance).
pub fn decode(buf: &[u8]) -> Peer {
    let magic = FORMAT_ID.to_be_bytes();
    let mut first_err: Option<Error> = None;
    for at in 0..buf.len() {
        let Some(rest) = buf.get(at..) else { break };
        if !rest.starts_with(&magic) {
            continue;
        }
        match PrivateData::decode_at(rest) {
            Ok(p) => return Peer::Valid(p),
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(Error {
                        offset: e.offset.saturating_add(at),
                        ..e
                    });
                }
            }
        }
    }
    match first_err {
        Some(e) => Peer::Invalid(e),
        None => Peer::Absent,
    }
}
