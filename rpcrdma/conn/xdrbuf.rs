// SPDX-License-Identifier: GPL-2.0

//! A request's `xdr_buf`s in the protocol's terms: `sunrpc/` describes
//! them in SUNRPC's own vocabulary ([`RqstShape`], [`XdrRange`]) and knows
//! nothing of chunks; this is where that becomes the [`proto::Rpc`] the
//! chunk planner takes, and the planner's [`proto::Range`]s and
//! [`proto::SendLayout`] become `xdr_buf` ranges again. Plain copies of
//! a few words, on the stack: nothing is allocated or copied twice.

use crate::proto::{self, Part};
use crate::sunrpc::rqst::{RqstShape, TxRqst, XdrBufShape, XdrPart, XdrRange, XdrSide};
use kernel::prelude::*;

fn geometry(b: &XdrBufShape) -> proto::Geometry {
    proto::Geometry {
        head: b.head_len,
        page_base: b.page_base,
        page_len: b.page_len,
        tail: b.tail_len,
    }
}

impl From<RqstShape> for proto::Rpc {
    /// The RPC as chunk planning sees it: the Call's pages are NFS WRITE
    /// data when `rq_snd_buf` is flagged `XDRBUF_WRITE`, the Reply's pages
    /// receive READ (or READLINK) data when `rq_rcv_buf` is flagged
    /// `XDRBUF_READ`; direct data placement is off under GSS integrity and
    /// privacy (the auth touches the data).
    fn from(s: RqstShape) -> Self {
        proto::Rpc {
            call: geometry(&s.call),
            call_ddp: s.call.write_pages,
            reply: geometry(&s.reply),
            reply_buflen: s.reply.buflen,
            reply_ddp: s.reply.read_pages,
            ddp_allowed: !s.auth_datatouch,
        }
    }
}

/// The `xdr_buf` range of a chunk plan's `range`; `EINVAL` for the Write
/// pad, which is the transport's own MR and no part of the request.
pub(super) fn xdr_range(range: &proto::Range) -> Result<XdrRange> {
    let part = match range.part {
        Part::Head => XdrPart::Head,
        Part::Pages => XdrPart::Pages,
        Part::Tail => XdrPart::Tail,
        Part::WritePad => return Err(EINVAL),
    };
    Ok(XdrRange {
        part,
        offset: range.offset,
        len: range.len,
    })
}

/// Copies the inline part of the Call described by `layout` (head bytes,
/// the pages or none of them, then tail bytes from `tail_offset`) into
/// `out`, which must be exactly `layout.len()` bytes.
pub(super) fn copy_call_layout(
    rqst: &TxRqst<'_>,
    out: &mut [u8],
    layout: &proto::SendLayout,
) -> Result {
    if out.len() != layout.len() as usize {
        return Err(EINVAL);
    }
    // The pages go whole or not at all.
    if layout.pages != 0 && layout.pages != rqst.xdr_shape(XdrSide::Call).page_len {
        return Err(EINVAL);
    }
    let parts = [
        (XdrPart::Head, 0, layout.head),
        (XdrPart::Pages, 0, layout.pages),
        (XdrPart::Tail, layout.tail_offset, layout.tail),
    ];
    let mut at = 0usize;
    for (part, offset, len) in parts {
        if len == 0 {
            continue;
        }
        let dst = out.get_mut(at..at + len as usize).ok_or(EINVAL)?;
        rqst.copy_call_part(dst, part, offset)?;
        at += len as usize;
    }
    Ok(())
}
