// SPDX-License-Identifier: GPL-2.0

//! Counters the tests read: written as `name value` lines to the stats
//! file (see `--stats`), periodically, on SIGUSR1 and on exit.

#![forbid(unsafe_code)]

use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;

/// XIDs answered with an injected transport error, so that a Call the
/// client sends again after such an answer is seen (the most recent
/// [`RefusedXids::CAP`]).
#[derive(Clone, Debug, Default)]
pub struct RefusedXids {
    set: HashSet<u32>,
    order: VecDeque<u32>,
}

impl RefusedXids {
    /// How many XIDs are remembered.
    pub const CAP: usize = 1 << 16;

    /// Remembers `xid`.
    pub fn insert(&mut self, xid: u32) {
        if self.set.insert(xid) {
            self.order.push_back(xid);
            if self.order.len() > Self::CAP {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    /// True if `xid` was answered with an injected error.
    pub fn contains(&self, xid: u32) -> bool {
        self.set.contains(&xid)
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
            /// XIDs answered with an injected error (not a counter).
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
    reverse_calls_sent: "callbacks relayed to the client as reverse-direction Calls",
    reverse_replies: "the client's replies to them, handed to nfsd",
    msgs_sent: "messages sent (all types)",
    msg_sent: "RDMA_MSG / RDMA2_MSG sent",
    nomsg_sent: "RDMA_NOMSG / RDMA2_NOMSG sent",
    errors_sent: "RDMA_ERROR / RDMA2_ERROR sent",
    err_vers: "ERR_VERS sent",
    connprop_sent: "RDMA2_CONNPROP sent",
    connprop_received: "RDMA2_CONNPROP received",
    grants_received: "credit grants received",
    continuations_received: "continued Call pieces received (F_MORE)",
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
    read_chunk_calls: "Calls with Read chunks",
    position_zero_calls: "Calls in a Position-Zero Read chunk",
    replies_dropped: "replies dropped (fault injection)",
    replies_delayed: "replies delayed (fault injection)",
    disconnects_injected: "disconnects injected",
    malformed_sent: "malformed messages sent (fault injection)",
    errors_injected: "Calls answered with an injected error (--err-nth, --err-every)",
    refused_resent: "Calls whose XID was answered with an injected error before",
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
