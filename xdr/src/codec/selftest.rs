// SPDX-License-Identifier: GPL-2.0

//! Known-answer self tests that need nothing but `core`.
//!
//! The host runs them from `cargo test` (tests/kat.rs); the kernel module
//! wraps each entry of [`SELF_TESTS`] in a KUnit case, so the same vectors
//! run in the guest. The vectors are written from the specifications, one
//! 32-bit XDR word per element.

use core::ffi::CStr;

use super::chunk::{ChunkLists, ReadSegment, Segment};
use super::error::{ErrorKind, Item};
use super::header::{
    decode, dispatch, encode_msg, Body, Credits, Dispatch, ErrorBody, Flags, MsgKind, MsgSpec,
    Protocol,
};
use super::props::{PropSet, Property, TransportProperties};
use super::pvtdata::{self, Peer, PrivateData};
use super::{v1, v2};

/// A failed check: the source line and the expression that was false.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Line in this file.
    pub line: u32,
    /// The failed condition, as written.
    pub what: &'static str,
}

/// Result of one self test.
pub type TestResult = core::result::Result<(), Failure>;

/// A named self test.
#[derive(Clone, Copy, Debug)]
pub struct SelfTest {
    /// Test name (a valid KUnit case name).
    pub name: &'static str,
    /// The same name, NUL-terminated, for `struct kunit_case.name`.
    pub c_name: &'static CStr,
    /// The source file the test (and its failure line) is in.
    pub file: &'static str,
    /// The test.
    pub run: fn() -> TestResult,
}

/// Builds a [`SelfTest`] entry from a test function's name. Exported so
/// that every self-test table (this one, `proto`'s) shares one kit; use it
/// as [`case!`](case) with `SelfTest` and `CStr` in scope.
#[macro_export]
macro_rules! selftest_case {
    ($f:ident) => {
        SelfTest {
            name: stringify!($f),
            c_name: match CStr::from_bytes_with_nul(concat!(stringify!($f), "\0").as_bytes()) {
                Ok(c) => c,
                Err(_) => c"selftest",
            },
            file: file!(),
            run: $f,
        }
    };
}

/// Fails the running self test with the line and the condition unless
/// `$cond` holds; use it as [`check!`](check) with `Failure` in scope.
#[macro_export]
macro_rules! selftest_check {
    ($cond:expr) => {
        if !($cond) {
            return Err(Failure {
                line: line!(),
                what: stringify!($cond),
            });
        }
    };
}

// The kit under short names, by a path that is the same in the host crate
// and in the kernel module (`xdr::selftest::{case, check}`).
pub use crate::selftest_case as case;
pub use crate::selftest_check as check;

/// Runs every test of `table`; returns the number run, or the first
/// failure with its test name.
pub fn run_table(table: &[SelfTest]) -> core::result::Result<usize, (&'static str, Failure)> {
    for t in table {
        (t.run)().map_err(|f| (t.name, f))?;
    }
    Ok(table.len())
}

/// Every self test.
pub const SELF_TESTS: &[SelfTest] = &[
    case!(v2_msg_no_chunks),
    case!(v2_msg_write_reply),
    case!(v2_nomsg_long_call),
    case!(v2_credit_grant),
    case!(v2_error_bodies),
    case!(v2_connprop),
    case!(v2_rejects),
    case!(v1_msg_read_list),
    case!(v1_nomsg_and_errors),
    case!(v1_rejects),
    case!(dispatch_versions),
    case!(credit_word),
    case!(private_data),
    case!(truncation_everywhere),
];

/// Runs every self test; returns the number run, or the first failure with
/// its test name.
pub fn run_all() -> core::result::Result<usize, (&'static str, Failure)> {
    run_table(SELF_TESTS)
}

/// Writes `words` big-endian into `out`; returns the byte length.
fn wire(words: &[u32], out: &mut [u8]) -> usize {
    let mut n = 0usize;
    for (w, dst) in words.iter().zip(out.chunks_exact_mut(4)) {
        dst.copy_from_slice(&w.to_be_bytes());
        n = n.saturating_add(4);
    }
    n
}

/// True if `bytes` is exactly `words` in XDR.
fn same(bytes: &[u8], words: &[u32]) -> bool {
    bytes.len() == words.len().saturating_mul(4)
        && bytes
            .chunks_exact(4)
            .zip(words)
            .all(|(b, w)| b == w.to_be_bytes())
}

const XID: u32 = 0x1234_5678;
/// 32 credits granted, 128 outstanding at most.
const CREDIT2: u32 = 0x0080_0020;

const fn seg(handle: u32, length: u32, offset: u64) -> Segment {
    Segment {
        handle,
        length,
        offset,
    }
}

const WSEGS: [Segment; 4] = [
    seg(0x1000, 4096, 0x0000_7f00_0000_0000),
    seg(0x1001, 4096, 0x0000_7f00_0000_1000),
    seg(0x1002, 4096, 0x0000_7f00_0000_2000),
    seg(0x1003, 4096, 0x0000_7f00_0000_3000),
];
const RSEGS: [Segment; 1] = [seg(0x2000, 1024, 0x0000_7f00_1000_0000)];

/// RDMA2_MSG, three empty lists (draft -00 §6.3.2, §6.4.1).
pub const KAT_V2_MSG: [u32; 9] = [XID, 2, CREDIT2, 0, 0, 0, 0, 0, 0];

/// RDMA2_MSG, one Write chunk of four segments and a one-segment Reply chunk,
/// `rdma_inv_handle` naming the first Write segment.
#[rustfmt::skip]
pub const KAT_V2_MSG_WRITE_REPLY: [u32; 32] = [
    XID, 2, CREDIT2, 0, 0,                      // prefix: RDMA2_MSG, no flags
    0x1000,                                     // rdma_inv_handle
    0,                                          // no Read list
    1, 4,                                       // Write chunk: present, 4 segments
    0x1000, 4096, 0x7f00, 0x0000_0000,          //   handle, length, offset (hyper)
    0x1001, 4096, 0x7f00, 0x0000_1000,
    0x1002, 4096, 0x7f00, 0x0000_2000,
    0x1003, 4096, 0x7f00, 0x0000_3000,
    0,                                          // end of Write list
    1, 1, 0x2000, 1024, 0x7f00, 0x1000_0000,    // Reply chunk: 1 segment
];

/// RPC-over-RDMA v1 RDMA_MSG with one Read chunk of two segments at
/// position 0x90 (RFC 8166).
#[rustfmt::skip]
pub const KAT_V1_MSG_READ: [u32; 19] = [
    XID, 1, 128, 0,                             // xid, vers, credits, RDMA_MSG
    1, 0x90, 0x3000, 8192, 0, 0x0010_0000,      // read segment 1
    1, 0x90, 0x3001, 100, 0, 0x0010_2000,       // read segment 2, same chunk
    0,                                          // end of Read list
    0,                                          // empty Write list
    0,                                          // no Reply chunk
];

const RD: [ReadSegment; 2] = [
    ReadSegment {
        position: 0x90,
        target: seg(0x3000, 8192, 0x0010_0000),
    },
    ReadSegment {
        position: 0x90,
        target: seg(0x3001, 100, 0x0010_2000),
    },
];

fn v2_msg_no_chunks() -> TestResult {
    let mut buf = [0u8; 64];
    let spec = MsgSpec {
        xid: XID,
        credit: CREDIT2,
        ..MsgSpec::default()
    };
    let n = encode_msg(&mut buf, Protocol::V2, &spec);
    check!(n == Ok(36));
    check!(same(buf.get(..36).unwrap_or(&[]), &KAT_V2_MSG));
    check!(spec.encoded_len(Protocol::V2) == Some(36));
    // The RPC message follows; its first word is the XID again.
    let total = wire(&[XID, 0], buf.get_mut(36..).unwrap_or(&mut []));
    let h = decode(buf.get(..36usize.saturating_add(total)).unwrap_or(&[]));
    let Ok(h) = h else {
        check!(false);
        return Ok(());
    };
    check!(h.protocol == Protocol::V2 && h.xid == XID && h.credit == CREDIT2);
    check!(h.flags == Flags::NONE && h.hdr_len == 36);
    check!(
        h.credits()
            == Credits {
                granted: 32,
                max: 128
            }
    );
    let Body::Msg(m) = h.body else {
        check!(false);
        return Ok(());
    };
    check!(m.inv_handle == 0 && m.chunks.is_empty() && m.payload.len() == 8);
    // A MSG with fewer than 4 payload bytes decodes: a piece of a
    // continued message may end anywhere (-00 §4.5.2).
    for n in 36..40 {
        let h = decode(buf.get(..n).unwrap_or(&[]));
        check!(
            matches!(h, Ok(ref h) if matches!(h.body, Body::Msg(ref m) if m.payload.len() == n.saturating_sub(36)))
        );
    }
    Ok(())
}

fn v2_msg_write_reply() -> TestResult {
    let mut buf = [0u8; 256];
    let writes: [&[Segment]; 1] = [&WSEGS];
    let spec = MsgSpec {
        xid: XID,
        credit: CREDIT2,
        kind: MsgKind::Msg,
        flags: Flags::NONE,
        inv_handle: 0x1000,
        chunks: ChunkLists {
            reads: &[],
            writes: &writes,
            reply: Some(&RSEGS),
        },
    };
    let n = encode_msg(&mut buf, Protocol::V2, &spec);
    check!(n == Ok(128));
    check!(same(buf.get(..128).unwrap_or(&[]), &KAT_V2_MSG_WRITE_REPLY));
    // Too small by one byte: typed error, nothing claimed written.
    let mut small = [0u8; 127];
    let e = encode_msg(&mut small, Protocol::V2, &spec);
    check!(matches!(e, Err(e) if e.kind == ErrorKind::BufferTooSmall(128)));
    wire(&[XID], buf.get_mut(128..).unwrap_or(&mut []));
    let Ok(h) = decode(buf.get(..132).unwrap_or(&[])) else {
        check!(false);
        return Ok(());
    };
    let Body::Msg(m) = h.body else {
        check!(false);
        return Ok(());
    };
    check!(m.inv_handle == 0x1000 && m.chunks.reads.is_empty());
    check!(m.chunks.writes.len() == 1);
    let mut wl = m.chunks.writes.iter();
    let Some(w0) = wl.next() else {
        check!(false);
        return Ok(());
    };
    check!(wl.next().is_none());
    check!(w0.len() == 4 && w0.iter().eq(WSEGS.iter().copied()));
    check!(w0.total_len() == 16384);
    let Some(reply) = m.chunks.reply else {
        check!(false);
        return Ok(());
    };
    check!(reply.iter().eq(RSEGS.iter().copied()));
    Ok(())
}

fn v2_nomsg_long_call() -> TestResult {
    // Position-Zero Read chunk of two segments plus a Reply chunk.
    let reads = [
        ReadSegment {
            position: 0,
            target: seg(7, 3000, 0x10),
        },
        ReadSegment {
            position: 0,
            target: seg(8, 1000, 0x20),
        },
    ];
    #[rustfmt::skip]
    let words: [u32; 26] = [
        XID, 2, CREDIT2, 1, 0,                  // prefix: RDMA2_NOMSG
        7,                                      // rdma_inv_handle
        1, 0, 7, 3000, 0, 0x10,                 // read segment, position 0
        1, 0, 8, 1000, 0, 0x20,                 // read segment, position 0
        0,                                      // end of Read list
        0,                                      // empty Write list
        1, 1, 0x2000, 1024, 0x7f00, 0x1000_0000, // Reply chunk
    ];
    let mut buf = [0u8; 128];
    let spec = MsgSpec {
        xid: XID,
        credit: CREDIT2,
        kind: MsgKind::NoMsg,
        flags: Flags::NONE,
        inv_handle: 7,
        chunks: ChunkLists {
            reads: &reads,
            writes: &[],
            reply: Some(&RSEGS),
        },
    };
    check!(encode_msg(&mut buf, Protocol::V2, &spec) == Ok(104));
    check!(same(buf.get(..104).unwrap_or(&[]), &words));
    let Ok(h) = decode(buf.get(..104).unwrap_or(&[])) else {
        check!(false);
        return Ok(());
    };
    let Body::NoMsg(m) = h.body else {
        check!(false);
        return Ok(());
    };
    check!(m.inv_handle == 7 && m.chunks.reads.iter().eq(reads.iter().copied()));
    let mut chunks = m.chunks.reads.chunks();
    check!(
        matches!(chunks.next(), Some(c) if c.position() == 0 && c.len() == 2 && c.total_len() == 4000)
    );
    check!(chunks.next().is_none());
    // NOMSG's length is fixed: one more word is trailing garbage.
    let e = decode(buf.get(..108).unwrap_or(&[]));
    check!(matches!(e, Err(e) if e.kind == ErrorKind::TrailingBytes(4) && e.offset == 104));
    Ok(())
}

fn v2_credit_grant() -> TestResult {
    let mut buf = [0u8; 64];
    let c = Credits {
        granted: 5,
        max: 64,
    }
    .to_word();
    check!(v2::encode_credit_grant(&mut buf, c, Flags::RESPONSE) == Ok(36));
    check!(same(
        buf.get(..36).unwrap_or(&[]),
        &[0, 2, 0x0040_0005, 1, 1, 0, 0, 0, 0]
    ));
    let h = decode(buf.get(..36).unwrap_or(&[]));
    check!(
        matches!(h, Ok(h) if h.is_credit_grant() && h.xid == 0 && h.credits() == Credits { granted: 5, max: 64 })
    );
    Ok(())
}

fn v2_error_bodies() -> TestResult {
    let cases: [(ErrorBody, &[u32]); 11] = [
        (ErrorBody::Vers { low: 1, high: 2 }, &[1, 1, 2]),
        (ErrorBody::BadXdr, &[2]),
        (ErrorBody::InvalHtype, &[3]),
        (ErrorBody::InvalFlag, &[4]),
        (ErrorBody::ReadChunks { max_chunks: 0 }, &[5, 0]),
        (ErrorBody::WriteChunks { max_chunks: 3 }, &[6, 3]),
        (ErrorBody::Segments { max_segments: 16 }, &[7, 16]),
        (
            ErrorBody::WriteResource {
                chunk_index: 1,
                length_needed: 65536,
            },
            &[8, 1, 65536],
        ),
        (
            ErrorBody::ReplyResource {
                length_needed: 9000,
            },
            &[9, 9000],
        ),
        (ErrorBody::System, &[10]),
        (ErrorBody::Other(77), &[77]),
    ];
    for (body, tail) in cases {
        let mut want = [0u32; 8];
        let head = [XID, 2, CREDIT2, 4, 1];
        for (d, s) in want.iter_mut().zip(head.iter().chain(tail)) {
            *d = *s;
        }
        let nw = head.len().saturating_add(tail.len());
        let want = want.get(..nw).unwrap_or(&[]);
        let mut buf = [0u8; 64];
        let n = v2::encode_error(&mut buf, XID, CREDIT2, &body);
        check!(n == Ok(nw.saturating_mul(4)));
        let got = buf.get(..nw.saturating_mul(4)).unwrap_or(&[]);
        check!(same(got, want));
        let h = decode(got);
        check!(matches!(h, Ok(h) if h.body == Body::Error(body) && h.flags == Flags::RESPONSE));
        check!(body.code() == tail.first().copied().unwrap_or(0));
        // Known bodies have a fixed length; unknown codes are `default: void`
        // but may carry an extension's body, so extra words are accepted.
        let longer = buf
            .get(..nw.saturating_add(1).saturating_mul(4))
            .unwrap_or(&[]);
        let r = decode(longer);
        if matches!(body, ErrorBody::Other(_)) {
            check!(r.is_ok());
        } else {
            check!(matches!(r, Err(e) if e.kind == ErrorKind::TrailingBytes(4)));
        }
    }
    // A known code must not be sent as "other".
    let mut buf = [0u8; 64];
    check!(v2::encode_error(&mut buf, XID, 0, &ErrorBody::Other(3)).is_err());
    Ok(())
}

/// RDMA2_CONNPROP with every property of draft -00 §5.2 and one unknown.
#[rustfmt::skip]
pub const KAT_V2_CONNPROP: [u32; 32] = [
    0, 2, CREDIT2, 5, 0,                        // prefix: RDMA2_CONNPROP
    8,                                          // eight propvals
    1, 4, 8192,                                 // SBSIZ
    2, 4, 8192,                                 // RBSIZ
    3, 4, 1_048_576,                            // RSSIZ
    4, 4, 16,                                   // RCSIZ
    5, 4, 2,                                    // BRS = RDMA_RVREQSUP_GENL
    6, 12, 5, 0x6162_6364, 0x6500_0000,         // HOSTAUTH: opaque<> "abcde" in rdma_data
    0x4000, 5, 0x0102_0304, 0x0500_0000,        // unknown id, 5 bytes + padding
    3, 0,                                       // RSSIZ, empty data: the default
];

fn v2_connprop() -> TestResult {
    let props = [
        Property::MaxSendSize(8192),
        Property::RecvBufSize(8192),
        Property::MaxSegmentSize(1_048_576),
        Property::MaxSegmentCount(16),
        Property::ReverseRequestSupport(2),
        Property::HostAuth(b"abcde"),
        Property::Unknown {
            id: 0x4000,
            data: &[1, 2, 3, 4, 5],
        },
        Property::Default(3),
    ];
    let mut buf = [0u8; 256];
    let p = v2::Prefix {
        xid: 0,
        credit: CREDIT2,
        flags: Flags::NONE,
    };
    let n = v2::encode_connprop(&mut buf, &p, &props);
    check!(n == Ok(128));
    let got = buf.get(..128).unwrap_or(&[]);
    check!(same(got, &KAT_V2_CONNPROP));
    let Ok(h) = decode(got) else {
        check!(false);
        return Ok(());
    };
    let Body::ConnProp(set) = h.body else {
        check!(false);
        return Ok(());
    };
    check!(set.len() == 8 && set.iter().eq(props.iter().copied()));
    let v = set.values();
    check!(v.max_send_size == 8192 && v.recv_buf_size == 8192 && v.max_segment_count == 16);
    check!(v.reverse_request_support == 2);
    check!(v.max_segment_size == TransportProperties::DEFAULTS.max_segment_size);

    // A known uint32 property with 8 bytes of data: BAD_XDR (§5.1).
    let bad: [u32; 10] = [0, 2, CREDIT2, 5, 0, 1, 1, 8, 4096, 0];
    let mut b = [0u8; 64];
    let len = wire(&bad, &mut b);
    let e = decode(b.get(..len).unwrap_or(&[]));
    check!(
        matches!(e, Err(e) if e.kind == ErrorKind::BadPropVal(1) && e.offset == 32 && e.rdma2_err() == Some(v2::ERR_BAD_XDR))
    );
    // A known property with 2 bytes: too short for its typedef.
    let bad: [u32; 9] = [0, 2, CREDIT2, 5, 0, 1, 4, 2, 0x1000_0000];
    let len = wire(&bad, &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::BadPropVal(4))
    );
    // HOSTAUTH whose inner length overruns rdma_data.
    let bad: [u32; 10] = [0, 2, CREDIT2, 5, 0, 1, 6, 8, 5, 0x6162_6364];
    let len = wire(&bad, &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::BadPropVal(6))
    );
    // An unknown id with odd data is skipped, not an error.
    let ok: [u32; 9] = [0, 2, CREDIT2, 5, 0, 1, 99, 3, 0xffff_ff00];
    let len = wire(&ok, &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Ok(h) if matches!(h.body, Body::ConnProp(s) if s.values() == TransportProperties::DEFAULTS))
    );
    // F_MORE: the body is a raw piece for reassembly.
    let part: [u32; 8] = [0, 2, CREDIT2, 5, 2, 3, 1, 4];
    let len = wire(&part, &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Ok(h) if matches!(h.body, Body::ConnPropPart(p) if p.len() == 12))
    );
    // Reassembled, the pieces parse as one property set.
    check!(PropSet::parse(KAT_WORDS_PROPSET_BYTES).is_ok());
    Ok(())
}

/// A one-element property set (RBSIZ = 4096) as raw bytes.
const KAT_WORDS_PROPSET_BYTES: &[u8] = &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0x10, 0];

fn v2_rejects() -> TestResult {
    let mut b = [0u8; 128];
    // Reserved flag bit.
    let len = wire(&[XID, 2, CREDIT2, 0, 0x8000_0001, 0, 0, 0, 0, 0], &mut b);
    let e = decode(b.get(..len).unwrap_or(&[]));
    check!(
        matches!(e, Err(e) if e.kind == ErrorKind::ReservedFlags(0x8000_0000) && e.item == Item::Flags && e.offset == 16 && e.rdma2_err() == Some(v2::ERR_INVAL_FLAG))
    );
    // F_MORE on NOMSG and on ERROR.
    let len = wire(&[XID, 2, CREDIT2, 1, 2, 0, 0, 0, 0], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::MoreNotAllowed(1))
    );
    let len = wire(&[XID, 2, CREDIT2, 4, 3, 10], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::MoreNotAllowed(4))
    );
    // F_MORE with a Reply chunk.
    let len = wire(&[XID, 2, CREDIT2, 0, 2, 0, 0, 0, 1, 0, XID], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::MoreWithChunks)
    );
    // F_MORE with empty lists is fine.
    let len = wire(&[XID, 2, CREDIT2, 0, 2, 0, 0, 0, 0, XID], &mut b);
    check!(matches!(decode(b.get(..len).unwrap_or(&[])), Ok(h) if h.flags.has_more()));
    // Encoders refuse what decoders reject.
    let spec = MsgSpec {
        flags: Flags::MORE,
        chunks: ChunkLists {
            reads: &[],
            writes: &[],
            reply: Some(&RSEGS),
        },
        ..MsgSpec::default()
    };
    check!(
        matches!(encode_msg(&mut b, Protocol::V2, &spec), Err(e) if e.kind == ErrorKind::MoreWithChunks)
    );
    check!(encode_msg(
        &mut b,
        Protocol::V1,
        &MsgSpec {
            flags: Flags::MORE,
            ..MsgSpec::default()
        }
    )
    .is_err());
    // Unknown header type.
    let len = wire(&[XID, 2, CREDIT2, 2, 0], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::UnknownHtype(2) && e.offset == 12 && e.rdma2_err() == Some(v2::ERR_INVAL_HTYPE))
    );
    // Misaligned read position.
    let len = wire(
        &[XID, 2, CREDIT2, 0, 0, 0, 1, 6, 1, 2, 0, 3, 0, 0, 0, XID],
        &mut b,
    );
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::MisalignedPosition(6) && e.offset == 28)
    );
    // A segment count whose byte size overflows / overruns.
    let len = wire(
        &[XID, 2, CREDIT2, 0, 0, 0, 0, 1, 0xffff_ffff, 0, 0, XID],
        &mut b,
    );
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::CountOverrun(0xffff_ffff) && e.offset == 32)
    );
    let len = wire(&[XID, 2, CREDIT2, 0, 0, 0, 0, 0, 1, 0x1000_0000], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::CountOverrun(0x1000_0000))
    );
    // A discriminant that is neither 0 nor 1.
    let len = wire(&[XID, 2, CREDIT2, 0, 0, 0, 2, 0, 0, XID], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::BadDiscriminant(2) && e.item == Item::ReadList && e.offset == 24)
    );
    Ok(())
}

fn v1_msg_read_list() -> TestResult {
    let mut buf = [0u8; 128];
    let spec = MsgSpec {
        xid: XID,
        credit: 128,
        kind: MsgKind::Msg,
        flags: Flags::RESPONSE, // no wire representation in v1: dropped
        inv_handle: 0x3000,     // v1 has no such field: ignored
        chunks: ChunkLists {
            reads: &RD,
            writes: &[],
            reply: None,
        },
    };
    check!(encode_msg(&mut buf, Protocol::V1, &spec) == Ok(76));
    check!(same(buf.get(..76).unwrap_or(&[]), &KAT_V1_MSG_READ));
    check!(v1::encode_msg(&mut [0u8; 76], XID, 128, &spec.chunks) == Ok(76));
    let Ok(h) = decode(buf.get(..80).unwrap_or(&[])) else {
        check!(false);
        return Ok(());
    };
    check!(h.protocol == Protocol::V1 && h.xid == XID && h.credit == 128 && h.hdr_len == 76);
    let Body::Msg(m) = h.body else {
        check!(false);
        return Ok(());
    };
    check!(m.payload.len() == 4 && m.inv_handle == 0);
    check!(m.chunks.reads.iter().eq(RD.iter().copied()));
    let mut ch = m.chunks.reads.chunks();
    check!(
        matches!(ch.next(), Some(c) if c.position() == 0x90 && c.len() == 2 && c.total_len() == 8292)
    );
    check!(ch.next().is_none());
    // v1 RDMA_MSG may be followed by nothing at all (no first-word rule).
    check!(decode(buf.get(..76).unwrap_or(&[])).is_ok());
    Ok(())
}

fn v1_nomsg_and_errors() -> TestResult {
    let mut buf = [0u8; 128];
    let writes: [&[Segment]; 1] = [&WSEGS];
    let chunks = ChunkLists {
        reads: &[],
        writes: &writes,
        reply: None,
    };
    let n = v1::encode_nomsg(&mut buf, XID, 32, &chunks);
    check!(n == Ok(100));
    #[rustfmt::skip]
    let want: [u32; 25] = [
        XID, 1, 32, 1,                          // RDMA_NOMSG
        0,                                      // no Read list
        1, 4,                                   // one Write chunk of four segments
        0x1000, 4096, 0x7f00, 0x0000_0000,
        0x1001, 4096, 0x7f00, 0x0000_1000,
        0x1002, 4096, 0x7f00, 0x0000_2000,
        0x1003, 4096, 0x7f00, 0x0000_3000,
        0,                                      // end of Write list
        0,                                      // no Reply chunk
    ];
    check!(same(buf.get(..100).unwrap_or(&[]), &want));
    check!(
        matches!(decode(buf.get(..100).unwrap_or(&[])), Ok(h) if matches!(h.body, Body::NoMsg(m) if m.chunks.writes.len() == 1))
    );

    // RDMA_ERROR / ERR_VERS and ERR_CHUNK (RFC 8166).
    check!(v1::encode_error(&mut buf, XID, 1, &ErrorBody::Vers { low: 1, high: 1 }) == Ok(28));
    check!(same(buf.get(..28).unwrap_or(&[]), &[XID, 1, 1, 4, 1, 1, 1]));
    check!(
        matches!(decode(buf.get(..28).unwrap_or(&[])), Ok(h) if h.is_err_vers() && h.protocol == Protocol::V1)
    );
    check!(v1::encode_error(&mut buf, XID, 1, &ErrorBody::BadXdr) == Ok(20));
    check!(same(buf.get(..20).unwrap_or(&[]), &[XID, 1, 1, 4, 2]));
    check!(
        matches!(decode(buf.get(..20).unwrap_or(&[])), Ok(h) if h.body == Body::Error(ErrorBody::BadXdr))
    );
    check!(v1::encode_error(&mut buf, XID, 1, &ErrorBody::System).is_err());
    Ok(())
}

fn v1_rejects() -> TestResult {
    let mut b = [0u8; 64];
    // RDMA_MSGP (with align, thresh and empty lists) and RDMA_DONE.
    let len = wire(&[XID, 1, 1, 2, 0, 0, 0, 0, 0], &mut b);
    let e = decode(b.get(..len).unwrap_or(&[]));
    check!(
        matches!(e, Err(e) if e.kind == ErrorKind::ObsoleteV1Proc(2) && e.offset == 12 && e.rdma1_err() == Some(v1::ERR_CHUNK))
    );
    let len = wire(&[XID, 1, 1, 3], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::ObsoleteV1Proc(3))
    );
    // Unknown proc, unknown error code, trailing bytes after ERR_VERS.
    let len = wire(&[XID, 1, 1, 5], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::UnknownHtype(5))
    );
    let len = wire(&[XID, 1, 1, 4, 3], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::UnknownV1ErrCode(3) && e.offset == 16)
    );
    let len = wire(&[XID, 1, 1, 4, 1, 1, 1, 0], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::TrailingBytes(4) && e.offset == 28)
    );
    // Misaligned position in v1.
    let len = wire(&[XID, 1, 1, 0, 1, 2, 1, 2, 0, 3, 0, 0, 0], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::MisalignedPosition(2) && e.offset == 20)
    );
    Ok(())
}

fn dispatch_versions() -> TestResult {
    let mut b = [0u8; 64];
    // Linux svcrdma's answer to a v2 Call: v1 framing, the Call's vers (2)
    // echoed, ERR_VERS 1..1 (svc_rdma_send_error_msg()).
    let len = wire(&[XID, 2, 64, 4, 1, 1, 1], &mut b);
    let m = b.get(..len).unwrap_or(&[]);
    check!(dispatch(m) == Ok(Dispatch::V1FramedErrVers));
    check!(
        matches!(decode(m), Ok(h) if h.protocol == Protocol::V1 && h.xid == XID && h.body == Body::Error(ErrorBody::Vers { low: 1, high: 1 }))
    );
    // An RFC-conforming v1 responder sets vers 1.
    let len = wire(&[XID, 1, 64, 4, 1, 1, 1], &mut b);
    check!(dispatch(b.get(..len).unwrap_or(&[])) == Ok(Dispatch::V1));
    // A genuine 28-byte v2 error (READ_CHUNKS) stays v2.
    let len = wire(&[XID, 2, 64, 4, 1, 5, 0], &mut b);
    check!(dispatch(b.get(..len).unwrap_or(&[])) == Ok(Dispatch::V2));
    // v2 ERR_VERS is 32 bytes.
    let len = wire(&[XID, 2, 64, 4, 1, 1, 1, 2], &mut b);
    check!(
        matches!(decode(b.get(..len).unwrap_or(&[])), Ok(h) if h.protocol == Protocol::V2 && h.body == Body::Error(ErrorBody::Vers { low: 1, high: 2 }))
    );
    // Other versions.
    let len = wire(&[XID, 3, 64, 0], &mut b);
    let e = dispatch(b.get(..len).unwrap_or(&[]));
    check!(
        matches!(e, Err(e) if e.kind == ErrorKind::UnsupportedVersion(3) && e.item == Item::Vers && e.offset == 4 && e.rdma2_err() == Some(v2::ERR_VERS))
    );
    check!(
        matches!(dispatch(&[0; 15]), Err(e) if e.kind == ErrorKind::Truncated && e.offset == 12)
    );
    // Each version's own decoder refuses the other.
    let len = wire(&KAT_V1_MSG_READ, &mut b);
    check!(v2::decode(b.get(..len).unwrap_or(&[])).is_err());
    let len = wire(&KAT_V2_MSG, &mut b);
    check!(
        matches!(v1::decode(b.get(..len).unwrap_or(&[])), Err(e) if e.kind == ErrorKind::UnsupportedVersion(2))
    );
    Ok(())
}

fn credit_word() -> TestResult {
    let c = Credits::from_word(0x0080_0020);
    check!(c.granted == 32 && c.max == 128 && c.is_valid());
    check!(c.to_word() == 0x0080_0020);
    check!(Credits::from_word(0xffff_0000).to_word() == 0xffff_0000);
    // A zero low half returns nothing and is valid; a zero limit is not.
    check!(Credits::from_word(0x0001_0000).is_valid());
    check!(!Credits::from_word(0x0000_0001).is_valid());
    check!(!Credits::from_word(0).is_valid());
    Ok(())
}

fn private_data() -> TestResult {
    // RFC 8797 §4: magic, version 1, R, send 4096 -> 3, receive 8192 -> 7.
    let p = PrivateData {
        remote_invalidate: true,
        send_size: 4096,
        recv_size: 8192,
    };
    let want = [0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x07];
    check!(p.to_bytes() == Ok(want));
    check!(pvtdata::decode(&want) == Peer::Valid(p));
    // Found at an unaligned offset inside other private data, with the
    // CM's zero padding after it.
    let mut buf = [0u8; 56];
    for (d, s) in buf.iter_mut().skip(3).zip(want) {
        *d = s;
    }
    check!(pvtdata::decode(&buf) == Peer::Valid(p));
    // Extremes.
    let q = PrivateData {
        remote_invalidate: false,
        send_size: 1024,
        recv_size: 262_144,
    };
    check!(q.to_bytes() == Ok([0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 255]));
    check!(pvtdata::decode_size(255) == 262_144 && pvtdata::encode_size(1023).is_none());
    check!(pvtdata::encode_size(262_145).is_none() && pvtdata::encode_size(5000) == Some(3));
    // Reserved bits are ignored.
    check!(
        pvtdata::decode(&[0xf6, 0xab, 0x0e, 0x18, 1, 0xfe, 0, 0])
            == Peer::Valid(PrivateData::V1_DEFAULTS)
    );
    // Absent, wrong version, truncated: v1 defaults.
    let absent = pvtdata::decode(&[0u8; 32]);
    check!(absent == Peer::Absent && absent.or_v1_defaults() == PrivateData::V1_DEFAULTS);
    let badv = pvtdata::decode(&[9, 0xf6, 0xab, 0x0e, 0x18, 2, 1, 3, 3]);
    check!(
        matches!(badv, Peer::Invalid(e) if e.kind == ErrorKind::UnsupportedVersion(2) && e.offset == 5)
    );
    check!(badv.or_v1_defaults() == PrivateData::V1_DEFAULTS);
    check!(
        matches!(pvtdata::decode(&[0xf6, 0xab, 0x0e, 0x18, 1, 1, 3]), Peer::Invalid(e) if e.kind == ErrorKind::Truncated)
    );
    // A bad occurrence followed by a good one: the good one wins.
    let two = [
        0xf6, 0xab, 0x0e, 0x18, 7, 0, 0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 7,
    ];
    check!(pvtdata::decode(&two) == Peer::Valid(p));
    check!(matches!(p.encode(&mut [0u8; 7]), Err(e) if e.kind == ErrorKind::BufferTooSmall(8)));
    Ok(())
}

fn truncation_everywhere() -> TestResult {
    // Every proper prefix of a header whose length is fixed must fail
    // cleanly; so must every prefix that cuts into the chunk lists.
    let mut b = [0u8; 160];
    let len = wire(&KAT_V2_MSG_WRITE_REPLY, &mut b);
    // (An RDMA2_MSG may end right after its chunk lists: a piece of a
    // continued message carries any number of payload bytes, -00 §4.5.2.)
    for cut in 0..len {
        check!(decode(b.get(..cut).unwrap_or(&[])).is_err());
    }
    let len = len.saturating_add(wire(&[XID], b.get_mut(len..).unwrap_or(&mut [])));
    for cut in len.saturating_sub(4)..=len {
        check!(decode(b.get(..cut).unwrap_or(&[])).is_ok());
    }
    let len = wire(&KAT_V1_MSG_READ, &mut b);
    for cut in 0..len {
        check!(decode(b.get(..cut).unwrap_or(&[])).is_err());
    }
    let len = wire(&KAT_V2_CONNPROP, &mut b);
    for cut in 0..len {
        check!(decode(b.get(..cut).unwrap_or(&[])).is_err());
    }
    Ok(())
}
