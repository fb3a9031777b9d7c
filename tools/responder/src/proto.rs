// SPDX-License-Identifier: GPL-2.0

//! The responder's protocol logic, free of I/O: version settlement,
//! decoding Calls, credit words, error selection, CONNPROP, reassembly of
//! continued Calls, splicing Read chunks, and planning each reply (inline,
//! Reply chunk, Write chunk, continued). The event loop (`server`) feeds it
//! received bytes and nfsd's replies and carries out what it returns.

#![forbid(unsafe_code)]

use std::ops::Range;

use rpcrdma_xdr::chunk::{ChunkLists, ReadSegment, Segment};
use rpcrdma_xdr::header::{
    self, Body, Credits, ErrorBody, Flags, MsgKind, MsgSpec, Protocol, COMMON_LEN,
};
use rpcrdma_xdr::props::{Property, TransportProperties};
use rpcrdma_xdr::pvtdata::PrivateData;
use rpcrdma_xdr::{v1, v2};

use crate::stats::{Expect, Path, Stats};

/// How the responder returns the client's v2 credits (`--grant`).
///
/// Every message the responder receives takes one of its Receives; the
/// low half of its credit word returns them (Documentation/wire-formats.rst,
/// the reading of -00 §4.3.1). Credits that no answer returns (pieces of a
/// continued Call, the client's credit grants and CONNPROP) are "spare".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GrantMode {
    /// Every message returns everything owed (answers: at least the Call);
    /// an asynchronous grant only while a continued Call is being received
    /// and half the credit limit is spare, so the client can go on.
    #[default]
    Prompt,
    /// Every message returns exactly one credit (its low half is always 1);
    /// each spare credit is returned at once by an asynchronous grant
    /// (`RDMA2_NOMSG`, XID 0) of its own.
    Exact,
    /// Answers return exactly one credit (the Call's); spare credits are
    /// held back and returned together by one asynchronous grant once
    /// [`LAZY_GRANT`] (or the credit limit, if smaller) have accumulated.
    Lazy,
}

/// [`GrantMode::Lazy`]: spare credits returned per grant.
pub const LAZY_GRANT: u32 = 4;

impl GrantMode {
    /// Parses `prompt`, `exact` or `lazy`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "prompt" => Some(Self::Prompt),
            "exact" => Some(Self::Exact),
            "lazy" => Some(Self::Lazy),
            _ => None,
        }
    }
}

/// Behaviour switches that shape the protocol (normal and fault injection).
#[derive(Clone, Debug)]
pub struct Options {
    /// Speak only version 1, answer anything else with a svcrdma-style
    /// ERR_VERS.
    pub v1_only: bool,
    /// Do not send RDMA2_CONNPROP.
    pub no_connprop: bool,
    /// Send our RDMA2_CONNPROP continued over this many messages (1: whole).
    pub connprop_pieces: usize,
    /// The credit limit advertised (v1 grant; v2 high half).
    pub credits: u16,
    /// Size of our Receive buffers (advertised in private data and RBSIZ).
    pub recv_size: u32,
    /// Largest RDMA data item (Read chunk, Write or Reply chunk) handled.
    pub max_data: usize,
    /// v2: continue every reply longer than this many bytes (F_MORE).
    pub continue_over: Option<usize>,
    /// Answer the Nth Call (1-based, per connection) with this error code
    /// (each pair; Calls counted as [`Options::err_calls`] says).
    pub err_nth: Vec<(u64, u32)>,
    /// After the first `.0` Calls of each connection, answer every `.1`th
    /// Call with error code `.2`.
    pub err_every: Option<(u64, u64, u32)>,
    /// Which Calls `err_nth` and `err_every` count.
    pub err_calls: CallKind,
    /// Relay nfsd's callbacks to the client as reverse-direction Calls.
    pub relay_callbacks: bool,
    /// v2: refuse every Call with Read chunks at a non-zero position with
    /// `RDMA2_ERR_READ_CHUNKS` (`rdma_max_chunks` 0: only Position-Zero
    /// Reads are taken).
    pub refuse_read_chunks: bool,
    /// v2: take no Write chunks: the reply to a Call that offers one is
    /// `RDMA2_ERR_REPLY_RESOURCE` with the Reply chunk length needed (-00:
    /// "If the responder implementation cannot handle any Write chunks for
    /// a request, it MUST return ... RDMA2_ERR_REPLY_RESOURCE").
    pub no_write_chunks: bool,
    /// v2: refuse a Call with a chunk of more segments than this with
    /// `RDMA2_ERR_SEGMENTS`.
    pub max_segs: Option<u32>,
    /// How the client's v2 credits are returned.
    pub grant: GrantMode,
    /// Send the client a CB_NULL of our own when nfsd gives a session a
    /// backchannel on the connection (needs `relay_callbacks`).
    pub probe_callbacks: bool,
    /// v2: Maximum RDMA Segment Count to advertise in our CONNPROP and
    /// enforce (default 16, not enforced).
    pub prop_segs: Option<u32>,
    /// v2: Maximum RDMA Segment Size to advertise and enforce (default
    /// 1 MiB, not enforced).
    pub prop_seg_size: Option<u32>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            v1_only: false,
            no_connprop: false,
            connprop_pieces: 1,
            credits: 32,
            recv_size: 4096,
            max_data: (1 << 20) + 16384,
            continue_over: None,
            err_nth: Vec::new(),
            err_every: None,
            err_calls: CallKind::Any,
            relay_callbacks: false,
            refuse_read_chunks: false,
            no_write_chunks: false,
            max_segs: None,
            grant: GrantMode::Prompt,
            probe_callbacks: false,
            prop_segs: None,
            prop_seg_size: None,
        }
    }
}

/// A class of Calls, for fault injection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallKind {
    /// Every Call.
    #[default]
    Any,
    /// Calls with Read chunks (any position).
    Read,
    /// Calls with Write chunks.
    Write,
    /// Calls with a Reply chunk.
    Reply,
    /// Calls without chunks.
    Inline,
}

impl CallKind {
    /// Parses `any`, `read`, `write`, `reply` or `inline`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "any" => Self::Any,
            "read" => Self::Read,
            "write" => Self::Write,
            "reply" => Self::Reply,
            "inline" => Self::Inline,
            _ => return None,
        })
    }

    /// True if `call` is of this class.
    pub fn matches(self, call: &Call) -> bool {
        match self {
            Self::Any => true,
            Self::Read => !call.reads.is_empty(),
            Self::Write => !call.writes.is_empty(),
            Self::Reply => call.reply.is_some(),
            Self::Inline => call.reads.is_empty() && call.writes.is_empty() && call.reply.is_none(),
        }
    }
}

/// A Call that has been decoded and is ready to be completed (Read chunks
/// pulled) and forwarded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// RPC XID (the transport header's).
    pub xid: u32,
    /// Version it arrived in.
    pub v2: bool,
    /// The Call's `rdma_inv_handle` (v2), 0 if none.
    pub inv_handle: u32,
    /// Read segments (flat list, in order).
    pub reads: Vec<ReadSegment>,
    /// Write chunks offered.
    pub writes: Vec<Vec<Segment>>,
    /// Reply chunk offered.
    pub reply: Option<Vec<Segment>>,
    /// The (possibly reduced) RPC message that arrived inline.
    pub inline: Vec<u8>,
    /// Decoded RPC words of the complete Call, once known.
    pub rpc: Option<crate::nfs::CallHdr>,
    /// Answer it, once nfsd has, with `RDMA2_ERR_REPLY_RESOURCE` for the
    /// length of nfsd's reply (`--err-nth N:9`, `--no-write-chunks`).
    pub refuse_reply: bool,
}

impl Call {
    /// A Long Call: Read chunks, all at position zero.
    pub fn is_position_zero(&self) -> bool {
        !self.reads.is_empty() && self.reads.iter().all(|r| r.position == 0)
    }

    /// Segments of the Call's largest chunk (a Read chunk is the Read
    /// segments that share a position).
    pub fn max_chunk_segs(&self) -> u32 {
        let mut most = 0usize;
        let mut i = 0usize;
        while i < self.reads.len() {
            let pos = self.reads[i].position;
            let n = self.reads[i..]
                .iter()
                .take_while(|r| r.position == pos)
                .count();
            most = most.max(n);
            i += n;
        }
        for w in &self.writes {
            most = most.max(w.len());
        }
        if let Some(r) = &self.reply {
            most = most.max(r.len());
        }
        most as u32
    }

    /// Bytes of the Reply chunk offered (0: none).
    pub fn reply_chunk_len(&self) -> u64 {
        self.reply
            .iter()
            .flatten()
            .map(|s| u64::from(s.length))
            .sum()
    }

    /// Bytes of the first Write chunk offered (0: none).
    pub fn write_chunk_len(&self) -> u64 {
        self.writes
            .first()
            .map_or(0, |w| w.iter().map(|s| u64::from(s.length)).sum())
    }

    /// True if this Call, sent again after a refusal that asked for
    /// `e`, does what -00 §6.4.3 asks of the requester.
    pub fn complies(&self, e: Expect) -> bool {
        let reply_chunk = |n: u32| self.writes.is_empty() && self.reply_chunk_len() >= u64::from(n);
        match e {
            Expect::Fail => false,
            Expect::PositionZero => self.is_position_zero(),
            Expect::NoWriteChunks => reply_chunk(1),
            Expect::Segments(n) => self.max_chunk_segs() <= n,
            Expect::WriteResource(n) | Expect::ReplyResource(n) => reply_chunk(n),
        }
    }

    /// Total bytes to pull with RDMA Read.
    pub fn read_len(&self) -> u64 {
        self.reads.iter().map(|r| u64::from(r.target.length)).sum()
    }

    /// Builds the complete RPC Call from the inline part and the Read
    /// chunk data (`data`: the bytes of every Read segment, concatenated in
    /// list order). Returns `None` if the positions are inconsistent.
    pub fn splice(&self, data: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(self.inline.len() + data.len() + 8);
        let mut cursor = 0usize; // in `inline`
        let mut at = 0usize; // in `data`
        let mut i = 0usize;
        while i < self.reads.len() {
            let pos = self.reads[i].position as usize;
            let mut len = 0usize;
            let mut j = i;
            while j < self.reads.len() && self.reads[j].position as usize == pos {
                len += self.reads[j].target.length as usize;
                j += 1;
            }
            // copy the inline bytes in front of this chunk
            let need = pos.checked_sub(out.len())?;
            let end = cursor.checked_add(need)?;
            out.extend_from_slice(self.inline.get(cursor..end)?);
            cursor = end;
            out.extend_from_slice(data.get(at..at.checked_add(len)?)?);
            at += len;
            if pos != 0 {
                out.resize(crate::nfs::pad4(out.len()), 0);
            }
            i = j;
        }
        out.extend_from_slice(self.inline.get(cursor..)?);
        Some(out)
    }
}

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

/// What the event loop does with a received message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send this control message (error, CONNPROP).
    Send(Vec<u8>),
    /// Pull the Read chunks (if any), then forward the Call.
    Call(Call),
    /// Nothing to do (message consumed or dropped; logged).
    Nothing,
    /// The client's reply to a reverse-direction Call: hand this RPC
    /// Reply to nfsd.
    ToNfsd(Vec<u8>),
    /// Close the connection.
    Disconnect(&'static str),
}

/// Protocol state of one connection.
#[derive(Debug)]
pub struct ConnProto {
    /// Switches.
    pub opts: Options,
    /// The settled version.
    pub version: Option<Protocol>,
    /// The client's RFC 8797 parameters (or defaults).
    pub client: PrivateData,
    /// The client's transport properties (v2 CONNPROP), if sent.
    pub client_props: Option<TransportProperties>,
    /// v2 credits: received messages whose credit we have not returned.
    unreturned: u32,
    /// v2 credits: admitted Calls not answered yet (each answer returns
    /// its Call's credit, the reading's rule 3).
    unanswered: u32,
    /// Calls received on the connection.
    pub calls: u64,
    /// Calls of the class fault injection counts ([`Options::err_calls`]).
    pub err_counted: u64,
    /// Our CONNPROP is to be sent before anything else.
    connprop_due: bool,
    /// Continued Call being reassembled: xid, bytes.
    cont: Option<(u32, Vec<u8>)>,
    /// v2: the client's credit limit (high half of its latest valid credit
    /// word): how many of our messages it can hold. 0 until it has told.
    client_limit: u32,
    /// v2: messages sent to the client on this connection.
    client_sent: u64,
    /// v2: credits the client has returned (never more than sent).
    client_returned: u64,
    /// XIDs of our CB_NULL probes awaiting the client's reply.
    probes: Vec<u32>,
    /// Probes sent on this connection.
    probes_sent: u32,
}

/// XIDs of the responder's own CB_NULL probes: `PROBE_XID | n` (nfsd's
/// callback XIDs are another counter; a clash would only misroute one
/// reply).
pub const PROBE_XID: u32 = 0xcb00_0000;

/// The body of error `code` answering `call` (`None`: a message that is
/// no Call), with values that describe the Call: `rdma_max_chunks` 0 for
/// `READ_CHUNKS` (a Position-Zero Read is expected), one Write chunk
/// fewer than offered for `WRITE_CHUNKS`, one segment fewer than the
/// largest chunk for `SEGMENTS`, 4 bytes more than the first Write chunk
/// (index 1; index and length 0 without one) for `WRITE_RESOURCE`, and
/// for `REPLY_RESOURCE` 4 bytes more than the Reply chunk, or without one
/// the largest message the client receives plus 4 (reply-time injection,
/// with the real length, is `Call::refuse_reply`).
fn err_body(code: u32, opts: &Options, call: Option<&Call>) -> ErrorBody {
    let writes = call.map_or(0, |c| c.writes.len() as u32);
    let segs = call.map_or(0, |c| c.max_chunk_segs());
    let wlen = call.map_or(0, |c| c.write_chunk_len()) as u32;
    let rlen = call.map_or(0, |c| c.reply_chunk_len()) as u32;
    match code {
        v2::ERR_VERS => ErrorBody::Vers { low: 1, high: 2 },
        v2::ERR_BAD_XDR => ErrorBody::BadXdr,
        v2::ERR_INVAL_HTYPE => ErrorBody::InvalHtype,
        v2::ERR_INVAL_FLAG => ErrorBody::InvalFlag,
        v2::ERR_READ_CHUNKS => ErrorBody::ReadChunks { max_chunks: 0 },
        v2::ERR_WRITE_CHUNKS => ErrorBody::WriteChunks {
            max_chunks: writes.saturating_sub(1),
        },
        v2::ERR_SEGMENTS => ErrorBody::Segments {
            max_segments: match opts.max_segs {
                Some(n) if n < segs => n,
                _ => segs.saturating_sub(1),
            },
        },
        v2::ERR_WRITE_RESOURCE if writes > 0 => ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed: wlen.saturating_add(4),
        },
        v2::ERR_WRITE_RESOURCE => ErrorBody::WriteResource {
            chunk_index: 0,
            length_needed: 0,
        },
        v2::ERR_REPLY_RESOURCE => ErrorBody::ReplyResource {
            length_needed: if rlen > 0 {
                rlen.saturating_add(4)
            } else {
                opts.recv_size.saturating_add(4)
            },
        },
        v2::ERR_SYSTEM => ErrorBody::System,
        c => ErrorBody::Other(c),
    }
}

/// What -00 asks of the requester after `body` answered `call`.
fn expect(body: &ErrorBody, call: &Call) -> Expect {
    match *body {
        ErrorBody::ReadChunks { .. } if call.is_position_zero() => Expect::Fail,
        ErrorBody::ReadChunks { .. } => Expect::PositionZero,
        ErrorBody::WriteChunks { .. } => Expect::NoWriteChunks,
        ErrorBody::Segments { max_segments } => Expect::Segments(max_segments),
        ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed,
        } if length_needed > 0 => Expect::WriteResource(length_needed),
        ErrorBody::ReplyResource { length_needed } if length_needed > 0 => {
            Expect::ReplyResource(length_needed)
        }
        _ => Expect::Fail,
    }
}

impl ConnProto {
    /// A new connection whose client sent `client` in its private data.
    pub fn new(opts: Options, client: PrivateData) -> Self {
        Self {
            opts,
            version: None,
            client,
            client_props: None,
            unreturned: 0,
            unanswered: 0,
            connprop_due: false,
            calls: 0,
            err_counted: 0,
            cont: None,
            client_limit: 0,
            client_sent: 0,
            client_returned: 0,
            probes: Vec::new(),
            probes_sent: 0,
        }
    }

    /// Applies the credit word of a v2 message from the client (not an
    /// `RDMA2_ERROR`, whose word means nothing): the high half is its
    /// limit, the low half returns our messages (-00 §4.3.1; a zero limit
    /// is ignored, a zero low half returns nothing).
    pub fn client_credit(&mut self, word: u32) {
        let c = Credits::from_word(word);
        if !c.is_valid() {
            return;
        }
        self.client_limit = u32::from(c.max);
        self.client_returned = self
            .client_sent
            .min(self.client_returned + u64::from(c.granted));
    }

    /// The client's credit limit (0 until it has told).
    pub fn client_limit(&self) -> u32 {
        self.client_limit
    }

    /// v2: the client's messages whose credit we owe, and its Calls
    /// admitted and not answered (each answer returns one).
    pub fn owed(&self) -> (u32, u32) {
        (self.unreturned, self.unanswered)
    }

    /// Our messages the client holds (sent, not returned).
    pub fn client_outstanding(&self) -> u64 {
        self.client_sent - self.client_returned
    }

    /// True if one more message may go to the client now: v2 honours its
    /// credit limit ("A sender MUST NOT send RDMA messages in excess of
    /// the receiver's granted credit limit"), plus, for a credit grant,
    /// the one Receive -00 tells every receiver to keep for grants.
    pub fn may_send_client(&self, grant: bool) -> bool {
        if self.version != Some(Protocol::V2) || self.client_limit == 0 {
            return true;
        }
        let limit = u64::from(self.client_limit) + u64::from(grant);
        self.client_outstanding() < limit
    }

    /// One message went to the client.
    pub fn sent_client(&mut self) {
        self.client_sent += 1;
    }

    /// The spare credits to add, when a message built earlier leaves now,
    /// to the `granted` half it already carries (at most `room`): with
    /// `--grant prompt` every message returns all that is owed when it
    /// is sent, not only what was owed when it was built. A message that
    /// waited for the client's credits behind others (the pieces of a
    /// long continued reply) would otherwise leave credits the client
    /// needs unreturned until the next one, and the client, which may
    /// send just one credit grant beyond our limit, can wait for them
    /// for good while we wait for its grant (issue 11's stall). Returns
    /// 0 for version 1 and the other grant patterns (whose returns are
    /// the point of them).
    pub fn top_up(&mut self, room: u16) -> u16 {
        if self.version != Some(Protocol::V2) || self.opts.grant != GrantMode::Prompt {
            return 0;
        }
        let n = u16::try_from(self.spare()).unwrap_or(u16::MAX).min(room);
        self.unreturned = self.unreturned.saturating_sub(u32::from(n));
        n
    }

    /// Credits owed that no answer will return.
    fn spare(&self) -> u32 {
        self.unreturned.saturating_sub(self.unanswered)
    }

    /// An asynchronous credit grant (`RDMA2_NOMSG`, XID 0, empty chunk
    /// lists) returning `n` spare credits.
    fn grant_msg(&mut self, n: u32, stats: &mut Stats) -> Vec<u8> {
        let n = n.min(self.spare()).max(1);
        self.unreturned = self.unreturned.saturating_sub(n);
        let spec = MsgSpec {
            xid: 0,
            credit: Credits {
                granted: u16::try_from(n).unwrap_or(u16::MAX),
                max: self.opts.credits.max(1),
            }
            .to_word(),
            kind: MsgKind::NoMsg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        };
        let mut buf = vec![0u8; 64];
        let len = header::encode_msg(&mut buf, Protocol::V2, &spec).unwrap_or(0);
        buf.truncate(len);
        stats.grants_sent += 1;
        buf
    }

    /// The asynchronous credit grants due after a received message, by
    /// [`GrantMode`].
    fn grants_due(&mut self, stats: &mut Stats) -> Vec<Action> {
        if self.version != Some(Protocol::V2) {
            return Vec::new();
        }
        let spare = self.spare();
        let credits = u32::from(self.opts.credits.max(1));
        let mut out = Vec::new();
        match self.opts.grant {
            GrantMode::Prompt => {
                if self.cont.is_some() && spare >= credits.div_ceil(2) {
                    out.push(Action::Send(self.grant_msg(spare, stats)));
                }
            }
            GrantMode::Exact => {
                for _ in 0..spare {
                    out.push(Action::Send(self.grant_msg(1, stats)));
                }
            }
            GrantMode::Lazy => {
                if spare >= LAZY_GRANT.min(credits) {
                    out.push(Action::Send(self.grant_msg(spare, stats)));
                }
            }
        }
        out
    }

    /// Our RFC 8797 private data.
    pub fn our_private_data(&self) -> PrivateData {
        PrivateData {
            remote_invalidate: false,
            send_size: self.opts.recv_size.min(pvt_max()),
            recv_size: self.opts.recv_size.min(pvt_max()),
        }
    }

    /// The largest message the client can receive.
    pub fn client_recv(&self) -> usize {
        let mut n = self.client.recv_size;
        if let Some(p) = self.client_props {
            n = n.min(p.recv_buf_size.max(1024));
        }
        n as usize
    }

    /// The credit word for our next message. `answers`: the message
    /// answers an admitted Call (a reply, or an error for it).
    ///
    /// Version 2 (Documentation/wire-formats.rst): high half the credit
    /// limit; low half the credits returned. Every Receive is reposted
    /// before its message is processed, so each received message is a
    /// credit to return, exactly once: an answer returns its Call's credit
    /// plus those of the messages no answer will return (continuation
    /// pieces, grants, CONNPROP, messages answered by nothing); a message
    /// that answers nothing returns only the latter, which may be none: a
    /// zero low half (§4.3.1 forbids a zero limit, not a zero return;
    /// returning credits ahead of their messages, as this did until
    /// 2026-11-24, let a requester that clamps returns at what it has
    /// outstanding starve when the advance was withheld later).
    ///
    /// With `--grant exact` or `lazy` every answer returns exactly its
    /// Call's credit and another message at most one spare credit; the
    /// rest go in asynchronous grants ([`GrantMode`]).
    pub fn credit_word(&mut self, answers: bool) -> u32 {
        match self.version {
            Some(Protocol::V2) => {
                if answers {
                    self.unanswered = self.unanswered.saturating_sub(1);
                }
                let spare = self.unreturned.saturating_sub(self.unanswered);
                let owed = match (self.opts.grant, answers) {
                    (GrantMode::Prompt, true) => spare.max(1),
                    (GrantMode::Prompt, false) => spare,
                    (_, true) => 1,
                    (_, false) => spare.min(1),
                };
                let granted = u16::try_from(owed).unwrap_or(u16::MAX);
                self.unreturned = self.unreturned.saturating_sub(u32::from(granted));
                Credits {
                    granted,
                    max: self.opts.credits.max(1),
                }
                .to_word()
            }
            _ => u32::from(self.opts.credits),
        }
    }

    /// The credit word of a version 2 `RDMA2_ERROR`: its receiver ignores
    /// the word and counts the message as returning exactly one credit
    /// (the requester's reading, Documentation/wire-formats.rst), so that
    /// is what it returns here, whatever is owed.
    fn error_credit_word(&mut self, answers: bool) -> u32 {
        if answers {
            self.unanswered = self.unanswered.saturating_sub(1);
        }
        self.unreturned = self.unreturned.saturating_sub(1);
        Credits {
            granted: 1,
            max: self.opts.credits.max(1),
        }
        .to_word()
    }

    /// Forgets an admitted Call that will get no answer (a dropped reply).
    pub fn forget_call(&mut self) {
        self.unanswered = self.unanswered.saturating_sub(1);
    }

    /// An error answering an admitted Call.
    pub fn call_error(&mut self, xid: u32, code: u32, stats: &mut Stats) -> Vec<u8> {
        self.error_inner(xid, code, true, stats)
    }

    /// Encodes an error reply for `xid` in the connection's version.
    pub fn error(&mut self, xid: u32, code: u32, stats: &mut Stats) -> Vec<u8> {
        self.error_inner(xid, code, false, stats)
    }

    fn error_inner(&mut self, xid: u32, code: u32, answers: bool, stats: &mut Stats) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        let n = match self.version {
            Some(Protocol::V2) => {
                // A requester ignores an RDMA2_ERROR's credit word and
                // counts it as returning one credit.
                let credit = self.error_credit_word(answers);
                v2::encode_error(&mut buf, xid, credit, &err_body(code, &self.opts, None))
            }
            _ => {
                let body = match code {
                    v2::ERR_VERS => ErrorBody::Vers {
                        low: 1,
                        high: if self.opts.v1_only { 1 } else { 2 },
                    },
                    _ => ErrorBody::BadXdr,
                };
                let credit = self.credit_word(answers);
                v1::encode_error(&mut buf, xid, credit, &body)
            }
        };
        stats.errors_sent += 1;
        buf.truncate(n.unwrap_or(0));
        buf
    }

    /// Refuses `call` with `body` (version 2; version 1: `ERR_CHUNK`) and
    /// remembers its XID and what the client must do about it.
    /// `answers`: the Call was admitted (the error is its answer).
    pub fn refuse(
        &mut self,
        call: &Call,
        body: ErrorBody,
        answers: bool,
        stats: &mut Stats,
    ) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        let credit = match self.version {
            Some(Protocol::V2) => self.error_credit_word(answers),
            _ => self.credit_word(answers),
        };
        let (n, e) = match self.version {
            Some(Protocol::V2) => (
                v2::encode_error(&mut buf, call.xid, credit, &body),
                expect(&body, call),
            ),
            _ => {
                // Version 1 has ERR_VERS and ERR_CHUNK only.
                let v1_body = match body {
                    ErrorBody::Vers { .. } => ErrorBody::Vers {
                        low: 1,
                        high: if self.opts.v1_only { 1 } else { 2 },
                    },
                    _ => ErrorBody::BadXdr,
                };
                (
                    v1::encode_error(&mut buf, call.xid, credit, &v1_body),
                    Expect::Fail,
                )
            }
        };
        stats.errors_sent += 1;
        stats.refused.insert(call.xid, e);
        buf.truncate(n.unwrap_or(0));
        buf
    }

    /// svcrdma's answer to a version it does not speak: v1 layout, the
    /// Call's version word copied (`svc_rdma_send_error_msg`).
    fn svcrdma_err_vers(&self, xid: u32, vers: u32, stats: &mut Stats) -> Vec<u8> {
        stats.errors_sent += 1;
        stats.err_vers += 1;
        let high = if self.opts.v1_only { 1 } else { 2 };
        [
            xid,
            vers,
            u32::from(self.opts.credits),
            v1::RDMA_ERROR,
            v1::ERR_VERS,
            1,
            high,
        ]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect()
    }

    /// Our RDMA2_CONNPROP.
    pub fn connprop(&mut self) -> Vec<u8> {
        let props = [
            Property::MaxSendSize(self.opts.recv_size),
            Property::RecvBufSize(self.opts.recv_size),
            Property::MaxSegmentSize(
                self.opts
                    .prop_seg_size
                    .unwrap_or(self.opts.max_data.min(1 << 20) as u32),
            ),
            Property::MaxSegmentCount(self.opts.prop_segs.unwrap_or(16)),
            Property::ReverseRequestSupport(if self.opts.relay_callbacks {
                rpcrdma_xdr::props::RVREQSUP_INLINE
            } else {
                rpcrdma_xdr::props::RVREQSUP_NONE
            }),
        ];
        let mut buf = vec![0u8; 256];
        let p = v2::Prefix {
            xid: 0,
            credit: self.credit_word(false),
            flags: Flags::NONE,
        };
        let n = v2::encode_connprop(&mut buf, &p, &props).unwrap_or(0);
        buf.truncate(n);
        buf
    }

    /// Our RDMA2_CONNPROP as `--connprop-pieces` says: one message, or
    /// its property list continued over that many (-00 §4.5: every piece
    /// repeats the prefix, with F_MORE on all but the last).
    pub fn connprop_pieces(&mut self) -> Vec<Vec<u8>> {
        const PREFIX: usize = 20;
        let whole = self.connprop();
        let n = self.opts.connprop_pieces.max(1);
        if n == 1 || whole.len() <= PREFIX {
            return vec![whole];
        }
        let (prefix, body) = whole.split_at(PREFIX);
        let size = body.len().div_ceil(n).next_multiple_of(4);
        let count = body.len().div_ceil(size);
        body.chunks(size)
            .enumerate()
            .map(|(i, c)| {
                let mut m = prefix.to_vec();
                if i + 1 < count {
                    m[19] |= 2; // F_MORE, in the flags word's low byte
                }
                m.extend_from_slice(c);
                m
            })
            .collect()
    }

    /// Handles one received message. May return several actions (our
    /// CONNPROP, then the Call).
    pub fn on_receive(&mut self, buf: &[u8], stats: &mut Stats) -> Vec<Action> {
        let mut out = self.on_receive_inner(buf, stats);
        if self.connprop_due {
            // Built after the message was admitted, so that its credit
            // word does not return the credit the reply will return.
            self.connprop_due = false;
            let pieces = self.connprop_pieces();
            out.splice(0..0, pieces.into_iter().map(Action::Send));
            stats.connprop_sent += 1;
        }
        out.extend(self.grants_due(stats));
        out
    }

    fn on_receive_inner(&mut self, buf: &[u8], stats: &mut Stats) -> Vec<Action> {
        self.unreturned = self.unreturned.saturating_add(1);
        stats.msgs_received += 1;
        let Ok(common) = header::peek(buf) else {
            log::warn(format_args!(
                "dropping a {}-byte message: too short",
                buf.len()
            ));
            stats.malformed += 1;
            return vec![Action::Nothing];
        };
        let mut out = Vec::new();
        // Version settlement: the first message decides.
        match (self.version, common.vers) {
            (None, 2) if !self.opts.v1_only => {
                self.version = Some(Protocol::V2);
                stats.conn_v2 += 1;
                log::info(format_args!(
                    "connection settled on RPC-over-RDMA version 2"
                ));
                self.connprop_due = !self.opts.no_connprop;
            }
            (None, 1) => {
                self.version = Some(Protocol::V1);
                stats.conn_v1 += 1;
                log::info(format_args!(
                    "connection settled on RPC-over-RDMA version 1"
                ));
            }
            (None, v) => {
                // svcrdma behaviour: ERR_VERS in v1 layout with the Call's
                // version word; the connection stays unsettled.
                log::info(format_args!(
                    "ERR_VERS to a version {v} message (xid {:#x})",
                    common.xid
                ));
                return vec![Action::Send(self.svcrdma_err_vers(common.xid, v, stats))];
            }
            (Some(p), v) if p.vers() != v => {
                log::warn(format_args!(
                    "version {v} message on a version {} connection",
                    p.vers()
                ));
                stats.malformed += 1;
                if v == 1 || v == 2 {
                    return vec![Action::Send(self.error(common.xid, v2::ERR_VERS, stats))];
                }
                return vec![Action::Send(self.svcrdma_err_vers(common.xid, v, stats))];
            }
            _ => {}
        }
        let h = match header::decode(buf) {
            Ok(h) => h,
            Err(e) => {
                stats.malformed += 1;
                let code = match self.version {
                    Some(Protocol::V2) => e.rdma2_err().unwrap_or(v2::ERR_BAD_XDR),
                    _ => v2::ERR_BAD_XDR,
                };
                log::warn(format_args!(
                    "malformed message (xid {:#x}): {e}",
                    common.xid
                ));
                if common.xid == 0 {
                    out.push(Action::Nothing);
                } else {
                    out.push(Action::Send(self.error(common.xid, code, stats)));
                }
                return out;
            }
        };
        let v2 = h.protocol == Protocol::V2;
        if v2 && !matches!(h.body, Body::Error(_)) {
            self.client_credit(h.credit);
        }
        if let Some(reply) = self.reverse_reply(&h) {
            if let Some(i) = self.probes.iter().position(|&x| x == h.xid) {
                self.probes.swap_remove(i);
                if crate::nfs::reply_ok(&reply, false) {
                    stats.cb_null_replies += 1;
                } else {
                    stats.cb_null_failed += 1;
                    log::warn(format_args!(
                        "the client refused our CB_NULL probe (xid {:#x})",
                        h.xid
                    ));
                }
                return vec![Action::Nothing];
            }
            stats.reverse_replies += 1;
            return vec![Action::ToNfsd(reply)];
        }
        if v2 && h.flags.is_response() {
            // A reply to a reverse-direction Call we did not send.
            stats.malformed += 1;
            log::warn(format_args!(
                "unexpected F_RESPONSE message (xid {:#x})",
                h.xid
            ));
            out.push(Action::Nothing);
            return out;
        }
        match h.body {
            Body::ConnProp(set) => {
                stats.connprop_received += 1;
                let v = set.values();
                log::info(format_args!(
                    "client properties (xid {:#x}): max send {} recv buffer {} reverse requests {}",
                    h.xid, v.max_send_size, v.recv_buf_size, v.reverse_request_support
                ));
                self.client_props = Some(v);
                out.push(Action::Nothing);
            }
            Body::ConnPropPart(_) => {
                stats.connprop_received += 1;
                out.push(Action::Nothing);
            }
            Body::Error(_) => {
                stats.malformed += 1;
                log::warn(format_args!(
                    "client sent an error message (xid {:#x})",
                    h.xid
                ));
                out.push(Action::Nothing);
            }
            Body::NoMsg(n) if v2 && h.xid == 0 && n.chunks.is_empty() => {
                stats.grants_received += 1;
                out.push(Action::Nothing);
            }
            Body::NoMsg(n) => {
                let p0 = n.chunks.reads.iter().next().map(|s| s.position) == Some(0);
                if !p0 {
                    stats.malformed += 1;
                    out.push(Action::Send(self.error(h.xid, v2::ERR_BAD_XDR, stats)));
                    return out;
                }
                let call = self.call_from(&h, &n.chunks, &[], n.inv_handle);
                out.push(self.admit(call, stats));
            }
            Body::Msg(m) => {
                if v2 && h.flags.has_more() {
                    stats.continuations_received += 1;
                    match &mut self.cont {
                        Some((x, v)) if *x == h.xid => v.extend_from_slice(m.payload),
                        Some(_) => {
                            self.cont = None;
                            out.push(Action::Send(self.error(h.xid, v2::ERR_INVAL_FLAG, stats)));
                            return out;
                        }
                        None => self.cont = Some((h.xid, m.payload.to_vec())),
                    }
                    if self.cont.as_ref().map_or(0, |c| c.1.len()) > self.opts.max_data {
                        self.cont = None;
                        out.push(Action::Send(self.error(h.xid, v2::ERR_SYSTEM, stats)));
                    } else {
                        out.push(Action::Nothing);
                    }
                    return out;
                }
                let mut inline = m.payload.to_vec();
                if let Some((x, mut v)) = self.cont.take() {
                    if x != h.xid {
                        out.push(Action::Send(self.error(h.xid, v2::ERR_INVAL_FLAG, stats)));
                        return out;
                    }
                    v.extend_from_slice(&inline);
                    inline = v;
                }
                let call = self.call_from(&h, &m.chunks, &inline, m.inv_handle);
                out.push(self.admit(call, stats));
            }
        }
        out
    }

    /// The client's reply to one of our reverse-direction Calls: an
    /// inline RPC Reply (v2: `F_RESPONSE` set; v1: the message type word),
    /// when relaying is on.
    fn reverse_reply(&self, h: &header::Header<'_>) -> Option<Vec<u8>> {
        if !self.opts.relay_callbacks {
            return None;
        }
        let Body::Msg(m) = h.body else { return None };
        let is_reply = crate::nfs::word_at(m.payload, 4) == Some(crate::nfs::RPC_REPLY)
            && crate::nfs::word_at(m.payload, 0) == Some(h.xid);
        let v2_ok = h.protocol != Protocol::V2 || h.flags.is_response();
        (is_reply && v2_ok && m.chunks.is_empty() && !h.flags.has_more())
            .then(|| m.payload.to_vec())
    }

    /// Frames nfsd's callback Call `rpc` as a reverse-direction Call
    /// (RDMA_MSG / RDMA2_MSG without `F_RESPONSE`, no chunks), or `None`
    /// if relaying is off or it does not fit the client's receive size.
    pub fn reverse_call(&mut self, rpc: &[u8]) -> Option<Vec<u8>> {
        if !self.opts.relay_callbacks || self.version.is_none() {
            return None;
        }
        let proto = self.version?;
        let xid = crate::nfs::word_at(rpc, 0)?;
        let spec = MsgSpec {
            xid,
            credit: 0,
            kind: MsgKind::Msg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        };
        let hdr_len = spec.encoded_len(proto)?;
        if hdr_len.saturating_add(rpc.len()) > self.client_recv() {
            return None;
        }
        let spec = MsgSpec {
            credit: self.credit_word(false),
            ..spec
        };
        let mut buf = vec![0u8; hdr_len];
        let n = header::encode_msg(&mut buf, proto, &spec).ok()?;
        buf.truncate(n);
        buf.extend_from_slice(rpc);
        Some(buf)
    }

    /// A CB_NULL probe of callback program `prog` (version 1, as nfsd's
    /// probes), framed as [`Self::reverse_call`] frames nfsd's callbacks;
    /// its reply is counted (`cb_null_replies`, `cb_null_failed`) and not
    /// handed to nfsd. `None` unless `probe_callbacks` and relaying are on
    /// and the version is settled.
    pub fn cb_null(&mut self, prog: u32) -> Option<Vec<u8>> {
        if !self.opts.probe_callbacks {
            return None;
        }
        let xid = PROBE_XID | (self.probes_sent & 0x00ff_ffff);
        let m = self.reverse_call(&crate::nfs::null_call(xid, prog, 1))?;
        self.probes_sent = self.probes_sent.wrapping_add(1);
        if self.probes.len() >= 64 {
            self.probes.remove(0); // never answered: forget the oldest
        }
        self.probes.push(xid);
        Some(m)
    }

    fn call_from(
        &self,
        h: &header::Header<'_>,
        c: &rpcrdma_xdr::chunk::ChunkListsView<'_>,
        inline: &[u8],
        inv_handle: u32,
    ) -> Call {
        Call {
            xid: h.xid,
            v2: h.protocol == Protocol::V2,
            inv_handle,
            reads: c.reads.iter().collect(),
            writes: c.writes.iter().map(|w| w.iter().collect()).collect(),
            reply: c.reply.map(|r| r.iter().collect()),
            inline: inline.to_vec(),
            rpc: None,
            refuse_reply: false,
        }
    }

    /// Checks a Call's chunks against our limits and fault switches.
    fn admit(&mut self, mut call: Call, stats: &mut Stats) -> Action {
        self.calls += 1;
        stats.calls += 1;
        if let Some(e) = stats.refused.get(call.xid) {
            // Sent again after a transport error: -00 §6.4.3 says when a
            // requester may, and how the Call must change.
            let resent = match e {
                Expect::Fail => &mut stats.refused_resent,
                _ if !call.complies(e) => &mut stats.resent_noncompliant,
                Expect::PositionZero => &mut stats.resent_read_chunks,
                Expect::NoWriteChunks => &mut stats.resent_write_chunks,
                Expect::Segments(_) => &mut stats.resent_segments,
                Expect::WriteResource(_) => &mut stats.resent_write_resource,
                Expect::ReplyResource(_) => &mut stats.resent_reply_resource,
            };
            *resent += 1;
            log::info(format_args!(
                "xid {:#x} was answered with an error and is sent again (expected: {e:?}; {})",
                call.xid,
                if call.complies(e) {
                    "as asked"
                } else {
                    "NOT as asked"
                }
            ));
        }
        let counted = self.opts.err_calls.matches(&call);
        if counted {
            self.err_counted += 1;
        }
        let k = self.err_counted;
        let nth = self
            .opts
            .err_nth
            .iter()
            .find(|(n, _)| counted && *n == k)
            .map(|(_, code)| *code);
        let inject = match (nth, self.opts.err_every) {
            (Some(code), _) => Some(code),
            (None, Some((start, n, code)))
                if counted && k > start && (k - start).is_multiple_of(n) =>
            {
                Some(code)
            }
            _ => None,
        };
        let v2 = self.version == Some(Protocol::V2);
        match inject {
            Some(v2::ERR_REPLY_RESOURCE) if v2 && call.reply.is_none() => {
                // Refused once nfsd's reply tells the length needed.
                log::info(format_args!(
                    "injecting error {} for call {} (xid {:#x}) at its reply",
                    v2::ERR_REPLY_RESOURCE,
                    k,
                    call.xid
                ));
                stats.errors_injected += 1;
                call.refuse_reply = true;
            }
            Some(code) => {
                log::info(format_args!(
                    "injecting error {code} for call {k} (xid {:#x})",
                    call.xid
                ));
                stats.errors_injected += 1;
                let body = err_body(code, &self.opts, Some(&call));
                return Action::Send(self.refuse(&call, body, false, stats));
            }
            None => {}
        }
        if v2 && self.opts.refuse_read_chunks && call.reads.iter().any(|r| r.position != 0) {
            stats.refused_read_chunks += 1;
            let body = ErrorBody::ReadChunks { max_chunks: 0 };
            return Action::Send(self.refuse(&call, body, false, stats));
        }
        if let Some(n) = self.opts.max_segs.filter(|_| v2) {
            if call.max_chunk_segs() > n {
                stats.refused_segments += 1;
                let body = ErrorBody::Segments { max_segments: n };
                return Action::Send(self.refuse(&call, body, false, stats));
            }
        }
        if v2 && self.opts.no_write_chunks && !call.writes.is_empty() {
            call.refuse_reply = true;
            stats.refused_write_chunks += 1;
        }
        if self.breaks_segment_props(&call) {
            stats.prop_violations += 1;
            log::warn(format_args!(
                "xid {:#x}: the Call's chunks exceed our segment properties",
                call.xid
            ));
            return self.refuse_segments(call.xid, stats);
        }
        if call.read_len() > self.opts.max_data as u64 {
            return Action::Send(self.error(call.xid, v2::ERR_SYSTEM, stats));
        }
        if call.reads.iter().any(|r| r.position % 4 != 0) {
            return Action::Send(self.error(call.xid, v2::ERR_BAD_XDR, stats));
        }
        self.unanswered = self.unanswered.saturating_add(1);
        Action::Call(call)
    }

    /// v2 with `--prop-segs` / `--prop-seg-size`: the Call carries more
    /// segments (all chunks together, -00 §5.2.4) or a longer segment
    /// (§5.2.3) than our CONNPROP allows.
    fn breaks_segment_props(&self, call: &Call) -> bool {
        if !call.v2 {
            return false;
        }
        let segs = call
            .reads
            .iter()
            .map(|r| r.target)
            .chain(call.writes.iter().flatten().copied())
            .chain(call.reply.iter().flatten().copied());
        let (mut n, mut longest) = (0u32, 0u32);
        for s in segs {
            n += 1;
            longest = longest.max(s.length);
        }
        self.opts.prop_segs.is_some_and(|m| n > m)
            || self.opts.prop_seg_size.is_some_and(|m| longest > m)
    }

    /// RDMA2_ERR_SEGMENTS with our advertised segment count.
    fn refuse_segments(&mut self, xid: u32, stats: &mut Stats) -> Action {
        let body = ErrorBody::Segments {
            max_segments: self.opts.prop_segs.unwrap_or(16),
        };
        let mut buf = vec![0u8; 64];
        let credit = self.credit_word(false);
        let n = v2::encode_error(&mut buf, xid, credit, &body);
        stats.errors_sent += 1;
        buf.truncate(n.unwrap_or(0));
        Action::Send(buf)
    }

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
        let invalidate = if v2 {
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
        } else if self.client.remote_invalidate {
            single_handle(call)
        } else {
            None
        };
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
            let mut chunks: Vec<&[u8]> = data.chunks(piece).collect();
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

fn pvt_max() -> u32 {
    rpcrdma_xdr::pvtdata::MAX_SIZE
}

/// True if `buf` is at least a common header.
pub fn long_enough(buf: &[u8]) -> bool {
    buf.len() >= COMMON_LEN
}

/// Minimal leveled logging to stderr with a timestamp.
pub mod log {
    use std::fmt::Arguments;
    use std::time::{SystemTime, UNIX_EPOCH};

    fn ts() -> String {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}.{:03}", d.as_secs(), d.subsec_millis())
    }

    /// An informational line.
    pub fn info(a: Arguments<'_>) {
        eprintln!("[{}] responder: {a}", ts());
    }

    /// A warning line (bad input, failures).
    pub fn warn(a: Arguments<'_>) {
        eprintln!("[{}] responder: warning: {a}", ts());
    }
}
