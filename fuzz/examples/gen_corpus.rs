// SPDX-License-Identifier: GPL-2.0

//! Writes the seed corpus (corpus/<target>/) from valid encodings: headers
//! of every v1 and v2 type with random chunk lists, property sets, RFC 8797
//! private data, chunk plans with the replies a good responder sends, and
//! connection event sequences. Deterministic (fixed seeds): regenerating
//! gives the same files. Run without the sanitizer-coverage flags:
//!
//! ```text
//! cd fuzz && cargo run --release --example gen_corpus
//! ```

use std::fs;
use std::path::Path;

use rpcrdma2_fuzz::common::*;
use rpcrdma2_fuzz::*;
use rpcrdma_proto::xdr::header::{Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_proto::xdr::props::{PropSet, Property};
use rpcrdma_proto::xdr::stream::XdrWriter;
use rpcrdma_proto::xdr::{v1, v2};
use rpcrdma_proto::{chunks, Geometry};

fn save(target: &str, i: usize, data: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(format!("seed-{i:03}")), data).unwrap();
}

fn header_seeds(r: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..72 {
        let mut buf = vec![0u8; 1 << 12];
        let n = match i % 6 {
            0..=2 => {
                let m = OwnedMsg::gen(r, 3);
                let n = m.encode(&mut buf).unwrap();
                if m.kind == MsgKind::Msg {
                    let p = 8 + r.below(12);
                    buf[n..n + p].iter_mut().for_each(|b| *b = r.u64() as u8);
                    n + p
                } else {
                    n
                }
            }
            3 => {
                let proto = if r.bool() { Protocol::V1 } else { Protocol::V2 };
                let e = gen_error_body(r, proto);
                match proto {
                    Protocol::V1 => v1::encode_error(&mut buf, r.u32(), r.u32(), &e),
                    Protocol::V2 => v2::encode_error(&mut buf, r.u32(), r.u32(), &e),
                }
                .unwrap()
            }
            4 => {
                let owned: Vec<OwnedProp> = (0..r.below(5)).map(|_| OwnedProp::gen(r)).collect();
                let props: Vec<Property<'_>> = owned.iter().map(|p| p.as_prop()).collect();
                let p = v2::Prefix {
                    xid: r.u32(),
                    credit: r.u32(),
                    flags: Flags::NONE,
                };
                v2::encode_connprop(&mut buf, &p, &props).unwrap()
            }
            _ => {
                // Linux svcrdma's v1-framed answer to a v2 Call; a v2
                // credit grant.
                if r.bool() {
                    let w = [r.u32(), 2, r.u32(), 4, 1, 1, 1];
                    for (d, s) in buf.chunks_exact_mut(4).zip(w) {
                        d.copy_from_slice(&s.to_be_bytes());
                    }
                    28
                } else {
                    v2::encode_credit_grant(&mut buf, 0x0020_0004, Flags::NONE).unwrap()
                }
            }
        };
        buf.truncate(n);
        check_header(&buf);
        out.push(buf);
    }
    out
}

fn propset_seeds(r: &mut Rng) -> Vec<Vec<u8>> {
    (0..24)
        .map(|_| {
            let owned: Vec<OwnedProp> = (0..r.below(6)).map(|_| OwnedProp::gen(r)).collect();
            let props: Vec<Property<'_>> = owned.iter().map(|p| p.as_prop()).collect();
            let mut buf = vec![0u8; 2048];
            let mut w = XdrWriter::new(&mut buf);
            PropSet::encode(&mut w, &props).unwrap();
            let n = w.finish();
            buf.truncate(n);
            check_propset(&buf);
            buf
        })
        .collect()
}

fn pvtdata_seeds(r: &mut Rng) -> Vec<Vec<u8>> {
    (0..16)
        .map(|i| {
            let pd = gen_private_data(r).to_bytes().unwrap();
            let k = if i % 2 == 0 { 0 } else { r.below(20) };
            let mut v: Vec<u8> = r.bytes(k);
            v.extend(pd);
            v.extend(vec![0u8; [0, 4, 48][i % 3]]);
            check_pvtdata(&v);
            v
        })
        .collect()
}

/// Realistic RPCs: NFS READ (pages receive DDP data), WRITE (pages are a
/// DDP argument), small calls, long calls and long replies.
fn rpc_desc(r: &mut Rng) -> (u8, u8, u8, u8, Geometry, Geometry, u32, (u32, u32)) {
    let v2 = r.bool() as u8;
    let pages = [0u32, 100, 4096, 8192, 65536, 1 << 20][r.below(6)];
    let small = |r: &mut Rng| 4 * (8 + r.below(60)) as u32;
    let (call, reply, flags) = match r.below(4) {
        // READ
        0 => (
            Geometry {
                head: small(r),
                ..Default::default()
            },
            Geometry {
                head: small(r),
                page_base: 0,
                page_len: pages,
                tail: 4 * r.below(3) as u32,
            },
            v2 | 4 | 8,
        ),
        // WRITE
        1 => (
            Geometry {
                head: small(r),
                page_base: 4 * r.below(1024) as u32,
                page_len: pages,
                tail: 4,
            },
            Geometry {
                head: small(r),
                ..Default::default()
            },
            v2 | 2 | 8,
        ),
        // long call (big head, no DDP)
        2 => (
            Geometry {
                head: 4 * (r.below(2000) as u32),
                ..Default::default()
            },
            Geometry {
                head: small(r),
                ..Default::default()
            },
            v2 | 8,
        ),
        // long reply (READDIR into pages, not DDP)
        _ => (
            Geometry {
                head: small(r),
                ..Default::default()
            },
            Geometry {
                head: small(r),
                page_len: pages,
                ..Default::default()
            },
            v2 | 8,
        ),
    };
    let extra = (r.bool() as u8) << 4 | (r.bool() as u8) << 5 | (r.bool() as u8) << 6;
    let buflen = call.len().unwrap_or(0).max(reply.len().unwrap_or(0) + 256);
    (
        flags | extra,
        [8u8, 16, 3, 1][r.below(4)],
        12,
        [0u8, 1, 16, 255][r.below(4)],
        call,
        reply,
        reply.len().unwrap_or(0).max(buflen),
        (4096, 4096),
    )
}

fn chunk_reply_seeds(r: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while out.len() < 64 {
        let d = rpc_desc(r);
        let bytes = plan_bytes(d.0, d.1, d.2, d.3, d.4, d.5, d.6, d.7);
        let pi = plan_input(&mut Bytes(&bytes));
        let Ok(plan) = chunks::plan(&pi.rpc, &pi.th, &pi.limits) else {
            continue;
        };
        let segs = register(&plan, pi.th.protocol, pi.th.remote_invalidation);
        let fill = [u32::MAX, 1, 4095, 4096, 100][r.below(5)];
        let mut v = bytes;
        v.extend(good_reply(
            &plan,
            &segs,
            pi.th.protocol,
            r.u32(),
            fill,
            r.below(64),
        ));
        check_chunk_reply(&v);
        out.push(v);
    }
    out
}

fn op_msg(v: &mut Vec<u8>, m: &[u8]) {
    v.push(6);
    v.extend((m.len() as u16).to_be_bytes());
    v.extend(m);
}

fn transport_seeds(r: &mut Rng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..40 {
        let force_v1 = i % 4 == 3;
        // flags, max_requests, bc_requests, inline_send/recv (KiB), max_segs
        let mut v = vec![force_v1 as u8 | 2, 32, 0, 4, 4, 8];
        // connect; established with the server's private data
        v.push(0);
        let pd = gen_private_data(r).to_bytes().unwrap();
        v.push(1);
        v.extend((pd.len() as u16).to_be_bytes());
        v.extend(pd);
        // the first (probe) Call, inline
        let xid = r.u32();
        v.push(4);
        v.extend(xid.to_be_bytes());
        v.extend(200u32.to_be_bytes());
        v.extend(500u32.to_be_bytes());
        let proto = if force_v1 || i % 4 == 2 {
            Protocol::V1
        } else {
            Protocol::V2
        };
        let mut buf = vec![0u8; 256];
        if i % 4 == 2 {
            // svcrdma answers the v2 probe with ERR_VERS
            let n = v1::encode_error(
                &mut buf,
                xid,
                32,
                &rpcrdma_proto::xdr::ErrorBody::Vers { low: 1, high: 1 },
            )
            .unwrap();
            buf[4..8].copy_from_slice(&2u32.to_be_bytes());
            op_msg(&mut v, &buf[..n]);
        } else {
            let spec = MsgSpec {
                xid,
                credit: if proto == Protocol::V2 {
                    0x0020_0008
                } else {
                    32
                },
                kind: MsgKind::Msg,
                flags: if proto == Protocol::V2 {
                    Flags::RESPONSE
                } else {
                    Flags::NONE
                },
                ..Default::default()
            };
            let n = rpcrdma_proto::xdr::encode_msg(&mut buf, proto, &spec).unwrap();
            let mut m = buf[..n].to_vec();
            m.extend(xid.to_be_bytes());
            m.extend(1u32.to_be_bytes());
            m.extend([0u8; 16]);
            op_msg(&mut v, &m);
        }
        // then RPCs with chunks, and their replies
        for _ in 0..1 + r.below(3) {
            let xid = r.u32();
            let d = rpc_desc(r);
            let pb = plan_bytes(d.0, d.1, d.2, d.3, d.4, d.5, d.6, d.7);
            v.push(5);
            v.extend(xid.to_be_bytes());
            v.extend(&pb);
            // What prepare_rpc will plan (same thresholds as the
            // transport's only when they agree; the seed just has to be a
            // plausible reply).
            let pi = plan_input(&mut Bytes(&pb));
            if let Ok(plan) = chunks::plan(&pi.rpc, &pi.th, &pi.limits) {
                let segs: Vec<_> = plan
                    .ranges()
                    .iter()
                    .enumerate()
                    .map(|(i, g)| segment_for(i, g.len))
                    .collect();
                let m = good_reply(&plan, &segs, proto, xid, u32::MAX, 32);
                op_msg(&mut v, &m);
            }
        }
        if i % 5 == 0 {
            v.push(2); // disconnect
            v.push(0); // reconnect
        }
        check_transport(&v);
        out.push(v);
    }
    out
}

fn main() {
    let mut r = Rng::new(8166);
    let sets: [(&str, Vec<Vec<u8>>); 5] = [
        ("header", header_seeds(&mut r)),
        ("propset", propset_seeds(&mut r)),
        ("pvtdata", pvtdata_seeds(&mut r)),
        ("chunk_reply", chunk_reply_seeds(&mut r)),
        ("transport", transport_seeds(&mut r)),
    ];
    for (name, seeds) in &sets {
        let _ = fs::remove_dir_all(Path::new("corpus").join(name));
        for (i, s) in seeds.iter().enumerate() {
            save(name, i, s);
        }
        println!("{name}: {} seeds", seeds.len());
    }
}
