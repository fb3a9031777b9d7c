// SPDX-License-Identifier: GPL-2.0

//! Planning the reply to a Call ([`ConnProto::plan_reply`]): inline,
//! with a Write chunk, through the Reply chunk, or continued (v2), and
//! which rkey the last Send invalidates.

use std::ops::Range;

use rpcrdma_xdr::chunk::{ChunkLists, Segment};
use rpcrdma_xdr::header::{self, ErrorBody, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::v2;

use super::call::Call;
use super::{log, ConnProto};
use crate::stats::{Path, Stats};

/// An RDMA Write the I/O layer performs: `src` (a range of the RPC reply)
/// to the remote segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaWrite {
    /// Byte range of the reply to write.
    pub src: Range<usize>,
    /// Remote rkey.
    pub rkey: u32,
    /// Remote address.
    pub addr: u64,
}

/// A planned reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplyPlan {
    /// RDMA Writes, posted before the Sends.
    pub writes: Vec<RdmaWrite>,
    /// Complete Send payloads (transport header + inline part).
    pub sends: Vec<Vec<u8>>,
    /// rkey to invalidate with the last Send.
    pub invalidate: Option<u32>,
    /// How the data travelled (for the counters).
    pub path: Option<Path>,
    /// Bytes moved by RDMA Write.
    pub written: usize,
    /// Fault injection: close the connection once these Sends completed.
    pub close_after: bool,
}

impl ConnProto {
    /// Plans the reply to `call` carrying RPC reply `rpc`; `ddp` is the
    /// DDP-eligible data item of `rpc` (if the Call offered a Write chunk).
    pub fn plan_reply(
        &mut self,
        call: &Call,
        rpc: &[u8],
        ddp: Option<Range<usize>>,
        stats: &mut Stats,
    ) -> ReplyPlan {
        let v2 = self.version == Some(Protocol::V2);
        let proto = if v2 { Protocol::V2 } else { Protocol::V1 };
        let mut plan = ReplyPlan::default();
        if call.refuse_reply {
            // RDMA2_ERR_REPLY_RESOURCE with the Reply chunk length this
            // reply needs (nfsd has answered: the length is known).
            let body = ErrorBody::ReplyResource {
                length_needed: rpc.len() as u32,
            };
            plan.sends.push(self.refuse(call, body, true, stats));
            return plan;
        }
        // Write list echo: every offered chunk, lengths = bytes written.
        let mut write_echo: Vec<Vec<Segment>> = call
            .writes
            .iter()
            .map(|c| c.iter().map(|s| Segment { length: 0, ..*s }).collect())
            .collect();
        let whole: Range<usize> = 0..rpc.len();
        let mut inline_ranges: Vec<Range<usize>> = Vec::from([whole]);
        if let (Some(d), Some(first)) = (ddp.clone(), call.writes.first()) {
            let cap: u64 = first.iter().map(|s| u64::from(s.length)).sum();
            if d.len() as u64 > cap {
                if v2 {
                    let mut p = ReplyPlan::default();
                    let e = ErrorBody::WriteResource {
                        chunk_index: 1,
                        length_needed: d.len() as u32,
                    };
                    p.sends.push(self.refuse(call, e, true, stats));
                    return p;
                }
            } else if !d.is_empty() {
                let mut at = d.start;
                for (i, s) in first.iter().enumerate() {
                    if at >= d.end {
                        break;
                    }
                    let n = (d.end - at).min(s.length as usize);
                    plan.writes.push(RdmaWrite {
                        src: at..at + n,
                        rkey: s.handle,
                        addr: s.offset,
                    });
                    write_echo[0][i].length = n as u32;
                    at += n;
                }
                plan.written += d.len();
                plan.path = Some(Path::WriteChunk);
                // The reduced reply: without the data and its XDR pad.
                let pad_end = (d.start + crate::nfs::pad4(d.len())).min(rpc.len());
                inline_ranges = vec![0..d.start, pad_end..rpc.len()];
            }
        }
        let inline_len: usize = inline_ranges.iter().map(|r| r.len()).sum();
        let writes_refs: Vec<&[Segment]> = write_echo.iter().map(|v| v.as_slice()).collect();
        let limit = self.client_recv();
        let hdr_len = MsgSpec {
            chunks: ChunkLists {
                reads: &[],
                writes: &writes_refs,
                reply: None,
            },
            ..Default::default()
        }
        .encoded_len(proto)
        .unwrap_or(usize::MAX);
        let requested = if v2 {
            // -00 §6.3.3.2: the handle must be one of the Call's
            // rdma_handle fields; never invalidate anything else.
            match call.inv_handle {
                0 => None,
                h if call_handles(call).any(|x| x == h) => Some(h),
                h => {
                    stats.inv_handle_foreign += 1;
                    log::warn(format_args!(
                        "xid {:#x}: rdma_inv_handle {h:#x} is none of the Call's handles: not invalidated",
                        call.xid
                    ));
                    None
                }
            }
        } else {
            single_handle(call)
        };
        // RFC 8797 §4.1: "When both connection peers have set this bit
        // flag in their CM Private Data, the responder MAY use RDMA Send
        // with Invalidate operations". With either R bit clear, a plain
        // Send (version 2 too: the R bit says what the RDMA stacks
        // support, rdma_inv_handle only which rkey may go).
        let invalidate =
            requested.filter(|_| self.opts.remote_invalidate && self.client.remote_invalidate);
        plan.invalidate = invalidate;
        let cont_forced = v2 && self.opts.continue_over.is_some_and(|n| inline_len > n);
        let fits = hdr_len.saturating_add(inline_len) <= limit;
        if fits && !cont_forced {
            let credit = self.credit_word(true);
            let spec = MsgSpec {
                xid: call.xid,
                credit,
                kind: MsgKind::Msg,
                flags: if v2 { Flags::RESPONSE } else { Flags::NONE },
                inv_handle: 0,
                chunks: ChunkLists {
                    reads: &[],
                    writes: &writes_refs,
                    reply: None,
                },
            };
            let mut buf = vec![0u8; hdr_len + inline_len];
            let n = header::encode_msg(&mut buf, proto, &spec).unwrap_or(0);
            buf.truncate(n);
            for r in &inline_ranges {
                buf.extend_from_slice(&rpc[r.clone()]);
            }
            plan.sends.push(buf);
            plan.path.get_or_insert(Path::Inline);
            return plan;
        }
        if let Some(reply) = call.reply.as_ref().filter(|_| !cont_forced) {
            let cap: u64 = reply.iter().map(|s| u64::from(s.length)).sum();
            if inline_len as u64 <= cap && plan.writes.is_empty() {
                let mut echo: Vec<Segment> =
                    reply.iter().map(|s| Segment { length: 0, ..*s }).collect();
                let mut at = 0usize;
                for (i, s) in reply.iter().enumerate() {
                    if at >= inline_len {
                        break;
                    }
                    let n = (inline_len - at).min(s.length as usize);
                    plan.writes.push(RdmaWrite {
                        src: at..at + n,
                        rkey: s.handle,
                        addr: s.offset,
                    });
                    echo[i].length = n as u32;
                    at += n;
                }
                plan.written += inline_len;
                let credit = self.credit_word(true);
                let spec = MsgSpec {
                    xid: call.xid,
                    credit,
                    kind: MsgKind::NoMsg,
                    flags: if v2 { Flags::RESPONSE } else { Flags::NONE },
                    inv_handle: 0,
                    chunks: ChunkLists {
                        reads: &[],
                        writes: &writes_refs,
                        reply: Some(&echo),
                    },
                };
                let mut buf = vec![0u8; 1024];
                let n = header::encode_msg(&mut buf, proto, &spec).unwrap_or(0);
                buf.truncate(n);
                plan.sends.push(buf);
                plan.path = Some(Path::ReplyChunk);
                return plan;
            }
        }
        if v2 {
            // -00 §6.3.3.1: continue the reply over several messages.
            let mut data = Vec::with_capacity(inline_len);
            for r in &inline_ranges {
                data.extend_from_slice(&rpc[r.clone()]);
            }
            let piece_room = limit.saturating_sub(v2::MIN_MSG_HDR_LEN).max(4) & !3;
            let piece = match self.opts.continue_over {
                Some(n) => piece_room.min(n.max(4) & !3).max(4),
                None => piece_room,
            };
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut rest = &data[..];
            if self.opts.tiny_pieces {
                // -00 §4.5.2: "on any convenient boundary".
                for n in 1..=3 {
                    if rest.len() > n {
                        let (a, b) = rest.split_at(n);
                        chunks.push(a);
                        rest = b;
                    }
                }
            }
            chunks.extend(rest.chunks(piece));
            if chunks.is_empty() {
                chunks.push(&[]);
            }
            // The last piece carries the chunk lists: it must fit too.
            let last_room = limit.saturating_sub(hdr_len);
            if chunks.last().is_some_and(|c| c.len() > last_room) {
                let c = chunks.pop().unwrap_or(&[]);
                let split = last_room.min(c.len()) & !3;
                let (a, b) = c.split_at(c.len() - split.min(c.len()));
                chunks.push(a);
                chunks.push(b);
            }
            let count = chunks.len();
            for (i, c) in chunks.iter().enumerate() {
                let last = i + 1 == count;
                let credit = self.credit_word(last);
                let empty: [&[Segment]; 0] = [];
                let spec = MsgSpec {
                    xid: call.xid,
                    credit,
                    kind: MsgKind::Msg,
                    flags: if last {
                        Flags::RESPONSE
                    } else {
                        Flags::RESPONSE.with(Flags::MORE)
                    },
                    inv_handle: 0,
                    chunks: ChunkLists {
                        reads: &[],
                        writes: if last { &writes_refs } else { &empty },
                        reply: None,
                    },
                };
                let mut buf = vec![0u8; hdr_len + c.len()];
                let n = header::encode_msg(&mut buf, proto, &spec).unwrap_or(0);
                buf.truncate(n);
                buf.extend_from_slice(c);
                plan.sends.push(buf);
            }
            stats.continuations_sent += count.saturating_sub(1) as u64;
            plan.path = Some(Path::Continued);
            return plan;
        }
        // v1 without room: ERR_CHUNK, as svcrdma does.
        let mut p = ReplyPlan::default();
        p.sends
            .push(self.call_error(call.xid, v2::ERR_BAD_XDR, stats));
        p
    }
}

/// Every rdma_handle of the Call's chunks.
fn call_handles(call: &Call) -> impl Iterator<Item = u32> + '_ {
    call.reads
        .iter()
        .map(|r| r.target.handle)
        .chain(call.writes.iter().flatten().map(|s| s.handle))
        .chain(call.reply.iter().flatten().map(|s| s.handle))
}

/// v1 remote invalidation: only when every chunk segment of the Call names
/// one rkey (what svcrdma does).
fn single_handle(call: &Call) -> Option<u32> {
    let mut handles = call_handles(call);
    let first = handles.next()?;
    handles.all(|h| h == first).then_some(first)
}
