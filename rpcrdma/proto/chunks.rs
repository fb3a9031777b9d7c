// SPDX-License-Identifier: GPL-2.0

//! Chunk planning, chunk-list construction, validation of replies that
//! use chunks, and remote invalidation, as pure functions.
//!
//! The transport describes an RPC by the geometry of its two `xdr_buf`s
//! ([`Rpc`]); [`plan`] chooses how the Call and the Reply travel, the
//! way the C client's `rpcrdma_marshal_req` does (rpc_rdma.c:870-960):
//!
//! * Reply: inline if `rq_rcv_buf.buflen` fits the reply threshold
//!   (`rpcrdma_results_inline`); else a **Write chunk** over the reply
//!   pages if DDP is allowed, the buffer is flagged `XDRBUF_READ` and head
//!   plus tail are below the reply threshold (`rpcrdma_nonpayload_inline`);
//!   else, on version 2 and for a Reply that is not READ data (no
//!   `XDRBUF_READ`), **no chunk** if the responder may continue the
//!   Reply over several Sends and `buflen` is within
//!   [`Limits::cont_reply`] (-00 §4.5.2, §6.3.3.1: the Reply arrives in
//!   pieces, see [`super::continuation`]);
//!   else a **Reply chunk** over head, pages and tail (Long Reply). A
//!   Write chunk is exactly the pages: the Requester MUST NOT provision
//!   space for XDR roundup (-00 §4.4.6 "Write Chunk Roundup"; RFC 8166
//!   §3.4.6). Only with [`Limits::write_pad`] (the C client's behaviour,
//!   for responders that write the roundup anyway) does a Write chunk
//!   over a page list whose length is not a multiple of four get one
//!   more segment: a persistent 4-byte pad MR ([`Part::WritePad`]; C:
//!   `re_write_pad_mr`, rpc_rdma.c:435). rpcrdma2 does not set it.
//! * Call: inline if `rq_snd_buf.len` fits the call threshold (and the
//!   exact header plus the Call fit the Send); else a **Read chunk** at
//!   position = head length over the pages if DDP is allowed and the
//!   buffer is flagged `XDRBUF_WRITE` (the head and the tail, minus a tail
//!   that is only the XDR pad of the pages, stay inline:
//!   `rpcrdma_prepare_readch`); else a **Position-Zero Read chunk** over
//!   head, pages and tail (Long Call, `RDMA_NOMSG` / `RDMA2_NOMSG`).
//!
//! As in the C client, every list carries at most one chunk, and the
//! combinations are: Read, Write, Reply, Read + Write, Read + Reply;
//! never Write + Reply (one reply form is chosen).
//!
//! The plan lists the byte ranges to register ([`Range`], one RDMA
//! segment each, at most [`Limits::max_mr_pages`] pages per range); the
//! transport maps each into an MR and hands the resulting [`Segment`]s
//! (same order) to [`ChunkPlan::chunk_lists`], which builds the
//! [`ChunkLists`] for `encode_msg` and the v2 `rdma_inv_handle`. When
//! the reply arrives, [`ChunkPlan::check_reply`] checks it against what
//! was registered and says where its data is; [`ChunkPlan::invalidated`]
//! says whether a remotely invalidated rkey was one of the RPC's MRs.
//!
//! Everything here is `core` only, allocation-free (fixed arrays of at
//! most [`MAX_CHUNK_SEGS`] segments per chunk) and panic-free.
//!
//! One job per file: this one plans (the description of an RPC, the
//! limits, [`plan`] and the [`ChunkPlan`] it returns); [`lists`] builds a
//! Call's chunk lists from the registered segments
//! ([`ChunkPlan::chunk_lists`]); [`reply`] checks a reply against them
//! ([`ChunkPlan::check_reply`], [`ChunkPlan::invalidated`]); [`sizing`]
//! sizes FRWR registration for a device (the depth, the MRs and WRs one
//! RPC may need, as the C client's `frwr_query_device()`).
//!
//! [`Segment`]: super::xdr::chunk::Segment
//! [`ChunkLists`]: super::xdr::chunk::ChunkLists

pub mod lists;
pub mod reply;
pub mod sizing;

use super::config::{Config, MAX_HDR_SEGS};
use super::errno::Errno;
use super::inline::{Direction, Thresholds, TooBig};
use super::recovery::Hints;
use super::xdr::header::{MsgKind, Protocol};

/// Most RDMA segments in one chunk (C: `RPCRDMA_MAX_HDR_SEGS`).
pub const MAX_CHUNK_SEGS: usize = 16;
const _: () = assert!(MAX_HDR_SEGS == 16);
/// Most ranges (segments) of one RPC: one Read chunk and one Write or
/// Reply chunk.
pub const MAX_RANGES: usize = 2 * MAX_CHUNK_SEGS;
/// Length of the Write-chunk pad segment (C: `XDR_UNIT`).
pub const WRITE_PAD_LEN: u32 = 4;

/// RPC `msg_type` REPLY.
const RPC_REPLY: u32 = 1;

/// The geometry of one `xdr_buf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// `head[0].iov_len`.
    pub head: u32,
    /// `page_base`: offset of the page data in the page array.
    pub page_base: u32,
    /// `page_len`.
    pub page_len: u32,
    /// `tail[0].iov_len`.
    pub tail: u32,
}

impl Geometry {
    /// `head + page_len + tail`, or `None` on overflow.
    pub fn len(&self) -> Option<u32> {
        self.head.checked_add(self.page_len)?.checked_add(self.tail)
    }

    /// True if all three parts are empty.
    pub const fn is_empty(&self) -> bool {
        self.head == 0 && self.page_len == 0 && self.tail == 0
    }
}

/// One RPC as the transport sees it in `->send_request`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rpc {
    /// `rq_snd_buf`.
    pub call: Geometry,
    /// `rq_snd_buf.flags & XDRBUF_WRITE`: the pages are a DDP-eligible
    /// argument (NFS WRITE data).
    pub call_ddp: bool,
    /// `rq_rcv_buf`.
    pub reply: Geometry,
    /// `rq_rcv_buf.buflen`: the largest Reply expected.
    pub reply_buflen: u32,
    /// `rq_rcv_buf.flags & XDRBUF_READ`: the pages receive a DDP-eligible
    /// result (NFS READ data).
    pub reply_ddp: bool,
    /// Direct data placement is allowed: false under GSS integrity or
    /// privacy (C: `RPCAUTH_AUTH_DATATOUCH`).
    pub ddp_allowed: bool,
}

/// What the device and the configuration allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// `PAGE_SIZE`.
    pub page_size: u32,
    /// Pages one MR can map (C: `re_max_fr_depth`). 0 is taken as 1.
    pub max_mr_pages: u32,
    /// Segments per chunk: `Config::max_segs` after validation (clamped
    /// to [`MAX_CHUNK_SEGS`]). 0 turns chunks off: an RPC that does not
    /// fit inline is refused with [`PlanError::TooBig`], as before.
    pub max_segs: u32,
    /// Append a [`Part::WritePad`] segment to a Write chunk of unaligned
    /// length (C client compatibility; off per -00 §4.4.6).
    pub write_pad: bool,
    /// Version 2: the largest Reply (`rq_rcv_buf.buflen`) the responder
    /// may send us by Message Continuation (-00 §4.5.2, §6.3.3.1) instead
    /// of through a Reply chunk. A Reply over the inline threshold that
    /// is not READ data (`XDRBUF_READ`: a Write chunk's, or without DDP a
    /// Reply chunk's) and whose buffer is at most this is planned
    /// [`ReplyForm::Inline`]: no Reply chunk, nothing registered, the
    /// responder continues it over several Sends. 0 (version 1, or
    /// continuation of Replies off): a Reply chunk, as the C client.
    /// See [`Transport::limits`](super::Transport::limits) for the value.
    pub cont_reply: u32,
}

/// Largest RPC payload the C client plans for (`xprt->max_payload`:
/// `RPCRDMA_MAX_DATA_SEGS` pages of which one is for misalignment).
pub const MAX_PAYLOAD: u32 = 1024 * 1024;

impl Limits {
    /// 4 KiB pages, 256-page MRs, chunks off.
    pub const INLINE_ONLY: Limits = Limits {
        page_size: 4096,
        max_mr_pages: 256,
        max_segs: 0,
        write_pad: false,
        cont_reply: 0,
    };

    /// The limits of a transport: `config.max_segs` (validated) with the
    /// device's `page_size` and FRWR depth.
    pub const fn new(config: &Config, page_size: u32, max_mr_pages: u32) -> Self {
        Limits {
            page_size,
            max_mr_pages,
            max_segs: config.validated().max_segs,
            write_pad: false,
            cont_reply: 0,
        }
    }

    /// The segments per chunk a device with FRWR depth `max_mr_pages`
    /// needs for a [`MAX_PAYLOAD`] chunk plus head and tail, capped at
    /// [`MAX_CHUNK_SEGS`]; the value to put in `Config::max_segs` when
    /// chunks are on (C: `re_max_rdma_segs`, frwr_ops.c:252-257).
    pub const fn segs_for_depth(page_size: u32, max_mr_pages: u32) -> u32 {
        let depth = if max_mr_pages == 0 { 1 } else { max_mr_pages };
        // RPCRDMA_MAX_DATA_SEGS = 1 MiB / PAGE_SIZE + 1
        let pages = match MAX_PAYLOAD.checked_div(page_size) {
            Some(p) => p,
            None => MAX_PAYLOAD,
        };
        let data_pages = pages.saturating_add(1);
        let n = data_pages.div_ceil(depth).saturating_add(2);
        if n > MAX_HDR_SEGS {
            MAX_HDR_SEGS
        } else {
            n
        }
    }
}

/// Which part of an `xdr_buf` a range lies in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Part {
    /// `head[0]`; the offset is from `iov_base`.
    #[default]
    Head,
    /// The page list; the offset is from the first byte of page data
    /// (`page_base`), so the range starts in page
    /// `(page_base + offset) / PAGE_SIZE`.
    Pages,
    /// `tail[0]`; the offset is from `iov_base`.
    Tail,
    /// The transport's persistent 4-byte Write pad MR (not a per-RPC
    /// registration; never invalidated with the RPC).
    WritePad,
}

/// A byte range to register as one MR / RDMA segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Range {
    /// The part of the buffer.
    pub part: Part,
    /// Offset in the part.
    pub offset: u32,
    /// Length in bytes (the segment's length).
    pub len: u32,
}

/// How the Call travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallForm {
    /// Inline (`RDMA_MSG`), no Read list.
    Inline,
    /// `RDMA_MSG` with one Read chunk over the pages at `position` (the
    /// head length); head and tail inline.
    Read {
        /// XDR position of the chunk.
        position: u32,
    },
    /// Long Call: `RDMA_NOMSG`, a Position-Zero Read chunk over the whole
    /// Call; nothing inline.
    Long,
}

/// How the Reply is to travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplyForm {
    /// Inline; no Write list, no Reply chunk.
    Inline,
    /// One Write chunk over the reply pages.
    Write,
    /// Long Reply: a Reply chunk over head, pages and tail.
    Long,
}

/// Which bytes of `rq_snd_buf` follow the transport header in the Send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SendLayout {
    /// Bytes of the head, from its start.
    pub head: u32,
    /// Bytes of the page list, from `page_base` (0 or all of it).
    pub pages: u32,
    /// Offset of the inline tail bytes in the tail (skips the XDR pad of
    /// reduced pages).
    pub tail_offset: u32,
    /// Bytes of the tail sent.
    pub tail: u32,
}

impl SendLayout {
    /// Total RPC bytes in the Send.
    pub const fn len(&self) -> u32 {
        self.head
            .saturating_add(self.pages)
            .saturating_add(self.tail)
    }

    /// True when nothing of the RPC is sent inline (Long Call).
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why an RPC cannot be planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlanError {
    /// Chunks are off ([`Limits::max_segs`] 0) and the RPC does not fit
    /// inline.
    TooBig(TooBig),
    /// A chunk would need more segments than allowed.
    TooManySegments {
        /// Call (Read chunk) or Reply (Write / Reply chunk).
        direction: Direction,
        /// Segments needed.
        needed: u32,
        /// [`Limits::max_segs`].
        limit: u32,
    },
    /// Even the transport header of a Long Call does not fit the Send.
    HeaderTooBig {
        /// Header length.
        len: u32,
        /// Call inline threshold.
        limit: u32,
    },
    /// Lengths overflow 32 bits.
    BadGeometry,
    /// [`ChunkPlan::chunk_lists`]: the segments do not match the plan's
    /// ranges (wrong count, or segment `index` has the wrong length).
    SegmentMismatch {
        /// First mismatching index (the count if the count is wrong).
        index: u32,
    },
}

impl PlanError {
    /// `-EMSGSIZE` (the RPC cannot be sent: fail it, do not retry) for
    /// size limits; `-EIO` for inconsistent input (a transport bug).
    pub const fn errno(&self) -> Errno {
        match self {
            Self::TooBig(_) | Self::TooManySegments { .. } | Self::HeaderTooBig { .. } => {
                Errno::EMSGSIZE
            }
            Self::BadGeometry | Self::SegmentMismatch { .. } => Errno::EIO,
        }
    }
}

/// The plan for one RPC: forms, ranges to register, Send layout, exact
/// header length. `Copy`; the transport keeps it with the request until
/// the reply is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkPlan {
    call: CallForm,
    reply: ReplyForm,
    protocol: Protocol,
    ranges: [Range; MAX_RANGES],
    nread: u8,
    nwrite: u8,
    nreply: u8,
    send: SendLayout,
    hdr_len: u32,
    reply_head: u32,
}

/// Exact header length with `nread` Read segments (one chunk), a Write
/// chunk of `nwrite` segments (0: no Write list) and a Reply chunk of
/// `nreply` segments (0: none).
pub fn header_len(protocol: Protocol, nread: u32, nwrite: u32, nreply: u32) -> u32 {
    // xid, vers, credit, proc; three list terminators / absent markers.
    let mut len: u32 = 16 + 12;
    len = len.saturating_add(nread.saturating_mul(24));
    if nwrite > 0 {
        len = len
            .saturating_add(8)
            .saturating_add(nwrite.saturating_mul(16));
    }
    if nreply > 0 {
        len = len
            .saturating_add(4)
            .saturating_add(nreply.saturating_mul(16));
    }
    match protocol {
        Protocol::V1 => len,
        // rdma_flags, rdma_inv_handle
        Protocol::V2 => len.saturating_add(8),
    }
}

/// Fixed-capacity range list under construction.
struct Ranges {
    r: [Range; MAX_RANGES],
    n: usize,
    /// No more than this many ranges are taken (a Reply chunk cut to a
    /// prefix, see [`plan_with`]).
    limit: usize,
}

impl Ranges {
    fn push(&mut self, range: Range) -> bool {
        if self.n >= self.limit {
            return false;
        }
        match self.r.get_mut(self.n) {
            Some(slot) => {
                *slot = range;
                self.n = self.n.saturating_add(1);
                true
            }
            None => false,
        }
    }
}

/// Number of ranges covering `len` bytes of pages starting `base` bytes
/// into the page array, at most `depth` pages each.
fn page_ranges(base: u32, len: u32, limits: &Limits) -> u32 {
    let ps = limits.page_size.max(1);
    let depth = limits.max_mr_pages.max(1);
    let first = base.checked_rem(ps).unwrap_or(0);
    // pages spanned = ceil((first + len) / ps)
    let span = u64::from(first).saturating_add(u64::from(len));
    let pages = span.div_ceil(u64::from(ps));
    let n = pages.div_ceil(u64::from(depth));
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Appends the ranges of the page list (at most `depth` pages each).
fn push_pages(out: &mut Ranges, base: u32, len: u32, limits: &Limits) -> bool {
    let ps = limits.page_size.max(1);
    let depth = limits.max_mr_pages.max(1);
    let mut in_page = base.checked_rem(ps).unwrap_or(0);
    let mut offset: u32 = 0;
    let mut left = len;
    let mr_bytes = u64::from(ps).saturating_mul(u64::from(depth));
    while left > 0 {
        let room = mr_bytes.saturating_sub(u64::from(in_page));
        let take = u32::try_from(room.min(u64::from(left))).unwrap_or(left);
        if take == 0
            || !out.push(Range {
                part: Part::Pages,
                offset,
                len: take,
            })
        {
            return false;
        }
        offset = offset.saturating_add(take);
        left = left.saturating_sub(take);
        in_page = 0;
    }
    true
}

/// Segments of a chunk over a whole buffer (head, pages, tail; empty
/// parts skipped).
fn whole_count(g: &Geometry, limits: &Limits) -> u32 {
    let mut n = u32::from(g.head > 0).saturating_add(u32::from(g.tail > 0));
    if g.page_len > 0 {
        n = n.saturating_add(page_ranges(g.page_base, g.page_len, limits));
    }
    n
}

fn push_whole(out: &mut Ranges, g: &Geometry, limits: &Limits) -> bool {
    let head = g.head == 0
        || out.push(Range {
            part: Part::Head,
            offset: 0,
            len: g.head,
        });
    head && push_pages(out, g.page_base, g.page_len, limits)
        && (g.tail == 0
            || out.push(Range {
                part: Part::Tail,
                offset: 0,
                len: g.tail,
            }))
}

fn u8_of(n: u32) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// Chooses how an RPC's Call and Reply travel and what to register.
/// Called in `->send_request` (after the credit check, before any MR is
/// registered) with the connection's current [`Thresholds`].
pub fn plan(rpc: &Rpc, th: &Thresholds, limits: &Limits) -> Result<ChunkPlan, PlanError> {
    plan_with(rpc, th, limits, &Hints::NONE)
}

/// [`plan`] with the [`Hints`] of an error recovery
/// ([`super::recovery`]): `position_zero` makes the Call a Long Call
/// (even one that fits inline); `reply_chunk` makes the Reply a Long
/// Reply (no Write chunk, a Reply chunk even for a Reply that fits
/// inline); `max_segs` lowers [`Limits::max_segs`], and a Reply chunk over
/// more segments is cut to its first `max_segs` (a prefix of the receive
/// buffer) if that covers `reply_min` bytes, else the plan fails with
/// [`PlanError::TooManySegments`]. With no chunks (`max_segs` 0) the
/// hints are moot: the inline-only decision is made.
pub fn plan_with(
    rpc: &Rpc,
    th: &Thresholds,
    limits: &Limits,
    hints: &Hints,
) -> Result<ChunkPlan, PlanError> {
    let call_len = rpc.call.len().ok_or(PlanError::BadGeometry)?;
    rpc.reply.len().ok_or(PlanError::BadGeometry)?;
    let max_segs = limits
        .max_segs
        .min(MAX_HDR_SEGS)
        .min(hints.max_segs.unwrap_or(u32::MAX));
    let p = th.protocol;
    let inline_call = SendLayout {
        head: rpc.call.head,
        pages: rpc.call.page_len,
        tail_offset: 0,
        tail: rpc.call.tail,
    };
    let mut plan = ChunkPlan {
        call: CallForm::Inline,
        reply: ReplyForm::Inline,
        protocol: p,
        ranges: [Range::default(); MAX_RANGES],
        nread: 0,
        nwrite: 0,
        nreply: 0,
        send: inline_call,
        hdr_len: header_len(p, 0, 0, 0),
        reply_head: rpc.reply.head,
    };
    if max_segs == 0 {
        // Inline-only data path: the same decision as Thresholds::fit.
        th.fit(call_len, 0).map_err(PlanError::TooBig)?;
        return Ok(plan);
    }

    // Reply form (rpcrdma_marshal_req's wtype).
    let max_reply = th.max_inline_reply();
    let nonpayload = rpc.reply.head.saturating_add(rpc.reply.tail);
    let (reply, nwrite, nreply) = if hints.reply_chunk {
        (ReplyForm::Long, 0, whole_count(&rpc.reply, limits))
    } else if rpc.reply_buflen <= max_reply {
        (ReplyForm::Inline, 0, 0)
    } else if rpc.ddp_allowed && rpc.reply_ddp && rpc.reply.page_len > 0 && nonpayload < max_reply {
        let pad = u32::from(limits.write_pad && rpc.reply.page_len & 3 != 0);
        let n = page_ranges(rpc.reply.page_base, rpc.reply.page_len, limits).saturating_add(pad);
        (ReplyForm::Write, n, 0)
    } else if !rpc.reply_ddp && rpc.reply_buflen <= limits.cont_reply {
        // Version 2: the responder continues a Reply that does not fit
        // one Send (-00 §6.3.3.1); no Reply chunk, nothing registered.
        // Not for READ data (XDRBUF_READ), which keeps its Write chunk,
        // or without DDP its Reply chunk: bulk data is far faster
        // through RDMA Writes than in pieces.
        (ReplyForm::Inline, 0, 0)
    } else {
        (ReplyForm::Long, 0, whole_count(&rpc.reply, limits))
    };
    // A Reply chunk over more segments than the responder takes: its
    // first max_segs segments (a prefix of the receive buffer).
    let cut = hints.max_segs.is_some() && reply == ReplyForm::Long && nreply > max_segs;
    let nreply = if cut { max_segs } else { nreply };
    let reply_segs = nwrite.max(nreply);
    if reply_segs > max_segs {
        return Err(PlanError::TooManySegments {
            direction: Direction::Reply,
            needed: reply_segs,
            limit: max_segs,
        });
    }

    // Call form (rtype).
    let send = th.send;
    let fits =
        |nread: u32, bytes: u32| header_len(p, nread, nwrite, nreply).saturating_add(bytes) <= send;
    let npages = if rpc.call.page_len > 0 {
        page_ranges(rpc.call.page_base, rpc.call.page_len, limits)
    } else {
        0
    };
    let tail_inline = if rpc.call.tail > 3 {
        let skip = rpc.call.tail & 3;
        (skip, rpc.call.tail.saturating_sub(skip))
    } else {
        (0, 0)
    };
    let read_inline = SendLayout {
        head: rpc.call.head,
        pages: 0,
        tail_offset: tail_inline.0,
        tail: tail_inline.1,
    };
    let pz = hints.position_zero;
    let (call, nread, layout) = if !pz && call_len <= th.max_inline_call() && fits(0, call_len) {
        (CallForm::Inline, 0, inline_call)
    } else if !pz
        && rpc.ddp_allowed
        && rpc.call_ddp
        && rpc.call.page_len > 0
        && rpc.call.head & 3 == 0
        && npages <= max_segs
        && fits(npages, read_inline.len())
    {
        (
            CallForm::Read {
                position: rpc.call.head,
            },
            npages,
            read_inline,
        )
    } else {
        let n = whole_count(&rpc.call, limits);
        if n > max_segs {
            return Err(PlanError::TooManySegments {
                direction: Direction::Call,
                needed: n,
                limit: max_segs,
            });
        }
        let hdr = header_len(p, n, nwrite, nreply);
        if hdr > send {
            return Err(PlanError::HeaderTooBig {
                len: hdr,
                limit: send,
            });
        }
        (CallForm::Long, n, SendLayout::default())
    };

    let mut out = Ranges {
        r: [Range::default(); MAX_RANGES],
        n: 0,
        limit: MAX_RANGES,
    };
    let ok = match call {
        CallForm::Inline => true,
        CallForm::Read { .. } => {
            push_pages(&mut out, rpc.call.page_base, rpc.call.page_len, limits)
        }
        CallForm::Long => push_whole(&mut out, &rpc.call, limits),
    } && match reply {
        ReplyForm::Inline => true,
        ReplyForm::Write => {
            push_pages(&mut out, rpc.reply.page_base, rpc.reply.page_len, limits)
                && (!limits.write_pad
                    || rpc.reply.page_len & 3 == 0
                    || out.push(Range {
                        part: Part::WritePad,
                        offset: 0,
                        len: WRITE_PAD_LEN,
                    }))
        }
        ReplyForm::Long if cut => {
            // Stops at the limit: that is the cut.
            out.limit = usize::try_from(nread.saturating_add(nreply)).unwrap_or(0);
            push_whole(&mut out, &rpc.reply, limits);
            out.n == out.limit
        }
        ReplyForm::Long => push_whole(&mut out, &rpc.reply, limits),
    };
    if !ok {
        return Err(PlanError::BadGeometry);
    }
    if reply == ReplyForm::Long {
        let start = usize::try_from(nread).unwrap_or(usize::MAX);
        let covered = out
            .r
            .get(start..out.n)
            .unwrap_or(&[])
            .iter()
            .fold(0u32, |a, r| a.saturating_add(r.len));
        if covered < hints.reply_min {
            return Err(PlanError::TooManySegments {
                direction: Direction::Reply,
                needed: whole_count(&rpc.reply, limits),
                limit: max_segs,
            });
        }
    }
    plan.call = call;
    plan.reply = reply;
    plan.ranges = out.r;
    plan.nread = u8_of(nread);
    plan.nwrite = u8_of(nwrite);
    plan.nreply = u8_of(nreply);
    plan.send = layout;
    plan.hdr_len = header_len(p, nread, nwrite, nreply);
    Ok(plan)
}

impl ChunkPlan {
    /// The version the plan's header is built for.
    pub const fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The Call's form.
    pub const fn call(&self) -> CallForm {
        self.call
    }

    /// The Reply's form.
    pub const fn reply(&self) -> ReplyForm {
        self.reply
    }

    /// The header type: `NoMsg` for a Long Call.
    pub const fn kind(&self) -> MsgKind {
        match self.call {
            CallForm::Long => MsgKind::NoMsg,
            CallForm::Inline | CallForm::Read { .. } => MsgKind::Msg,
        }
    }

    /// True if nothing is registered.
    pub const fn is_inline(&self) -> bool {
        self.nread == 0 && self.nwrite == 0 && self.nreply == 0
    }

    /// The exact transport header length.
    pub const fn header_len(&self) -> u32 {
        self.hdr_len
    }

    /// What of `rq_snd_buf` follows the header in the Send.
    pub const fn send_layout(&self) -> SendLayout {
        self.send
    }

    fn count(&self) -> usize {
        usize::from(self.nread)
            .saturating_add(usize::from(self.nwrite))
            .saturating_add(usize::from(self.nreply))
    }

    /// Every range to register, in segment order: the Read chunk's
    /// (in `rq_snd_buf`), then the Write or Reply chunk's (in
    /// `rq_rcv_buf`). Register each as one MR (remote read access for
    /// the Read chunk, remote write for the others), except
    /// [`Part::WritePad`], which is the persistent pad MR's segment.
    pub fn ranges(&self) -> &[Range] {
        self.ranges.get(..self.count()).unwrap_or(&[])
    }

    fn split(&self) -> (usize, usize, usize) {
        let r = usize::from(self.nread);
        let w = r.saturating_add(usize::from(self.nwrite));
        (r, w, w.saturating_add(usize::from(self.nreply)))
    }

    /// The Read chunk's ranges (in `rq_snd_buf`).
    pub fn read_ranges(&self) -> &[Range] {
        let (r, _, _) = self.split();
        self.ranges.get(..r).unwrap_or(&[])
    }

    /// The Write chunk's ranges (in `rq_rcv_buf`), pad included.
    pub fn write_ranges(&self) -> &[Range] {
        let (r, w, _) = self.split();
        self.ranges.get(r..w).unwrap_or(&[])
    }

    /// The Reply chunk's ranges (in `rq_rcv_buf`).
    pub fn reply_ranges(&self) -> &[Range] {
        let (_, w, e) = self.split();
        self.ranges.get(w..e).unwrap_or(&[])
    }
}
