// SPDX-License-Identifier: GPL-2.0

//! Counters the tests read: written as `name value` lines to the stats
//! file (see `--stats`), periodically, on SIGUSR1 and on exit.

#![forbid(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

/// What a requester must do after a transport error (-00 §6.4.3), as
/// remembered with the refused XID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expect {
    /// Fail the RPC: it must never be sent again (`RDMA2_ERR_SYSTEM`,
    /// `BAD_XDR`, `INVAL_*`, unknown codes, version 1 errors, and
    /// `RDMA2_ERR_READ_CHUNKS` for a Position-Zero Read).
    Fail,
    /// Send it again as a Position-Zero Read (`RDMA2_ERR_READ_CHUNKS`).
    PositionZero,
    /// Again without Write chunks, with a Reply chunk
    /// (`RDMA2_ERR_WRITE_CHUNKS`).
    NoWriteChunks,
    /// Again with at most this many segments per chunk
    /// (`RDMA2_ERR_SEGMENTS`).
    Segments(u32),
    /// Again without Write chunks, with a Reply chunk of at least this
    /// many bytes (`RDMA2_ERR_WRITE_RESOURCE`).
    WriteResource(u32),
    /// Again with a Reply chunk of at least this many bytes
    /// (`RDMA2_ERR_REPLY_RESOURCE`).
    ReplyResource(u32),
}

/// XIDs answered with a transport error and what the client must do
/// about each, so that a Call the client sends again is seen and judged
/// (the most recent [`RefusedXids::CAP`]).
#[derive(Clone, Debug, Default)]
pub struct RefusedXids {
    map: HashMap<u32, Expect>,
    order: VecDeque<u32>,
}

impl RefusedXids {
    /// How many XIDs are remembered.
    pub const CAP: usize = 1 << 16;

    /// Remembers `xid` and what must follow its refusal.
    pub fn insert(&mut self, xid: u32, expect: Expect) {
        if self.map.insert(xid, expect).is_none() {
            self.order.push_back(xid);
            if self.order.len() > Self::CAP {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }

    /// True if `xid` was answered with a transport error.
    pub fn contains(&self, xid: u32) -> bool {
        self.map.contains_key(&xid)
    }

    /// What must follow the refusal of `xid`, if it was refused.
    pub fn get(&self, xid: u32) -> Option<Expect> {
        self.map.get(&xid).copied()
    }
}

/// How a reply's data travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// In the Send, after the transport header.
    Inline,
    /// RDMA Written into the Reply chunk (RDMA_NOMSG).
    ReplyChunk,
    /// The DDP-eligible item RDMA Written into a Write chunk.
    WriteChunk,
    /// v2 Message Continuation.
    Continued,
}

macro_rules! counters {
    ($($name:ident: $doc:literal,)*) => {
        /// Responder-wide counters.
        #[derive(Clone, Debug, Default)]
        pub struct Stats {
            $(#[doc = $doc] pub $name: u64,)*
            /// XIDs answered with a transport error (not a counter).
            pub refused: RefusedXids,
        }

        impl Stats {
            /// `name value` lines.
            pub fn render(&self) -> String {
                let mut s = String::new();
                $(let _ = writeln!(s, "{} {}", stringify!($name), self.$name);)*
                s
            }
        }
    };
}

counters! {
    connections: "connections accepted",
    connections_rejected: "connection requests rejected",
    connections_closed: "connections closed",
    conn_v1: "connections settled on version 1",
    conn_v2: "connections settled on version 2",
    msgs_received: "messages received",
    calls: "RPC Calls received",
    calls_forwarded: "Calls forwarded to nfsd",
    replies_sent: "RPC replies sent",
    reverse_calls_dropped: "Calls from nfsd (callbacks) not relayed",
    reverse_calls_refused: "callbacks not relayed because the client's Reverse Request Support property is NONE (-00 §5.2.5)",
    reverse_calls_sent: "callbacks relayed to the client as reverse-direction Calls",
    reverse_replies: "the client's replies to them, handed to nfsd",
    cb_null_sent: "CB_NULL probes of our own sent to the client (--probe-callbacks)",
    cb_null_replies: "successful replies to them",
    cb_null_failed: "replies to them that are not success",
    bad_reverse_call_sent: "reverse-direction Calls the client cannot serve sent (--bad-reverse-call)",
    bad_reverse_call_answered: "the client's answers to them: RDMA2_ERROR RDMA2_ERR_REPLY_RESOURCE with F_RESPONSE set",
    bad_reverse_call_wrong: "the client's RDMA2_ERROR answers to them with another code or without F_RESPONSE",
    unknown_htype_sent: "messages of an unknown header type without F_RESPONSE sent with the XID of a Call of the client's (--unknown-htype-call)",
    unknown_htype_answered: "the client's answers to them: RDMA2_ERROR RDMA2_ERR_INVAL_HTYPE with F_RESPONSE set",
    unknown_htype_wrong: "the client's RDMA2_ERROR answers to them with another code or without F_RESPONSE",
    continued_reverse_call_sent: "CB_NULL reverse-direction Calls continued over two pieces sent (--continued-reverse-call)",
    continued_reverse_call_answered: "the client's successful replies to them, with F_RESPONSE",
    continued_reverse_call_wrong: "the client's other answers to them (RDMA2_ERROR, a failed reply)",
    continued_reverse_replies: "the client's replies to reverse-direction Calls that came continued over several RDMA2_MSGs (-00 §6.5), reassembled",
    reverse_reply_pieces: "the pieces of those replies",
    reverse_replies_interrupted: "continued replies of the client's abandoned half-way (another message came first) or too large to reassemble",
    padded_callbacks: "CB_COMPOUNDs from nfsd relayed with CB_NOTIFY_LOCK operations appended (--pad-callbacks)",
    padded_replies_stripped: "the client's replies to them with every appended operation NFS4_OK, their results taken off before nfsd saw them",
    padded_replies_not_reached: "replies to them in which an operation of nfsd's failed, so the appended ones did not run",
    padded_replies_wrong: "replies to them with an appended operation's result missing or not NFS4_OK",
    msgs_sent: "messages sent (all types)",
    msg_sent: "RDMA_MSG / RDMA2_MSG sent",
    nomsg_sent: "RDMA_NOMSG / RDMA2_NOMSG sent",
    errors_sent: "RDMA_ERROR / RDMA2_ERROR sent",
    err_vers: "ERR_VERS sent",
    connprop_sent: "RDMA2_CONNPROP sent",
    connprop_received: "RDMA2_CONNPROP received",
    connprop_reassembled: "continued RDMA2_CONNPROP from the client reassembled and applied",
    grants_received: "credit grants received",
    grants_sent: "asynchronous credit grants sent (RDMA2_NOMSG, XID 0)",
    grants_ahead: "credit grants sent ahead of messages waiting for the client's v2 credits",
    credit_waits: "times a message waited for the client's v2 credits",
    credit_overruns: "v2 messages the client sent beyond the credits we granted and returned (-00 §4.3.1; one credit grant beyond is allowed)",
    client_credit_limit: "the client's latest v2 credit limit (high half)",
    client_outstanding: "our v2 messages the client holds, not returned yet (latest connection, at the latest send attempt)",
    client_unreturned: "the client's v2 messages whose credit we have not returned (idem)",
    client_unanswered: "the client's Calls admitted and not answered (idem)",
    outq_waiting: "messages waiting to be sent (idem)",
    continuations_received: "continued Call pieces received (F_MORE)",
    continuations_interrupted: "continued Calls interrupted by a message of another XID or header type (answered RDMA2_ERR_INVAL_FLAG)",
    continuations_sent: "continued reply pieces sent (F_MORE)",
    malformed: "malformed or unexpected messages received",
    invalidations: "Sends With Invalidate",
    inv_handle_foreign: "v2 Calls whose rdma_inv_handle is none of their handles (not invalidated)",
    prop_violations: "v2 Calls exceeding the segment properties we advertised (--prop-segs, --prop-seg-size)",
    replies_inline: "replies sent inline",
    replies_reply_chunk: "replies in a Reply chunk",
    replies_write_chunk: "replies with a Write chunk",
    replies_continued: "replies continued",
    bytes_inline: "RPC reply bytes sent inline",
    bytes_reply_chunk: "bytes RDMA Written into Reply chunks",
    bytes_write_chunk: "bytes RDMA Written into Write chunks",
    bytes_read_chunk: "bytes pulled with RDMA Read",
    writes_in_place: "replies whose RDMA Writes went straight from where nfsd's record was read (no copy)",
    writes_copied: "replies whose RDMA Writes went from a copy in the Call's slot (a record of several fragments, a delayed or malformed reply)",
    tcp_read_stalls: "times nfsd's socket was left unread: the read area's room was pinned by RDMA Writes in flight",
    tcp_writes: "writes to nfsd's socket (writev, sendmsg or splice)",
    tcp_write_blocked: "writes to nfsd's socket that took nothing (full: wait for POLLOUT)",
    read_chunk_calls: "Calls with Read chunks",
    calls_spliced: "Calls with Read chunks written to nfsd from where the RDMA Reads put the data (no copy in user space)",
    bytes_spliced_to_nfsd: "bytes of Read chunk data sent to nfsd by vmsplice and splice, not copied at all (pieces of 16 KiB or more)",
    position_zero_calls: "Calls in a Position-Zero Read chunk",
    replies_dropped: "replies dropped (fault injection)",
    replies_delayed: "replies delayed (fault injection)",
    disconnects_injected: "disconnects injected",
    malformed_sent: "malformed messages sent (fault injection)",
    errors_injected: "Calls answered with an injected error (--err-nth, --err-every)",
    refused_read_chunks: "Calls refused with RDMA2_ERR_READ_CHUNKS for their Read chunks (--refuse-read-chunks)",
    refused_write_chunks: "Calls refused with RDMA2_ERR_REPLY_RESOURCE for their Write chunks (--no-write-chunks)",
    refused_segments: "Calls refused with RDMA2_ERR_SEGMENTS for a chunk over the limit (--max-segs)",
    refused_resent: "Calls sent again after a transport error that must fail the RPC",
    resent_read_chunks: "Calls sent again as a Position-Zero Read after RDMA2_ERR_READ_CHUNKS",
    resent_write_chunks: "Calls sent again without Write chunks, with a Reply chunk, after RDMA2_ERR_WRITE_CHUNKS",
    resent_segments: "Calls sent again within the segment limit after RDMA2_ERR_SEGMENTS",
    resent_write_resource: "Calls sent again with a large enough Reply chunk after RDMA2_ERR_WRITE_RESOURCE",
    resent_reply_resource: "Calls sent again with a large enough Reply chunk after RDMA2_ERR_REPLY_RESOURCE",
    resent_noncompliant: "Calls sent again after a recoverable error without doing what -00 asks",
}

impl Stats {
    /// Counts a reply by path and size.
    pub fn count_reply(&mut self, path: Path, inline: usize, written: usize) {
        self.replies_sent += 1;
        match path {
            Path::Inline => {
                self.replies_inline += 1;
                self.bytes_inline += inline as u64;
            }
            Path::ReplyChunk => {
                self.replies_reply_chunk += 1;
                self.bytes_reply_chunk += written as u64;
            }
            Path::WriteChunk => {
                self.replies_write_chunk += 1;
                self.bytes_write_chunk += written as u64;
                self.bytes_inline += inline as u64;
            }
            Path::Continued => {
                self.replies_continued += 1;
                self.bytes_inline += inline as u64;
            }
        }
    }
}
