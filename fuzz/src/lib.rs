// SPDX-License-Identifier: GPL-2.0

//! Properties checked by the fuzz targets (fuzz_targets/*.rs), shared with
//! the seed-corpus generator (examples/gen_corpus.rs).
//!
//! Every check panics on a violation: libFuzzer reports a panic (and an
//! overflow trap, the profile keeps overflow checks on as the kernel does)
//! as a crash and saves the input. The codec and proto crates deny panics,
//! so any panic below the check functions is a bug in them; a panic in the
//! check functions themselves is a broken property (round trip, agreement).

#![allow(clippy::missing_panics_doc)]

#[path = "../../xdr/tests/common/mod.rs"]
pub mod common;

use common::{hex, reencode, OwnedChunks};
use rpcrdma_proto::xdr::chunk::Segment;
use rpcrdma_proto::xdr::header::{self, Body, Dispatch, Header, MsgKind, MsgSpec, Protocol};
use rpcrdma_proto::xdr::props::{PropSet, Property};
use rpcrdma_proto::xdr::pvtdata::{self, Peer, PrivateData};
use rpcrdma_proto::xdr::stream::XdrWriter;
use rpcrdma_proto::xdr::{v1, v2, ChunkListsView, Flags};
use rpcrdma_proto::{
    chunks, ChunkPlan, Config, Geometry, Invalidated, Limits, Part, Reply, ReplyData, Rpc,
    Thresholds, Transport, VersionPolicy,
};

/// Reads fuzzer bytes as a stream of small structured values; reads past
/// the end give zeros, so every input is a valid description.
pub struct Bytes<'a>(pub &'a [u8]);

impl<'a> Bytes<'a> {
    /// One byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    /// A big-endian word.
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// A length-prefixed (u16, big-endian) slice, cut at the end of input.
    pub fn chunk(&mut self) -> &'a [u8] {
        let n = usize::from(u16::from_be_bytes([self.u8(), self.u8()]));
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.0)
    }
}

// ---------------------------------------------------------------------
// Codec: header::decode / dispatch / peek.
// ---------------------------------------------------------------------

fn views_consistent(c: &ChunkListsView<'_>) {
    assert_eq!(c.reads.iter().count(), c.reads.len(), "read list count");
    assert_eq!(
        c.reads.chunks().map(|k| k.len()).sum::<usize>(),
        c.reads.len(),
        "read chunks do not cover the read list"
    );
    assert!(
        c.reads.iter().all(|s| s.position % 4 == 0),
        "misaligned position accepted"
    );
    assert_eq!(c.writes.iter().count(), c.writes.len(), "write list count");
    for w in c.writes.iter().chain(c.reply) {
        assert_eq!(w.iter().count(), w.len(), "write chunk count");
        let _ = w.total_len();
    }
}

/// Any received bytes: `peek`, `dispatch` and `decode` agree, errors lie
/// within the input, views are consistent, and whatever decodes re-encodes
/// to the identical bytes (decode → encode is the identity).
pub fn check_header(input: &[u8]) {
    let p = header::peek(input);
    let d = header::dispatch(input);
    let h = header::decode(input);
    assert_eq!(p.is_ok(), input.len() >= 16, "peek: {p:?}");
    match (&d, &h) {
        (Err(a), Err(b)) => assert_eq!(a, b, "dispatch and decode fail differently"),
        (Err(a), Ok(_)) => panic!("dispatch failed ({a:?}) but decode succeeded"),
        _ => {}
    }
    // The per-version decoders agree with the dispatching one.
    if let Ok(c) = p {
        match c.vers {
            v1::VERSION => assert_eq!(v1::decode(input), h, "v1::decode vs decode"),
            v2::VERSION if d != Ok(Dispatch::V1FramedErrVers) => {
                assert_eq!(v2::decode(input), h, "v2::decode vs decode");
                if let Ok(ref h) = h {
                    let (dp, rest) = v2::decode_prefix(input).expect("prefix of a v2 header");
                    assert_eq!(
                        (dp.xid, dp.credit, dp.htype, dp.flags),
                        (h.xid, h.credit, h.body.htype(), h.flags)
                    );
                    assert_eq!(rest.len() + v2::PREFIX_LEN, input.len());
                }
            }
            _ => {}
        }
    }
    let h = match h {
        Err(e) => {
            assert!(e.offset <= input.len(), "error offset beyond input: {e:?}");
            assert!(
                e.is_decode_error(),
                "decoder returned an encoder error: {e:?}"
            );
            let _ = e.to_string();
            let _ = (e.rdma1_err(), e.rdma2_err());
            return;
        }
        Ok(h) => h,
    };
    let c = p.expect("decoded header has the common words");
    assert_eq!(
        (h.xid, h.credit, h.body.htype()),
        (c.xid, c.credit, c.htype),
        "decode vs peek"
    );
    let expect = match d {
        Ok(Dispatch::V1) | Ok(Dispatch::V1FramedErrVers) => Protocol::V1,
        Ok(Dispatch::V2) => Protocol::V2,
        Err(e) => panic!("dispatch failed ({e:?}) but decode succeeded"),
    };
    assert_eq!(h.protocol, expect, "dispatch {d:?} vs decode");
    assert!(h.hdr_len <= input.len(), "hdr_len beyond input");
    let _ = (h.credits(), h.is_err_vers(), h.is_credit_grant());
    match h.body {
        Body::Msg(m) => {
            assert_eq!(
                h.hdr_len + m.payload.len(),
                input.len(),
                "payload does not end the input"
            );
            views_consistent(&m.chunks);
        }
        Body::NoMsg(m) => views_consistent(&m.chunks),
        Body::ConnProp(s) => check_propset_view(&s),
        Body::ConnPropPart(part) => {
            assert_eq!(h.protocol, Protocol::V2);
            assert!(h.flags.has_more());
            check_propset(part);
        }
        Body::Error(e) => {
            let _ = (e.code(), e.name(Protocol::V1), e.name(Protocol::V2));
        }
    }
    let mut out = vec![0u8; input.len() + 64];
    if let Some(n) = reencode(&h, &mut out) {
        let want = match h.body {
            Body::Msg(_) => &input[..h.hdr_len],
            _ => input,
        };
        let got = &mut out[..n];
        // The v1-framed ERR_VERS keeps the peer's vers word (2); the v1
        // encoder writes 1.
        if d == Ok(Dispatch::V1FramedErrVers) {
            got[4..8].copy_from_slice(&input[4..8]);
        }
        assert!(
            got == want,
            "re-encoding differs:\n  got  {}\n  want {}",
            hex(got),
            hex(want)
        );
    }
}

// ---------------------------------------------------------------------
// Codec: transport properties.
// ---------------------------------------------------------------------

fn check_propset_view(s: &PropSet<'_>) {
    let props: Vec<Property<'_>> = s.iter().collect();
    assert_eq!(props.len(), s.len(), "propset iterates a different count");
    assert_eq!(s.is_empty(), props.is_empty());
    let _ = s.values();
    // Round trip: the elements re-encode to the bytes they came from.
    let mut out = vec![0u8; s.as_bytes().len() + 4];
    let mut w = XdrWriter::new(&mut out);
    PropSet::encode(&mut w, &props).expect("a decoded property set re-encodes");
    let n = w.finish();
    assert_eq!(n, s.as_bytes().len() + 4, "re-encoded property set length");
    assert!(
        out[4..n] == *s.as_bytes(),
        "property set re-encodes differently"
    );
    assert_eq!(out[..4], (props.len() as u32).to_be_bytes());
}

/// `PropSet::parse` of any bytes; an accepted set re-encodes to the input.
pub fn check_propset(input: &[u8]) {
    match PropSet::parse(input) {
        Ok(s) => {
            check_propset_view(&s);
            assert_eq!(s.as_bytes(), &input[4..], "parse must consume the input");
        }
        Err(e) => {
            assert!(e.offset <= input.len(), "error offset beyond input: {e:?}");
            assert!(e.is_decode_error());
        }
    }
}

// ---------------------------------------------------------------------
// Codec: RFC 8797 private data.
// ---------------------------------------------------------------------

/// `pvtdata::decode` (search) and `PrivateData::decode_at` of any bytes;
/// accepted private data re-encodes to the input's octets (reserved flag
/// bits aside: they are ignored on receipt).
pub fn check_pvtdata(input: &[u8]) {
    let magic = pvtdata::FORMAT_ID.to_be_bytes();
    let first = input.windows(4).position(|w| w == magic);
    match pvtdata::decode(input) {
        Peer::Valid(p) => {
            let b = p.to_bytes().expect("valid private data re-encodes");
            // The first occurrence of the identifier that parses.
            let at = (0..input.len())
                .find(|&i| PrivateData::decode_at(&input[i..]).is_ok())
                .expect("some occurrence parses");
            let w = &input[at..at + 8];
            assert!(
                w[..5] == b[..5] && w[6..] == b[6..] && (w[5] & 1) == (b[5] & 1),
                "private data {p:?} re-encodes as {} at {at}, input {}",
                hex(&b),
                hex(input)
            );
            assert!(first.is_some_and(|f| f <= at));
            assert_eq!(PrivateData::decode_at(&b), Ok(p), "encode → decode");
        }
        Peer::Invalid(e) => {
            assert!(e.offset <= input.len(), "error offset beyond input: {e:?}");
            assert!(
                first.is_some(),
                "invalid private data without an identifier"
            );
        }
        Peer::Absent => assert!(first.is_none(), "identifier present but Absent"),
    }
    if let Ok(p) = PrivateData::decode_at(input) {
        assert_eq!(PrivateData::decode_at(&p.to_bytes().unwrap()), Ok(p));
    }
}

// ---------------------------------------------------------------------
// proto: chunk plans and ChunkPlan::check_reply.
// ---------------------------------------------------------------------

/// The segment the (simulated) registration of range `i` returns.
pub fn segment_for(i: usize, len: u32) -> Segment {
    Segment {
        handle: 0x5e60_0000 | i as u32,
        length: len,
        offset: 0x0001_0000_0000 * (i as u64 + 1),
    }
}

/// An RPC, thresholds and limits described by the first bytes of the
/// input.
pub struct PlanInput {
    /// The RPC.
    pub rpc: Rpc,
    /// Inline thresholds.
    pub th: Thresholds,
    /// Device limits.
    pub limits: Limits,
}

/// Length of the plan description [`plan_input`] reads.
pub const PLAN_INPUT_LEN: usize = 4 + 4 * 11;

/// Reads a [`PlanInput`] ([`PLAN_INPUT_LEN`] bytes).
pub fn plan_input(b: &mut Bytes<'_>) -> PlanInput {
    let flags = b.u8();
    let max_segs = u32::from(b.u8());
    let page_shift = 12 + u32::from(b.u8() % 5);
    let max_mr_pages = u32::from(b.u8());
    let mut geo = || Geometry {
        head: b.u32(),
        page_base: b.u32(),
        page_len: b.u32(),
        tail: b.u32(),
    };
    let call = geo();
    let reply = geo();
    let reply_buflen = b.u32();
    let inline_send = b.u32();
    let inline_recv = b.u32();
    let config = Config {
        policy: VersionPolicy::TryV2,
        max_requests: 32,
        bc_requests: 0,
        inline_send,
        inline_recv,
        remote_invalidate: flags & 0x20 != 0,
        max_segs,
        cont_reply_pieces: 0,
    };
    let protocol = if flags & 1 != 0 {
        Protocol::V2
    } else {
        Protocol::V1
    };
    let peer = if flags & 0x40 != 0 {
        Peer::Valid(PrivateData {
            remote_invalidate: true,
            send_size: config.validated().inline_recv,
            recv_size: config.validated().inline_send,
        })
    } else {
        Peer::Absent
    };
    let th = Thresholds::new(&config, &peer, protocol, flags & 0x80 != 0);
    let mut limits = Limits::new(&config, 1 << page_shift, max_mr_pages);
    limits.write_pad = flags & 0x10 != 0;
    // v2: a Reply continued in place of a Reply chunk, up to a bound
    // taken from bytes already read (the input format is unchanged).
    if protocol == Protocol::V2 {
        limits.cont_reply = inline_send.rotate_left(16);
    }
    PlanInput {
        rpc: Rpc {
            call,
            call_ddp: flags & 2 != 0,
            reply,
            reply_buflen,
            reply_ddp: flags & 4 != 0,
            ddp_allowed: flags & 8 != 0,
        },
        th,
        limits,
    }
}

/// The bytes [`plan_input`] reads back as this description (for seeds).
#[allow(clippy::too_many_arguments)]
pub fn plan_bytes(
    flags: u8,
    max_segs: u8,
    page_shift: u8,
    max_mr_pages: u8,
    call: Geometry,
    reply: Geometry,
    reply_buflen: u32,
    inline: (u32, u32),
) -> Vec<u8> {
    let mut v = vec![flags, max_segs, page_shift.saturating_sub(12), max_mr_pages];
    for g in [call, reply] {
        for w in [g.head, g.page_base, g.page_len, g.tail] {
            v.extend(w.to_be_bytes());
        }
    }
    for w in [reply_buflen, inline.0, inline.1] {
        v.extend(w.to_be_bytes());
    }
    assert_eq!(v.len(), PLAN_INPUT_LEN);
    v
}

/// A reply a well-behaved responder sends for `plan` (registered as
/// `segs`): `fill` of each Write / Reply chunk segment written, the RPC
/// Reply message inline as far as the form says (for seeds).
pub fn good_reply(
    plan: &ChunkPlan,
    segs: &[Segment],
    protocol: Protocol,
    xid: u32,
    fill: u32,
    inline_len: usize,
) -> Vec<u8> {
    let (r, w) = (plan.read_ranges().len(), plan.write_ranges().len());
    let cut = |s: &[Segment]| -> Vec<Segment> {
        let mut left = fill;
        s.iter()
            .map(|g| {
                let n = g.length.min(left);
                left -= n;
                Segment { length: n, ..*g }
            })
            .collect()
    };
    let write = cut(&segs[r..r + w]);
    let reply = cut(&segs[r + w..]);
    let writes: Vec<&[Segment]> = if write.is_empty() {
        vec![]
    } else {
        vec![&write]
    };
    let long = !reply.is_empty() && fill > 0;
    let spec = MsgSpec {
        xid,
        credit: if protocol == Protocol::V2 {
            0x0020_0001
        } else {
            32
        },
        kind: if long { MsgKind::NoMsg } else { MsgKind::Msg },
        flags: if protocol == Protocol::V2 {
            Flags::RESPONSE
        } else {
            Flags::NONE
        },
        inv_handle: 0,
        chunks: rpcrdma_proto::xdr::ChunkLists {
            reads: &[],
            writes: &writes,
            reply: if long { Some(&reply) } else { None },
        },
    };
    let mut buf = vec![0u8; 4096 + inline_len];
    let n = header::encode_msg(&mut buf, protocol, &spec).expect("seed reply encodes");
    buf.truncate(n);
    if !long {
        buf.extend(xid.to_be_bytes());
        buf.extend(1u32.to_be_bytes());
        buf.extend((0..inline_len).map(|i| i as u8));
    }
    buf
}

/// Registers a plan's ranges (simulated) and checks the Call header built
/// from them: it decodes back to the same chunk lists (encode → decode).
pub fn register(plan: &ChunkPlan, protocol: Protocol, remote_inv: bool) -> Vec<Segment> {
    let segs: Vec<Segment> = plan
        .ranges()
        .iter()
        .enumerate()
        .map(|(i, r)| segment_for(i, r.len))
        .collect();
    let cc = plan
        .chunk_lists(&segs, remote_inv)
        .expect("the plan's own segments build chunk lists");
    let spec = MsgSpec {
        xid: 0x1234_5678,
        credit: 1,
        kind: plan.kind(),
        flags: Flags::NONE,
        inv_handle: cc.inv_handle(),
        chunks: cc.lists(),
    };
    let mut buf = vec![0u8; 4096];
    let n = header::encode_msg(&mut buf, protocol, &spec).expect("planned Call header encodes");
    assert_eq!(n as u32, plan.header_len(), "plan's header length is exact");
    // An RDMA_MSG carries at least the RPC header's XID and msg_type.
    let end = if plan.kind() == MsgKind::Msg {
        n + 8
    } else {
        n
    };
    buf[n..n + 4].copy_from_slice(&spec.xid.to_be_bytes());
    let h = header::decode(&buf[..end]).expect("planned Call header decodes");
    let (chunks, inv) = match h.body {
        Body::Msg(m) => (m.chunks, m.inv_handle),
        Body::NoMsg(m) => (m.chunks, m.inv_handle),
        b => panic!("Call header decodes as {b:?}"),
    };
    assert_eq!(
        inv,
        if protocol == Protocol::V2 {
            cc.inv_handle()
        } else {
            0
        }
    );
    let lists = cc.lists();
    let want = OwnedChunks {
        reads: lists.reads.to_vec(),
        writes: lists.writes.iter().map(|w| w.to_vec()).collect(),
        reply: lists.reply.map(|r| r.to_vec()),
    };
    assert_eq!(
        OwnedChunks::from_view(&chunks),
        want,
        "Call chunk lists round trip"
    );
    for (i, (s, r)) in segs.iter().zip(plan.ranges()).enumerate() {
        let want = if r.part == Part::WritePad {
            Invalidated::WritePad
        } else {
            Invalidated::Mr { index: i }
        };
        assert_eq!(plan.invalidated(&segs, s.handle), want);
    }
    assert_eq!(plan.invalidated(&segs, 0x0bad_0bad), Invalidated::NotOurs);
    segs
}

/// Checks a reply header against a plan and its registered segments; the
/// result must be consistent with what was registered and with the
/// message.
pub fn check_reply(plan: &ChunkPlan, segs: &[Segment], h: &Header<'_>) {
    let total = |rs: &[rpcrdma_proto::Range]| rs.iter().map(|r| u64::from(r.len)).sum::<u64>();
    match plan.check_reply(segs, h) {
        Err(e) => {
            let _ = (e.errno(), e.is_bad_reply());
        }
        Ok(data) => {
            let (chunks, payload) = match h.body {
                Body::Msg(m) => (m.chunks, Some(m.payload)),
                Body::NoMsg(m) => (m.chunks, None),
                b => panic!("check_reply accepted {b:?}"),
            };
            assert!(chunks.reads.is_empty(), "reply with a Read list accepted");
            if h.protocol == Protocol::V2 {
                assert!(h.flags.is_response() && !h.flags.has_more());
            }
            match data {
                ReplyData::Inline { payload: p } => {
                    assert_eq!(Some(p), payload);
                    assert!(chunks.writes.iter().all(|w| w.total_len() == 0));
                }
                ReplyData::Written {
                    head,
                    written,
                    pad,
                    tail,
                    rpc_len,
                } => {
                    let p = payload.expect("Written from RDMA_MSG");
                    assert!(written > 0);
                    assert!(u64::from(written) <= total(plan.write_ranges()), "overrun");
                    assert!(pad < 4 && (u64::from(written) + u64::from(pad)) % 4 == 0);
                    assert_eq!(head.len() + tail.len(), p.len());
                    assert!([head, tail].concat() == p);
                    assert_eq!(
                        u64::from(rpc_len),
                        (p.len() as u64 + u64::from(written) + u64::from(pad))
                            .min(u64::from(u32::MAX))
                    );
                }
                ReplyData::Long { len } => {
                    assert!(payload.is_none(), "Long reply from RDMA_MSG");
                    assert!(
                        len > 0 && u64::from(len) <= total(plan.reply_ranges()),
                        "overrun"
                    );
                }
            }
        }
    }
}

/// The `chunk_reply` target: a plan from the input's first bytes, then
/// the rest is a reply header to check against it.
pub fn check_chunk_reply(input: &[u8]) {
    let mut b = Bytes(input);
    let pi = plan_input(&mut b);
    let msg = b.rest();
    let Ok(plan) = chunks::plan(&pi.rpc, &pi.th, &pi.limits) else {
        // Still fuzz the codec with the message.
        let _ = header::decode(msg);
        return;
    };
    let _ = (
        plan.call(),
        plan.reply(),
        plan.send_layout(),
        plan.is_inline(),
    );
    assert!(
        plan.read_ranges().len() + plan.write_ranges().len() + plan.reply_ranges().len()
            == plan.ranges().len()
    );
    let segs = register(&plan, pi.th.protocol, pi.th.remote_invalidation);
    if let Ok(h) = header::decode(msg) {
        check_reply(&plan, &segs, &h);
    }
}

// ---------------------------------------------------------------------
// proto: Transport::receive over event sequences.
// ---------------------------------------------------------------------

/// The `transport` target: a configuration, then a sequence of events
/// (connect, established with the peer's private data, disconnects, Calls
/// with and without chunks, received messages). Invariants of
/// rpcrdma/proto/tests/fuzz.rs hold after every event, and a chunked
/// reply to one of our RPCs goes through `ChunkPlan::check_reply`.
pub fn check_transport(input: &[u8]) {
    let mut b = Bytes(input);
    let flags = b.u8();
    let cfg = Config {
        policy: if flags & 1 != 0 {
            VersionPolicy::ForceV1
        } else {
            VersionPolicy::TryV2
        },
        max_requests: u32::from(b.u8()),
        bc_requests: u32::from(b.u8()),
        inline_send: u32::from(b.u8()) << 10,
        inline_recv: u32::from(b.u8()) << 10,
        remote_invalidate: flags & 2 != 0,
        max_segs: u32::from(b.u8()),
        cont_reply_pieces: if flags & 4 != 0 { 0 } else { u32::from(b.u8()) },
    };
    let mut t = Transport::new(cfg);
    let max = t.config().max_requests;
    let depth = t.config().recv_queue_depth();
    let mut window = 1u32;
    let mut v1_only = false;
    let mut rpcs: Vec<(u32, ChunkPlan, Vec<Segment>)> = Vec::new();
    let mut steps = 0;
    while !b.0.is_empty() && steps < 64 {
        steps += 1;
        match b.u8() % 8 {
            0 => {
                let p = t.connect();
                window = p.credits.credits;
                assert_eq!(window, 1);
                rpcs.clear();
            }
            1 => {
                let pd = b.chunk();
                let th = t.established(pvtdata::decode(pd));
                assert!(th.send >= 1024 && th.recv >= 1024);
            }
            2 => {
                let _ = t.disconnected();
                rpcs.clear();
            }
            3 => match b.u8() % 3 {
                0 => t.receive_flushed(),
                1 => t.receives_unposted(u32::from(b.u8() % 20)),
                _ => t.set_max_segs(u32::from(b.u8())),
            },
            4 => {
                let xid = b.u32();
                let len = b.u32() % 70000;
                if let Ok(plan) = t.prepare_call(xid, len, b.u32() % 70000) {
                    assert!(plan.hdr_len + len <= t.thresholds().send);
                    if plan.probe {
                        assert!(plan.hdr_len + len <= 1024);
                    }
                    let _ = plan.msg_spec(xid);
                }
            }
            5 => {
                let xid = b.u32();
                let pi = plan_input(&mut b);
                let page_size = pi.limits.page_size;
                if let Ok((cp, plan)) =
                    t.prepare_rpc(xid, &pi.rpc, page_size, pi.limits.max_mr_pages)
                {
                    let segs = register(&plan, cp.protocol, t.thresholds().remote_invalidation);
                    if rpcs.len() >= 8 {
                        rpcs.remove(0);
                    }
                    rpcs.push((xid, plan, segs));
                }
            }
            _ => {
                let m = b.chunk();
                let o = t.receive(m);
                if let Some(u) = o.credits {
                    assert_ne!(u.credits, window);
                    window = u.credits;
                }
                let _ = (o.reply.answers_call(), o.reply.cause());
                match o.reply {
                    Reply::Deliver { xid, payload } => {
                        assert_eq!(payload.get(..4), Some(&xid.to_be_bytes()[..]));
                    }
                    Reply::Chunked { xid, header } => {
                        assert_eq!(header.xid, xid);
                        if let Some((_, plan, segs)) = rpcs.iter().find(|r| r.0 == xid) {
                            check_reply(plan, segs, &header);
                        }
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(window, t.credits().window());
        assert!((1..=max).contains(&window));
        assert!(t.credits().posted() <= depth);
        assert!(!v1_only || t.memory().v1_only(), "v1-only memory reverted");
        v1_only = t.memory().v1_only();
        let _ = (t.stats(), t.phase(), t.protocol());
    }
}
