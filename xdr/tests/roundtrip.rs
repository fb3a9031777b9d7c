// SPDX-License-Identifier: GPL-2.0

//! Property tests: decode(encode(x)) == x, and encode(decode(b)) == b, for
//! every header type, for chunk lists, properties, private data and the XDR
//! primitives, over many seeded random inputs.

mod common;

use common::*;
use rpcrdma_xdr::header::{Body, Credits, Dispatch, Protocol};
use rpcrdma_xdr::props::{PropSet, Property};
use rpcrdma_xdr::pvtdata::{self, Peer};
use rpcrdma_xdr::stream::{XdrReader, XdrWriter};
use rpcrdma_xdr::{decode, dispatch, v1, v2, Error, ErrorKind, Item};

const CASES: u64 = 20_000;

fn rng(test: u64) -> Rng {
    Rng::new(0x5eed_0000 + test)
}

#[test]
fn msg_headers_roundtrip() {
    let mut r = rng(1);
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..CASES {
        let m = OwnedMsg::gen(&mut r, 5);
        let n = m.encode(&mut buf).expect("encode");
        assert_eq!(n, m.header_len());
        // An RDMA2_MSG carries at least the first word of the RPC message.
        let payload = [0xde, 0xad, 0xbe, 0xef, 1, 2, 3];
        let total = match m.kind {
            rpcrdma_xdr::MsgKind::Msg => {
                buf[n..n + payload.len()].copy_from_slice(&payload);
                n + payload.len()
            }
            rpcrdma_xdr::MsgKind::NoMsg => n,
        };
        let h = decode(&buf[..total]).unwrap_or_else(|e| panic!("{m:?}: {e}"));
        assert_eq!(h.protocol, m.protocol);
        assert_eq!((h.xid, h.credit), (m.xid, m.credit));
        let (kind, inv, chunks) = match h.body {
            Body::Msg(b) => {
                assert_eq!(b.payload, &payload[..]);
                assert_eq!(h.hdr_len, n);
                (rpcrdma_xdr::MsgKind::Msg, b.inv_handle, b.chunks)
            }
            Body::NoMsg(b) => (rpcrdma_xdr::MsgKind::NoMsg, b.inv_handle, b.chunks),
            other => panic!("unexpected body {other:?}"),
        };
        assert_eq!(kind, m.kind);
        assert_eq!(OwnedChunks::from_view(&chunks), m.chunks);
        assert_eq!(chunks.reads.len(), m.chunks.reads.len());
        assert_eq!(chunks.writes.iter().len(), m.chunks.writes.len());
        match m.protocol {
            Protocol::V1 => {
                assert_eq!(inv, 0);
                assert!(h.flags.bits() == 0);
            }
            Protocol::V2 => {
                assert_eq!(inv, m.inv_handle);
                assert_eq!(h.flags, m.flags);
            }
        }
        // Read chunks regroup into runs of equal position covering the list.
        let regrouped: usize = chunks.reads.chunks().map(|c| c.len()).sum();
        assert_eq!(regrouped, chunks.reads.len());
        // And back again to the same bytes.
        let mut again = vec![0u8; n];
        assert_eq!(reencode(&h, &mut again), Some(n));
        assert_eq!(again, buf[..n]);
    }
}

#[test]
fn error_headers_roundtrip() {
    let mut r = rng(2);
    let mut buf = [0u8; 64];
    for _ in 0..CASES {
        let protocol = if r.bool() { Protocol::V1 } else { Protocol::V2 };
        let e = gen_error_body(&mut r, protocol);
        let (xid, credit) = (r.u32(), r.u32());
        let n = match protocol {
            Protocol::V1 => v1::encode_error(&mut buf, xid, credit, &e),
            Protocol::V2 => v2::encode_error(&mut buf, xid, credit, &e),
        }
        .expect("encode");
        let h = decode(&buf[..n]).unwrap_or_else(|err| panic!("{e:?}: {err}"));
        assert_eq!(h.body, Body::Error(e));
        assert_eq!((h.xid, h.credit), (xid, credit));
        let mut again = [0u8; 64];
        if let Some(m) = reencode(&h, &mut again) {
            assert_eq!(again[..m], buf[..n]);
        }
    }
}

#[test]
fn connprop_roundtrip() {
    let mut r = rng(3);
    let mut buf = vec![0u8; 8192];
    for _ in 0..CASES / 4 {
        let owned: Vec<OwnedProp> = (0..r.below(10)).map(|_| OwnedProp::gen(&mut r)).collect();
        let props: Vec<Property<'_>> = owned.iter().map(|p| p.as_prop()).collect();
        let p = v2::Prefix {
            xid: r.u32(),
            credit: r.u32(),
            flags: if r.bool() {
                rpcrdma_xdr::Flags::RESPONSE
            } else {
                rpcrdma_xdr::Flags::NONE
            },
        };
        let n = v2::encode_connprop(&mut buf, &p, &props).expect("encode");
        let h = decode(&buf[..n]).expect("decode");
        let Body::ConnProp(set) = h.body else {
            panic!("not a CONNPROP: {h:?}")
        };
        assert_eq!(set.iter().collect::<Vec<_>>(), props);
        assert_eq!(set.len(), props.len());
        // The set alone parses the same way.
        let alone = PropSet::parse(&buf[20..n]).expect("parse");
        assert_eq!(alone.iter().collect::<Vec<_>>(), props);
        let mut again = vec![0u8; n];
        assert_eq!(reencode(&h, &mut again), Some(n));
        assert_eq!(again, buf[..n]);
    }
}

#[test]
fn private_data_roundtrip() {
    let mut r = rng(4);
    for _ in 0..CASES {
        let p = gen_private_data(&mut r);
        let b = p.to_bytes().expect("encode");
        assert_eq!(pvtdata::decode(&b), Peer::Valid(p));
        // Anywhere inside a larger, magic-free buffer.
        let mut big = vec![0u8; 8 + r.below(200)];
        let at = r.below(big.len() - 7);
        big[at..at + 8].copy_from_slice(&b);
        assert_eq!(pvtdata::decode(&big), Peer::Valid(p));
    }
    // Every encodable size decodes to itself, rounded down to 1 KiB.
    for size in 1024..=262_144u32 {
        let v = pvtdata::encode_size(size).expect("in range");
        assert_eq!(pvtdata::decode_size(v), size & !1023);
    }
    for v in 0..=255u8 {
        assert_eq!(pvtdata::encode_size(pvtdata::decode_size(v)), Some(v));
    }
}

#[test]
fn credit_word_roundtrip() {
    let mut r = rng(5);
    for _ in 0..CASES {
        let w = r.u32();
        let c = Credits::from_word(w);
        assert_eq!(c.to_word(), w);
        assert_eq!(u32::from(c.granted), w & 0xffff);
        assert_eq!(u32::from(c.max), w >> 16);
    }
}

#[test]
fn xdr_primitives_roundtrip() {
    let mut r = rng(6);
    for _ in 0..CASES {
        let a = r.u32();
        let b = r.u64();
        let t = r.bool();
        let (nf, nv) = (r.below(13), r.below(13));
        let fixed = r.bytes(nf);
        let var = r.bytes(nv);
        let mut buf = vec![0u8; 128];
        let mut w = XdrWriter::new(&mut buf);
        w.put_u32(a).unwrap();
        w.put_u64(b).unwrap();
        w.put_bool(t).unwrap();
        w.put_optional(!t).unwrap();
        w.put_opaque_fixed(&fixed).unwrap();
        w.put_opaque_var(&var).unwrap();
        let n = w.finish();
        assert_eq!(n % 4, 0);
        let mut rd = XdrReader::new(&buf[..n]);
        assert_eq!(rd.u32(Item::Value), Ok(a));
        assert_eq!(rd.u64(Item::Value), Ok(b));
        assert_eq!(rd.bool(Item::Value), Ok(t));
        assert_eq!(rd.optional(Item::Value), Ok(!t));
        assert_eq!(rd.opaque_fixed(fixed.len(), Item::Value), Ok(&fixed[..]));
        assert_eq!(rd.opaque_var(Item::Value), Ok(&var[..]));
        assert_eq!(rd.finish(Item::Value), Ok(()));
    }
}

#[test]
fn xdr_chain_and_counted_array() {
    // A linked list of u32 and a counted array, written by hand.
    let mut r = rng(7);
    for _ in 0..CASES / 10 {
        let items: Vec<u32> = (0..r.below(20)).map(|_| r.u32()).collect();
        let mut buf = vec![0u8; 1024];
        let mut w = XdrWriter::new(&mut buf);
        for &i in &items {
            w.put_bool(true).unwrap();
            w.put_u32(i).unwrap();
        }
        w.put_bool(false).unwrap();
        w.put_u32(items.len() as u32).unwrap();
        for &i in &items {
            w.put_u32(i).unwrap();
        }
        let n = w.finish();
        let mut rd = XdrReader::new(&buf[..n]);
        let mut got = Vec::new();
        let count = rd
            .chain(Item::Value, |rd| {
                got.push(rd.u32(Item::Value)?);
                Ok(())
            })
            .unwrap();
        assert_eq!(count, items.len());
        assert_eq!(got, items);
        let m = rd.array_count(4, Item::Value).unwrap();
        assert_eq!(m, items.len());
        for &i in &items {
            assert_eq!(rd.u32(Item::Value), Ok(i));
        }
        rd.finish(Item::Value).unwrap();
    }
}

#[test]
fn dispatch_agrees_with_decode() {
    let mut r = rng(8);
    let mut buf = vec![0u8; 4096];
    for _ in 0..CASES {
        let m = OwnedMsg::gen(&mut r, 3);
        let n = m.encode(&mut buf).unwrap();
        buf[n..n + 4].copy_from_slice(&[0, 0, 0, 0]);
        let want = match m.protocol {
            Protocol::V1 => Dispatch::V1,
            Protocol::V2 => Dispatch::V2,
        };
        assert_eq!(dispatch(&buf[..n + 4]), Ok(want));
    }
}

#[test]
fn error_display_names_item_and_offset() {
    let e = Error::new(ErrorKind::MisalignedPosition(6), Item::Position, 28);
    assert_eq!(
        e.to_string(),
        "read position: position 6 is not a multiple of 4 at offset 28"
    );
    let e = Error::new(ErrorKind::BufferTooSmall(128), Item::Output, 0);
    assert_eq!(
        e.to_string(),
        "output buffer: output buffer too small (128 bytes needed) at offset 0"
    );
    assert_eq!(e.rdma2_err(), None);
}
