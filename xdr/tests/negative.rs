// SPDX-License-Identifier: GPL-2.0

//! Negative tests: every rejection the codec promises, with the error kind,
//! the item and the byte offset it reports.

mod common;

use common::*;
use rpcrdma_xdr::header::{Body, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::props::Property;
use rpcrdma_xdr::pvtdata::{self, Peer, PrivateData};
use rpcrdma_xdr::stream::{XdrReader, XdrWriter};
use rpcrdma_xdr::{
    decode, dispatch, encode_msg, v1, v2, ChunkLists, ErrorKind, Item, ReadSegment, Segment,
};

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn err(b: &[u8]) -> rpcrdma_xdr::Error {
    decode(b).expect_err(&format!("should not decode: {}", hex(b)))
}

const X: u32 = 0xabcd_0001;

#[test]
fn every_truncation_of_a_valid_header_fails() {
    let mut r = Rng::new(11);
    let mut buf = vec![0u8; 4096];
    for _ in 0..1000 {
        let m = OwnedMsg::gen(&mut r, 4);
        let n = m.encode(&mut buf).unwrap();
        // Cutting into the header always fails. (v1 RDMA_MSG may have an
        // empty payload, so cutting exactly at the header end is fine.)
        for cut in 0..n {
            let e = err(&buf[..cut]);
            assert!(e.offset <= cut, "{e:?} beyond cut {cut}");
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::Truncated | ErrorKind::CountOverrun(_) | ErrorKind::LengthOverrun(_)
                ) || (cut < 16 && e.kind == ErrorKind::Truncated),
                "{e:?}"
            );
        }
    }
}

#[test]
fn trailing_garbage_where_length_is_fixed() {
    let mut buf = [0u8; 64];
    // v1 NOMSG, v1 ERR_VERS, v1 ERR_CHUNK.
    let n = v1::encode_nomsg(&mut buf, X, 1, &ChunkLists::EMPTY).unwrap();
    let e = err(&buf[..n + 4]);
    assert_eq!(
        (e.kind, e.item, e.offset),
        (ErrorKind::TrailingBytes(4), Item::Header, n)
    );
    for body in [
        rpcrdma_xdr::ErrorBody::Vers { low: 1, high: 1 },
        rpcrdma_xdr::ErrorBody::BadXdr,
    ] {
        let n = v1::encode_error(&mut buf, X, 1, &body).unwrap();
        let e = err(&buf[..n + 1]);
        assert_eq!((e.kind, e.offset), (ErrorKind::TrailingBytes(1), n));
    }
    // v2 NOMSG and CONNPROP.
    let p = v2::Prefix {
        xid: X,
        credit: 0x10001,
        flags: Flags::NONE,
    };
    let n = v2::encode_nomsg(&mut buf, &p, 0, &ChunkLists::EMPTY).unwrap();
    assert_eq!(err(&buf[..n + 8]).kind, ErrorKind::TrailingBytes(8));
    let n = v2::encode_connprop(&mut buf, &p, &[Property::MaxSendSize(9000)]).unwrap();
    assert_eq!(err(&buf[..n + 4]).kind, ErrorKind::TrailingBytes(4));
    // But a MSG is followed by its payload, whatever its length.
    let n = v2::encode_msg(&mut buf, &p, 0, &ChunkLists::EMPTY).unwrap();
    assert!(decode(&buf[..n + 28]).is_ok());
}

#[test]
fn lengths_that_overrun_the_buffer() {
    // Write chunk count larger than the rest of the buffer.
    let b = words(&[X, 1, 1, 0, 0, 1, 3, 1, 2, 0, 0, 0, 0]);
    let e = err(&b);
    assert_eq!(
        (e.kind, e.item, e.offset),
        (ErrorKind::CountOverrun(3), Item::SegmentCount, 24)
    );
    // Reply chunk count.
    let b = words(&[X, 1, 1, 1, 0, 0, 1, 2, 0, 0, 0, 0]);
    assert_eq!(err(&b).kind, ErrorKind::CountOverrun(2));
    // Property data length.
    let b = words(&[0, 2, 1, 5, 0, 1, 9, 0x100, 0]);
    let e = err(&b);
    assert_eq!(
        (e.kind, e.item, e.offset),
        (ErrorKind::LengthOverrun(0x100), Item::PropData, 28)
    );
    let b = words(&[0, 2, 1, 5, 0, 1, 9, 0xffff_fffd]);
    assert_eq!(err(&b).kind, ErrorKind::LengthOverrun(0xffff_fffd));
    // Property count.
    let b = words(&[0, 2, 1, 5, 0, 0x2000_0000, 1, 4, 5]);
    assert_eq!(err(&b).kind, ErrorKind::CountOverrun(0x2000_0000));
}

#[test]
fn segment_counts_that_would_overflow() {
    // Counts whose byte size (count * 16) overflows u32, and the largest.
    for count in [0x1000_0000u32, 0x1000_0001, 0x8000_0000, 0xffff_ffff] {
        for (at, w) in [
            (24usize, vec![X, 1, 1, 0, 0, 1, count, 0, 0]), // write chunk, v1
            (28, vec![X, 1, 1, 1, 0, 0, 1, count]),         // reply chunk, v1
            (32, vec![X, 2, 1, 0, 0, 0, 0, 1, count, 0, 0, 0]), // write chunk, v2
        ] {
            let e = err(&words(&w));
            assert_eq!(
                (e.kind, e.item, e.offset),
                (ErrorKind::CountOverrun(count), Item::SegmentCount, at)
            );
        }
    }
    // The same through the primitive, with a large element size.
    let b = words(&[0xffff_ffff]);
    let e = XdrReader::new(&b)
        .array_count(usize::MAX / 2, Item::Value)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::CountOverrun(0xffff_ffff));
}

#[test]
fn positions_not_multiple_of_four() {
    for pos in [1u32, 2, 3, 5, 0x8000_0001, 0xffff_ffff] {
        let v1m = words(&[X, 1, 1, 0, 1, pos, 1, 2, 0, 3, 0, 0, 0]);
        let e = err(&v1m);
        assert_eq!(
            (e.kind, e.item, e.offset),
            (ErrorKind::MisalignedPosition(pos), Item::Position, 20)
        );
        // Second segment of a v2 read list.
        let v2m = words(&[
            X, 2, 1, 1, 0, 0, 1, 8, 1, 2, 0, 3, 1, pos, 1, 2, 0, 3, 0, 0, 0,
        ]);
        let e = err(&v2m);
        assert_eq!((e.kind, e.offset), (ErrorKind::MisalignedPosition(pos), 52));
        // The encoder refuses to produce one.
        let reads = [ReadSegment {
            position: pos,
            target: Segment::default(),
        }];
        let chunks = ChunkLists {
            reads: &reads,
            writes: &[],
            reply: None,
        };
        let mut buf = [0u8; 64];
        for proto in [Protocol::V1, Protocol::V2] {
            let e = encode_msg(
                &mut buf,
                proto,
                &MsgSpec {
                    chunks,
                    ..Default::default()
                },
            )
            .unwrap_err();
            assert_eq!(e.kind, ErrorKind::MisalignedPosition(pos));
        }
    }
}

#[test]
fn bad_discriminants() {
    // At each of the read list, write list and reply chunk positions.
    for (at, w) in [
        (16usize, vec![X, 1, 1, 0, 2, 0, 0]),
        (20, vec![X, 1, 1, 0, 0, 7, 0]),
        (24, vec![X, 1, 1, 0, 0, 0, 0xffff_ffff]),
        (40, vec![X, 1, 1, 1, 1, 0, 1, 2, 0, 3, 9, 0, 0]),
    ] {
        let e = err(&words(&w));
        assert!(matches!(e.kind, ErrorKind::BadDiscriminant(_)), "{e:?}");
        assert_eq!(e.offset, at);
    }
    assert_eq!(
        XdrReader::new(&[0, 0, 0, 2])
            .bool(Item::Value)
            .unwrap_err()
            .kind,
        ErrorKind::BadDiscriminant(2)
    );
}

#[test]
fn nonzero_padding() {
    let mut r = XdrReader::new(&[0, 0, 0, 1, 0xaa, 0, 1, 0]);
    let e = r.opaque_var(Item::Value).unwrap_err();
    assert_eq!((e.kind, e.offset), (ErrorKind::NonZeroPadding, 5));
    // In an unknown property's data.
    let b = words(&[0, 2, 1, 5, 0, 1, 99, 1, 0x0100_0001]);
    assert_eq!(err(&b).kind, ErrorKind::NonZeroPadding);
}

#[test]
fn reserved_flags_and_flag_rules() {
    for bit in 2..32 {
        let f = 1u32 << bit;
        let e = err(&words(&[X, 2, 1, 0, f | 1, 0, 0, 0, 0, 0]));
        assert_eq!(
            (e.kind, e.item, e.offset),
            (ErrorKind::ReservedFlags(f), Item::Flags, 16)
        );
        assert_eq!(e.rdma2_err(), Some(v2::ERR_INVAL_FLAG));
        assert!(Flags::from_bits(f).is_none());
    }
    // F_MORE on every header type but MSG and CONNPROP.
    for (htype, ok) in [(0, true), (1, false), (4, false), (5, true)] {
        let b = words(&[X, 2, 1, htype, 2, 0, 0, 0, 0, 0]);
        match decode(&b) {
            Ok(h) => assert!(ok && h.flags.has_more(), "{h:?}"),
            Err(e) => {
                assert!(!ok);
                assert_eq!(e.kind, ErrorKind::MoreNotAllowed(htype));
            }
        }
    }
    // F_MORE with each kind of chunk.
    for w in [
        vec![X, 2, 1, 0, 2, 0, 1, 0, 1, 2, 0, 3, 0, 0, 0, 0],
        vec![X, 2, 1, 0, 2, 0, 0, 1, 0, 0, 0, 0],
        vec![X, 2, 1, 0, 2, 0, 0, 0, 1, 0, 0],
    ] {
        assert_eq!(err(&words(&w)).kind, ErrorKind::MoreWithChunks);
    }
    // Encoders: reserved bits, F_MORE on NOMSG, F_MORE with chunks,
    // F_MORE on CONNPROP (assembled by the caller), F_MORE in v1.
    let mut buf = [0u8; 128];
    let p = v2::Prefix {
        xid: X,
        credit: 1,
        flags: Flags::from_bits(3).unwrap(),
    };
    assert!(v2::encode_nomsg(&mut buf, &p, 0, &ChunkLists::EMPTY).is_err());
    assert!(v2::encode_connprop(&mut buf, &p, &[]).is_err());
    let segs = [Segment::default()];
    let w: [&[Segment]; 1] = [&segs];
    let c = ChunkLists {
        reads: &[],
        writes: &w,
        reply: None,
    };
    assert_eq!(
        v2::encode_msg(&mut buf, &p, 0, &c).unwrap_err().kind,
        ErrorKind::MoreWithChunks
    );
    assert!(v2::encode_msg(&mut buf, &p, 0, &ChunkLists::EMPTY).is_ok());
    let spec = MsgSpec {
        kind: MsgKind::Msg,
        flags: Flags::MORE,
        ..Default::default()
    };
    assert_eq!(
        encode_msg(&mut buf, Protocol::V1, &spec).unwrap_err().kind,
        ErrorKind::Unrepresentable
    );
}

#[test]
fn v1_msgp_and_done_are_rejected() {
    // RDMA_MSGP: align, thresh, then the chunk lists (RFC 5666 §4.3).
    let msgp = words(&[X, 1, 32, 2, 4096, 1024, 0, 0, 0, 0x1234]);
    let e = err(&msgp);
    assert_eq!(
        (e.kind, e.item, e.offset),
        (ErrorKind::ObsoleteV1Proc(2), Item::Htype, 12)
    );
    let done = words(&[X, 1, 32, 3]);
    assert_eq!(err(&done).kind, ErrorKind::ObsoleteV1Proc(3));
    assert!(v1::encode_chunked(&mut [0u8; 64], X, 1, v1::RDMA_MSGP, &ChunkLists::EMPTY).is_err());
}

#[test]
fn unknown_header_types_and_versions() {
    for p in [5u32, 6, 0xffff_ffff] {
        assert_eq!(
            err(&words(&[X, 1, 1, p, 0, 0, 0])).kind,
            ErrorKind::UnknownHtype(p)
        );
    }
    for h in [2u32, 3, 6, 0x8000_0000] {
        let e = err(&words(&[X, 2, 1, h, 0, 0, 0, 0, 0]));
        assert_eq!((e.kind, e.offset), (ErrorKind::UnknownHtype(h), 12));
    }
    for v in [0u32, 3, 7, 0xffff_ffff] {
        let e = err(&words(&[X, v, 1, 0, 0, 0, 0]));
        assert_eq!(
            (e.kind, e.item, e.offset),
            (ErrorKind::UnsupportedVersion(v), Item::Vers, 4)
        );
        assert_eq!(e.rdma1_err(), Some(v1::ERR_VERS));
    }
    // The v1-framed ERR_VERS special case needs exactly that shape.
    assert_eq!(
        dispatch(&words(&[X, 2, 1, 4, 1, 1, 1])),
        Ok(rpcrdma_xdr::Dispatch::V1FramedErrVers)
    );
    assert_eq!(
        dispatch(&words(&[X, 2, 1, 4, 1, 1, 2])),
        Ok(rpcrdma_xdr::Dispatch::V2)
    );
    assert!(decode(&words(&[X, 2, 1, 4, 1, 1, 2])).is_err());
    assert!(decode(&words(&[X, 2, 1, 4, 1, 1, 1, 0, 0])).is_err());
}

#[test]
fn encoders_report_too_small_at_every_length() {
    let mut r = Rng::new(12);
    for _ in 0..300 {
        let m = OwnedMsg::gen(&mut r, 4);
        let need = m.header_len();
        for len in 0..need {
            let mut buf = vec![0u8; len];
            let e = m.encode(&mut buf).unwrap_err();
            assert_eq!(
                (e.kind, e.item),
                (ErrorKind::BufferTooSmall(need), Item::Output),
                "len {len}"
            );
        }
    }
    let mut small = [0u8; 27];
    let e = v1::encode_error(
        &mut small,
        X,
        1,
        &rpcrdma_xdr::ErrorBody::Vers { low: 1, high: 1 },
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BufferTooSmall(28));
    let e = v2::encode_error(
        &mut small,
        X,
        1,
        &rpcrdma_xdr::ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed: 2,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::BufferTooSmall(32));
    let p = v2::Prefix::default();
    let e = v2::encode_connprop(&mut [0u8; 30], &p, &[Property::HostAuth(b"x")]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BufferTooSmall(40));
    let mut w = XdrWriter::new(&mut small[..3]);
    assert_eq!(w.put_u32(1).unwrap_err().kind, ErrorKind::BufferTooSmall(4));
}

#[test]
fn property_values_that_do_not_match_their_typedef() {
    for id in 1..=5u32 {
        for len in [1u32, 2, 3, 5, 8] {
            let padded = (len as usize).div_ceil(4);
            let mut w = vec![0, 2, 1, 5, 0, 1, id, len];
            w.extend(std::iter::repeat_n(0, padded));
            let e = err(&words(&w));
            assert_eq!(
                (e.kind, e.item, e.offset),
                (ErrorKind::BadPropVal(id), Item::PropData, 32)
            );
            assert_eq!(e.rdma2_err(), Some(v2::ERR_BAD_XDR));
        }
    }
    // HOSTAUTH: inner length too long, too short, not padded, missing.
    for w in [
        vec![0, 2, 1, 5, 0, 1, 6, 8, 5, 0x6162_6364],
        vec![0, 2, 1, 5, 0, 1, 6, 12, 3, 0x6162_6300, 0],
        vec![0, 2, 1, 5, 0, 1, 6, 8, 3, 0x6162_6301],
        vec![0, 2, 1, 5, 0, 1, 6, 4, 0x0001_0000],
        vec![0, 2, 1, 5, 0, 1, 6, 2, 0x0000_0000],
    ] {
        assert_eq!(err(&words(&w)).kind, ErrorKind::BadPropVal(6));
    }
    // Unknown properties are never an error; empty data is the default.
    let ok = words(&[0, 2, 1, 5, 0, 3, 0x77, 2, 0x0102_0000, 1, 0, 6, 0]);
    let h = decode(&ok).unwrap();
    let Body::ConnProp(set) = h.body else {
        panic!()
    };
    let v: Vec<_> = set.iter().collect();
    assert_eq!(
        v,
        [
            Property::Unknown {
                id: 0x77,
                data: &[1, 2]
            },
            Property::Default(1),
            Property::Default(6)
        ]
    );
    // Encoders refuse properties that would not decode back to themselves.
    let mut buf = [0u8; 64];
    let p = v2::Prefix::default();
    assert!(v2::encode_connprop(
        &mut buf,
        &p,
        &[Property::Unknown {
            id: 1,
            data: &[0; 4]
        }]
    )
    .is_err());
    assert!(v2::encode_connprop(&mut buf, &p, &[Property::Unknown { id: 99, data: &[] }]).is_err());
}

#[test]
fn private_data_rejections() {
    // Sizes outside 1024..=262144 cannot be encoded.
    for (s, r) in [(0, 4096), (1023, 4096), (4096, 262_145), (4096, u32::MAX)] {
        let p = PrivateData {
            remote_invalidate: false,
            send_size: s,
            recv_size: r,
        };
        assert_eq!(
            p.encode(&mut [0u8; 8]).unwrap_err().kind,
            ErrorKind::Unrepresentable
        );
    }
    // Absent: no magic anywhere, including a magic split by one byte.
    assert_eq!(pvtdata::decode(&[]), Peer::Absent);
    assert_eq!(
        pvtdata::decode(&[0xf6, 0xab, 0x0e, 0x00, 0x18, 1, 0, 0, 0]),
        Peer::Absent
    );
    // Invalid: unknown version, cut short by the end of the buffer.
    for (b, kind, off) in [
        (
            vec![0xf6, 0xab, 0x0e, 0x18, 0, 0, 0, 0],
            ErrorKind::UnsupportedVersion(0),
            4,
        ),
        (
            vec![1, 2, 0xf6, 0xab, 0x0e, 0x18, 2, 0, 0, 0],
            ErrorKind::UnsupportedVersion(2),
            6,
        ),
        (
            vec![1, 0xf6, 0xab, 0x0e, 0x18, 1, 0, 0],
            ErrorKind::Truncated,
            1,
        ),
        (vec![0xf6, 0xab, 0x0e, 0x18], ErrorKind::Truncated, 0),
    ] {
        match pvtdata::decode(&b) {
            Peer::Invalid(e) => assert_eq!((e.kind, e.offset), (kind, off), "{b:?}"),
            other => panic!("{b:?}: {other:?}"),
        }
        assert_eq!(
            pvtdata::decode(&b).or_v1_defaults(),
            PrivateData::V1_DEFAULTS
        );
    }
    // Non-magic at offset 0.
    assert_eq!(
        PrivateData::decode_at(&[0; 8]).unwrap_err().kind,
        ErrorKind::BadFormatId(0)
    );
}
