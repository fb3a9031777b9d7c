// SPDX-License-Identifier: GPL-2.0

//! Inline thresholds and inline call sizing.
//!
//! An inline threshold is the largest whole RPC-over-RDMA message
//! (transport header plus RPC message) that one RDMA Send may carry in a
//! direction (-00 §4.3.2; RFC 8166 §3.3.2). Each connection has two:
//!
//! * the **call** (send) threshold: the smaller of our largest Send
//!   ([`Config::inline_send`]) and the peer's Receive size;
//! * the **reply** (receive) threshold: the smaller of our Receive buffer
//!   size ([`Config::inline_recv`]) and the peer's largest Send.
//!
//! The peer's sizes come from its RFC 8797 private data
//! ([`Peer::Valid`]); without valid private data RFC 8797 §5.1 says to
//! assume the version 1 default, 1024 bytes each way, and no remote
//! invalidation. On a connection that has settled on version 2, -00
//! §4.3.2 ("In the absence of an exchange of Transport Properties,
//! senders and receivers MUST assume both connection inline thresholds
//! are 4096 bytes") and §4.3.3 ("Once the negotiation exchange is
//! complete, both peers may use the default inline threshold value for
//! the transport protocol version that has been selected") raise that
//! default to 4096. While the version is being negotiated, the first
//! message "MUST NOT be larger than the version 1 default inline
//! threshold of 1024 bytes" (§4.3.3): [`PROBE_LIMIT`].
//!
//! An `RDMA2_CONNPROP` from the peer can only lower the thresholds
//! further ([`Thresholds::apply_props`]).
//!
//! The payload limits subtract the largest transport header a message
//! can carry (C client: `rpcrdma_set_max_header_sizes`, rpc_rdma.c:62-116),
//! so that "fits inline" is one comparison per RPC.

use super::config::{Config, MIN_INLINE};
use super::errno::Errno;
use super::xdr::header::Protocol;
use super::xdr::props::TransportProperties;
use super::xdr::pvtdata::{Peer, V1_DEFAULT_INLINE};
use super::xdr::{v1, v2};

/// The largest first message on a connection that probes for version 2
/// (-00 §4.3.3: the version 1 default inline threshold).
pub const PROBE_LIMIT: u32 = V1_DEFAULT_INLINE;
/// The default inline threshold of a version 2 connection (-00 §4.3.2).
pub const V2_DEFAULT_INLINE: u32 = 4096;

/// Bytes of one Read list entry: discriminator, position, segment.
const READ_ENTRY: u32 = 24;
/// Bytes of one RDMA segment: handle, length, 64-bit offset.
const SEGMENT: u32 = 16;
/// Extra header bytes of v2 over v1: `rdma_flags` and `rdma_inv_handle`.
const V2_EXTRA: u32 = 8;

/// Size in bytes of the largest transport header of a Call.
///
/// With `max_segs == 0` (the inline-only data path) this is the exact
/// `RDMA_MSG` / `RDMA2_MSG` header with three empty chunk lists: 28 or 36
/// bytes. Otherwise it is the C client's bound for a Call carrying a
/// full Read list of `max_segs` segments and a one-segment Reply chunk
/// (`rpcrdma_max_call_header_size`), plus 8 bytes for version 2.
pub const fn max_call_header(protocol: Protocol, max_segs: u32) -> u32 {
    let v1 = if max_segs == 0 {
        MIN_MSG_HDR_V1
    } else {
        // fixed words and list discriminators, the Read list, then a
        // minimal chunk: segment count, one segment, list discriminator.
        MIN_MSG_HDR_V1
            .saturating_add(max_segs.saturating_mul(READ_ENTRY))
            .saturating_add(4 + SEGMENT + 4)
    };
    with_version(protocol, v1)
}

/// Size in bytes of the largest transport header of a Reply.
///
/// With `max_segs == 0` this is the exact header of an inline reply
/// without chunks (28 or 36 bytes); otherwise the C client's bound for a
/// Reply whose Write list holds one chunk of `max_segs` segments
/// (`rpcrdma_max_reply_header_size`), plus 8 bytes for version 2.
pub const fn max_reply_header(protocol: Protocol, max_segs: u32) -> u32 {
    let v1 = if max_segs == 0 {
        MIN_MSG_HDR_V1
    } else {
        MIN_MSG_HDR_V1
            .saturating_add(4)
            .saturating_add(max_segs.saturating_mul(SEGMENT))
            .saturating_add(4)
    };
    with_version(protocol, v1)
}

/// `RPCRDMA_HDRLEN_MIN`: the v1 `RDMA_MSG` header with empty chunk lists.
const MIN_MSG_HDR_V1: u32 = 28;
const _: () = assert!(v1::MIN_MSG_HDR_LEN == 28 && v2::MIN_MSG_HDR_LEN == 36);

const fn with_version(protocol: Protocol, v1_len: u32) -> u32 {
    match protocol {
        Protocol::V1 => v1_len,
        Protocol::V2 => v1_len.saturating_add(V2_EXTRA),
    }
}

/// Which direction a size limit applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The RPC Call (our Send).
    Call,
    /// The RPC Reply (the peer's Send into our Receive buffer).
    Reply,
}

/// An RPC that does not fit the inline thresholds (and chunks are not
/// implemented yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TooBig {
    /// Which message is too large.
    pub direction: Direction,
    /// Its size in bytes (RPC message only, without transport header).
    pub len: u32,
    /// The largest RPC message that fits in that direction.
    pub limit: u32,
}

impl TooBig {
    /// `-EMSGSIZE`. `xprt_rdma_send_request` documents it as "encoding
    /// ran out of buffer space. The request was not sent. Do not try to
    /// send this message again" (transport.c:678); `call_status()` then
    /// fails the RPC and logs "RPC call returned error 90", where `-EIO`
    /// would fail it silently and `-ENOBUFS` / `-EAGAIN` would retry it
    /// forever.
    #[inline]
    pub const fn errno(&self) -> Errno {
        Errno::EMSGSIZE
    }
}

/// The inline limits of one connection, for one protocol version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thresholds {
    /// Protocol the header sizes are computed for.
    pub protocol: Protocol,
    /// Call inline threshold: the largest Send (header + RPC Call).
    pub send: u32,
    /// Reply inline threshold: the largest Send the peer may direct at
    /// us (header + RPC Reply).
    pub recv: u32,
    /// Remote invalidation is in use. Version 1: both peers set the R
    /// bit (RFC 8797 §4.1), so the responder may reply with Send With
    /// Invalidate of any of a Call's rkeys. Version 2: we accept remote
    /// invalidation, so each Call with chunks names the rkey the
    /// responder may invalidate in `rdma_inv_handle` (-00 §6.3.3.2: the
    /// request is per Call; RFC 8797's R bit is a version 1 mechanism
    /// and does not apply).
    pub remote_invalidation: bool,
    /// Largest Call header ([`max_call_header`]).
    pub max_call_header: u32,
    /// Largest Reply header ([`max_reply_header`]).
    pub max_reply_header: u32,
}

impl Thresholds {
    /// Computes the limits from our settings, the peer's private data and
    /// the connection's protocol state. `probing` caps the call threshold
    /// at [`PROBE_LIMIT`] (the first message of a connection that probes
    /// for version 2).
    pub fn new(config: &Config, peer: &Peer, protocol: Protocol, probing: bool) -> Self {
        let config = config.validated();
        let (peer_send, peer_recv, peer_r) = match *peer {
            Peer::Valid(p) => (p.send_size, p.recv_size, p.remote_invalidate),
            Peer::Absent | Peer::Invalid(_) => {
                let d = match protocol {
                    Protocol::V2 if !probing => V2_DEFAULT_INLINE,
                    Protocol::V1 | Protocol::V2 => V1_DEFAULT_INLINE,
                };
                (d, d, false)
            }
        };
        let mut send = config.inline_send.min(peer_recv);
        if probing {
            send = send.min(PROBE_LIMIT);
        }
        Thresholds {
            protocol,
            send,
            recv: config.inline_recv.min(peer_send),
            remote_invalidation: config.remote_invalidate
                && (peer_r || matches!(protocol, Protocol::V2)),
            max_call_header: max_call_header(protocol, config.max_segs),
            max_reply_header: max_reply_header(protocol, config.max_segs),
        }
    }

    /// Largest RPC Call that can be sent inline (C client:
    /// `re_max_inline_send`).
    #[inline]
    pub const fn max_inline_call(&self) -> u32 {
        self.send.saturating_sub(self.max_call_header)
    }

    /// Largest RPC Reply that can be received inline (C client:
    /// `re_max_inline_recv`).
    #[inline]
    pub const fn max_inline_reply(&self) -> u32 {
        self.recv.saturating_sub(self.max_reply_header)
    }

    /// Decides whether an RPC goes inline: `call_len` is the whole RPC
    /// Call (`rq_snd_buf.len`: head + pages + tail), `reply_buflen` the
    /// largest Reply the upper layer expects (`rq_rcv_buf.buflen`; the C
    /// client's `rpcrdma_results_inline` compares the same value).
    pub const fn fit(&self, call_len: u32, reply_buflen: u32) -> Result<(), TooBig> {
        let call_limit = self.max_inline_call();
        if call_len > call_limit {
            return Err(TooBig {
                direction: Direction::Call,
                len: call_len,
                limit: call_limit,
            });
        }
        let reply_limit = self.max_inline_reply();
        if reply_buflen > reply_limit {
            return Err(TooBig {
                direction: Direction::Reply,
                len: reply_buflen,
                limit: reply_limit,
            });
        }
        Ok(())
    }

    /// Lowers the thresholds to what an `RDMA2_CONNPROP` from the peer
    /// states (-00 §5.2.1, §5.2.2): its Receive Buffer Size caps the call
    /// threshold and its Maximum Send Size caps the reply threshold. A
    /// property set never raises a threshold above what the private data
    /// established (a property the peer leaves out has the -00 default,
    /// 4096, which may exceed the 1024 private-data default), nor below
    /// 1024 (RFC 8166 §3.3.3). Returns true if a threshold changed.
    pub fn apply_props(&mut self, props: &TransportProperties) -> bool {
        self.apply_props_over(props, None)
    }

    /// [`Self::apply_props`], except that without valid private data
    /// (`config` given) the -00 default of 4096 the thresholds started
    /// from is not a limit of the peer's: the peer's properties set the
    /// thresholds, within our configured sizes (`config`) and never
    /// below 1024. Returns true if a threshold changed.
    pub fn apply_props_over(
        &mut self,
        props: &TransportProperties,
        config: Option<&Config>,
    ) -> bool {
        let (send0, recv0) = (self.send, self.recv);
        if let Some(c) = config {
            let c = c.validated();
            self.send = c.inline_send;
            self.recv = c.inline_recv;
        }
        // Values below the protocol minimum are nonsense; do not let them
        // disable the inline path altogether.
        self.send = self.send.min(props.recv_buf_size.max(MIN_INLINE));
        self.recv = self.recv.min(props.max_send_size.max(MIN_INLINE));
        self.send != send0 || self.recv != recv0
    }
}
