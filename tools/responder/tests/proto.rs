// SPDX-License-Identifier: GPL-2.0

//! Host tests of the responder's protocol logic: the bytes it sends are
//! checked word by word against the XDR of draft-ietf-nfsv4-rpcrdma-
//! version-two-00 and RFC 8166.

use rpcrdma_responder::nfs::{self, NFS3_READ, NFS_PROGRAM};
use rpcrdma_responder::proto::call::{Call, Part};
use rpcrdma_responder::proto::reverse::CONT_CALL_XID;
use rpcrdma_responder::proto::{Action, ConnProto, CreditWord, GrantMode, Options};
use rpcrdma_responder::stats::{Path, Stats};
use rpcrdma_xdr::chunk::{ChunkLists, ReadSegment, Segment};
use rpcrdma_xdr::header::{self, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::pvtdata::PrivateData;
use std::ops::Range;

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bytes(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn client(recv: u32) -> PrivateData {
    PrivateData {
        remote_invalidate: true,
        send_size: 4096,
        recv_size: recv,
    }
}

/// An RPC Call message: xid, CALL, rpcvers 2, prog, vers, proc, AUTH_NONE x2.
fn rpc_call(xid: u32, vers: u32, proc_: u32) -> Vec<u8> {
    bytes(&[xid, 0, 2, NFS_PROGRAM, vers, proc_, 0, 0, 0, 0])
}

fn call_msg(proto: Protocol, xid: u32, inv: u32, chunks: ChunkLists<'_>, rpc: &[u8]) -> Vec<u8> {
    let spec = MsgSpec {
        xid,
        credit: if proto == Protocol::V2 {
            (32 << 16) | 1
        } else {
            32
        },
        kind: MsgKind::Msg,
        flags: Flags::NONE,
        inv_handle: inv,
        chunks,
    };
    let mut b = vec![0u8; 4096];
    let n = header::encode_msg(&mut b, proto, &spec).unwrap();
    b.truncate(n);
    b.extend_from_slice(rpc);
    b
}

/// An inline NFSv3 NULL Call (no chunks, no Invalidate handle).
fn null_call(proto: Protocol, xid: u32) -> Vec<u8> {
    call_msg(proto, xid, 0, ChunkLists::EMPTY, &rpc_call(xid, 3, 0))
}

fn sends(a: &[Action]) -> Vec<Vec<u32>> {
    a.iter()
        .filter_map(|x| match x {
            Action::Send(b) => Some(words(b)),
            _ => None,
        })
        .collect()
}

fn the_call(a: &[Action]) -> Call {
    a.iter()
        .find_map(|x| match x {
            Action::Call(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a Call")
}

/// A v2 NFSv3 READ (`xid`, Invalidate handle `inv`) that offers `segs` as
/// its one Write chunk, received by `p`, and its READ3resok reply with
/// `count` bytes of data: the Call (its RPC parsed, as the server loop
/// does), the reply and where the data lies in it (the DDP range, checked).
fn read_to_write_chunk(
    p: &mut ConnProto,
    st: &mut Stats,
    xid: u32,
    inv: u32,
    segs: &[Segment],
    count: u32,
) -> (Call, Vec<u8>, Range<usize>) {
    let wl: [&[Segment]; 1] = [segs];
    let chunks = ChunkLists {
        reads: &[],
        writes: &wl,
        reply: None,
    };
    let rpc = rpc_call(xid, 3, NFS3_READ);
    let a = p.on_receive(&call_msg(Protocol::V2, xid, inv, chunks, &rpc), st);
    let mut c = the_call(&a);
    c.rpc = nfs::parse_call(&rpc);
    // READ3resok: status, post_op_attr absent, count, eof, data<count>
    let mut reply = bytes(&[xid, 1, 0, 0, 0, 0, 0, 0, count, 1, count]);
    let start = reply.len();
    reply.extend((0..count).map(|i| i as u8));
    reply.resize(reply.len().next_multiple_of(4), 0);
    let data = start..start + count as usize;
    let ddp = nfs::ddp_range(c.rpc.as_ref().unwrap(), &reply, 8192);
    assert_eq!(ddp, Some(data.clone()));
    (c, reply, data)
}

#[test]
fn v2_connprop_first_then_call() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(Options::default(), client(4096));
    let rpc = rpc_call(0x11, 3, 0);
    let a = p.on_receive(
        &call_msg(Protocol::V2, 0x11, 0, ChunkLists::EMPTY, &rpc),
        &mut st,
    );
    let s = sends(&a);
    assert_eq!(s.len(), 1);
    // rpcrdma2_hdr_prefix: xid 0, vers 2, credit (max 32 | granted 0:
    // the Call's credit goes with its reply),
    // htype RDMA2_CONNPROP (5), flags 0; then rpcrdma2_propset: count 5,
    // { rdma_which, rdma_data<> } each.
    assert_eq!(
        s[0],
        vec![
            0,
            2,
            32 << 16,
            5,
            0,
            5,
            1,
            4,
            4096,
            2,
            4,
            4096,
            3,
            4,
            1 << 20,
            4,
            4,
            16,
            5,
            4,
            0
        ]
    );
    let c = the_call(&a);
    assert_eq!(c.xid, 0x11);
    assert!(c.v2);
    assert_eq!(c.inline, rpc);
    assert_eq!(st.conn_v2, 1);
}

/// `--connprop-pieces 3`: the same CONNPROP, its property list split over
/// three messages that each repeat the prefix, F_MORE (2) on all but the
/// last.
#[test]
fn v2_connprop_continued() {
    let whole = {
        let mut p = ConnProto::new(Options::default(), client(4096));
        p.connprop()
    };
    let mut p = ConnProto::new(
        Options {
            connprop_pieces: 3,
            ..Options::default()
        },
        client(4096),
    );
    let pieces = p.connprop_pieces();
    assert_eq!(pieces.len(), 3);
    let mut body = Vec::new();
    for (i, m) in pieces.iter().enumerate() {
        let w = words(m);
        assert_eq!(w[..4], words(&whole)[..4], "piece {i}: the prefix");
        assert_eq!(w[4], if i < 2 { 2 } else { 0 }, "piece {i}: F_MORE");
        assert_eq!(m.len() % 4, 0);
        body.extend_from_slice(&m[20..]);
    }
    assert_eq!(body, whole[20..]);
}

#[test]
fn v2_inline_reply_bytes_and_invalidate() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(
        Options {
            remote_invalidate: true,
            ..Options::default()
        },
        client(4096),
    );
    let rpc = rpc_call(0x22, 3, 0);
    // A Reply chunk of one segment, handle 0xabcd: the handle to
    // invalidate names it.
    let seg = [Segment {
        handle: 0xabcd,
        length: 8192,
        offset: 0x1000,
    }];
    let chunks = ChunkLists {
        reads: &[],
        writes: &[],
        reply: Some(&seg),
    };
    let a = p.on_receive(&call_msg(Protocol::V2, 0x22, 0xabcd, chunks, &rpc), &mut st);
    let c = the_call(&a);
    assert_eq!(c.inv_handle, 0xabcd);
    let reply = bytes(&[0x22, 1, 0, 0, 0, 0, 0]);
    let plan = p.plan_reply(&c, &reply, None, &mut st);
    assert_eq!(plan.path, Some(Path::Inline));
    assert_eq!(plan.invalidate, Some(0xabcd));
    assert_eq!(st.inv_handle_foreign, 0);
    assert_eq!(plan.sends.len(), 1);
    let w = words(&plan.sends[0]);
    // prefix: xid, 2, credit (the CONNPROP took the first grant: this
    // reply returns the Call's credit), RDMA2_MSG, F_RESPONSE; then
    // rdma_inv_handle 0, three empty lists, the RPC reply.
    assert_eq!(&w[..9], &[0x22, 2, (32 << 16) | 1, 0, 1, 0, 0, 0, 0]);
    assert_eq!(&w[9..], &words(&reply)[..]);
}

#[test]
fn v1_only_answers_v2_like_svcrdma() {
    let mut st = Stats::default();
    let opts = Options {
        v1_only: true,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    let rpc = rpc_call(0x33, 3, 0);
    let a = p.on_receive(
        &call_msg(Protocol::V2, 0x33, 0, ChunkLists::EMPTY, &rpc),
        &mut st,
    );
    assert_eq!(sends(&a), vec![vec![0x33, 2, 32, 4, 1, 1, 1]]);
    assert!(p.version.is_none());
    // The resent Call in v1 settles the connection on v1.
    let a = p.on_receive(
        &call_msg(Protocol::V1, 0x33, 0, ChunkLists::EMPTY, &rpc),
        &mut st,
    );
    let c = the_call(&a);
    assert!(!c.v2);
    let plan = p.plan_reply(&c, &bytes(&[0x33, 1, 0, 0, 0, 0, 0]), None, &mut st);
    assert_eq!(&words(&plan.sends[0])[..7], &[0x33, 1, 32, 0, 0, 0, 0]);
    assert_eq!(st.err_vers, 1);
    assert_eq!(st.conn_v1, 1);
}

#[test]
fn unknown_version_gets_err_vers() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(Options::default(), client(4096));
    let a = p.on_receive(&bytes(&[9, 3, 1, 0, 0, 0, 0, 0]), &mut st);
    assert_eq!(sends(&a), vec![vec![9, 3, 32, 4, 1, 1, 2]]);
}

#[test]
fn v2_reserved_flag_is_inval_flag() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(Options::default(), client(4096));
    let mut m = null_call(Protocol::V2, 0x44);
    m[16..20].copy_from_slice(&0x100u32.to_be_bytes());
    let a = p.on_receive(&m, &mut st);
    let s = sends(&a);
    // CONNPROP, then RDMA2_ERROR: xid, 2, credit, 4, F_RESPONSE, ERR_INVAL_FLAG
    assert_eq!(s.len(), 2);
    assert_eq!(s[1][0], 0x44);
    assert_eq!(s[1][1], 2);
    assert_eq!(&s[1][3..], &[4, 1, 4]);
}

#[test]
fn write_chunk_plan() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(
        Options {
            remote_invalidate: true,
            ..Options::default()
        },
        client(4096),
    );
    let segs = [
        Segment {
            handle: 7,
            length: 4096,
            offset: 0x1000,
        },
        Segment {
            handle: 7,
            length: 4096,
            offset: 0x2000,
        },
    ];
    let (c, reply, data) = read_to_write_chunk(&mut p, &mut st, 0x55, 7, &segs, 5001);
    let start = data.start;
    let plan = p.plan_reply(&c, &reply, Some(data), &mut st);
    assert_eq!(plan.path, Some(Path::WriteChunk));
    assert_eq!(plan.writes.len(), 2);
    assert_eq!(plan.writes[0].src, start..start + 4096);
    assert_eq!(plan.writes[1].src, start + 4096..start + 5001);
    assert_eq!(plan.invalidate, Some(7));
    let w = words(&plan.sends[0]);
    // inv 0, read list 0, write list {1, count 2, segs with the written
    // lengths}, 0, reply chunk 0; then the reply without data and pad.
    assert_eq!(
        &w[5..19],
        &[0, 0, 1, 2, 7, 4096, 0, 0x1000, 7, 905, 0, 0x2000, 0, 0]
    );
    assert_eq!(&w[19..], &[0x55, 1, 0, 0, 0, 0, 0, 0, 5001, 1, 5001]);
}

#[test]
fn reply_chunk_and_continuation() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(Options::default(), client(4096));
    let seg = [Segment {
        handle: 9,
        length: 16384,
        offset: 0x9000,
    }];
    let chunks = ChunkLists {
        reads: &[],
        writes: &[],
        reply: Some(&seg),
    };
    let rpc = rpc_call(0x66, 3, 16);
    let a = p.on_receive(&call_msg(Protocol::V2, 0x66, 9, chunks, &rpc), &mut st);
    let c = the_call(&a);
    let mut reply = bytes(&[0x66, 1, 0, 0, 0, 0]);
    reply.resize(10000, 0xaa);
    let plan = p.plan_reply(&c, &reply, None, &mut st);
    assert_eq!(plan.path, Some(Path::ReplyChunk));
    assert_eq!(plan.writes.len(), 1);
    assert_eq!(plan.writes[0].src, 0..10000);
    let w = words(&plan.sends[0]);
    // RDMA2_NOMSG (1), F_RESPONSE, inv 0, no reads, no writes, reply
    // chunk {1, 1 segment: 9, 10000, 0x9000}
    assert_eq!(&w[3..], &[1, 1, 0, 0, 0, 1, 1, 9, 10000, 0, 0x9000]);

    // Without a Reply chunk, -00 §6.3.3.1: continue it.
    let mut c2 = c.clone();
    c2.reply = None;
    let plan = p.plan_reply(&c2, &reply, None, &mut st);
    assert_eq!(plan.path, Some(Path::Continued));
    assert!(plan.sends.len() >= 3);
    let mut data = Vec::new();
    for (i, s) in plan.sends.iter().enumerate() {
        assert!(s.len() <= 4096);
        let w = words(s);
        let last = i + 1 == plan.sends.len();
        assert_eq!(w[4], if last { 1 } else { 3 }, "flags of piece {i}");
        data.extend_from_slice(&s[36..]);
    }
    assert_eq!(data, reply);
}

#[test]
fn read_chunk_splice() {
    let c = Call {
        inline: bytes(&[1, 2, 3]),
        reads: vec![ReadSegment {
            position: 8,
            target: Segment {
                handle: 1,
                length: 5,
                offset: 0,
            },
        }],
        ..Call::default()
    };
    let full = c.splice(b"hello").unwrap();
    let mut want = bytes(&[1, 2]);
    want.extend(b"hello\0\0\0");
    want.extend(bytes(&[3]));
    assert_eq!(full, want);
    // The same as pieces, not joined (what is written to nfsd from the
    // registered buffer).
    assert_eq!(
        c.splice_parts(5).unwrap(),
        vec![
            Part::Inline(0..8),
            Part::Data(0..5),
            Part::Zeros(3),
            Part::Inline(8..12)
        ]
    );
    // fewer data bytes than the Read segments name: refused
    assert!(c.splice_parts(4).is_none());
    // Position zero: the whole Call.
    let p0 = Call {
        reads: vec![ReadSegment {
            position: 0,
            target: Segment {
                handle: 1,
                length: 8,
                offset: 0,
            },
        }],
        ..Call::default()
    };
    assert_eq!(p0.splice(&bytes(&[5, 6])).unwrap(), bytes(&[5, 6]));
    // A position past the inline data is refused.
    let bad = Call {
        inline: bytes(&[1]),
        reads: vec![ReadSegment {
            position: 64,
            target: Segment {
                handle: 1,
                length: 4,
                offset: 0,
            },
        }],
        ..Call::default()
    };
    assert!(bad.splice(b"abcd").is_none());
}

#[test]
fn credits_return_what_was_received() {
    let mut st = Stats::default();
    let opts = Options {
        no_connprop: true,
        credits: 8,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    let mut calls = Vec::new();
    for x in 1..=3u32 {
        let a = p.on_receive(&null_call(Protocol::V2, x), &mut st);
        calls.push(the_call(&a));
    }
    let r = bytes(&[1, 1, 0, 0, 0, 0, 0]);
    // Each reply returns its own Call's credit, exactly once.
    for c in &calls {
        let pl = p.plan_reply(c, &r, None, &mut st);
        assert_eq!(words(&pl.sends[0])[2], (8 << 16) | 1);
    }
    assert_eq!(p.top_up(u16::MAX), 0);
    // A grant (NOMSG, XID 0) answers nothing: the next reply returns it
    // too, when it leaves (built returning its Call's credit only).
    let g = bytes(&[0, 2, (8 << 16) | 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(p.on_receive(&g, &mut st), vec![Action::Nothing]);
    let a = p.on_receive(&null_call(Protocol::V2, 9), &mut st);
    let pl = p.plan_reply(&the_call(&a), &r, None, &mut st);
    assert_eq!(words(&pl.sends[0])[2], (8 << 16) | 1);
    assert_eq!(p.top_up(u16::MAX), 1);
    assert_eq!(p.top_up(u16::MAX), 0);
}

#[test]
fn hostile_input_never_panics() {
    let mut st = Stats::default();
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let base = null_call(Protocol::V2, 5);
    for i in 0..20000 {
        let mut p = ConnProto::new(Options::default(), client(1024));
        let mut m = base.clone();
        let len = (next() as usize) % 80;
        m.truncate(len.max(if i % 2 == 0 { 16 } else { 0 }));
        for _ in 0..(next() % 6) {
            if m.is_empty() {
                break;
            }
            let at = (next() as usize) % m.len();
            m[at] = next() as u8;
        }
        for a in p.on_receive(&m, &mut st) {
            if let Action::Call(c) = a {
                // the pieces, joined, are what splice builds
                let data: Vec<u8> = (0..64u8).collect();
                let joined = c.splice_parts(64).map(|parts| {
                    let mut v = Vec::new();
                    for p in parts {
                        match p {
                            Part::Inline(r) => v.extend_from_slice(&c.inline[r]),
                            Part::Data(r) => v.extend_from_slice(&data[r]),
                            Part::Zeros(n) => v.resize(v.len() + n, 0),
                        }
                    }
                    v
                });
                assert_eq!(joined, c.splice(&data));
                let _ = p.plan_reply(&c, &m, None, &mut st);
            }
        }
    }
}

#[test]
fn err_nth_sends_each_error_with_its_body() {
    // -00 §6.4.3: rdma_err, then the body its code selects, with values
    // that describe this Call (no chunks): no Read chunks taken, no Write
    // chunk, no segment, no Write chunk to name (index and length 0).
    // REPLY_RESOURCE to a Call without a Reply chunk is sent at reply
    // time (err_nth_bodies_describe_the_call).
    let bodies: [(u32, &[u32]); 9] = [
        (1, &[1, 2]),
        (2, &[]),
        (3, &[]),
        (4, &[]),
        (5, &[0]),
        (6, &[0]),
        (7, &[0]),
        (8, &[0, 0]),
        (10, &[]),
    ];
    for (code, body) in bodies {
        let mut st = Stats::default();
        let opts = Options {
            err_nth: vec![(2, code)],
            no_connprop: true,
            ..Options::default()
        };
        let mut p = ConnProto::new(opts, client(4096));
        let first = p.on_receive(&null_call(Protocol::V2, 1), &mut st);
        assert!(matches!(first[0], Action::Call(_)));
        let a = p.on_receive(&null_call(Protocol::V2, 2), &mut st);
        let s = sends(&a);
        assert_eq!(s.len(), 1, "code {code}");
        // xid, vers 2, credit (ignored by the receiver), RDMA2_ERROR,
        // F_RESPONSE, code, body
        assert_eq!(s[0][0], 2);
        assert_eq!(s[0][1], 2);
        assert_eq!(&s[0][3..6], &[4, 1, code]);
        assert_eq!(&s[0][6..], body, "code {code}");
        assert_eq!(st.errors_sent, 1);
    }
}

/// The client's RDMA2_MSG with `F_RESPONSE` carrying RPC Reply `rpc` to
/// our reverse-direction Call `xid`.
fn v2_response(xid: u32, rpc: &[u8]) -> Vec<u8> {
    v2_response_piece(xid, true, rpc)
}

#[test]
fn callbacks_relayed_both_ways() {
    let mut st = Stats::default();
    let opts = Options {
        relay_callbacks: true,
        no_connprop: true,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    // Nothing is relayed before the version is known.
    let cb = bytes(&[0x77, 0, 2, 0x4000_0000, 1, 1, 0, 0, 0, 0]);
    assert!(p.reverse_call(&cb).is_none());
    let a = p.on_receive(
        &call_msg(Protocol::V2, 1, 0, ChunkLists::EMPTY, &rpc_call(1, 4, 1)),
        &mut st,
    );
    assert!(matches!(a[0], Action::Call(_)));
    // nfsd's callback goes out as RDMA2_MSG without F_RESPONSE.
    let m = words(&p.reverse_call(&cb).unwrap());
    assert_eq!(&m[..2], &[0x77, 2]);
    assert_eq!(&m[3..9], &[0, 0, 0, 0, 0, 0]);
    assert_eq!(&m[9..], &words(&cb)[..]);
    // The client's reply (F_RESPONSE) goes back to nfsd.
    let reply = bytes(&[0x77, 1, 0, 0, 0, 0]);
    let b = v2_response(0x77, &reply);
    assert_eq!(p.on_receive(&b, &mut st), vec![Action::ToNfsd(reply)]);
    assert_eq!(st.reverse_replies, 1);
    // Relaying off: the same message is malformed input.
    let mut q = ConnProto::new(Options::default(), client(4096));
    q.on_receive(
        &call_msg(Protocol::V2, 1, 0, ChunkLists::EMPTY, &rpc_call(1, 4, 1)),
        &mut st,
    );
    assert_eq!(q.on_receive(&b, &mut st), vec![Action::Nothing]);
    assert!(q.reverse_call(&cb).is_none());
}

/// A piece of the client's continued reply to reverse-direction Call
/// `xid`: `F_RESPONSE`, `F_MORE` unless `last`.
fn v2_response_piece(xid: u32, last: bool, payload: &[u8]) -> Vec<u8> {
    let spec = MsgSpec {
        xid,
        credit: (32 << 16) | 1,
        kind: MsgKind::Msg,
        flags: if last {
            Flags::RESPONSE
        } else {
            Flags::RESPONSE.with(Flags::MORE)
        },
        inv_handle: 0,
        chunks: ChunkLists::EMPTY,
    };
    let mut b = vec![0u8; 64];
    let n = header::encode_msg(&mut b, Protocol::V2, &spec).unwrap();
    b.truncate(n);
    b.extend_from_slice(payload);
    b
}

/// `--pad-callbacks`: nfsd's CB_COMPOUND goes out with the padding
/// appended; the client's reply, continued over three pieces (-00 §6.5),
/// is reassembled and goes to nfsd without the padding's results.
#[test]
fn padded_callback_reply_continued_reassembled_and_stripped() {
    let mut st = Stats::default();
    let opts = Options {
        relay_callbacks: true,
        no_connprop: true,
        pad_callbacks: 4,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    p.on_receive(
        &call_msg(Protocol::V2, 1, 0, ChunkLists::EMPTY, &rpc_call(1, 4, 1)),
        &mut st,
    );
    // CB_COMPOUND: AUTH_NONE, empty tag, minor version 1, ident 0, one op.
    let cb = bytes(&[0x78, 0, 2, 0x4000_0000, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 11]);
    let m = words(&p.reverse_call(&cb).unwrap());
    assert_eq!(m[9 + 13], 5, "the operation count, 1 + 4");
    assert_eq!(m.len(), 9 + cb.len() / 4 + 4 * 5);
    assert_eq!(&m[m.len() - 5..], &[nfs::OP_CB_NOTIFY_LOCK, 0, 0, 0, 0]);
    assert_eq!(p.padded_pending(), 1);
    // The reply: CB_SEQUENCE's result and the four of the padding.
    let orig = bytes(&[0x78, 1, 0, 0, 0, 0, 0, 0, 1, 11, 0]);
    let padded = bytes(&[
        0x78, 1, 0, 0, 0, 0, 0, 0, 5, 11, 0, 13, 0, 13, 0, 13, 0, 13, 0,
    ]);
    let (a, rest) = padded.split_at(10);
    let (b, c) = rest.split_at(30);
    assert_eq!(
        p.on_receive(&v2_response_piece(0x78, false, a), &mut st),
        vec![Action::Nothing]
    );
    assert_eq!(
        p.on_receive(&v2_response_piece(0x78, false, b), &mut st),
        vec![Action::Nothing]
    );
    assert_eq!(
        p.on_receive(&v2_response_piece(0x78, true, c), &mut st),
        vec![Action::ToNfsd(orig)]
    );
    assert_eq!(
        (st.continued_reverse_replies, st.reverse_reply_pieces),
        (1, 3)
    );
    assert_eq!(
        (st.padded_replies_stripped, st.padded_replies_wrong),
        (1, 0)
    );
    assert_eq!(st.reverse_replies, 1);
    assert_eq!(p.padded_pending(), 0);
    // A continued reply abandoned for another message is counted and
    // not relayed; the whole reply that came instead is.
    p.on_receive(&v2_response_piece(0x79, false, a), &mut st);
    let whole = bytes(&[0x7a, 1, 0, 0, 0, 0]);
    assert_eq!(
        p.on_receive(&v2_response(0x7a, &whole), &mut st),
        vec![Action::ToNfsd(whole)]
    );
    assert_eq!(st.reverse_replies_interrupted, 1);
}

#[test]
fn cb_null_probe_answered_and_counted_not_forwarded() {
    let mut st = Stats::default();
    let opts = Options {
        relay_callbacks: true,
        probe_callbacks: true,
        no_connprop: true,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    // Nothing before the version is known.
    assert!(p.cb_null(0x4000_0000).is_none());
    p.on_receive(
        &call_msg(Protocol::V2, 1, 0, ChunkLists::EMPTY, &rpc_call(1, 4, 1)),
        &mut st,
    );
    let m = words(&p.cb_null(0x4000_0000).unwrap());
    // RDMA2_MSG without F_RESPONSE, then CALL of CB_NULL (program, 1, 0)
    let xid = m[0];
    assert_eq!(
        xid & 0xff00_0000,
        rpcrdma_responder::proto::reverse::PROBE_XID
    );
    assert_eq!(&m[3..5], &[0, 0]);
    assert_eq!(&m[9..15], &[xid, 0, 2, 0x4000_0000, 1, 0]);
    let answer = |p: &mut ConnProto, st: &mut Stats, x: u32, accept: u32| {
        p.on_receive(&v2_response(x, &bytes(&[x, 1, 0, 0, 0, accept])), st)
    };
    assert_eq!(answer(&mut p, &mut st, xid, 0), vec![Action::Nothing]);
    assert_eq!(
        (st.cb_null_replies, st.cb_null_failed, st.reverse_replies),
        (1, 0, 0)
    );
    // A second probe refused (PROG_UNAVAIL); an unknown XID goes to nfsd.
    let x2 = words(&p.cb_null(0x4000_0000).unwrap())[0];
    assert_ne!(x2, xid);
    assert_eq!(answer(&mut p, &mut st, x2, 1), vec![Action::Nothing]);
    assert_eq!((st.cb_null_replies, st.cb_null_failed), (1, 1));
    assert!(matches!(
        answer(&mut p, &mut st, x2, 0)[..],
        [Action::ToNfsd(_)]
    ));
    // Without --probe-callbacks: no probe.
    let mut q = ConnProto::new(
        Options {
            relay_callbacks: true,
            ..Options::default()
        },
        client(4096),
    );
    q.on_receive(
        &call_msg(Protocol::V2, 1, 0, ChunkLists::EMPTY, &rpc_call(1, 4, 1)),
        &mut st,
    );
    assert!(q.cb_null(0x4000_0000).is_none());
}

#[test]
fn bad_reverse_call_offers_a_write_chunk_and_counts_the_error_answer() {
    use rpcrdma_responder::proto::reverse::BAD_CALL_XID;
    use rpcrdma_xdr::header::ErrorBody;
    let mut st = Stats::default();
    let opts = Options {
        relay_callbacks: true,
        bad_reverse_call: true,
        no_connprop: true,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts.clone(), client(4096));
    // Nothing before the version is known.
    assert!(p.bad_reverse_call().is_none());
    p.on_receive(
        &call_msg(Protocol::V2, 1, 0, ChunkLists::EMPTY, &rpc_call(1, 4, 1)),
        &mut st,
    );
    let m = p.bad_reverse_call().unwrap();
    // Once per connection.
    assert!(p.bad_reverse_call().is_none());
    let h = header::decode(&m).unwrap();
    assert_eq!(h.protocol, Protocol::V2);
    assert_eq!(h.xid, BAD_CALL_XID);
    assert!(!h.flags.is_response());
    let header::Body::Msg(b) = h.body else {
        panic!("not an RDMA2_MSG: {:?}", h.body)
    };
    assert_eq!(b.chunks.writes.into_iter().count(), 1);
    assert!(b.chunks.reads.is_empty() && b.chunks.reply.is_none());
    // The payload is an RPC Call with the header's XID.
    assert_eq!(&words(b.payload)[..2], &[BAD_CALL_XID, 0]);
    let error = |xid: u32, body: ErrorBody| {
        let mut buf = vec![0u8; 64];
        let n = rpcrdma_xdr::v2::encode_error(&mut buf, xid, 1, &body).unwrap();
        buf.truncate(n);
        buf
    };
    let rr = ErrorBody::ReplyResource { length_needed: 0 };
    // An error for another XID is not its answer.
    p.on_receive(&error(7, rr), &mut st);
    assert_eq!(
        (st.bad_reverse_call_answered, st.bad_reverse_call_wrong),
        (0, 0)
    );
    assert_eq!(
        p.on_receive(&error(BAD_CALL_XID, rr), &mut st),
        vec![Action::Nothing]
    );
    assert_eq!(
        (st.bad_reverse_call_answered, st.bad_reverse_call_wrong),
        (1, 0)
    );
    // Counted once: a second answer is unexpected.
    p.on_receive(&error(BAD_CALL_XID, rr), &mut st);
    assert_eq!(
        (st.bad_reverse_call_answered, st.bad_reverse_call_wrong),
        (1, 0)
    );
    // Another code is counted as wrong.
    let mut q = ConnProto::new(opts, client(4096));
    q.on_receive(&null_call(Protocol::V2, 1), &mut st);
    assert!(q.bad_reverse_call().is_some());
    q.on_receive(&error(BAD_CALL_XID, ErrorBody::BadXdr), &mut st);
    assert_eq!(
        (st.bad_reverse_call_answered, st.bad_reverse_call_wrong),
        (1, 1)
    );
    // Not without the switch, nor in version 1.
    let mut r = ConnProto::new(
        Options {
            relay_callbacks: true,
            ..Options::default()
        },
        client(4096),
    );
    r.on_receive(&null_call(Protocol::V2, 1), &mut st);
    assert!(r.bad_reverse_call().is_none());
    let mut v1 = ConnProto::new(
        Options {
            relay_callbacks: true,
            bad_reverse_call: true,
            ..Options::default()
        },
        client(4096),
    );
    v1.on_receive(&null_call(Protocol::V1, 1), &mut st);
    assert!(v1.bad_reverse_call().is_none());
}

#[test]
fn err_every_refuses_calls_and_counts_refused_xids_sent_again() {
    let mut st = Stats::default();
    let opts = Options {
        err_every: Some((2, 3, 10)),
        no_connprop: true,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    let mut refused = Vec::new();
    for xid in 1..=11u32 {
        let a = p.on_receive(&null_call(Protocol::V2, xid), &mut st);
        match &a[0] {
            Action::Call(_) => {}
            _ => {
                let s = sends(&a);
                // RDMA2_ERROR, F_RESPONSE, RDMA2_ERR_SYSTEM
                assert_eq!(&s[0][3..6], &[4, 1, 10], "xid {xid}");
                refused.push(xid);
            }
        }
    }
    // Calls 5, 8 and 11: after the first 2, every 3rd.
    assert_eq!(refused, [5, 8, 11]);
    assert_eq!(st.errors_injected, 3);
    assert_eq!(st.refused_resent, 0);
    // A new connection (the client reconnected) that sends a refused XID
    // again is caught; other XIDs are not.
    let mut q = ConnProto::new(Options::default(), client(4096));
    for xid in [8u32, 9] {
        let _ = q.on_receive(&null_call(Protocol::V2, xid), &mut st);
    }
    assert_eq!(st.refused_resent, 1);
}

// ---- error recovery (-00 §6.4.3): the refusals and the resends ----

fn seg(handle: u32, length: u32) -> Segment {
    Segment {
        handle,
        length,
        offset: 0x1000 * u64::from(handle),
    }
}

fn v2_conn(opts: Options) -> ConnProto {
    ConnProto::new(
        Options {
            no_connprop: true,
            ..opts
        },
        client(4096),
    )
}

/// The error words after the v2 prefix (htype, flags, rdma_err, body).
fn error_of(a: &[Action]) -> Vec<u32> {
    let s = sends(a);
    assert_eq!(s.len(), 1, "{a:?}");
    assert_eq!(&s[0][1..2], &[2], "version 2");
    s[0][3..].to_vec()
}

/// A Long Call (RDMA2_NOMSG, Position-Zero Read chunk) for `xid`.
fn long_call(xid: u32, reply: Option<&[Segment]>) -> Vec<u8> {
    let reads = [ReadSegment {
        position: 0,
        target: seg(1, 40),
    }];
    let spec = MsgSpec {
        xid,
        credit: (32 << 16) | 1,
        kind: MsgKind::NoMsg,
        flags: Flags::NONE,
        inv_handle: 0,
        chunks: ChunkLists {
            reads: &reads,
            writes: &[],
            reply,
        },
    };
    let mut b = vec![0u8; 1024];
    let n = header::encode_msg(&mut b, Protocol::V2, &spec).unwrap();
    b.truncate(n);
    b
}

#[test]
fn refuse_read_chunks_then_serve_the_position_zero_read() {
    let mut st = Stats::default();
    let mut p = v2_conn(Options {
        refuse_read_chunks: true,
        ..Options::default()
    });
    let reads = [ReadSegment {
        position: 40,
        target: seg(1, 65536),
    }];
    let chunks = ChunkLists {
        reads: &reads,
        writes: &[],
        reply: None,
    };
    let rpc = rpc_call(0x71, 3, 7);
    let a = p.on_receive(&call_msg(Protocol::V2, 0x71, 0, chunks, &rpc), &mut st);
    // RDMA2_ERROR, F_RESPONSE, RDMA2_ERR_READ_CHUNKS, rdma_max_chunks 0
    assert_eq!(error_of(&a), [4, 1, 5, 0]);
    assert_eq!(st.refused_read_chunks, 1);
    // Sent again as a Long Call: served, counted as a recovery.
    let a = p.on_receive(&long_call(0x71, None), &mut st);
    assert!(the_call(&a).is_position_zero());
    assert_eq!(
        (
            st.resent_read_chunks,
            st.resent_noncompliant,
            st.refused_resent
        ),
        (1, 0, 0)
    );
    // Sent again with the same Read chunk: refused again, and counted as
    // a resend that did not do what -00 asks.
    let a = p.on_receive(&call_msg(Protocol::V2, 0x71, 0, chunks, &rpc), &mut st);
    assert_eq!(error_of(&a), [4, 1, 5, 0]);
    assert_eq!(st.resent_noncompliant, 1);
}

#[test]
fn max_segs_refuses_larger_chunks_then_serves_fewer() {
    let mut st = Stats::default();
    let mut p = v2_conn(Options {
        max_segs: Some(2),
        ..Options::default()
    });
    let three = [seg(1, 300), seg(2, 32768), seg(3, 200)];
    let rpc = rpc_call(0x72, 3, 16);
    let with = |r: &'static [Segment]| ChunkLists {
        reads: &[],
        writes: &[],
        reply: Some(r),
    };
    let three: &'static [Segment] = Box::leak(Box::new(three));
    let a = p.on_receive(&call_msg(Protocol::V2, 0x72, 0, with(three), &rpc), &mut st);
    assert_eq!(error_of(&a), [4, 1, 7, 2]);
    assert_eq!(st.refused_segments, 1);
    let two: &'static [Segment] = &three[..2];
    let a = p.on_receive(&call_msg(Protocol::V2, 0x72, 0, with(two), &rpc), &mut st);
    assert_eq!(the_call(&a).max_chunk_segs(), 2);
    assert_eq!(st.resent_segments, 1);
}

#[test]
fn no_write_chunks_answers_reply_resource_with_the_length_then_serves() {
    let mut st = Stats::default();
    let mut p = v2_conn(Options {
        no_write_chunks: true,
        ..Options::default()
    });
    let w = [seg(5, 65536)];
    let writes: [&[Segment]; 1] = [&w];
    let chunks = ChunkLists {
        reads: &[],
        writes: &writes,
        reply: None,
    };
    let rpc = rpc_call(0x73, 3, NFS3_READ);
    let a = p.on_receive(&call_msg(Protocol::V2, 0x73, 0, chunks, &rpc), &mut st);
    let c = the_call(&a);
    assert!(c.refuse_reply);
    assert_eq!(st.refused_write_chunks, 1);
    // nfsd's reply (1000 bytes): RDMA2_ERR_REPLY_RESOURCE, 1000 needed.
    let reply = vec![0u8; 1000];
    let plan = p.plan_reply(&c, &reply, None, &mut st);
    assert!(plan.writes.is_empty() && plan.path.is_none());
    assert_eq!(plan.sends.len(), 1);
    assert_eq!(words(&plan.sends[0])[3..], [4, 1, 9, 1000]);
    // Sent again with a Reply chunk that is too small: not as asked.
    let small = [seg(6, 999)];
    let short = ChunkLists {
        reads: &[],
        writes: &[],
        reply: Some(&small),
    };
    let a = p.on_receive(&call_msg(Protocol::V2, 0x73, 0, short, &rpc), &mut st);
    assert!(!the_call(&a).refuse_reply);
    assert_eq!((st.resent_reply_resource, st.resent_noncompliant), (0, 1));
    // ... and with one large enough, without the Write chunk: as asked.
    let big = [seg(6, 1000)];
    let ok = ChunkLists {
        reads: &[],
        writes: &[],
        reply: Some(&big),
    };
    let a = p.on_receive(&call_msg(Protocol::V2, 0x73, 0, ok, &rpc), &mut st);
    assert!(!the_call(&a).refuse_reply);
    assert_eq!(st.resent_reply_resource, 1);
}

#[test]
fn err_nth_bodies_describe_the_call() {
    let w = [seg(5, 4096), seg(6, 4096)];
    let writes: [&[Segment]; 1] = [&w];
    let r3 = [seg(7, 100), seg(8, 8192), seg(9, 100)];
    let cases: [(u32, ChunkLists<'_>, Vec<u32>); 9] = [
        (5, ChunkLists::EMPTY, vec![5, 0]),
        (
            6,
            ChunkLists {
                reads: &[],
                writes: &writes,
                reply: None,
            },
            vec![6, 0],
        ),
        (
            7,
            ChunkLists {
                reads: &[],
                writes: &[],
                reply: Some(&r3),
            },
            vec![7, 2],
        ),
        (7, ChunkLists::EMPTY, vec![7, 0]),
        (
            8,
            ChunkLists {
                reads: &[],
                writes: &writes,
                reply: None,
            },
            vec![8, 1, 8196],
        ),
        (8, ChunkLists::EMPTY, vec![8, 0, 0]),
        (
            9,
            ChunkLists {
                reads: &[],
                writes: &[],
                reply: Some(&r3),
            },
            vec![9, 8396],
        ),
        (10, ChunkLists::EMPTY, vec![10]),
        (42, ChunkLists::EMPTY, vec![42]),
    ];
    for (code, chunks, want) in cases {
        let mut st = Stats::default();
        let mut p = v2_conn(Options {
            err_nth: vec![(1, code)],
            ..Options::default()
        });
        let a = p.on_receive(
            &call_msg(Protocol::V2, 9, 0, chunks, &rpc_call(9, 3, 0)),
            &mut st,
        );
        let e = error_of(&a);
        assert_eq!(&e[..2], &[4, 1]);
        assert_eq!(e[2..], want, "code {code}");
        assert_eq!(st.errors_injected, 1);
        assert!(st.refused.contains(9));
    }
    // REPLY_RESOURCE to a Call without a Reply chunk waits for nfsd's
    // reply, whose length it then asks for.
    let mut st = Stats::default();
    let mut p = v2_conn(Options {
        err_nth: vec![(1, 9)],
        ..Options::default()
    });
    let a = p.on_receive(&null_call(Protocol::V2, 9), &mut st);
    let c = the_call(&a);
    assert!(c.refuse_reply && st.errors_injected == 1);
    let plan = p.plan_reply(&c, &[0u8; 120], None, &mut st);
    assert_eq!(words(&plan.sends[0])[3..], [4, 1, 9, 120]);
    // A Position-Zero Read refused with READ_CHUNKS must fail: sent
    // again, it counts in refused_resent.
    let mut st = Stats::default();
    let mut p = v2_conn(Options {
        err_nth: vec![(1, 5)],
        ..Options::default()
    });
    let a = p.on_receive(&long_call(0x74, None), &mut st);
    assert_eq!(error_of(&a), [4, 1, 5, 0]);
    let _ = p.on_receive(&long_call(0x74, None), &mut st);
    assert_eq!((st.refused_resent, st.resent_read_chunks), (1, 0));
}

#[test]
fn err_calls_counts_only_that_kind_and_err_nth_repeats() {
    use rpcrdma_responder::proto::call::CallKind;
    let mut st = Stats::default();
    let mut p = v2_conn(Options {
        err_nth: vec![(1, 2), (2, 42)],
        err_calls: CallKind::Write,
        ..Options::default()
    });
    let w = [seg(5, 4096)];
    let writes: [&[Segment]; 1] = [&w];
    let read = ChunkLists {
        reads: &[],
        writes: &writes,
        reply: None,
    };
    let mut got = Vec::new();
    for (xid, chunks) in [
        (1u32, ChunkLists::EMPTY),
        (2, read),
        (3, ChunkLists::EMPTY),
        (4, read),
        (5, read),
    ] {
        let a = p.on_receive(
            &call_msg(Protocol::V2, xid, 0, chunks, &rpc_call(xid, 3, NFS3_READ)),
            &mut st,
        );
        got.push(match &a[0] {
            Action::Call(_) => 0,
            _ => error_of(&a)[2],
        });
    }
    // The 1st and 2nd Calls with a Write chunk: BAD_XDR, then code 42.
    assert_eq!(got, [0, 2, 0, 42, 0]);
    assert_eq!(st.errors_injected, 2);
    assert_eq!(CallKind::parse("inline"), Some(CallKind::Inline));
    assert_eq!(CallKind::parse("nope"), None);
}

#[test]
fn v1_refusals_are_err_vers_or_err_chunk_and_must_fail() {
    for (code, want) in [(1u32, vec![1u32, 1, 2]), (5, vec![2]), (10, vec![2])] {
        let mut st = Stats::default();
        let mut p = ConnProto::new(
            Options {
                err_nth: vec![(1, code)],
                ..Options::default()
            },
            client(4096),
        );
        let a = p.on_receive(&null_call(Protocol::V1, 3), &mut st);
        let s = sends(&a);
        // xid, vers 1, credit, RDMA_ERROR, code and body
        assert_eq!(&s[0][1..2], &[1]);
        assert_eq!(s[0][3], 4);
        assert_eq!(s[0][4..], want, "code {code}");
        assert_eq!(
            st.refused.get(3),
            Some(rpcrdma_responder::stats::Expect::Fail)
        );
    }
}

/// A piece of a continued v2 Call: `RDMA2_MSG`, `F_MORE` unless `last`,
/// the client's credit word `credit`.
fn call_piece(xid: u32, credit: u32, last: bool, payload: &[u8]) -> Vec<u8> {
    let flags = if last { 0 } else { 2 };
    let mut b = bytes(&[xid, 2, credit, 0, flags, 0, 0, 0, 0]);
    b.extend_from_slice(payload);
    b
}

/// The grants among `a`: (xid, credit word, htype, flags) of each
/// `RDMA2_NOMSG` with empty lists.
fn grants(a: &[Action]) -> Vec<u32> {
    sends(a)
        .into_iter()
        .filter(|w| w.len() == 9 && w[0] == 0 && w[1] == 2 && w[3] == 1 && w[4] == 0)
        .filter(|w| w[5..] == [0, 0, 0, 0])
        .map(|w| w[2])
        .collect()
}

/// Sends a continued Call of `pieces` pieces and returns every action,
/// piece by piece.
fn continued_call(p: &mut ConnProto, st: &mut Stats, xid: u32, pieces: usize) -> Vec<Vec<Action>> {
    let rpc = rpc_call(xid, 3, 0);
    let mut out = Vec::new();
    for i in 0..pieces {
        let last = i + 1 == pieces;
        let part: &[u8] = if i == 0 {
            &rpc[..8]
        } else if last {
            &rpc[8..]
        } else {
            &[0, 0, 0, 0]
        };
        let mut data = part.to_vec();
        if last {
            // the middle pieces added zeros: take as many off the end
            data.truncate(rpc.len() - 8);
        }
        out.push(p.on_receive(&call_piece(xid, (32 << 16) | 1, last, &data), st));
    }
    out
}

#[test]
fn grant_prompt_only_while_a_continued_call_waits() {
    let mut st = Stats::default();
    let opts = Options {
        no_connprop: true,
        credits: 4,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    let a = continued_call(&mut p, &mut st, 0x21, 4);
    // Two pieces of the Call are spare credits: half the limit of 4, so
    // the client (which may be out of credits) gets them back at once,
    // in a grant built returning nothing and topped up as it leaves.
    assert!(grants(&a[0]).is_empty());
    assert_eq!(grants(&a[1]), vec![4 << 16]);
    // One grant queued at a time.
    assert!(grants(&a[2]).is_empty());
    assert!(grants(&a[3]).is_empty());
    assert!(p.grant_leaving(&mut st));
    assert_eq!(p.top_up(u16::MAX), 3);
    assert_eq!(st.grants_sent, 1);
    // The reply returns its Call.
    let c = the_call(&a[3]);
    let pl = p.plan_reply(&c, &bytes(&[0x21, 1, 0, 0, 0, 0]), None, &mut st);
    assert_eq!(words(&pl.sends[0])[2], (4 << 16) | 1);
    assert_eq!(p.top_up(u16::MAX), 0);
    // Without a continued Call nothing is granted asynchronously.
    let g = bytes(&[0, 2, (32 << 16) | 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(p.on_receive(&g, &mut st), vec![Action::Nothing]);
    assert_eq!(st.grants_sent, 1);
}

/// The stall of rpcrdma2-v2-continuation's concurrent case (eight
/// 256 KiB RPCs in flight, inline only): a continued reply waits in the
/// queue for the client's credits when the pieces of a continued Call
/// arrive. Whatever is queued behind the reply (the grant those pieces
/// call for, the first piece of the next reply) must not hold their
/// credits: the reply's pieces, which are the ones to leave as the
/// client's credits come, return them. Built with them, the grant and
/// the second reply kept them while the client, out of credits in the
/// middle of its Call and its one grant beyond our limit spent, waited
/// for them for good.
#[test]
fn queued_messages_hold_no_spare_credits() {
    let mut st = Stats::default();
    let opts = Options {
        no_connprop: true,
        credits: 32,
        continue_over: Some(1024),
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    // Two Calls admitted (READs), answered by nfsd with 8 KiB replies:
    // continued in pieces, all queued (the client has no credits left).
    let mut calls = Vec::new();
    for x in [0x41u32, 0x42] {
        let a = p.on_receive(&null_call(Protocol::V2, x), &mut st);
        calls.push(the_call(&a));
    }
    let mut reply = bytes(&[0x41, 1, 0, 0, 0, 0]);
    reply.resize(8192, 7);
    let first = p.plan_reply(&calls[0], &reply, None, &mut st);
    assert!(first.sends.len() > 4);
    // A continued Call of 20 pieces arrives: 19 spare credits (the last
    // piece makes a Call, whose answer returns its credit).
    let a = continued_call(&mut p, &mut st, 0x43, 20);
    let queued_grants: Vec<u32> = a.iter().flat_map(|x| grants(x)).collect();
    // At most one grant, returning nothing yet.
    assert!(queued_grants.len() <= 1);
    assert!(queued_grants.iter().all(|w| w & 0xffff == 0));
    // The second reply, planned now, queues behind the first.
    reply[..4].copy_from_slice(&0x42u32.to_be_bytes());
    let second = p.plan_reply(&calls[1], &reply, None, &mut st);
    let granted = |b: &[u8]| words(b)[2] & 0xffff;
    assert!(second.sends.iter().all(|b| granted(b) <= 1));
    // The first reply's next piece to leave returns all 19 spare credits.
    assert_eq!(p.top_up(u16::MAX), 19);
    assert_eq!(p.top_up(u16::MAX), 0);
    // A grant still queued behind it then has nothing to return: dropped.
    if !queued_grants.is_empty() {
        assert!(!p.grant_leaving(&mut st));
    }
    assert_eq!(st.grants_sent, 0);
}

/// A version 2 connection without CONNPROP, returning credits by `grant`.
fn granting(grant: GrantMode) -> ConnProto {
    let opts = Options {
        no_connprop: true,
        grant,
        ..Options::default()
    };
    ConnProto::new(opts, client(4096))
}

#[test]
fn prompt_tops_up_returns_when_a_message_leaves() {
    let mut st = Stats::default();
    let mut p = granting(GrantMode::Prompt);
    let a = p.on_receive(&null_call(Protocol::V2, 0x31), &mut st);
    let c = the_call(&a);
    let pl = p.plan_reply(&c, &bytes(&[0x31, 1, 0, 0, 0, 0]), None, &mut st);
    // Built: returns its Call's credit.
    assert_eq!(words(&pl.sends[0])[2], (32 << 16) | 1);
    // Nothing more is owed until the client sends again.
    assert_eq!(p.top_up(u16::MAX), 0);
    // Two pieces of a continued Call arrive before the reply leaves:
    // the reply returns them too, exactly once, within the room given.
    let _ = continued_call(&mut p, &mut st, 0x32, 3);
    assert_eq!(p.top_up(1), 1);
    assert_eq!(p.top_up(u16::MAX), 1);
    assert_eq!(p.top_up(u16::MAX), 0);
}

#[test]
fn error_returns_exactly_one_credit() {
    let mut st = Stats::default();
    let mut p = granting(GrantMode::Prompt);
    let _ = continued_call(&mut p, &mut st, 0x33, 3);
    // Two spare pieces and the admitted Call are owed; an RDMA2_ERROR
    // answering it returns one (its receiver counts one), the rest stay.
    let e = p.call_error(0x33, rpcrdma_xdr::v2::ERR_SYSTEM, &mut st);
    assert_eq!(words(&e)[2], (32 << 16) | 1);
    assert_eq!(p.top_up(u16::MAX), 2);
}

#[test]
fn tops_up_nothing_with_other_grant_patterns() {
    let mut st = Stats::default();
    for mode in [GrantMode::Exact, GrantMode::Lazy] {
        let mut p = granting(mode);
        let _ = continued_call(&mut p, &mut st, 0x34, 3);
        assert_eq!(p.top_up(u16::MAX), 0, "{mode:?}");
    }
}

#[test]
fn grant_exact_returns_one_per_message() {
    let mut st = Stats::default();
    let mut p = granting(GrantMode::Exact);
    let a = continued_call(&mut p, &mut st, 0x22, 3);
    // Each spare credit (a non-final piece) at once, one per grant.
    assert_eq!(grants(&a[0]), vec![(32 << 16) | 1]);
    assert_eq!(grants(&a[1]), vec![(32 << 16) | 1]);
    assert!(grants(&a[2]).is_empty());
    // The reply returns exactly its Call's credit.
    let c = the_call(&a[2]);
    let pl = p.plan_reply(&c, &bytes(&[0x22, 1, 0, 0, 0, 0]), None, &mut st);
    assert_eq!(words(&pl.sends[0])[2], (32 << 16) | 1);
    // A client grant is a spare credit: one grant back.
    let g = bytes(&[0, 2, (32 << 16) | 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(grants(&p.on_receive(&g, &mut st)), vec![(32 << 16) | 1]);
    let a = p.on_receive(&null_call(Protocol::V2, 0x23), &mut st);
    let mut r = bytes(&[0x23, 1, 0, 0, 0, 0]);
    r.resize(10000, 0x55);
    let mut c = the_call(&a);
    c.reply = None;
    let pl = p.plan_reply(&c, &r, None, &mut st);
    assert_eq!(pl.path, Some(Path::Continued));
    // Nothing spare meanwhile: the pieces return none (a zero low half),
    // the last one its Call's credit.
    let n = pl.sends.len();
    for (i, s) in pl.sends.iter().enumerate() {
        assert_eq!(words(s)[2] & 0xffff, u32::from(i + 1 == n), "piece {i}");
    }
}

/// When our messages wait for the client's credits, what is spare goes
/// back in a grant whatever the pattern would hold back: with `lazy`,
/// two spare credits (fewer than its four) waited until the client,
/// out of our credits, sent more, and it could not (both sides stalled).
#[test]
fn blocked_grant_returns_all_spare_credits_in_every_pattern() {
    let mut st = Stats::default();
    for mode in [GrantMode::Lazy, GrantMode::Exact] {
        let mut p = granting(mode);
        let a = continued_call(&mut p, &mut st, 0x35, 3);
        let held: u32 = a.iter().flat_map(|x| grants(x)).map(|w| w & 0xffff).sum();
        // lazy held both spare pieces back; exact sent them already
        let spare = 2 - held;
        match p.blocked_grant() {
            Some(g) => assert_eq!(words(&g)[2], (32 << 16) | spare, "{mode:?}"),
            None => assert_eq!(spare, 0, "{mode:?}"),
        }
        // returned once: nothing is spare after it (the Call is owed
        // by its answer)
        assert!(p.blocked_grant().is_none(), "{mode:?}");
        let c = the_call(&a[2]);
        let pl = p.plan_reply(&c, &bytes(&[0x35, 1, 0, 0, 0, 0]), None, &mut st);
        assert_eq!(words(&pl.sends[0])[2], (32 << 16) | 1, "{mode:?}");
    }
    // prompt: built returning nothing (topped up as it leaves), one at
    // a time
    let mut p = granting(GrantMode::Prompt);
    let _ = continued_call(&mut p, &mut st, 0x36, 3);
    let g = p.blocked_grant().expect("two spare credits: a grant");
    assert_eq!(words(&g)[2], 32 << 16);
    assert!(p.blocked_grant().is_none());
    assert!(p.grant_leaving(&mut st));
    assert_eq!(p.top_up(u16::MAX), 2);
}

#[test]
fn grant_lazy_batches_spare_credits() {
    let mut st = Stats::default();
    let mut p = granting(GrantMode::Lazy);
    let a = continued_call(&mut p, &mut st, 0x31, 3);
    assert!(a.iter().all(|x| grants(x).is_empty()));
    // Two spare so far; the reply returns only its Call's credit.
    let c = the_call(&a[2]);
    let pl = p.plan_reply(&c, &bytes(&[0x31, 1, 0, 0, 0, 0]), None, &mut st);
    assert_eq!(words(&pl.sends[0])[2], (32 << 16) | 1);
    // Two more spare (client grants): four, returned in one grant.
    let g = bytes(&[0, 2, (32 << 16) | 1, 1, 0, 0, 0, 0, 0]);
    assert!(grants(&p.on_receive(&g, &mut st)).is_empty());
    assert_eq!(grants(&p.on_receive(&g, &mut st)), vec![(32 << 16) | 4]);
    // counted when it leaves; built with its credits, it always does
    assert!(p.grant_leaving(&mut st));
    assert_eq!(st.grants_sent, 1);
    assert_eq!(GrantMode::parse("lazy"), Some(GrantMode::Lazy));
    assert_eq!(GrantMode::parse("exact"), Some(GrantMode::Exact));
    assert_eq!(GrantMode::parse("prompt"), Some(GrantMode::Prompt));
    assert_eq!(GrantMode::parse("eager"), None);
}

#[test]
fn client_credit_limit_gates_sends() {
    let mut st = Stats::default();
    let opts = Options {
        no_connprop: true,
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    // Before the client has spoken, nothing limits us.
    assert!(p.may_send_client(false));
    // The client holds at most 2 of our messages; it returned 1 (more
    // than we sent: clamped).
    let a = p.on_receive(
        &call_piece(0x41, (2 << 16) | 1, false, &bytes(&[0x41, 0])),
        &mut st,
    );
    assert_eq!(a, vec![Action::Nothing]);
    assert_eq!(p.client_limit(), 2);
    assert_eq!(p.client_outstanding(), 0);
    p.sent_client();
    p.sent_client();
    assert!(!p.may_send_client(false));
    // One more for a credit grant: the Receive -00 keeps for grants.
    assert!(p.may_send_client(true));
    p.sent_client();
    assert!(!p.may_send_client(true));
    // The client returns two: room again.
    let _ = p.on_receive(
        &call_piece(0x41, (2 << 16) | 2, false, &[0, 0, 0, 0]),
        &mut st,
    );
    assert_eq!(p.client_outstanding(), 1);
    assert!(p.may_send_client(false));
    // An invalid word (zero half) is ignored; an RDMA2_ERROR's too.
    let _ = p.on_receive(&call_piece(0x41, 2 << 16, false, &[0, 0, 0, 0]), &mut st);
    assert_eq!(p.client_outstanding(), 1);
    assert_eq!(p.client_limit(), 2);
    // Version 1 has no requester credits.
    let mut v1 = ConnProto::new(Options::default(), client(1024));
    let _ = v1.on_receive(&null_call(Protocol::V1, 5), &mut st);
    for _ in 0..100 {
        v1.sent_client();
    }
    assert!(v1.may_send_client(false));
}

#[test]
fn v2_foreign_inv_handle_is_not_invalidated() {
    // -00 §6.3.3.2: rdma_inv_handle must match one of the Call's
    // rdma_handle fields; a handle that matches none (here: a Call with
    // no chunks) is never invalidated, and is counted.
    let mut st = Stats::default();
    let mut p = ConnProto::new(Options::default(), client(4096));
    let rpc = rpc_call(0x23, 3, 0);
    let a = p.on_receive(
        &call_msg(Protocol::V2, 0x23, 0x5555, ChunkLists::EMPTY, &rpc),
        &mut st,
    );
    let c = the_call(&a);
    let reply = bytes(&[0x23, 1, 0, 0, 0, 0, 0]);
    let plan = p.plan_reply(&c, &reply, None, &mut st);
    assert_eq!(plan.invalidate, None);
    assert_eq!(st.inv_handle_foreign, 1);
}

#[test]
fn prop_segment_limits_advertised_and_enforced() {
    let mut st = Stats::default();
    let opts = Options {
        prop_segs: Some(2),
        prop_seg_size: Some(65536),
        ..Options::default()
    };
    let mut p = ConnProto::new(opts, client(4096));
    let rpc = rpc_call(0x31, 3, 0);
    let seg = |h: u32, len: u32| Segment {
        handle: h,
        length: len,
        offset: 0,
    };
    // Two segments of 64 KiB: within the limits.
    let w = [seg(1, 65536), seg(2, 65536)];
    let writes = [&w[..]];
    let ok = ChunkLists {
        reads: &[],
        writes: &writes,
        reply: None,
    };
    let a = p.on_receive(&call_msg(Protocol::V2, 0x31, 1, ok, &rpc), &mut st);
    let s = sends(&a);
    // Our CONNPROP first: RSSIZ 65536, RCSIZ 2.
    assert_eq!(
        &s[0][5..],
        &[5, 1, 4, 4096, 2, 4, 4096, 3, 4, 65536, 4, 4, 2, 5, 4, 0]
    );
    assert_eq!(the_call(&a).xid, 0x31);
    // Three segments: RDMA2_ERR_SEGMENTS (7) with max 2.
    let w3 = [seg(1, 4096), seg(2, 4096), seg(3, 4096)];
    let writes3 = [&w3[..]];
    let three = ChunkLists {
        reads: &[],
        writes: &writes3,
        reply: None,
    };
    let (owed, _) = p.owed();
    let a = p.on_receive(&call_msg(Protocol::V2, 0x32, 0, three, &rpc), &mut st);
    let s = sends(&a);
    assert_eq!(s.len(), 1);
    assert_eq!(&s[0][..2], &[0x32, 2]);
    assert_eq!(&s[0][3..], &[4, 1, 7, 2]);
    // It returns the one credit the client counts an RDMA2_ERROR as
    // returning: the refused Call's, so nothing more is owed than before.
    assert_eq!(s[0][2] & 0xffff, 1);
    assert_eq!(p.owed().0, owed);
    // One segment of 64 KiB + 4: refused too.
    let big = [seg(1, 65540)];
    let a = p.on_receive(
        &call_msg(
            Protocol::V2,
            0x33,
            0,
            ChunkLists {
                reads: &[],
                writes: &[],
                reply: Some(&big),
            },
            &rpc,
        ),
        &mut st,
    );
    assert_eq!(&sends(&a)[0][3..], &[4, 1, 7, 2]);
    assert_eq!(st.prop_violations, 2);
}

/// RFC 8797 §4.1: the responder may use Send With Invalidate only when
/// both peers set the R bit. We set it only with `--remote-invalidate`;
/// with our R clear, or the client's, every reply is a plain Send, in
/// version 1 (a Call with one rkey) and version 2 (an rdma_inv_handle
/// naming the Call's Reply chunk) alike: the responder never invalidates
/// while advertising R clear.
#[test]
fn send_with_invalidate_only_when_both_r_bits_are_set() {
    let seg = [Segment {
        handle: 0xabcd,
        length: 8192,
        offset: 0x1000,
    }];
    let chunks = ChunkLists {
        reads: &[],
        writes: &[],
        reply: Some(&seg),
    };
    for proto in [Protocol::V1, Protocol::V2] {
        for (ours, theirs) in [(false, true), (true, false), (false, false), (true, true)] {
            let mut st = Stats::default();
            let mut p = ConnProto::new(
                Options {
                    remote_invalidate: ours,
                    no_connprop: true,
                    ..Options::default()
                },
                PrivateData {
                    remote_invalidate: theirs,
                    ..client(4096)
                },
            );
            assert_eq!(p.our_private_data().remote_invalidate, ours);
            let rpc = rpc_call(0x24, 3, 0);
            let a = p.on_receive(&call_msg(proto, 0x24, 0xabcd, chunks, &rpc), &mut st);
            let c = the_call(&a);
            let reply = bytes(&[0x24, 1, 0, 0, 0, 0, 0]);
            let plan = p.plan_reply(&c, &reply, None, &mut st);
            let want = (ours && theirs).then_some(0xabcd);
            assert_eq!(
                plan.invalidate, want,
                "{proto:?} R ours {ours} theirs {theirs}"
            );
        }
    }
}

/// A v2 RDMA2_CONNPROP from the client, its property set split into
/// `pieces` messages (F_MORE on all but the last), as rpcrdma2 would send
/// a long one: Maximum Send Size 2048, Receive Buffer Size 2048, Reverse
/// Request Support `rvreqsup`.
fn client_connprop(xid: u32, rvreqsup: u32, pieces: usize) -> Vec<Vec<u8>> {
    let set = bytes(&[3, 1, 4, 2048, 2, 4, 2048, 5, 4, rvreqsup]);
    let per = set.len().div_ceil(pieces);
    set.chunks(per)
        .enumerate()
        .map(|(i, part)| {
            let more = i + 1 < set.len().div_ceil(per);
            let mut m = bytes(&[xid, 2, (32 << 16) | 1, 5, if more { 2 } else { 0 }]);
            m.extend_from_slice(part);
            m
        })
        .collect()
}

/// A v2 connection settled by an inline Call (xid 1).
fn settled_v2(opts: Options, st: &mut Stats) -> ConnProto {
    let mut p = v2_conn(opts);
    let a = p.on_receive(&null_call(Protocol::V2, 1), st);
    assert!(matches!(a[0], Action::Call(_)));
    p
}

/// -00 §6.4.4 with §6.3.2: a CONNPROP may be continued. The client's
/// continued CONNPROP is reassembled and its properties taken (they used
/// to be counted and dropped, and the last piece was answered BAD_XDR).
#[test]
fn client_connprop_continued_is_reassembled() {
    for pieces in [1, 2, 3, 10] {
        let mut st = Stats::default();
        let mut p = settled_v2(Options::default(), &mut st);
        let msgs = client_connprop(0, 1, pieces);
        assert_eq!(msgs.len(), pieces);
        for m in &msgs {
            assert_eq!(
                p.on_receive(m, &mut st),
                vec![Action::Nothing],
                "{pieces} pieces"
            );
        }
        let v = p.client_props.expect("the client's properties");
        assert_eq!(
            (v.max_send_size, v.recv_buf_size, v.reverse_request_support),
            (2048, 2048, 1)
        );
        assert_eq!(st.malformed, 0);
        assert_eq!(st.connprop_reassembled, u64::from(pieces > 1));
        assert_eq!(p.client_recv(), 2048);
    }
}

/// -00 §6.3.2: "All RPC-over-RDMA messages in such a sequence MUST have
/// the same values in the rdma_start.rdma_xid and rdma_start.rdma_htype
/// fields. If this constraint is not met, the receiver MUST respond with
/// an RDMA2_ERROR message with the rdma_err field set to
/// RDMA2_ERR_INVAL_FLAG." A header type change with the same XID is
/// such a case (the Long Call is not served, the sequence not kept).
#[test]
fn header_type_change_mid_sequence_is_inval_flag() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    let rpc = rpc_call(0x60, 3, 0);
    assert_eq!(
        p.on_receive(&call_piece(0x60, (32 << 16) | 1, false, &rpc[..8]), &mut st),
        vec![Action::Nothing]
    );
    // Same XID, RDMA2_NOMSG (a Long Call).
    let a = p.on_receive(&long_call(0x60, None), &mut st);
    assert_eq!(error_of(&a), vec![4, 1, 4]); // RDMA2_ERROR, F_RESPONSE, INVAL_FLAG
    assert_eq!(st.continuations_interrupted, 1);
    // The sequence is gone: the rest of it is not glued to anything.
    let a = p.on_receive(
        &call_piece(0x61, (32 << 16) | 1, true, &rpc_call(0x61, 3, 0)),
        &mut st,
    );
    assert_eq!(the_call(&a).inline, rpc_call(0x61, 3, 0));
    // A credit grant between two pieces does not interrupt.
    p.on_receive(
        &call_piece(0x62, (32 << 16) | 1, false, &rpc_call(0x62, 3, 0)[..8]),
        &mut st,
    );
    let grant = bytes(&[0, 2, (32 << 16) | 1, 1, 0, 0, 0, 0, 0]);
    assert_eq!(p.on_receive(&grant, &mut st), vec![Action::Nothing]);
    let a = p.on_receive(
        &call_piece(0x62, (32 << 16) | 1, true, &rpc_call(0x62, 3, 0)[8..]),
        &mut st,
    );
    assert_eq!(the_call(&a).inline, rpc_call(0x62, 3, 0));
    assert_eq!(st.continuations_interrupted, 1);
}

/// -00 §6.4.3: "the responder copies the values of the rdma_start.rdma_xid
/// and rdma_start.rdma_vers fields from the incoming transport header that
/// generated the error". A version 1 message on a version 2 connection
/// gets a version 1 ERR_VERS (not an RDMA2_ERROR), a version 2
/// message on a version 1 connection an RDMA2_ERROR.
#[test]
fn error_carries_the_version_of_the_message_it_answers() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    let a = p.on_receive(&null_call(Protocol::V1, 0x70), &mut st);
    // xid, vers 1, credit 32, RDMA_ERROR (4), ERR_VERS (1), low 1, high 2
    assert_eq!(sends(&a), vec![vec![0x70, 1, 32, 4, 1, 1, 2]]);
    let mut q = v2_conn(Options::default());
    q.on_receive(&null_call(Protocol::V1, 1), &mut st);
    let a = q.on_receive(&null_call(Protocol::V2, 0x71), &mut st);
    let s = sends(&a);
    assert_eq!(s.len(), 1);
    // xid, vers 2, credit, RDMA2_ERROR (4), F_RESPONSE, RDMA2_ERR_VERS, 1, 2
    assert_eq!((s[0][0], s[0][1]), (0x71, 2));
    assert_eq!(&s[0][3..], &[4, 1, 1, 1, 2]);
}

/// -00 §6.4.3 names no exception for XID 0: a malformed message with XID 0
/// is answered like any other.
#[test]
fn malformed_message_with_xid_zero_is_answered() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    // Unknown header type 7, XID 0.
    let a = p.on_receive(&bytes(&[0, 2, (32 << 16) | 1, 7, 0, 0]), &mut st);
    let s = sends(&a);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0][0], 0);
    assert_eq!(&s[0][3..], &[4, 1, 3]); // RDMA2_ERR_INVAL_HTYPE
}

/// -00 §5.2.5: Reverse Request Support NONE means "receipt of reverse
/// direction requests and replies is not supported": nfsd's callbacks are
/// not relayed to such a client.
#[test]
fn callbacks_not_relayed_to_a_client_without_reverse_request_support() {
    let cb = bytes(&[0x77, 0, 2, 0x4000_0000, 1, 1, 0, 0, 0, 0]);
    for (rvreqsup, relayed) in [(0, false), (1, true), (2, true)] {
        let mut st = Stats::default();
        let mut p = settled_v2(
            Options {
                relay_callbacks: true,
                ..Options::default()
            },
            &mut st,
        );
        for m in client_connprop(0, rvreqsup, 1) {
            p.on_receive(&m, &mut st);
        }
        assert_eq!(p.refuses_reverse_calls(), !relayed);
        assert_eq!(
            p.reverse_call(&cb).is_some(),
            relayed,
            "rvreqsup {rvreqsup}"
        );
    }
}

/// `--credit-word total` / `total-zero-max`: the other reading of -00
/// §4.3.1, for the client's tolerance of it: every v2 word carries the
/// grant (the credit limit, never zero) in its low half, and the limit or
/// zero in its high half, whatever is returned; errors and CONNPROP too.
#[test]
fn credit_word_other_reading() {
    for (mode, high) in [(CreditWord::Total, 8u32), (CreditWord::TotalZeroMax, 0)] {
        let mut st = Stats::default();
        let mut p = ConnProto::new(
            Options {
                credit_word: mode,
                credits: 8,
                ..Options::default()
            },
            client(4096),
        );
        let rpc = rpc_call(0x90, 3, 0);
        let a = p.on_receive(
            &call_msg(Protocol::V2, 0x90, 0, ChunkLists::EMPTY, &rpc),
            &mut st,
        );
        // Our CONNPROP.
        assert_eq!(sends(&a)[0][2], (high << 16) | 8, "{mode:?}");
        let c = the_call(&a);
        let plan = p.plan_reply(&c, &bytes(&[0x90, 1, 0, 0, 0, 0, 0]), None, &mut st);
        assert_eq!(words(&plan.sends[0])[2], (high << 16) | 8, "{mode:?}");
        // Nothing topped up later: the word stays the grant.
        assert_eq!(p.top_up(u16::MAX - 8), 0);
        // An error answering a malformed message.
        let a = p.on_receive(&bytes(&[0x91, 2, (32 << 16) | 1, 7, 0, 0]), &mut st);
        assert_eq!(sends(&a)[0][2], (high << 16) | 8, "{mode:?}");
    }
}

/// -00 §4.3.1: "receivers MUST always be in a position to receive one such
/// credit grant update message, in addition to payload-bearing messages":
/// more Receives are posted than credits granted.
#[test]
fn receives_cover_the_credits_and_one_grant() {
    for credits in [1u16, 2, 8, 32, 128] {
        let o = Options {
            credits,
            ..Options::default()
        };
        assert!(o.receives() > usize::from(credits), "{credits}");
    }
}

/// -00 §4.4.5: a Position is a multiple of four; a Read chunk at another
/// position is RDMA2_ERR_BAD_XDR.
#[test]
fn read_position_not_multiple_of_four_is_bad_xdr() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    let mut m = bytes(&[0x81, 2, (32 << 16) | 1, 0, 0, 0]);
    // Read list: one entry at position 6, then no Write list, no Reply chunk.
    m.extend(bytes(&[1, 6, 1, 40, 0, 0x1000, 0, 0, 0]));
    m.extend(rpc_call(0x81, 3, 0));
    let a = p.on_receive(&m, &mut st);
    assert_eq!(error_of(&a), vec![4, 1, 2]); // BAD_XDR
    assert!(!a.iter().any(|x| matches!(x, Action::Call(_))));
}

/// -00 §6.4.3: an unknown header type is RDMA2_ERR_INVAL_HTYPE, with the
/// message's XID.
#[test]
fn unknown_header_type_is_inval_htype() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    let a = p.on_receive(&bytes(&[0x82, 2, (32 << 16) | 1, 7, 0, 0]), &mut st);
    assert_eq!(sends(&a)[0][0], 0x82);
    assert_eq!(error_of(&a), vec![4, 1, 3]);
}

/// -00 §6.3.2: a piece with another XID in the middle of a sequence is
/// RDMA2_ERR_INVAL_FLAG, and the sequence is dropped.
#[test]
fn xid_change_mid_sequence_is_inval_flag() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    let rpc = rpc_call(0x83, 3, 0);
    p.on_receive(&call_piece(0x83, (32 << 16) | 1, false, &rpc[..8]), &mut st);
    let a = p.on_receive(&call_piece(0x84, (32 << 16) | 1, true, &rpc[8..]), &mut st);
    assert_eq!(sends(&a)[0][0], 0x84);
    assert_eq!(error_of(&a), vec![4, 1, 4]);
    assert_eq!(st.continuations_interrupted, 1);
    assert!(!a.iter().any(|x| matches!(x, Action::Call(_))));
}

/// -00 §6.3.2: F_MORE on a header type other than RDMA2_MSG and
/// RDMA2_CONNPROP is RDMA2_ERR_INVAL_FLAG.
#[test]
fn more_on_nomsg_is_inval_flag() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    let a = p.on_receive(
        &bytes(&[0x85, 2, (32 << 16) | 1, 1, 2, 0, 0, 0, 0]),
        &mut st,
    );
    assert_eq!(error_of(&a), vec![4, 1, 4]);
}

/// -00 §6.4.3: "a nominally opaque property value field [that] cannot be
/// parsed using the XDR typedef associated with the transport property
/// definition" is RDMA2_ERR_BAD_XDR.
#[test]
fn property_typedef_violation_is_bad_xdr() {
    let mut st = Stats::default();
    let mut p = settled_v2(Options::default(), &mut st);
    // One property: Maximum Send Size (a uint32) with 3 bytes of data.
    let mut m = bytes(&[0x86, 2, (32 << 16) | 1, 5, 0, 1, 1, 3]);
    m.extend([0, 0, 4, 0]);
    let a = p.on_receive(&m, &mut st);
    assert_eq!(error_of(&a), vec![4, 1, 2]);
    assert!(p.client_props.is_none());
}

/// RFC 8166 §3.4.6 / -00 §4.4.6: a result shorter than its Write chunk
/// is written to the first segments only; the echoed Write list says how
/// many bytes each segment received (0 for those not reached).
#[test]
fn naturally_short_write_chunk() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(Options::default(), client(4096));
    let segs = [seg(7, 4096), seg(8, 4096)];
    let (c, reply, data) = read_to_write_chunk(&mut p, &mut st, 0x87, 0, &segs, 3000);
    let start = data.start;
    let plan = p.plan_reply(&c, &reply, Some(data), &mut st);
    assert_eq!(plan.path, Some(Path::WriteChunk));
    assert_eq!(plan.writes.len(), 1);
    assert_eq!(plan.writes[0].src, start..start + 3000);
    assert_eq!(plan.writes[0].rkey, 7);
    let w = words(&plan.sends[0]);
    // Write list: one chunk of two segments, lengths 3000 and 0.
    assert_eq!(&w[7..18], &[1, 2, 7, 3000, 0, 0x7000, 8, 0, 0, 0x8000, 0]);
}

/// -00 §4.3.1: "A sender MUST NOT send RDMA messages in excess of the
/// receiver's granted credit limit", and a receiver keeps one Receive for
/// a credit grant beyond it. A message from the client beyond the credits
/// we granted and returned is counted (`credit_overruns`; the spare
/// Receives used to take it unseen): one credit grant beyond is not an
/// overrun, a second is, and so is a Call; the credits our replies and
/// grants return make room again.
#[test]
fn client_messages_beyond_our_credit_limit_are_counted() {
    let mut st = Stats::default();
    let opts = Options {
        credits: 2,
        ..Options::default()
    };
    // Call 1 settles the connection; Call 2 is within the limit.
    let mut p = settled_v2(opts.clone(), &mut st);
    let c2 = the_call(&p.on_receive(&null_call(Protocol::V2, 2), &mut st));
    assert_eq!(st.credit_overruns, 0);
    // Both credits held: one grant may still come, a second may not.
    let grant = bytes(&[0, 2, (32 << 16) | 1, 1, 0, 0, 0, 0, 0]);
    p.on_receive(&grant, &mut st);
    assert_eq!(st.credit_overruns, 0);
    p.on_receive(&grant, &mut st);
    assert_eq!(st.credit_overruns, 1);
    let c3 = the_call(&p.on_receive(&null_call(Protocol::V2, 3), &mut st));
    assert_eq!(st.credit_overruns, 2);
    // Replies to Calls 2 and 3 return their credits, the grant that goes
    // with them the two of the grants: only Call 1 is held.
    for c in [c2, c3] {
        let xid = c.xid;
        p.plan_reply(&c, &bytes(&[xid, 1, 0, 0, 0, 0, 0]), None, &mut st);
    }
    assert_eq!(p.top_up(u16::MAX), 2);
    p.on_receive(&null_call(Protocol::V2, 4), &mut st);
    assert_eq!(st.credit_overruns, 2);
    // Credits returned by the other reading of the word (the grant in the
    // low half) are not counted: no overrun is told from them.
    let mut st = Stats::default();
    let mut q = settled_v2(
        Options {
            credit_word: CreditWord::Total,
            ..opts
        },
        &mut st,
    );
    for xid in 2..6 {
        q.on_receive(&null_call(Protocol::V2, xid), &mut st);
    }
    assert_eq!(st.credit_overruns, 0);
}

/// `--connprop-twice`: for the client's rule that properties do not
/// change (-00 §6.4.4), a second RDMA2_CONNPROP follows our first, once
/// per connection, with Maximum Send Size and Receive Buffer Size 1024
/// where the first said `--inline`.
#[test]
fn connprop_twice_sends_a_second_smaller_connprop_once() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(
        Options {
            connprop_twice: true,
            ..Options::default()
        },
        client(4096),
    );
    let a = p.on_receive(&null_call(Protocol::V2, 1), &mut st);
    let s = sends(&a);
    assert_eq!(s.len(), 2);
    // xid 0, vers 2, credit, RDMA2_CONNPROP, flags 0, 5 properties: MSSIZ,
    // RBSIZ first.
    for (m, size) in s.iter().zip([4096, 1024]) {
        assert_eq!((m[0], m[1], m[3], m[4], m[5]), (0, 2, 5, 0, 5), "{m:x?}");
        assert_eq!(&m[6..12], &[1, 4, size, 2, 4, size], "{m:x?}");
    }
    assert!(matches!(a.last(), Some(Action::Call(_))));
    assert_eq!(st.connprop_sent, 2);
    let a = p.on_receive(&null_call(Protocol::V2, 2), &mut st);
    assert!(sends(&a).is_empty());
    assert_eq!(st.connprop_sent, 2);
}

/// `--unknown-htype-call`: for -00 §6.3.2's F_RESPONSE (clear: the XID is
/// the sender's) on a message the client cannot decode. Once per
/// connection, ahead of the second Call's reply, a version 2 message of
/// header type 7 without F_RESPONSE carrying that Call's XID: the client
/// must answer it as a responder, RDMA2_ERR_INVAL_HTYPE with F_RESPONSE,
/// and not take it for a reply to its Call (which is answered after it).
#[test]
fn unknown_htype_call_goes_ahead_of_a_reply_and_its_answer_is_counted() {
    let mut st = Stats::default();
    let opts = Options {
        unknown_htype_call: true,
        relay_callbacks: true,
        ..Options::default()
    };
    let mut p = settled_v2(opts.clone(), &mut st);
    assert_eq!(st.unknown_htype_sent, 0);
    let a = p.on_receive(&null_call(Protocol::V2, 0x42), &mut st);
    let s = sends(&a);
    assert_eq!(s.len(), 1);
    // xid of the Call, vers 2, credit, htype 7, flags 0 (no F_RESPONSE).
    assert_eq!((s[0][0], s[0][1], s[0][3], s[0][4]), (0x42, 2, 7, 0));
    assert!(matches!(a[0], Action::Send(_)));
    assert_eq!(the_call(&a).xid, 0x42);
    assert_eq!(st.unknown_htype_sent, 1);
    // Once per connection.
    let a = p.on_receive(&null_call(Protocol::V2, 0x43), &mut st);
    assert!(sends(&a).is_empty());
    // The right answer: RDMA2_ERROR, F_RESPONSE, RDMA2_ERR_INVAL_HTYPE.
    let answer = |flags, code| bytes(&[0x42, 2, (32 << 16) | 1, 4, flags, code]);
    assert_eq!(p.on_receive(&answer(1, 3), &mut st), vec![Action::Nothing]);
    assert_eq!((st.unknown_htype_answered, st.unknown_htype_wrong), (1, 0));
    assert_eq!(st.malformed, 0);
    // Wrong answers: without F_RESPONSE, or another code.
    for (flags, code) in [(0, 3), (1, 2)] {
        let mut st = Stats::default();
        let mut p = settled_v2(opts.clone(), &mut st);
        p.on_receive(&null_call(Protocol::V2, 0x42), &mut st);
        p.on_receive(&answer(flags, code), &mut st);
        assert_eq!((st.unknown_htype_answered, st.unknown_htype_wrong), (0, 1));
    }
    // Not without --relay-callbacks (our CONNPROP then says NONE).
    let mut st = Stats::default();
    let mut p = settled_v2(
        Options {
            relay_callbacks: false,
            ..opts
        },
        &mut st,
    );
    let a = p.on_receive(&null_call(Protocol::V2, 0x42), &mut st);
    assert!(sends(&a).is_empty());
}

/// -00 §4.5.3: "Chunks for a chained message may be conveyed in the final
/// message in the sequence". With `--continue-over N` below the length of
/// a reduced reply (a READ whose data goes in a Write chunk), the reply is
/// continued and its Write list goes in the last piece only.
#[test]
fn continued_reply_carries_its_write_list_in_the_last_piece() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(
        Options {
            no_connprop: true,
            continue_over: Some(16),
            ..Options::default()
        },
        client(4096),
    );
    let segs = [seg(7, 8192)];
    let (c, reply, data) = read_to_write_chunk(&mut p, &mut st, 0x88, 0, &segs, 5000);
    let plan = p.plan_reply(&c, &reply, Some(data.clone()), &mut st);
    assert_eq!(plan.path, Some(Path::Continued));
    assert_eq!(plan.writes.len(), 1);
    assert_eq!(plan.writes[0].src, data);
    let n = plan.sends.len();
    assert!(n > 1, "{n} pieces");
    let mut payload = Vec::new();
    for (i, m) in plan.sends.iter().enumerate() {
        let h = header::decode(m).expect("a v2 header");
        let last = i + 1 == n;
        assert_eq!(h.flags.has_more(), !last);
        assert!(h.flags.is_response());
        let rpcrdma_xdr::header::Body::Msg(b) = h.body else {
            panic!("piece {i}: {:?}", h.body)
        };
        assert_eq!(b.chunks.is_empty(), !last, "piece {i}");
        if last {
            // One Write chunk of one segment: 5000 bytes of rkey 7.
            let w: Vec<Vec<Segment>> = b.chunks.writes.iter().map(|c| c.iter().collect()).collect();
            assert_eq!(w.len(), 1);
            assert_eq!((w[0][0].handle, w[0][0].length), (7, 5000));
        }
        payload.extend_from_slice(b.payload);
    }
    // The pieces carry the reply without its data (reduced, -00 §4.4.2).
    assert_eq!(&payload[..], &reply[..data.start]);
}

/// `--tiny-pieces`: -00 §4.5.2 lets a sender split a continued message
/// "on any convenient boundary"; the first three pieces of a continued
/// reply carry 1, 2 and 3 bytes, the rest are as usual, and together they
/// are the reply.
#[test]
fn tiny_pieces_split_a_continued_reply_on_odd_boundaries() {
    let mut st = Stats::default();
    let mut p = ConnProto::new(
        Options {
            no_connprop: true,
            continue_over: Some(1024),
            tiny_pieces: true,
            ..Options::default()
        },
        client(4096),
    );
    let c = the_call(&p.on_receive(&null_call(Protocol::V2, 0x89), &mut st));
    let mut reply = bytes(&[0x89, 1, 0, 0, 0, 0]);
    reply.resize(3000, 9);
    let plan = p.plan_reply(&c, &reply, None, &mut st);
    assert_eq!(plan.path, Some(Path::Continued));
    let mut lens = Vec::new();
    let mut payload = Vec::new();
    for m in &plan.sends {
        let h = header::decode(m).expect("a v2 header");
        let rpcrdma_xdr::header::Body::Msg(b) = h.body else {
            panic!("{:?}", h.body)
        };
        lens.push(b.payload.len());
        payload.extend_from_slice(b.payload);
    }
    assert_eq!(lens, vec![1, 2, 3, 1024, 1024, 946]);
    assert_eq!(payload, reply);
}

/// `--continued-reverse-call`: for the client's Reverse Request Support
/// (INLINE covers continued messages, -00 §4.5.2, §5.2.5), once per
/// connection a CB_NULL reverse-direction Call continued over two pieces
/// (F_MORE on the first, no F_RESPONSE on either); the client's RPC reply
/// to it, with F_RESPONSE, is counted, an RDMA2_ERROR for it too (as
/// wrong).
#[test]
fn continued_reverse_call_is_sent_in_two_pieces_and_its_reply_counted() {
    let opts = Options {
        continued_reverse_call: true,
        relay_callbacks: true,
        ..Options::default()
    };
    let mut st = Stats::default();
    let mut p = settled_v2(opts.clone(), &mut st);
    let pieces = p.continued_reverse_call(0x4000_0000).expect("the pieces");
    assert!(
        p.continued_reverse_call(0x4000_0000).is_none(),
        "once per connection"
    );
    assert_eq!(pieces.len(), 2);
    let mut rpc = Vec::new();
    for (i, m) in pieces.iter().enumerate() {
        let h = header::decode(m).expect("a v2 header");
        assert_eq!(h.xid, CONT_CALL_XID);
        assert!(!h.flags.is_response());
        assert_eq!(h.flags.has_more(), i == 0);
        let rpcrdma_xdr::header::Body::Msg(b) = h.body else {
            panic!("{:?}", h.body)
        };
        assert!(b.chunks.is_empty());
        rpc.extend_from_slice(b.payload);
    }
    assert_eq!(rpc, nfs::null_call(CONT_CALL_XID, 0x4000_0000, 1));
    // The client's reply: RDMA2_MSG, F_RESPONSE, an accepted success.
    let reply = |flags| {
        let mut m = bytes(&[CONT_CALL_XID, 2, (32 << 16) | 1, 0, flags, 0, 0, 0, 0]);
        m.extend(bytes(&[CONT_CALL_XID, 1, 0, 0, 0, 0]));
        m
    };
    // A Call of the client's with the same XID is no answer.
    let a = p.on_receive(&null_call(Protocol::V2, CONT_CALL_XID), &mut st);
    assert_eq!(the_call(&a).xid, CONT_CALL_XID);
    assert_eq!(p.on_receive(&reply(1), &mut st), vec![Action::Nothing]);
    assert_eq!(
        (
            st.continued_reverse_call_answered,
            st.continued_reverse_call_wrong
        ),
        (1, 0)
    );
    assert_eq!(st.reverse_replies, 0);
    // An RDMA2_ERROR for it instead.
    let mut st = Stats::default();
    let mut p = settled_v2(opts.clone(), &mut st);
    p.continued_reverse_call(0x4000_0000).expect("the pieces");
    let err = bytes(&[CONT_CALL_XID, 2, (32 << 16) | 1, 4, 1, 4]);
    assert_eq!(p.on_receive(&err, &mut st), vec![Action::Nothing]);
    assert_eq!(
        (
            st.continued_reverse_call_answered,
            st.continued_reverse_call_wrong
        ),
        (0, 1)
    );
    // Not to a client without Reverse Request Support.
    let mut st = Stats::default();
    let mut p = settled_v2(opts, &mut st);
    for m in client_connprop(0, 0, 1) {
        p.on_receive(&m, &mut st);
    }
    assert!(p.continued_reverse_call(0x4000_0000).is_none());
}
