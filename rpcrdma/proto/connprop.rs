// SPDX-License-Identifier: GPL-2.0

//! Transport properties (draft -00 §5, §6.4.4): the `RDMA2_CONNPROP` we
//! send as the first message of a version 2 connection, and the
//! reassembly of a peer's `RDMA2_CONNPROP` split by Message Continuation.
//!
//! # Our CONNPROP is the version probe
//!
//! -00 §4.3.3 makes the first message of a connection the version probe
//! (at most 1024 bytes, one message outstanding until the server grants
//! credits) and §6.4.4 says "a participant will send a RDMA2_CONNPROP
//! message as the first message after a connection is established". The
//! requester's own CONNPROP is therefore the probe ([`Plan`], sent by the
//! glue right after `ESTABLISHED`, before any RPC), so no RPC has to fit
//! in 1024 bytes and no connection settles on version 1 because its first
//! RPC was large. The outcomes (see [`super::negotiate`]):
//!
//! * `ERR_VERS` (Linux svcrdma: version 1 layout with the message's XID
//!   and `rdma_vers` 2) → the connection speaks version 1, the server is
//!   remembered as v1-only; no RPC was sent, so none is sent again
//!   ([`super::Control::Fallback`]);
//! * any valid version 2 message (a v2 responder answers with its own
//!   CONNPROP, which also grants credits) → settled on version 2;
//! * nothing within [`PROBE_TIMEOUT_MS`]: -00 lets us send nothing more
//!   on this connection, so the glue closes it and connects again at once;
//!   the transport remembers that this server leaves CONNPROP unanswered
//!   and probes with the first RPC instead (the version 2 server answers
//!   that; see [`super::Transport::probe_timed_out`]).
//!
//! **The probe's XID.** -00 does not say what XID a CONNPROP carries
//! (§6.4.2 reserves XID 0 for messages that answer nothing, credit
//! grants). Our probe carries [`PROBE_XID`], a fixed non-zero value, with
//! `F_RESPONSE` clear (the XID is ours): svcrdma copies the XID into its
//! `ERR_VERS`, and a non-zero XID lets the negotiation tell that answer
//! from an unsolicited message. No RPC can be confused with it: no RPC is
//! sent on the connection until the probe is answered, and its answer is
//! matched only while the probe is outstanding.
//!
//! **What we advertise** ([`our_properties`]): Receive Buffer Size (our
//! Receive buffers), Maximum Send Size (our Send buffers) and Reverse
//! Request Support (`RVREQSUP_INLINE` when the transport provisions the
//! backchannel, else `RVREQSUP_NONE`: our backchannel takes inline Calls
//! and sends inline replies only). We do not send the segment properties:
//! they describe the segments a requester puts in its headers, and the
//! server, as the backchannel's requester, may put none in ours.
//!
//! # Reassembly of a continued CONNPROP
//!
//! A property set split over several `RDMA2_CONNPROP` messages (`F_MORE`
//! on all but the last, one XID) is parsed as a stream by [`Assembly`]:
//! O(1) state, no buffer, so the size of the set (a Host Auth Message can
//! be large) costs nothing but parsing; a set longer than
//! [`MAX_SET_LEN`] bytes is abandoned. The properties we use are `uint32`
//! values; Host Auth Messages and unknown properties are skipped (§6.4.4:
//! "these properties are simply ignored"). The values take effect only
//! when the whole set has arrived and is valid.

use super::config::Config;
use super::xdr::error::{Error, ErrorKind, Item};
use super::xdr::header::Flags;
use super::xdr::props::{
    Property, TransportProperties, PROPID_BRS, PROPID_HOSTAUTH, PROPID_RBSIZ, PROPID_RCSIZ,
    PROPID_RSSIZ, PROPID_SBSIZ, RVREQSUP_INLINE, RVREQSUP_NONE,
};
use super::xdr::v2;

/// The XID of our `RDMA2_CONNPROP` probe: "CONP" in ASCII.
pub const PROBE_XID: u32 = 0x434f_4e50;

/// How long the connect worker waits for an answer to the CONNPROP
/// probe before giving up on it for this server. A server answers on
/// receipt, but a reliable connection recovers a lost packet only when
/// its local ACK timeout fires: rdma_cm gives a RoCE QP a packet lifetime
/// of 2^16 x 4.096 us and an ACK timeout of twice that (0.54 s), and the
/// probe or its answer may each need a retransmission. A false timeout
/// drops a good connection; a long one delays only the mounts of a server
/// that never answers CONNPROP (once per transport: it then probes with
/// RPCs) and must stay well below a soft mount's RPC timeout (60 s for
/// RDMA): four seconds.
pub const PROBE_TIMEOUT_MS: u32 = 4000;

/// Largest property set reassembled from continued messages, in bytes.
pub const MAX_SET_LEN: u32 = 65536;

/// Number of properties in our CONNPROP.
pub const OUR_COUNT: usize = 3;

/// The properties we advertise for `config` (see the module
/// documentation).
pub const fn our_properties(config: &Config) -> [Property<'static>; OUR_COUNT] {
    let c = config.validated();
    [
        Property::RecvBufSize(c.recv_buffer_size()),
        Property::MaxSendSize(c.inline_send),
        Property::ReverseRequestSupport(if c.bc_requests > 0 {
            RVREQSUP_INLINE
        } else {
            RVREQSUP_NONE
        }),
    ]
}

/// How to send our `RDMA2_CONNPROP` ([`super::Transport::connprop_probe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Plan {
    /// `rdma_xid` ([`PROBE_XID`]).
    pub xid: u32,
    /// The credit word.
    pub credit: u32,
    /// The properties.
    pub props: [Property<'static>; OUR_COUNT],
}

impl Plan {
    /// Encodes the message into `buf`; returns its length (at most
    /// [`Self::MAX_LEN`]).
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, Error> {
        let p = v2::Prefix {
            xid: self.xid,
            credit: self.credit,
            flags: Flags::NONE,
        };
        v2::encode_connprop(buf, &p, &self.props)
    }

    /// The message's length: the prefix, the count, three `uint32`
    /// properties of 12 bytes each. Far below the 1024-byte probe limit.
    pub const MAX_LEN: usize = v2::PREFIX_LEN + 4 + 12 * OUR_COUNT;
}

const _: () = assert!(Plan::MAX_LEN <= 1024);

/// Where the stream parser of [`Assembly`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum State {
    /// No set is being reassembled.
    Idle,
    /// Expecting the element count.
    Count,
    /// Expecting `rdma_which` of the next element.
    Id,
    /// Expecting the length of `rdma_data` of property `id`.
    Len { id: u32 },
    /// Expecting the `uint32` value of property `id`.
    Value { id: u32 },
    /// Expecting the inner length of a Host Auth Message whose
    /// `rdma_data` is `len` bytes.
    AuthLen { len: u32 },
    /// Skipping `left` bytes (data we ignore and its XDR padding).
    Skip { left: u32 },
    /// Every element has been read; only the end may follow.
    Done,
}

/// What one piece did to the reassembly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// More pieces are to come.
    Pending,
    /// The set is complete and valid: these are its values.
    Done(TransportProperties),
    /// The set is malformed or too long; it was abandoned.
    Failed(Error),
}

/// A continued `RDMA2_CONNPROP` being reassembled (a stream parser).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Assembly {
    xid: u32,
    state: State,
    /// Bytes of the set consumed so far.
    total: u32,
    /// Elements still to read.
    left: u32,
    /// A word being collected across pieces.
    word: [u8; 4],
    fill: u8,
    /// The values so far.
    props: TransportProperties,
}

impl Default for Assembly {
    fn default() -> Self {
        Self::new()
    }
}

fn err(kind: ErrorKind, item: Item, at: u32) -> Error {
    Error {
        kind,
        item,
        offset: usize::try_from(at).unwrap_or(usize::MAX),
    }
}

impl Assembly {
    /// Nothing being reassembled.
    pub const fn new() -> Self {
        Self {
            xid: 0,
            state: State::Idle,
            total: 0,
            left: 0,
            word: [0; 4],
            fill: 0,
            props: TransportProperties::DEFAULTS,
        }
    }

    /// The XID of the set being reassembled, if any.
    pub const fn xid(&self) -> Option<u32> {
        match self.state {
            State::Idle => None,
            _ => Some(self.xid),
        }
    }

    /// Forgets the set being reassembled.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Takes one piece: `body` is what follows the five-word prefix of an
    /// `RDMA2_CONNPROP` with XID `xid`; `more` is its `F_MORE`. A piece
    /// with `F_MORE` and another XID than the set in progress abandons
    /// that set (a new one starts); a last piece (no `F_MORE`) must have
    /// the set's XID (the caller routes others to the ordinary decoder).
    pub fn piece(&mut self, xid: u32, body: &[u8], more: bool) -> Step {
        if self.state == State::Idle || self.xid != xid {
            *self = Self::new();
            self.xid = xid;
            self.state = State::Count;
        }
        for &b in body {
            if let Err(e) = self.byte(b) {
                self.reset();
                return Step::Failed(e);
            }
        }
        if more {
            return Step::Pending;
        }
        let at = self.total;
        let done = self.state == State::Done && self.fill == 0;
        let props = self.props;
        self.reset();
        if done {
            Step::Done(props)
        } else {
            Step::Failed(err(ErrorKind::Truncated, Item::PropData, at))
        }
    }

    fn byte(&mut self, b: u8) -> Result<(), Error> {
        let at = self.total;
        if at >= MAX_SET_LEN {
            return Err(err(ErrorKind::LengthOverrun(at), Item::PropCount, at));
        }
        self.total = at.saturating_add(1);
        match self.state {
            State::Idle => Ok(()),
            State::Done => Err(err(ErrorKind::TrailingBytes(1), Item::Header, at)),
            State::Skip { left } => {
                let left = left.saturating_sub(1);
                self.state = if left == 0 {
                    self.next_element()
                } else {
                    State::Skip { left }
                };
                Ok(())
            }
            _ => {
                if let Some(slot) = self.word.get_mut(usize::from(self.fill)) {
                    *slot = b;
                }
                self.fill = self.fill.saturating_add(1);
                if self.fill < 4 {
                    return Ok(());
                }
                self.fill = 0;
                let w = u32::from_be_bytes(self.word);
                // The word started three bytes back.
                self.on_word(w, at.saturating_sub(3))
            }
        }
    }

    /// The state after an element: the next one, or the end.
    fn next_element(&mut self) -> State {
        if self.left == 0 {
            State::Done
        } else {
            State::Id
        }
    }

    fn on_word(&mut self, w: u32, at: u32) -> Result<(), Error> {
        self.state = match self.state {
            State::Count => {
                // Every element takes at least two words.
                if w > MAX_SET_LEN / 8 {
                    return Err(err(ErrorKind::CountOverrun(w), Item::PropCount, at));
                }
                self.left = w;
                self.next_element()
            }
            State::Id => {
                self.left = self.left.saturating_sub(1);
                State::Len { id: w }
            }
            State::Len { id } => {
                if w > MAX_SET_LEN {
                    return Err(err(ErrorKind::LengthOverrun(w), Item::PropData, at));
                }
                // In range: w <= MAX_SET_LEN.
                let padded = w.checked_next_multiple_of(4).unwrap_or(w);
                match id {
                    _ if w == 0 => {
                        self.props.apply(&Property::Default(id));
                        self.next_element()
                    }
                    PROPID_SBSIZ | PROPID_RBSIZ | PROPID_RSSIZ | PROPID_RCSIZ | PROPID_BRS => {
                        if w != 4 {
                            return Err(err(ErrorKind::BadPropVal(id), Item::PropData, at));
                        }
                        State::Value { id }
                    }
                    PROPID_HOSTAUTH if w < 4 => {
                        return Err(err(ErrorKind::BadPropVal(id), Item::PropData, at));
                    }
                    PROPID_HOSTAUTH => State::AuthLen { len: padded },
                    _ => State::Skip { left: padded },
                }
            }
            State::Value { id } => {
                let bytes = w.to_be_bytes();
                if let Ok(p) = Property::interpret(id, &bytes, 0) {
                    self.props.apply(&p);
                }
                self.next_element()
            }
            State::AuthLen { len } => {
                // The inner opaque<> must fill rdma_data exactly.
                let inner = w
                    .checked_next_multiple_of(4)
                    .and_then(|n| n.checked_add(4))
                    .filter(|&n| n == len);
                match inner {
                    None => {
                        return Err(err(
                            ErrorKind::BadPropVal(PROPID_HOSTAUTH),
                            Item::PropData,
                            at,
                        ))
                    }
                    Some(_) if len == 4 => self.next_element(),
                    Some(_) => State::Skip {
                        left: len.saturating_sub(4),
                    },
                }
            }
            s @ (State::Idle | State::Skip { .. } | State::Done) => s,
        };
        Ok(())
    }
}

// The self tests (host: tests/connprop.rs; module: KUnit suite
// rpcrdma2_connprop), on the host and in the module's KUnit variant.
#[cfg(any(not(CONFIG_RUST), rpcrdma2_kunit))]
pub mod selftest;
