// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA version 1 (RFC 8166; the wire format of RFC 5666).
//!
//! ```text
//! rdma_msg  := xid, vers (1), credit, proc, body
//! RDMA_MSG   (0): read list, write list, reply chunk; RPC message follows
//! RDMA_NOMSG (1): read list, write list, reply chunk; nothing follows
//! RDMA_MSGP  (2): RFC 5666 only; rejected (ErrorKind::ObsoleteV1Proc)
//! RDMA_DONE  (3): RFC 5666 only; rejected (ErrorKind::ObsoleteV1Proc)
//! RDMA_ERROR (4): ERR_VERS (1) low, high | ERR_CHUNK (2)
//! ```

use super::chunk::{ChunkLists, ChunkListsView};
use super::error::{Error, ErrorKind, Item, Result};
use super::header::{Body, ErrorBody, Flags, Header, Msg, NoMsg, Protocol, COMMON_LEN};
use super::stream::{XdrReader, XdrWriter};

/// `rdma_vers` of version 1.
pub const VERSION: u32 = 1;

/// `RDMA_MSG`: an RPC message follows the header.
pub const RDMA_MSG: u32 = 0;
/// `RDMA_NOMSG`: the RPC message moves in chunks.
pub const RDMA_NOMSG: u32 = 1;
/// `RDMA_MSGP` (RFC 5666; not supported).
pub const RDMA_MSGP: u32 = 2;
/// `RDMA_DONE` (RFC 5666; not supported).
pub const RDMA_DONE: u32 = 3;
/// `RDMA_ERROR`.
pub const RDMA_ERROR: u32 = 4;

/// `ERR_VERS`: version mismatch; body is the supported range.
pub const ERR_VERS: u32 = 1;
/// `ERR_CHUNK`: any other header or chunk problem.
pub const ERR_CHUNK: u32 = 2;

/// Length of an `RDMA_ERROR` / `ERR_VERS` message.
pub const ERR_VERS_LEN: usize = 28;
/// Length of an `RDMA_ERROR` / `ERR_CHUNK` message.
pub const ERR_CHUNK_LEN: usize = 20;
/// Length of an `RDMA_MSG` header with three empty chunk lists.
pub const MIN_MSG_HDR_LEN: usize = 28;

/// Decodes a v1 header; `rdma_vers` must be 1.
pub fn decode(buf: &[u8]) -> Result<Header<'_>> {
    let mut r = XdrReader::new(buf);
    r.u32(Item::Xid)?;
    let vers = r.u32(Item::Vers)?;
    if vers != VERSION {
        return Err(Error::new(
            ErrorKind::UnsupportedVersion(vers),
            Item::Vers,
            4,
        ));
    }
    decode_body(buf, Protocol::V1)
}

/// Decodes the v1 layout without checking `rdma_vers` (used for the
/// v1-framed `ERR_VERS` that a v1-only responder returns to a v2 Call, see
/// [`super::header::Dispatch::V1FramedErrVers`]). `protocol` is recorded in
/// the returned header.
pub fn decode_body(buf: &[u8], protocol: Protocol) -> Result<Header<'_>> {
    let mut r = XdrReader::new(buf);
    let xid = r.u32(Item::Xid)?;
    r.u32(Item::Vers)?;
    let credit = r.u32(Item::Credit)?;
    let proc_at = r.position();
    let proc_ = r.u32(Item::Htype)?;
    let body = match proc_ {
        RDMA_MSG => {
            let chunks = ChunkListsView::decode(&mut r)?;
            Body::Msg(Msg {
                inv_handle: 0,
                chunks,
                payload: r.rest(),
            })
        }
        RDMA_NOMSG => {
            let chunks = ChunkListsView::decode(&mut r)?;
            r.finish(Item::Header)?;
            Body::NoMsg(NoMsg {
                inv_handle: 0,
                chunks,
            })
        }
        RDMA_MSGP | RDMA_DONE => {
            return Err(Error::new(
                ErrorKind::ObsoleteV1Proc(proc_),
                Item::Htype,
                proc_at,
            ))
        }
        RDMA_ERROR => {
            let code_at = r.position();
            let body = match r.u32(Item::ErrCode)? {
                ERR_VERS => ErrorBody::Vers {
                    low: r.u32(Item::ErrBody)?,
                    high: r.u32(Item::ErrBody)?,
                },
                ERR_CHUNK => ErrorBody::BadXdr,
                c => {
                    return Err(Error::new(
                        ErrorKind::UnknownV1ErrCode(c),
                        Item::ErrCode,
                        code_at,
                    ))
                }
            };
            r.finish(Item::Header)?;
            Body::Error(body)
        }
        p => return Err(Error::new(ErrorKind::UnknownHtype(p), Item::Htype, proc_at)),
    };
    let hdr_len = match body {
        Body::Msg(ref m) => buf.len().saturating_sub(m.payload.len()),
        _ => buf.len(),
    };
    Ok(Header {
        protocol,
        xid,
        credit,
        flags: Flags::NONE,
        body,
        hdr_len,
    })
}

fn put_common(w: &mut XdrWriter<'_>, xid: u32, credit: u32, proc_: u32) -> Result<()> {
    w.reserve(COMMON_LEN)?;
    w.put_u32(xid)?;
    w.put_u32(VERSION)?;
    w.put_u32(credit)?;
    w.put_u32(proc_)
}

/// Encodes an `RDMA_MSG` or `RDMA_NOMSG` header (`proc_`), returning its
/// length.
pub fn encode_chunked(
    buf: &mut [u8],
    xid: u32,
    credit: u32,
    proc_: u32,
    chunks: &ChunkLists<'_>,
) -> Result<usize> {
    if proc_ != RDMA_MSG && proc_ != RDMA_NOMSG {
        return Err(Error::new(ErrorKind::Unrepresentable, Item::Htype, 12));
    }
    let mut w = XdrWriter::new(buf);
    let len = chunks
        .encoded_len()
        .and_then(|l| l.checked_add(COMMON_LEN))
        .ok_or(Error::new(ErrorKind::Unrepresentable, Item::Output, 0))?;
    w.reserve(len)?;
    put_common(&mut w, xid, credit, proc_)?;
    chunks.encode(&mut w)?;
    Ok(w.finish())
}

/// Encodes an `RDMA_MSG` header; the caller appends the RPC message.
#[inline]
pub fn encode_msg(buf: &mut [u8], xid: u32, credit: u32, chunks: &ChunkLists<'_>) -> Result<usize> {
    encode_chunked(buf, xid, credit, RDMA_MSG, chunks)
}

/// Encodes an `RDMA_NOMSG` header.
#[inline]
pub fn encode_nomsg(
    buf: &mut [u8],
    xid: u32,
    credit: u32,
    chunks: &ChunkLists<'_>,
) -> Result<usize> {
    encode_chunked(buf, xid, credit, RDMA_NOMSG, chunks)
}

/// Encodes an `RDMA_ERROR` message. Only [`ErrorBody::Vers`] and
/// [`ErrorBody::BadXdr`] (`ERR_CHUNK`) exist in v1.
pub fn encode_error(buf: &mut [u8], xid: u32, credit: u32, err: &ErrorBody) -> Result<usize> {
    let mut w = XdrWriter::new(buf);
    match *err {
        ErrorBody::Vers { low, high } => {
            w.reserve(ERR_VERS_LEN)?;
            put_common(&mut w, xid, credit, RDMA_ERROR)?;
            w.put_u32(ERR_VERS)?;
            w.put_u32(low)?;
            w.put_u32(high)?;
        }
        ErrorBody::BadXdr => {
            w.reserve(ERR_CHUNK_LEN)?;
            put_common(&mut w, xid, credit, RDMA_ERROR)?;
            w.put_u32(ERR_CHUNK)?;
        }
        _ => {
            return Err(Error::new(
                ErrorKind::Unrepresentable,
                Item::ErrCode,
                COMMON_LEN,
            ))
        }
    }
    Ok(w.finish())
}
