// SPDX-License-Identifier: GPL-2.0

//! Validation of a reply against what its Call registered
//! ([`ChunkPlan::check_reply`], which says where the RPC Reply is:
//! [`ReplyData`], or why it is inconsistent: [`ReplyError`]), and what a
//! remotely invalidated rkey was ([`ChunkPlan::invalidated`]).

use super::super::errno::Errno;
use super::super::xdr::chunk::{Segment, WriteChunk};
use super::super::xdr::header::{Body, Header, Protocol};
use super::{ChunkPlan, Part, RPC_REPLY};

/// What a remotely invalidated rkey was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invalidated {
    /// This RPC's MR for range `index`: it needs no local invalidation.
    Mr {
        /// Index in [`ChunkPlan::ranges`].
        index: usize,
    },
    /// The persistent Write pad MR: it is unusable until registered again.
    WritePad,
    /// Not one of this RPC's MRs: the responder misbehaved; invalidate
    /// all of this RPC's MRs locally.
    NotOurs,
}

/// Why a reply is inconsistent with what its Call registered. Every one
/// fails the RPC with `-EIO` and counts as a bad reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplyError {
    /// Not an `RDMA_MSG` / `RDMA_NOMSG` (use `reply::classify`).
    NotAReply,
    /// v2: `F_MORE` (Message Continuation) set, or `F_RESPONSE` clear.
    BadFlags,
    /// The reply carries a Read list.
    ReadList,
    /// More Write chunks than offered (we offer at most one).
    UnexpectedWriteChunk,
    /// A Reply chunk although none was offered.
    UnexpectedReplyChunk,
    /// A returned chunk has more segments than offered, or segment
    /// `index` names another handle or offset than the one registered.
    ForeignSegment {
        /// Segment index in the chunk.
        index: u32,
    },
    /// Segment `index` claims more bytes than were registered.
    Overrun {
        /// Segment index in the chunk.
        index: u32,
        /// Length in the reply.
        written: u32,
        /// Length registered.
        registered: u32,
    },
    /// Segment `index` has data after a short segment: the chunk was
    /// not filled contiguously.
    Gap {
        /// Segment index in the chunk.
        index: u32,
    },
    /// `RDMA_MSG` whose Reply chunk carries data.
    ReplyChunkInMsg,
    /// `RDMA_NOMSG` without a Reply chunk, or with an empty one.
    NoReplyChunk,
    /// `RDMA_NOMSG` with data in the Write list.
    WriteInNoMsg,
    /// The inline RPC message does not start with the XID and REPLY.
    BadRpcHeader,
}

impl ReplyError {
    /// `-EIO`, as the C client (`rpcrdma_complete_rqst`).
    pub const fn errno(&self) -> Errno {
        Errno::EIO
    }

    /// True for what counts in `bad_reply_count`: everything but
    /// [`Self::NotAReply`] (a caller error: such messages go through
    /// `reply::classify`).
    pub const fn is_bad_reply(&self) -> bool {
        !matches!(self, Self::NotAReply)
    }
}

/// Where a checked reply's RPC message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyData<'a> {
    /// All of it is inline (no chunk data): deliver `payload` as an
    /// inline reply.
    Inline {
        /// The RPC Reply.
        payload: &'a [u8],
    },
    /// Write chunk data: the RPC Reply is `head` (inline), then `written`
    /// bytes the responder placed in the reply pages from `page_base`,
    /// then `pad` bytes of XDR roundup (in neither place), then `tail`
    /// (inline). `head` is the inline part up to the planned head length
    /// (shorter if the inline part is; C `rpcrdma_inline_fixup` trims the
    /// head then). Any inline bytes beyond the head follow the payload
    /// (the C client would copy them into the pages instead; READ is the
    /// last operation of the Linux NFS client's COMPOUNDs, so the case
    /// does not arise there).
    Written {
        /// Inline bytes before the payload.
        head: &'a [u8],
        /// Bytes the responder wrote (C: `writelist`): into the pages
        /// from `page_base`, plus the pad MR's bytes if it wrote the
        /// roundup there (then `written` exceeds the page length by at
        /// most [`WRITE_PAD_LEN`]).
        ///
        /// [`WRITE_PAD_LEN`]: super::WRITE_PAD_LEN
        written: u32,
        /// XDR roundup of `written`.
        pad: u32,
        /// Inline bytes after the payload.
        tail: &'a [u8],
        /// The RPC Reply length (`rq_rcv_buf.len`): inline bytes plus
        /// `written` rounded up (C: `rpclen + xdr_align_size(writelist)`).
        rpc_len: u32,
    },
    /// Long Reply: the first `len` bytes of the receive buffer (head,
    /// then pages, then tail, as registered) hold the RPC Reply.
    Long {
        /// Bytes written through the Reply chunk.
        len: u32,
    },
}

impl ChunkPlan {
    /// Says what a remotely invalidated `rkey` (a Receive completion with
    /// `IB_WC_WITH_INVALIDATE`) was, given the RPC's registered `segs`.
    pub fn invalidated(&self, segs: &[Segment], rkey: u32) -> Invalidated {
        let mut index: usize = 0;
        for (s, r) in segs.iter().zip(self.ranges()) {
            if s.handle == rkey {
                return match r.part {
                    Part::WritePad => Invalidated::WritePad,
                    Part::Head | Part::Pages | Part::Tail => Invalidated::Mr { index },
                };
            }
            index = index.saturating_add(1);
        }
        Invalidated::NotOurs
    }

    /// Checks a decoded reply `h` (already matched to this RPC by XID and
    /// accepted in the connection's version) against what was registered
    /// (`segs`, as passed to [`Self::chunk_lists`]); says where the RPC
    /// Reply is. Called on receive, before the MRs are invalidated and the
    /// reply is delivered.
    pub fn check_reply<'a>(
        &self,
        segs: &[Segment],
        h: &Header<'a>,
    ) -> Result<ReplyData<'a>, ReplyError> {
        let (chunks, payload) = match h.body {
            Body::Msg(ref m) => (m.chunks, Some(m.payload)),
            Body::NoMsg(ref n) => (n.chunks, None),
            Body::Error(_) | Body::ConnProp(_) | Body::ConnPropPart(_) => {
                return Err(ReplyError::NotAReply)
            }
        };
        if h.protocol == Protocol::V2 && (h.flags.has_more() || !h.flags.is_response()) {
            return Err(ReplyError::BadFlags);
        }
        if !chunks.reads.is_empty() {
            return Err(ReplyError::ReadList);
        }
        let (r, w, e) = self.split();
        let offered_write = segs.get(r..w).unwrap_or(&[]);
        let offered_reply = segs.get(w..e).unwrap_or(&[]);
        let mut written: u32 = 0;
        let mut first = true;
        for chunk in chunks.writes.iter() {
            if !first || offered_write.is_empty() {
                return Err(ReplyError::UnexpectedWriteChunk);
            }
            first = false;
            written = chunk_len(&chunk, offered_write)?;
        }
        let reply_len = match chunks.reply {
            None => 0,
            Some(_) if offered_reply.is_empty() => return Err(ReplyError::UnexpectedReplyChunk),
            Some(ref chunk) => chunk_len(chunk, offered_reply)?,
        };
        let Some(payload) = payload else {
            if written != 0 {
                return Err(ReplyError::WriteInNoMsg);
            }
            if reply_len == 0 {
                return Err(ReplyError::NoReplyChunk);
            }
            return Ok(ReplyData::Long { len: reply_len });
        };
        if reply_len != 0 {
            return Err(ReplyError::ReplyChunkInMsg);
        }
        let word = |i: usize| {
            payload
                .get(i.saturating_mul(4)..)
                .and_then(|b| b.first_chunk::<4>())
                .map(|b| u32::from_be_bytes(*b))
        };
        if word(0) != Some(h.xid) || word(1) != Some(RPC_REPLY) {
            return Err(ReplyError::BadRpcHeader);
        }
        if written == 0 {
            return Ok(ReplyData::Inline { payload });
        }
        let head_len = usize::try_from(self.reply_head).unwrap_or(usize::MAX);
        let (head, tail) = payload.split_at_checked(head_len).unwrap_or((payload, &[]));
        let aligned = written.checked_next_multiple_of(4).unwrap_or(written);
        let inline = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        Ok(ReplyData::Written {
            head,
            written,
            pad: aligned.saturating_sub(written),
            tail,
            rpc_len: inline.saturating_add(aligned),
        })
    }
}

/// Checks a returned Write or Reply chunk against the offered segments;
/// returns the bytes written.
fn chunk_len(chunk: &WriteChunk<'_>, offered: &[Segment]) -> Result<u32, ReplyError> {
    if chunk.len() > offered.len() {
        return Err(ReplyError::ForeignSegment {
            index: u32::try_from(offered.len()).unwrap_or(u32::MAX),
        });
    }
    let mut total: u32 = 0;
    let mut short = false;
    let mut index: u32 = 0;
    for (got, ours) in chunk.iter().zip(offered) {
        if got.handle != ours.handle || got.offset != ours.offset {
            return Err(ReplyError::ForeignSegment { index });
        }
        if got.length > ours.length {
            return Err(ReplyError::Overrun {
                index,
                written: got.length,
                registered: ours.length,
            });
        }
        if short && got.length != 0 {
            return Err(ReplyError::Gap { index });
        }
        short = got.length < ours.length;
        // Bounded by the registered lengths, which fit a u32 in sum.
        total = total.saturating_add(got.length);
        index = index.saturating_add(1);
    }
    Ok(total)
}
