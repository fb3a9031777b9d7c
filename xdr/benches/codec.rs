// SPDX-License-Identifier: GPL-2.0

//! Encode/decode micro-benchmarks (`cargo bench`), reporting ns/operation.
//!
//! A dependency-free harness (`harness = false`): each case runs in batches
//! for ~100 ms, repeated 11 times; the best (the usual noise-robust
//! estimator on a shared machine) and the median are reported, and the
//! verdict uses the best. Inputs and outputs go through `black_box` so the
//! work cannot be hoisted or discarded.
//!
//! Cases: (a) v2 RDMA2_MSG with no chunks, (b) v2 RDMA2_MSG with a
//! Write chunk of 4 segments and a Reply chunk, (c) v1 RDMA_MSG with a Read
//! list; plus RFC 8797 private data. Target: every case < 50 ns.
//!
//! `cargo bench -- --quick` runs shorter batches (used by check.sh).

use std::hint::black_box;
use std::time::{Duration, Instant};

use rpcrdma_xdr::header::{Body, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::pvtdata::{self, PrivateData};
use rpcrdma_xdr::{decode, encode_msg, ChunkLists, ReadSegment, Segment};

fn measure(name: &str, per_batch: u64, quick: bool, mut f: impl FnMut()) -> f64 {
    let target = Duration::from_millis(if quick { 20 } else { 100 });
    let mut rates = Vec::new();
    for _ in 0..if quick { 5 } else { 11 } {
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < target {
            for _ in 0..per_batch {
                f();
            }
            n += per_batch;
        }
        rates.push(start.elapsed().as_nanos() as f64 / n as f64);
    }
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (best, median) = (rates[0], rates[rates.len() / 2]);
    let verdict = if best < 50.0 { "ok" } else { "OVER 50 ns" };
    println!("{name:<58} {best:>6.1} ns/op best {median:>7.1} median  [{verdict}]");
    best
}

const fn seg(handle: u32, length: u32, offset: u64) -> Segment {
    Segment {
        handle,
        length,
        offset,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let mut worst: f64 = 0.0;
    let mut buf = [0u8; 1024];

    // (a) v2 RDMA2_MSG, no chunks.
    let a = MsgSpec {
        xid: 0x1234_5678,
        credit: 0x0080_0020,
        kind: MsgKind::Msg,
        flags: Flags::NONE,
        inv_handle: 0,
        chunks: ChunkLists::EMPTY,
    };
    // (b) v2 RDMA2_MSG, one Write chunk of 4 segments + a Reply chunk.
    let wsegs = [
        seg(0x1000, 4096, 0x7f00_0000_0000),
        seg(0x1001, 4096, 0x7f00_0000_1000),
        seg(0x1002, 4096, 0x7f00_0000_2000),
        seg(0x1003, 4096, 0x7f00_0000_3000),
    ];
    let writes: [&[Segment]; 1] = [&wsegs];
    let reply = [seg(0x2000, 1024, 0x7f00_1000_0000)];
    let b = MsgSpec {
        inv_handle: 0x1000,
        chunks: ChunkLists {
            reads: &[],
            writes: &writes,
            reply: Some(&reply),
        },
        ..a
    };
    // (c) v1 RDMA_MSG with a Read list (one chunk of two segments).
    let reads = [
        ReadSegment {
            position: 0x90,
            target: seg(0x3000, 8192, 0x10_0000),
        },
        ReadSegment {
            position: 0x90,
            target: seg(0x3001, 100, 0x10_2000),
        },
    ];
    let c = MsgSpec {
        credit: 128,
        chunks: ChunkLists {
            reads: &reads,
            writes: &[],
            reply: None,
        },
        ..a
    };

    println!("rpcrdma-xdr benchmarks (ns per operation; target < 50 ns)");
    for (label, proto, spec) in [
        ("(a) v2 RDMA2_MSG, no chunks", Protocol::V2, &a),
        (
            "(b) v2 RDMA2_MSG, 4-seg Write + Reply chunk",
            Protocol::V2,
            &b,
        ),
        ("(c) v1 RDMA_MSG, Read list (2 segments)", Protocol::V1, &c),
    ] {
        worst = worst.max(measure(&format!("{label}: encode"), 1000, quick, || {
            let n = encode_msg(black_box(&mut buf), proto, black_box(spec));
            black_box(n.ok());
        }));
        // The received message: header plus a small RPC payload.
        let mut msg = [0u8; 512];
        let n = encode_msg(&mut msg, proto, spec).expect("encode");
        let msg = &msg[..n + 64];
        worst = worst.max(measure(&format!("{label}: decode"), 1000, quick, || {
            let h = decode(black_box(msg));
            black_box(h.ok());
        }));
        // Decode and walk every segment (what a reply handler does).
        worst = worst.max(measure(
            &format!("{label}: decode + iterate"),
            1000,
            quick,
            || {
                let mut sum = 0u64;
                if let Ok(h) = decode(black_box(msg)) {
                    if let Body::Msg(m) = h.body {
                        for s in m.chunks.reads.iter() {
                            sum = sum.wrapping_add(u64::from(s.target.length));
                        }
                        for w in m.chunks.writes.iter().chain(m.chunks.reply) {
                            for s in w.iter() {
                                sum = sum.wrapping_add(u64::from(s.length));
                            }
                        }
                    }
                }
                black_box(sum);
            },
        ));
    }

    let p = PrivateData {
        remote_invalidate: true,
        send_size: 4096,
        recv_size: 4096,
    };
    measure("RFC 8797 private data: encode", 1000, quick, || {
        black_box(black_box(&p).encode(black_box(&mut buf)).ok());
    });
    let mut cm = [0u8; 56];
    cm[..8].copy_from_slice(&p.to_bytes().expect("encode"));
    measure(
        "RFC 8797 private data: decode (search)",
        1000,
        quick,
        || {
            black_box(pvtdata::decode(black_box(&cm)));
        },
    );

    println!("worst (a)-(c) best: {worst:.1} ns/op");
}
