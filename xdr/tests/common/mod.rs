// SPDX-License-Identifier: GPL-2.0

//! Shared test support: a small deterministic PRNG, generators of random
//! (valid) header descriptions, owned copies of decoded views, and the
//! re-encoder used for canonical-form checks. Used by the property tests,
//! the negative tests and the fuzzer (examples/fuzz.rs includes this file).

#![allow(dead_code)]

use rpcrdma_xdr::chunk::{ChunkLists, ChunkListsView, ReadSegment, Segment};
use rpcrdma_xdr::header::{Body, ErrorBody, Flags, Header, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::props::Property;
use rpcrdma_xdr::pvtdata::PrivateData;
use rpcrdma_xdr::{v1, v2};

/// SplitMix64: tiny, fast, good enough for test generation.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn u32(&mut self) -> u32 {
        (self.u64() >> 32) as u32
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.u64() % n as u64) as usize
    }

    pub fn bool(&mut self) -> bool {
        self.u64() & 1 == 1
    }

    /// True with probability 1/n.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// A u32 biased towards boundary values.
    pub fn interesting_u32(&mut self) -> u32 {
        const V: [u32; 14] = [
            0,
            1,
            2,
            3,
            4,
            5,
            6,
            10,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_fffe,
            0xffff_ffff,
            0x1000_0000,
            0x0fff_ffff,
        ];
        if self.bool() {
            V[self.below(V.len())]
        } else {
            self.u32()
        }
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.u64() as u8).collect()
    }
}

pub fn gen_segment(r: &mut Rng) -> Segment {
    Segment {
        handle: r.u32(),
        length: r.u32(),
        offset: r.u64(),
    }
}

/// Owned chunk lists, convertible to the encoder's borrowed description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedChunks {
    pub reads: Vec<ReadSegment>,
    pub writes: Vec<Vec<Segment>>,
    pub reply: Option<Vec<Segment>>,
}

impl OwnedChunks {
    pub fn gen(r: &mut Rng, max: usize) -> Self {
        let mut reads = Vec::new();
        let nchunks = r.below(max + 1);
        for _ in 0..nchunks {
            let position = (r.u32() & !3) >> r.below(32);
            let position = position & !3;
            for _ in 0..1 + r.below(max) {
                reads.push(ReadSegment {
                    position,
                    target: gen_segment(r),
                });
            }
        }
        let writes = (0..r.below(max + 1))
            .map(|_| (0..r.below(max + 1)).map(|_| gen_segment(r)).collect())
            .collect();
        let reply = r
            .bool()
            .then(|| (0..r.below(max + 1)).map(|_| gen_segment(r)).collect());
        Self {
            reads,
            writes,
            reply,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.reply.is_none()
    }

    pub fn from_view(v: &ChunkListsView<'_>) -> Self {
        Self {
            reads: v.reads.iter().collect(),
            writes: v.writes.iter().map(|c| c.iter().collect()).collect(),
            reply: v.reply.map(|c| c.iter().collect()),
        }
    }

    /// Calls `f` with the borrowed description of these lists.
    pub fn with<R>(&self, f: impl FnOnce(&ChunkLists<'_>) -> R) -> R {
        let writes: Vec<&[Segment]> = self.writes.iter().map(|w| w.as_slice()).collect();
        let lists = ChunkLists {
            reads: &self.reads,
            writes: &writes,
            reply: self.reply.as_deref(),
        };
        f(&lists)
    }

    pub fn encoded_len(&self) -> usize {
        12 + 24 * self.reads.len()
            + self.writes.iter().map(|w| 8 + 16 * w.len()).sum::<usize>()
            + self.reply.as_ref().map_or(0, |r| 4 + 16 * r.len())
    }
}

/// An owned, encodable RPC message header description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedMsg {
    pub protocol: Protocol,
    pub xid: u32,
    pub credit: u32,
    pub kind: MsgKind,
    pub flags: Flags,
    pub inv_handle: u32,
    pub chunks: OwnedChunks,
}

impl OwnedMsg {
    /// A random header that the encoder must accept.
    pub fn gen(r: &mut Rng, max: usize) -> Self {
        let protocol = if r.bool() { Protocol::V1 } else { Protocol::V2 };
        let kind = if r.bool() {
            MsgKind::Msg
        } else {
            MsgKind::NoMsg
        };
        let mut chunks = OwnedChunks::gen(r, max);
        let mut flags = Flags::NONE;
        let mut inv_handle = 0;
        if protocol == Protocol::V2 {
            if r.bool() {
                flags = flags.with(Flags::RESPONSE);
            }
            if kind == MsgKind::Msg && r.one_in(4) {
                flags = flags.with(Flags::MORE);
                chunks = OwnedChunks::default();
            }
            inv_handle = r.u32();
        }
        Self {
            protocol,
            xid: r.u32(),
            credit: r.u32(),
            kind,
            flags,
            inv_handle,
            chunks,
        }
    }

    pub fn encode(&self, buf: &mut [u8]) -> rpcrdma_xdr::Result<usize> {
        self.chunks.with(|c| {
            let spec = MsgSpec {
                xid: self.xid,
                credit: self.credit,
                kind: self.kind,
                flags: self.flags,
                inv_handle: self.inv_handle,
                chunks: *c,
            };
            rpcrdma_xdr::encode_msg(buf, self.protocol, &spec)
        })
    }

    pub fn header_len(&self) -> usize {
        let fixed = match self.protocol {
            Protocol::V1 => 16,
            Protocol::V2 => 24,
        };
        fixed + self.chunks.encoded_len()
    }
}

pub fn gen_error_body(r: &mut Rng, protocol: Protocol) -> ErrorBody {
    if protocol == Protocol::V1 {
        return if r.bool() {
            ErrorBody::Vers {
                low: r.interesting_u32(),
                high: r.interesting_u32(),
            }
        } else {
            ErrorBody::BadXdr
        };
    }
    match r.below(11) {
        0 => ErrorBody::Vers {
            low: r.u32(),
            high: r.u32(),
        },
        1 => ErrorBody::BadXdr,
        2 => ErrorBody::InvalHtype,
        3 => ErrorBody::InvalFlag,
        4 => ErrorBody::ReadChunks {
            max_chunks: r.u32(),
        },
        5 => ErrorBody::WriteChunks {
            max_chunks: r.u32(),
        },
        6 => ErrorBody::Segments {
            max_segments: r.u32(),
        },
        7 => ErrorBody::WriteResource {
            chunk_index: r.u32(),
            length_needed: r.u32(),
        },
        8 => ErrorBody::ReplyResource {
            length_needed: r.u32(),
        },
        9 => ErrorBody::System,
        _ => loop {
            let c = r.interesting_u32();
            if !(1..=10).contains(&c) {
                break ErrorBody::Other(c);
            }
        },
    }
}

/// An owned transport property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedProp {
    U32(u32, u32),
    HostAuth(Vec<u8>),
    Default(u32),
    Unknown(u32, Vec<u8>),
}

impl OwnedProp {
    pub fn gen(r: &mut Rng) -> Self {
        match r.below(4) {
            0 => OwnedProp::U32(1 + r.below(5) as u32, r.u32()),
            1 => {
                let n = r.below(40);
                OwnedProp::HostAuth(r.bytes(n))
            }
            2 => OwnedProp::Default(r.interesting_u32()),
            _ => loop {
                let id = r.interesting_u32();
                if !(1..=6).contains(&id) {
                    let n = 1 + r.below(20);
                    break OwnedProp::Unknown(id, r.bytes(n));
                }
            },
        }
    }

    pub fn as_prop(&self) -> Property<'_> {
        match self {
            OwnedProp::U32(1, v) => Property::MaxSendSize(*v),
            OwnedProp::U32(2, v) => Property::RecvBufSize(*v),
            OwnedProp::U32(3, v) => Property::MaxSegmentSize(*v),
            OwnedProp::U32(4, v) => Property::MaxSegmentCount(*v),
            OwnedProp::U32(_, v) => Property::ReverseRequestSupport(*v),
            OwnedProp::HostAuth(a) => Property::HostAuth(a),
            OwnedProp::Default(id) => Property::Default(*id),
            OwnedProp::Unknown(id, d) => Property::Unknown { id: *id, data: d },
        }
    }
}

pub fn gen_private_data(r: &mut Rng) -> PrivateData {
    PrivateData {
        remote_invalidate: r.bool(),
        send_size: 1024 * (1 + r.below(256) as u32),
        recv_size: 1024 * (1 + r.below(256) as u32),
    }
}

/// Re-encodes a decoded header; returns the bytes that must equal the
/// input's (the header, for a message with payload; everything otherwise).
/// `None` where the format is not canonical (unknown error codes carry
/// undecoded bytes; continued CONNPROP pieces are opaque).
pub fn reencode(h: &Header<'_>, out: &mut [u8]) -> Option<usize> {
    let chunks_of = |v: &ChunkListsView<'_>| OwnedChunks::from_view(v);
    let msg = |kind, inv_handle, chunks: OwnedChunks| OwnedMsg {
        protocol: h.protocol,
        xid: h.xid,
        credit: h.credit,
        kind,
        flags: h.flags,
        inv_handle,
        chunks,
    };
    let r = match h.body {
        Body::Msg(m) => msg(MsgKind::Msg, m.inv_handle, chunks_of(&m.chunks)).encode(out),
        Body::NoMsg(m) => msg(MsgKind::NoMsg, m.inv_handle, chunks_of(&m.chunks)).encode(out),
        Body::Error(ErrorBody::Other(_)) => return None,
        Body::Error(e) => match h.protocol {
            Protocol::V1 => v1::encode_error(out, h.xid, h.credit, &e),
            Protocol::V2 => v2::encode_error(out, h.xid, h.credit, &e),
        },
        Body::ConnProp(set) => {
            let props: Vec<Property<'_>> = set.iter().collect();
            let p = v2::Prefix {
                xid: h.xid,
                credit: h.credit,
                flags: h.flags,
            };
            v2::encode_connprop(out, &p, &props)
        }
        Body::ConnPropPart(_) => return None,
    };
    let n = r.expect("re-encoding a decoded header must succeed");
    // The decoder accepts RDMA2_ERROR without F_RESPONSE (draft -00 says the
    // sender MUST set it; dropping a peer's error report over it helps no
    // one), while the encoder always sets it: carry the received flags.
    if let (Protocol::V2, Body::Error(_)) = (h.protocol, h.body) {
        out[16..20].copy_from_slice(&h.flags.bits().to_be_bytes());
    }
    Some(n)
}

pub fn hex(b: &[u8]) -> String {
    b.chunks(4)
        .map(|w| w.iter().map(|x| format!("{x:02x}")).collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}
