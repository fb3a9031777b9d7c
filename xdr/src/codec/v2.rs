// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA version 2, draft-ietf-nfsv4-rpcrdma-version-two-00.
//!
//! ```text
//! rpcrdma2_hdr_prefix := xid, vers (2), credit, htype, flags
//! RDMA2_MSG      (0): inv_handle, read list, write list, reply chunk,
//!                     then the RPC message (at least its first word)
//! RDMA2_NOMSG    (1): inv_handle, read list, write list, reply chunk
//! RDMA2_ERROR    (4): rdma_err, body by code (codes 1..=10; others void)
//! RDMA2_CONNPROP (5): rpcrdma2_propset
//! ```
//!
//! The published XDR lacks the `{` after `struct rpcrdma2_hdr_prefix`; the
//! prefix is the four `rpcrdma_common` words followed by `rdma_flags`.

use super::chunk::{ChunkLists, ChunkListsView};
use super::error::{Error, ErrorKind, Item, Result};
use super::header::{Body, ErrorBody, Flags, Header, Msg, NoMsg, Protocol};
use super::props::{PropSet, Property};
use super::stream::{XdrReader, XdrWriter};

/// `rdma_vers` of version 2.
pub const VERSION: u32 = 2;

/// Length of the v2 header prefix (five words).
pub const PREFIX_LEN: usize = 20;
/// Length of an `RDMA2_MSG` header with three empty chunk lists.
pub const MIN_MSG_HDR_LEN: usize = 36;

/// `RPCRDMA2_F_RESPONSE`.
pub const F_RESPONSE: u32 = 0x0000_0001;
/// `RPCRDMA2_F_MORE`.
pub const F_MORE: u32 = 0x0000_0002;

/// `RDMA2_MSG`.
pub const RDMA2_MSG: u32 = 0;
/// `RDMA2_NOMSG`.
pub const RDMA2_NOMSG: u32 = 1;
/// `RDMA2_ERROR`.
pub const RDMA2_ERROR: u32 = 4;
/// `RDMA2_CONNPROP`.
pub const RDMA2_CONNPROP: u32 = 5;

/// `RDMA2_ERR_VERS`.
pub const ERR_VERS: u32 = 1;
/// `RDMA2_ERR_BAD_XDR` (same value as v1 `ERR_CHUNK`).
pub const ERR_BAD_XDR: u32 = 2;
/// `RDMA2_ERR_INVAL_HTYPE`.
pub const ERR_INVAL_HTYPE: u32 = 3;
/// `RDMA2_ERR_INVAL_FLAG`.
pub const ERR_INVAL_FLAG: u32 = 4;
/// `RDMA2_ERR_READ_CHUNKS`.
pub const ERR_READ_CHUNKS: u32 = 5;
/// `RDMA2_ERR_WRITE_CHUNKS`.
pub const ERR_WRITE_CHUNKS: u32 = 6;
/// `RDMA2_ERR_SEGMENTS`.
pub const ERR_SEGMENTS: u32 = 7;
/// `RDMA2_ERR_WRITE_RESOURCE`.
pub const ERR_WRITE_RESOURCE: u32 = 8;
/// `RDMA2_ERR_REPLY_RESOURCE`.
pub const ERR_REPLY_RESOURCE: u32 = 9;
/// `RDMA2_ERR_SYSTEM`.
pub const ERR_SYSTEM: u32 = 10;

/// The prefix fields an encoder needs (the header type is implied by the
/// encoder called).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// `rdma_xid`.
    pub xid: u32,
    /// The credit word ([`super::header::Credits::to_word`]).
    pub credit: u32,
    /// `rdma_flags`.
    pub flags: Flags,
}

/// A decoded prefix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DecodedPrefix {
    /// `rdma_xid`.
    pub xid: u32,
    /// The credit word.
    pub credit: u32,
    /// `rdma_htype`.
    pub htype: u32,
    /// `rdma_flags` (only defined bits: reserved bits are rejected).
    pub flags: Flags,
}

/// Decodes and checks the five-word prefix: `rdma_vers` must be 2 and no
/// reserved flag bit may be set. Returns the prefix and the header body
/// bytes that follow it (used to reassemble continued `RDMA2_CONNPROP`).
pub fn decode_prefix(buf: &[u8]) -> Result<(DecodedPrefix, &[u8])> {
    let mut r = XdrReader::new(buf);
    let p = read_prefix(&mut r)?;
    Ok((p, r.rest()))
}

#[inline]
fn read_prefix(r: &mut XdrReader<'_>) -> Result<DecodedPrefix> {
    let xid = r.u32(Item::Xid)?;
    let vers = r.u32(Item::Vers)?;
    if vers != VERSION {
        return Err(Error::new(
            ErrorKind::UnsupportedVersion(vers),
            Item::Vers,
            4,
        ));
    }
    let credit = r.u32(Item::Credit)?;
    let htype = r.u32(Item::Htype)?;
    let bits = r.u32(Item::Flags)?;
    let flags = Flags::from_bits(bits).ok_or(Error::new(
        ErrorKind::ReservedFlags(bits & !Flags::KNOWN.bits()),
        Item::Flags,
        16,
    ))?;
    Ok(DecodedPrefix {
        xid,
        credit,
        htype,
        flags,
    })
}

/// Decodes a v2 header; `rdma_vers` must be 2.
///
/// Besides XDR validity this enforces the rules a receiver can check on one
/// message: no reserved flag bits; `F_MORE` only on `RDMA2_MSG` and
/// `RDMA2_CONNPROP`; empty chunk lists when `F_MORE` is set; no trailing
/// bytes after `RDMA2_NOMSG`, known `RDMA2_ERROR` bodies and complete `RDMA2_CONNPROP`.
#[inline]
pub fn decode(buf: &[u8]) -> Result<Header<'_>> {
    let mut r = XdrReader::new(buf);
    let p = read_prefix(&mut r)?;
    let more = p.flags.has_more();
    let body = match p.htype {
        RDMA2_MSG => {
            let inv_handle = r.u32(Item::InvHandle)?;
            let chunks = ChunkListsView::decode(&mut r)?;
            if more && !chunks.is_empty() {
                return Err(Error::new(ErrorKind::MoreWithChunks, Item::Flags, 16));
            }
            // The XDR's rdma_rpc_first_word is not required: a piece of a
            // continued message may be split "on any convenient boundary"
            // (-00 §4.5.2), so a piece, the last one included, may carry
            // fewer than 4 bytes. Whoever takes a whole RPC message from
            // one RDMA2_MSG checks that it begins with its XID.
            let payload = r.rest();
            Body::Msg(Msg {
                inv_handle,
                chunks,
                payload,
            })
        }
        RDMA2_NOMSG => {
            if more {
                return Err(Error::new(
                    ErrorKind::MoreNotAllowed(p.htype),
                    Item::Flags,
                    16,
                ));
            }
            let inv_handle = r.u32(Item::InvHandle)?;
            let chunks = ChunkListsView::decode(&mut r)?;
            r.finish(Item::Header)?;
            Body::NoMsg(NoMsg { inv_handle, chunks })
        }
        RDMA2_ERROR => {
            if more {
                return Err(Error::new(
                    ErrorKind::MoreNotAllowed(p.htype),
                    Item::Flags,
                    16,
                ));
            }
            let body = decode_error_body(&mut r)?;
            if !matches!(body, ErrorBody::Other(_)) {
                r.finish(Item::Header)?;
            }
            Body::Error(body)
        }
        RDMA2_CONNPROP => {
            if more {
                Body::ConnPropPart(r.rest())
            } else {
                let props = PropSet::decode(&mut r)?;
                r.finish(Item::Header)?;
                Body::ConnProp(props)
            }
        }
        h => return Err(Error::new(ErrorKind::UnknownHtype(h), Item::Htype, 12)),
    };
    let hdr_len = match body {
        Body::Msg(ref m) => buf.len().saturating_sub(m.payload.len()),
        _ => buf.len(),
    };
    Ok(Header {
        protocol: Protocol::V2,
        xid: p.xid,
        credit: p.credit,
        flags: p.flags,
        body,
        hdr_len,
    })
}

/// Decodes `union rpcrdma2_error`.
pub fn decode_error_body(r: &mut XdrReader<'_>) -> Result<ErrorBody> {
    let code = r.u32(Item::ErrCode)?;
    Ok(match code {
        ERR_VERS => ErrorBody::Vers {
            low: r.u32(Item::ErrBody)?,
            high: r.u32(Item::ErrBody)?,
        },
        ERR_BAD_XDR => ErrorBody::BadXdr,
        ERR_INVAL_HTYPE => ErrorBody::InvalHtype,
        ERR_INVAL_FLAG => ErrorBody::InvalFlag,
        ERR_READ_CHUNKS => ErrorBody::ReadChunks {
            max_chunks: r.u32(Item::ErrBody)?,
        },
        ERR_WRITE_CHUNKS => ErrorBody::WriteChunks {
            max_chunks: r.u32(Item::ErrBody)?,
        },
        ERR_SEGMENTS => ErrorBody::Segments {
            max_segments: r.u32(Item::ErrBody)?,
        },
        ERR_WRITE_RESOURCE => ErrorBody::WriteResource {
            chunk_index: r.u32(Item::ErrBody)?,
            length_needed: r.u32(Item::ErrBody)?,
        },
        ERR_REPLY_RESOURCE => ErrorBody::ReplyResource {
            length_needed: r.u32(Item::ErrBody)?,
        },
        ERR_SYSTEM => ErrorBody::System,
        c => ErrorBody::Other(c),
    })
}

fn put_prefix(w: &mut XdrWriter<'_>, p: &Prefix, htype: u32) -> Result<()> {
    if Flags::from_bits(p.flags.bits()).is_none() {
        return Err(Error::new(
            ErrorKind::ReservedFlags(p.flags.bits() & !Flags::KNOWN.bits()),
            Item::Flags,
            16,
        ));
    }
    w.reserve(PREFIX_LEN)?;
    w.put_u32(p.xid)?;
    w.put_u32(VERSION)?;
    w.put_u32(p.credit)?;
    w.put_u32(htype)?;
    w.put_u32(p.flags.bits())
}

fn encode_chunked(
    buf: &mut [u8],
    p: &Prefix,
    htype: u32,
    inv_handle: u32,
    chunks: &ChunkLists<'_>,
) -> Result<usize> {
    if p.flags.has_more() {
        if htype != RDMA2_MSG {
            return Err(Error::new(
                ErrorKind::MoreNotAllowed(htype),
                Item::Flags,
                16,
            ));
        }
        if !chunks.is_empty() {
            return Err(Error::new(ErrorKind::MoreWithChunks, Item::Flags, 16));
        }
    }
    let len = chunks
        .encoded_len()
        .and_then(|l| l.checked_add(PREFIX_LEN + 4))
        .ok_or(Error::new(ErrorKind::Unrepresentable, Item::Output, 0))?;
    let mut w = XdrWriter::new(buf);
    w.reserve(len)?;
    put_prefix(&mut w, p, htype)?;
    w.put_u32(inv_handle)?;
    chunks.encode(&mut w)?;
    Ok(w.finish())
}

/// Encodes an `RDMA2_MSG` header; the caller appends the RPC message (at
/// least one word). With `F_MORE` the chunk lists must be empty.
#[inline]
pub fn encode_msg(
    buf: &mut [u8],
    p: &Prefix,
    inv_handle: u32,
    chunks: &ChunkLists<'_>,
) -> Result<usize> {
    encode_chunked(buf, p, RDMA2_MSG, inv_handle, chunks)
}

/// Encodes an `RDMA2_NOMSG` header (`F_MORE` is not allowed).
#[inline]
pub fn encode_nomsg(
    buf: &mut [u8],
    p: &Prefix,
    inv_handle: u32,
    chunks: &ChunkLists<'_>,
) -> Result<usize> {
    encode_chunked(buf, p, RDMA2_NOMSG, inv_handle, chunks)
}

/// Encodes a credit grant refresh: `RDMA2_NOMSG`, `rdma_xid` 0, three empty
/// chunk lists (draft -00 §6.4.2). `flags` tells the receiver how to read
/// the (zero) XID.
pub fn encode_credit_grant(buf: &mut [u8], credit: u32, flags: Flags) -> Result<usize> {
    let p = Prefix {
        xid: 0,
        credit,
        flags,
    };
    encode_nomsg(buf, &p, 0, &ChunkLists::EMPTY)
}

/// Encodes an `RDMA2_ERROR` message. `F_RESPONSE` is always set (§6.3.2:
/// it MUST be). [`ErrorBody::Other`] may only carry a code draft -00 does not
/// define.
pub fn encode_error(buf: &mut [u8], xid: u32, credit: u32, err: &ErrorBody) -> Result<usize> {
    let p = Prefix {
        xid,
        credit,
        flags: Flags::RESPONSE,
    };
    let body_words: usize = match *err {
        ErrorBody::Vers { .. } | ErrorBody::WriteResource { .. } => 2,
        ErrorBody::ReadChunks { .. }
        | ErrorBody::WriteChunks { .. }
        | ErrorBody::Segments { .. }
        | ErrorBody::ReplyResource { .. } => 1,
        ErrorBody::Other(c) if (ERR_VERS..=ERR_SYSTEM).contains(&c) => {
            return Err(Error::new(
                ErrorKind::Unrepresentable,
                Item::ErrCode,
                PREFIX_LEN,
            ));
        }
        _ => 0,
    };
    let mut w = XdrWriter::new(buf);
    w.reserve(body_words.saturating_mul(4).saturating_add(PREFIX_LEN + 4))?;
    put_prefix(&mut w, &p, RDMA2_ERROR)?;
    w.put_u32(err.code())?;
    match *err {
        ErrorBody::Vers { low, high } => {
            w.put_u32(low)?;
            w.put_u32(high)?;
        }
        ErrorBody::WriteResource {
            chunk_index,
            length_needed,
        } => {
            w.put_u32(chunk_index)?;
            w.put_u32(length_needed)?;
        }
        ErrorBody::ReadChunks { max_chunks: v }
        | ErrorBody::WriteChunks { max_chunks: v }
        | ErrorBody::Segments { max_segments: v }
        | ErrorBody::ReplyResource { length_needed: v } => w.put_u32(v)?,
        _ => {}
    }
    Ok(w.finish())
}

/// Encodes an `RDMA2_CONNPROP` message carrying `props`.
///
/// `F_MORE` is rejected here: a property set split over several messages
/// is built by the caller from [`PropSet`]-encoded bytes.
pub fn encode_connprop(buf: &mut [u8], p: &Prefix, props: &[Property<'_>]) -> Result<usize> {
    if p.flags.has_more() {
        return Err(Error::new(ErrorKind::Unrepresentable, Item::Flags, 16));
    }
    let mut w = XdrWriter::new(buf);
    put_prefix(&mut w, p, RDMA2_CONNPROP)?;
    PropSet::encode(&mut w, props)?;
    Ok(w.finish())
}
