// SPDX-License-Identifier: GPL-2.0

//! The responder's protocol logic, free of I/O: version settlement,
//! decoding Calls, credit words, error selection, CONNPROP, reassembly of
//! continued Calls, splicing Read chunks, and planning each reply (inline,
//! Reply chunk, Write chunk, continued). The event loop (`server`) feeds it
//! received bytes and nfsd's replies and carries out what it returns.
//!
//! One job per file: this one has the switches ([`Options`]), the
//! connection's state ([`ConnProto`]) and what we advertise (private
//! data, `RDMA2_CONNPROP`); [`call`] the received Call; `credits.rs` the
//! credit accounting and grants; `errors.rs` the error messages;
//! `receive.rs` what a received message means
//! ([`ConnProto::on_receive`]); [`reply`] the reply plan; [`reverse`]
//! reverse-direction Calls.

#![forbid(unsafe_code)]

pub mod call;
mod credits;
mod errors;
mod receive;
pub mod reply;
pub mod reverse;

use rpcrdma_xdr::header::{Flags, Protocol, COMMON_LEN};
use rpcrdma_xdr::props::{Property, TransportProperties};
use rpcrdma_xdr::pvtdata::PrivateData;
use rpcrdma_xdr::v2;

use self::call::{Call, CallKind};

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

/// Which reading of the version 2 credit word (-00 §4.3.1) the responder
/// sends (`--credit-word`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CreditWord {
    /// High half the credit limit, low half the credits returned (what
    /// rpcrdma2 reads, Documentation/wire-formats.rst).
    #[default]
    Ours,
    /// The low half is the grant, the limit itself, never zero ("the
    /// granted value MUST NOT be zero"); the high half repeats it.
    Total,
    /// As `Total`, with a zero high half.
    TotalZeroMax,
}

impl CreditWord {
    /// Parses `ours`, `total` or `total-zero-max`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ours" => Some(Self::Ours),
            "total" => Some(Self::Total),
            "total-zero-max" => Some(Self::TotalZeroMax),
            _ => None,
        }
    }
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
    /// v2: after our RDMA2_CONNPROP, send a second one with Maximum Send
    /// Size and Receive Buffer Size [`CONNPROP_TWICE_SIZE`] (the client must
    /// keep the first, -00 §6.4.4).
    pub connprop_twice: bool,
    /// The credit limit advertised (v1 grant; v2 high half).
    pub credits: u16,
    /// Size of our Receive buffers (advertised in private data and RBSIZ).
    pub recv_size: u32,
    /// Largest RDMA data item (Read chunk, Write or Reply chunk) handled.
    pub max_data: usize,
    /// v2: continue every reply longer than this many bytes (F_MORE).
    pub continue_over: Option<usize>,
    /// v2: the first three pieces of every continued reply carry 1, 2 and
    /// 3 bytes of payload, the others as usual.
    pub tiny_pieces: bool,
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
    /// Set the R bit in our RFC 8797 private data: we may reply with Send
    /// With Invalidate. Only when both peers set it does the responder use
    /// it (RFC 8797 §4.1), in either version; otherwise every reply is a
    /// plain Send.
    pub remote_invalidate: bool,
    /// The reading of the version 2 credit word we send.
    pub credit_word: CreditWord,
    /// v2: once per connection, send the client a reverse-direction Call
    /// it cannot serve (a CB_NULL offering a Write chunk) and count its
    /// `RDMA2_ERROR` answer (needs `relay_callbacks`).
    pub bad_reverse_call: bool,
    /// v2: once per connection, ahead of the second Call's reply, send a
    /// message of an unknown header type without `F_RESPONSE` carrying
    /// that Call's XID, and count the client's `RDMA2_ERROR` answer
    /// (needs `relay_callbacks`).
    pub unknown_htype_call: bool,
    /// v2: once per connection, send the client a CB_NULL reverse-direction
    /// Call continued over two pieces and count its answer (needs
    /// `relay_callbacks`).
    pub continued_reverse_call: bool,
    /// Append this many CB_NOTIFY_LOCK operations with an empty lock
    /// owner (no effect on the client) to every CB_COMPOUND relayed from
    /// nfsd, so that the client's reply grows by 8 bytes each; their
    /// results are taken off before the reply goes to nfsd (needs
    /// `relay_callbacks`).
    pub pad_callbacks: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            v1_only: false,
            no_connprop: false,
            connprop_pieces: 1,
            connprop_twice: false,
            credits: 32,
            recv_size: 4096,
            max_data: (1 << 20) + 16384,
            continue_over: None,
            tiny_pieces: false,
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
            remote_invalidate: false,
            credit_word: CreditWord::Ours,
            bad_reverse_call: false,
            unknown_htype_call: false,
            continued_reverse_call: false,
            pad_callbacks: 0,
        }
    }
}

impl Options {
    /// Receives posted per connection: one per credit we grant, one
    /// more for the credit grant -00 §4.3.1 requires a receiver to be able
    /// to take at any time ("receivers MUST always be in a position to
    /// receive one such credit grant update message, in addition to
    /// payload-bearing messages"), and slack so that reposting may lag.
    pub fn receives(&self) -> usize {
        usize::from(self.credits.max(1)) + 1 + RECV_SLACK
    }
}

/// The sizes `--connprop-twice`'s second RDMA2_CONNPROP advertises, a
/// quarter of the default: a client that took them would send every Call
/// over 1024 bytes in chunks or continued.
pub const CONNPROP_TWICE_SIZE: u32 = 1024;

/// Receives posted beyond the credits and the grant reserve.
const RECV_SLACK: usize = 7;

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
    /// `--grant prompt`: a credit grant waits in the queue to the client
    /// (one at a time; [`ConnProto::grant_leaving`]).
    grant_queued: bool,
    /// Continued Call being reassembled: xid, bytes.
    cont: Option<(u32, Vec<u8>)>,
    /// Continued RDMA2_CONNPROP from the client being reassembled: xid,
    /// the property set's bytes so far.
    connprop_cont: Option<(u32, Vec<u8>)>,
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
    /// `--bad-reverse-call`: sent on this connection.
    bad_call_sent: bool,
    /// `--bad-reverse-call`: its XID while no answer has come.
    bad_call_pending: Option<u32>,
    /// `--unknown-htype-call`: sent on this connection.
    unknown_htype_sent: bool,
    /// `--unknown-htype-call`: its XID while no answer has come.
    unknown_htype_pending: Option<u32>,
    /// `--continued-reverse-call`: sent on this connection.
    cont_call_sent: bool,
    /// `--continued-reverse-call`: its XID while no answer has come.
    cont_call_pending: Option<u32>,
    /// A continued reply of the client's to one of our reverse-direction
    /// Calls being reassembled: xid, bytes.
    reply_cont: Option<(u32, Vec<u8>)>,
    /// `--pad-callbacks`: the CB_COMPOUNDs relayed padded whose reply has
    /// not come: xid, the operations nfsd sent.
    padded: Vec<(u32, u32)>,
    /// `--pad-callbacks`: CB_COMPOUNDs relayed padded.
    padded_sent: u64,
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
            grant_queued: false,
            calls: 0,
            err_counted: 0,
            cont: None,
            connprop_cont: None,
            client_limit: 0,
            client_sent: 0,
            client_returned: 0,
            probes: Vec::new(),
            probes_sent: 0,
            bad_call_sent: false,
            bad_call_pending: None,
            unknown_htype_sent: false,
            unknown_htype_pending: None,
            cont_call_sent: false,
            cont_call_pending: None,
            reply_cont: None,
            padded: Vec::new(),
            padded_sent: 0,
        }
    }

    /// Our RFC 8797 private data.
    pub fn our_private_data(&self) -> PrivateData {
        PrivateData {
            remote_invalidate: self.opts.remote_invalidate,
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

    /// Our RDMA2_CONNPROP.
    pub fn connprop(&mut self) -> Vec<u8> {
        self.connprop_sized(self.opts.recv_size)
    }

    /// `--connprop-twice`'s second RDMA2_CONNPROP: ours with Maximum Send
    /// Size and Receive Buffer Size [`CONNPROP_TWICE_SIZE`].
    pub fn second_connprop(&mut self) -> Vec<u8> {
        self.connprop_sized(CONNPROP_TWICE_SIZE)
    }

    /// Our RDMA2_CONNPROP advertising `size` as Maximum Send Size and
    /// Receive Buffer Size.
    fn connprop_sized(&mut self, size: u32) -> Vec<u8> {
        let props = [
            Property::MaxSendSize(size),
            Property::RecvBufSize(size),
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
