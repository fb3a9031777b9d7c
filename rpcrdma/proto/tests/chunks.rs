// SPDX-License-Identifier: GPL-2.0

//! Chunk planning, chunk lists, reply validation and remote invalidation
//! (proto/chunks.rs): every decision boundary of the plan, the write-pad
//! rule, the allowed combinations, the header length against the codec,
//! and every rejection of a reply, plus randomised properties.

mod common;
use common::Rng;
use rpcrdma_proto::chunks::reply::{Invalidated, ReplyData, ReplyError};
use rpcrdma_proto::chunks::{
    header_len, plan, CallForm, ChunkPlan, Geometry, Limits, Part, PlanError, Range, ReplyForm,
    Rpc, MAX_CHUNK_SEGS, WRITE_PAD_LEN,
};
use rpcrdma_proto::inline::{Direction, Thresholds};
use rpcrdma_proto::xdr::chunk::{ChunkLists, ReadSegment, Segment};
use rpcrdma_proto::xdr::header::{self, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_proto::xdr::pvtdata::Peer;
use rpcrdma_proto::Config;

const PS: u32 = 4096;
const XID: u32 = 0x1234_5678;

fn limits(depth: u32) -> Limits {
    Limits {
        page_size: PS,
        max_mr_pages: depth,
        max_segs: 16,
        write_pad: true,
        cont_reply: 0,
    }
}

/// v1 defaults without private data: both thresholds 1024; with 16
/// segments the limits are 1024 - 436 = 588 (call) and 1024 - 292 = 732
/// (reply).
fn th(protocol: Protocol) -> Thresholds {
    let config = Config {
        max_segs: 16,
        ..Config::default()
    };
    let t = Thresholds::new(&config, &Peer::Absent, Protocol::V1, false);
    Thresholds { protocol, ..t }
}

const MAX_CALL: u32 = 588;
const MAX_REPLY: u32 = 732;

fn small_reply() -> Geometry {
    Geometry {
        head: 200,
        ..Geometry::default()
    }
}

/// An RPC with a small reply and a Call of `head` + `pages` + `tail`.
fn call(head: u32, page_base: u32, page_len: u32, tail: u32) -> Rpc {
    Rpc {
        call: Geometry {
            head,
            page_base,
            page_len,
            tail,
        },
        call_ddp: true,
        reply: small_reply(),
        reply_buflen: 200,
        reply_ddp: false,
        ddp_allowed: true,
    }
}

/// An RPC with a small Call and a Reply buffer of `head` + `pages` +
/// `tail`.
fn reply(head: u32, page_base: u32, page_len: u32, tail: u32, ddp: bool) -> Rpc {
    let g = Geometry {
        head,
        page_base,
        page_len,
        tail,
    };
    Rpc {
        call: Geometry {
            head: 120,
            ..Geometry::default()
        },
        call_ddp: false,
        reply: g,
        reply_buflen: g.len().unwrap(),
        reply_ddp: ddp,
        ddp_allowed: true,
    }
}

fn p(rpc: &Rpc) -> ChunkPlan {
    plan(rpc, &th(Protocol::V1), &limits(256)).unwrap()
}

// ---- chunks off -----------------------------------------------------

#[test]
fn chunks_off_is_thresholds_fit() {
    let config = Config::default(); // max_segs 0
    let t = Thresholds::new(&config, &Peer::Absent, Protocol::V1, false);
    let l = Limits::INLINE_ONLY;
    let lim = t.max_inline_call(); // 1024 - 28
    assert_eq!(lim, 996);
    let ok = plan(&call(lim, 0, 0, 0), &t, &l).unwrap();
    assert_eq!(ok.call(), CallForm::Inline);
    assert!(ok.is_inline());
    assert_eq!(ok.header_len(), 28);
    match plan(&call(lim + 1, 0, 0, 0), &t, &l) {
        Err(PlanError::TooBig(tb)) => {
            assert_eq!(tb.direction, Direction::Call);
            assert_eq!(tb.limit, lim);
        }
        other => panic!("{other:?}"),
    }
    // A big reply buffer is not refused without chunks (see conn/).
    let r = plan(&reply(100, 0, 1 << 20, 0, true), &t, &l).unwrap();
    assert_eq!(r.reply(), ReplyForm::Inline);
    assert_eq!(
        PlanError::TooBig(t.fit(lim + 1, 0).unwrap_err()).errno(),
        rpcrdma_proto::Errno::EMSGSIZE
    );
}

// ---- call form ------------------------------------------------------

#[test]
fn call_inline_boundary() {
    let a = p(&call(100, 0, MAX_CALL - 100, 0));
    assert_eq!(a.call(), CallForm::Inline);
    assert_eq!(a.kind(), MsgKind::Msg);
    assert_eq!(a.send_layout().len(), MAX_CALL);
    assert_eq!(a.send_layout().pages, MAX_CALL - 100);
    let b = p(&call(100, 0, MAX_CALL - 99, 0));
    assert_eq!(b.call(), CallForm::Read { position: 100 });
    assert_eq!(b.kind(), MsgKind::Msg);
}

#[test]
fn read_chunk_over_pages() {
    let a = p(&call(132, 0, 8192, 0));
    assert_eq!(a.call(), CallForm::Read { position: 132 });
    assert_eq!(
        a.read_ranges(),
        &[Range {
            part: Part::Pages,
            offset: 0,
            len: 8192
        }]
    );
    assert!(a.write_ranges().is_empty() && a.reply_ranges().is_empty());
    let s = a.send_layout();
    assert_eq!((s.head, s.pages, s.tail_offset, s.tail), (132, 0, 0, 0));
    assert_eq!(a.header_len(), header_len(Protocol::V1, 1, 0, 0));
}

#[test]
fn read_chunk_tail_rules() {
    // Tail that is only the pad of the pages: not sent.
    for pad in 1..=3 {
        let a = p(&call(100, 0, 4096 + 4 - pad, pad));
        let s = a.send_layout();
        assert_eq!((s.tail_offset, s.tail), (0, 0), "pad {pad}");
        // no roundup inside the chunk
        assert_eq!(a.read_ranges()[0].len, 4096 + 4 - pad);
    }
    // An aligned tail goes whole.
    let a = p(&call(100, 0, 4096, 4));
    assert_eq!((a.send_layout().tail_offset, a.send_layout().tail), (0, 4));
    // pad + content: the pad is skipped, the content lands aligned.
    let a = p(&call(100, 0, 4095, 1 + 8));
    assert_eq!((a.send_layout().tail_offset, a.send_layout().tail), (1, 8));
    let a = p(&call(100, 0, 4093, 3 + 12));
    assert_eq!((a.send_layout().tail_offset, a.send_layout().tail), (3, 12));
    assert_eq!(a.send_layout().len(), 100 + 12);
}

#[test]
fn long_call_when_no_ddp() {
    let cases = [
        Rpc {
            call_ddp: false,
            ..call(100, 0, 8192, 8)
        },
        Rpc {
            ddp_allowed: false,
            ..call(100, 0, 8192, 8)
        },
        // no pages: nothing to reduce
        call(MAX_CALL + 1, 0, 0, 0),
        // head not XDR aligned: no valid position
        call(102, 0, 8192, 2),
    ];
    for rpc in cases {
        let a = p(&rpc);
        assert_eq!(a.call(), CallForm::Long, "{rpc:?}");
        assert_eq!(a.kind(), MsgKind::NoMsg);
        assert!(a.send_layout().is_empty());
        let total: u32 = a.read_ranges().iter().map(|r| r.len).sum();
        assert_eq!(total, rpc.call.len().unwrap());
        assert_eq!(a.read_ranges()[0].part, Part::Head);
    }
    let a = p(&Rpc {
        call_ddp: false,
        ..call(100, 0, 8192, 8)
    });
    assert_eq!(
        a.read_ranges(),
        &[
            Range {
                part: Part::Head,
                offset: 0,
                len: 100
            },
            Range {
                part: Part::Pages,
                offset: 0,
                len: 8192
            },
            Range {
                part: Part::Tail,
                offset: 0,
                len: 8
            },
        ]
    );
}

#[test]
fn read_chunk_inline_part_too_big_goes_long() {
    // head alone exceeds what the Send holds with a Read list.
    let t = th(Protocol::V1);
    let hdr = header_len(Protocol::V1, 1, 0, 0);
    let fit = t.send - hdr;
    let a = p(&call(fit & !3, 0, 8192, 0));
    assert!(matches!(a.call(), CallForm::Read { .. }));
    let b = p(&call((fit & !3) + 4, 0, 8192, 0));
    assert_eq!(b.call(), CallForm::Long);
}

#[test]
fn header_too_big() {
    let t = Thresholds {
        send: 99,
        ..th(Protocol::V1)
    };
    // head + two pages: 16 + 12 + 3 * 24 = 100 bytes of header
    match plan(&call(100, 0, 8192, 0), &t, &limits(1)) {
        Err(e @ PlanError::HeaderTooBig { len, limit: 99 }) => {
            assert_eq!(len, 100);
            assert_eq!(len, header_len(Protocol::V1, 3, 0, 0));
            assert_eq!(e.errno(), rpcrdma_proto::Errno::EMSGSIZE);
        }
        other => panic!("{other:?}"),
    }
}

// ---- reply form -----------------------------------------------------

#[test]
fn reply_inline_boundary() {
    let a = p(&reply(100, 0, MAX_REPLY - 100, 0, true));
    assert_eq!(a.reply(), ReplyForm::Inline);
    assert!(a.is_inline());
    let b = p(&reply(100, 0, MAX_REPLY - 99, 0, true));
    assert_eq!(b.reply(), ReplyForm::Write);
}

#[test]
fn write_chunk_needs_small_nonpayload() {
    // head + tail must be strictly below the reply limit
    let a = p(&reply(MAX_REPLY - 1, 0, 8192, 0, true));
    assert_eq!(a.reply(), ReplyForm::Write);
    let b = p(&reply(MAX_REPLY - 8, 0, 8192, 8, true));
    assert_eq!(b.reply(), ReplyForm::Long);
    let c = p(&reply(MAX_REPLY - 9, 0, 8192, 8, true));
    assert_eq!(c.reply(), ReplyForm::Write);
}

#[test]
fn write_chunk_conditions() {
    assert_eq!(p(&reply(100, 0, 8192, 0, false)).reply(), ReplyForm::Long);
    let no_ddp = Rpc {
        ddp_allowed: false,
        ..reply(100, 0, 8192, 0, true)
    };
    assert_eq!(p(&no_ddp).reply(), ReplyForm::Long);
    // no pages: a Reply chunk
    assert_eq!(p(&reply(2000, 0, 0, 0, true)).reply(), ReplyForm::Long);
}

#[test]
fn write_chunk_has_no_roundup_by_default() {
    // -00 §4.4.6: no space for XDR roundup in a Write chunk.
    for proto in [Protocol::V1, Protocol::V2] {
        for odd in 0..=3 {
            let l = Limits {
                write_pad: false,
                cont_reply: 0,
                ..limits(256)
            };
            let a = plan(&reply(100, 0, 8192 - odd, 4, true), &th(proto), &l).unwrap();
            assert_eq!(a.reply(), ReplyForm::Write);
            assert_eq!(
                a.write_ranges(),
                &[Range {
                    part: Part::Pages,
                    offset: 0,
                    len: 8192 - odd
                }]
            );
            assert_eq!(a.header_len(), header_len(proto, 0, 1, 0));
        }
    }
    assert!(!Limits::new(&Config::default(), 4096, 256).write_pad);
    let inline_only = Limits::INLINE_ONLY;
    assert!(!inline_only.write_pad);
}

#[test]
fn write_pad_rule() {
    let a = p(&reply(100, 0, 8192, 0, true));
    assert_eq!(
        a.write_ranges(),
        &[Range {
            part: Part::Pages,
            offset: 0,
            len: 8192
        }]
    );
    for odd in 1..=3 {
        let a = p(&reply(100, 0, 8192 - odd, 4, true));
        assert_eq!(
            a.write_ranges(),
            &[
                Range {
                    part: Part::Pages,
                    offset: 0,
                    len: 8192 - odd
                },
                Range {
                    part: Part::WritePad,
                    offset: 0,
                    len: WRITE_PAD_LEN
                },
            ]
        );
        assert_eq!(a.header_len(), header_len(Protocol::V1, 0, 2, 0));
    }
}

#[test]
fn reply_chunk_over_whole_buffer() {
    let a = p(&reply(300, 100, 5000, 40, false));
    assert_eq!(a.reply(), ReplyForm::Long);
    assert_eq!(
        a.reply_ranges(),
        &[
            Range {
                part: Part::Head,
                offset: 0,
                len: 300
            },
            Range {
                part: Part::Pages,
                offset: 0,
                len: 5000
            },
            Range {
                part: Part::Tail,
                offset: 0,
                len: 40
            },
        ]
    );
    assert_eq!(a.kind(), MsgKind::Msg);
}

/// Version 2: a Reply over the inline threshold that is not
/// a Write chunk's goes without a Reply chunk when its buffer is within
/// `Limits::cont_reply` (the responder continues it over several Sends);
/// one byte more, or `cont_reply` 0 (version 1), a Reply chunk as before.
#[test]
fn continued_reply_in_place_of_reply_chunk() {
    let l = Limits {
        cont_reply: 20_000,
        ..limits(16)
    };
    let t = th(Protocol::V2);
    let plan_v2 = |rpc: &Rpc, l: &Limits| plan(rpc, &t, l).unwrap();
    // OPEN-like: a head larger than the threshold, no pages
    let open = reply(6000, 0, 0, 0, false);
    let a = plan_v2(&open, &l);
    assert_eq!((a.reply(), a.is_inline()), (ReplyForm::Inline, true));
    assert_eq!(a.header_len(), header_len(Protocol::V2, 0, 0, 0));
    assert!(a.ranges().is_empty());
    // READDIR-like: head and pages, up to the bound exactly
    let at = reply(4096, 0, 20_000 - 4096, 0, false);
    assert!(plan_v2(&at, &l).is_inline());
    let over = reply(4096, 0, 20_000 - 4095, 0, false);
    assert_eq!(plan_v2(&over, &l).reply(), ReplyForm::Long);
    // a Call that needs a Read chunk keeps it; the Reply still has none
    let rw = Rpc {
        call: Geometry {
            head: 100,
            page_base: 0,
            page_len: 8192,
            tail: 0,
        },
        call_ddp: true,
        ..open
    };
    let b = plan_v2(&rw, &l);
    assert!(matches!(b.call(), CallForm::Read { .. }));
    assert_eq!(b.reply(), ReplyForm::Inline);
    assert!(b.reply_ranges().is_empty() && b.write_ranges().is_empty());
    // READ data keeps its Write chunk
    let read = reply(100, 0, 8192, 0, true);
    assert_eq!(plan_v2(&read, &l).reply(), ReplyForm::Write);
    // without DDP (ddp=N, GSS) a READ's Reply keeps its Reply chunk
    let no_ddp = Rpc {
        ddp_allowed: false,
        ..read
    };
    assert_eq!(plan_v2(&no_ddp, &l).reply(), ReplyForm::Long);
    // and without XDRBUF_READ the same buffer is continued
    let not_read = Rpc {
        reply_ddp: false,
        ..read
    };
    assert_eq!(plan_v2(&not_read, &l).reply(), ReplyForm::Inline);
    // cont_reply 0: a Reply chunk, in either version
    for proto in [Protocol::V1, Protocol::V2] {
        let a = plan(&open, &th(proto), &limits(16)).unwrap();
        assert_eq!(a.reply(), ReplyForm::Long);
    }
    // a recovery hint for a Reply chunk wins
    let hints = rpcrdma_proto::recovery::Hints {
        reply_chunk: true,
        ..rpcrdma_proto::recovery::Hints::NONE
    };
    let h = rpcrdma_proto::chunks::plan_with(&open, &t, &l, &hints).unwrap();
    assert_eq!(h.reply(), ReplyForm::Long);
}

// ---- combinations ---------------------------------------------------

fn both(call_ddp: bool, reply_ddp: bool) -> Rpc {
    Rpc {
        call: Geometry {
            head: 100,
            page_base: 0,
            page_len: 8192,
            tail: 0,
        },
        call_ddp,
        reply: Geometry {
            head: 100,
            page_base: 0,
            page_len: 8192,
            tail: 0,
        },
        reply_buflen: 8292,
        reply_ddp,
        ddp_allowed: true,
    }
}

#[test]
fn combinations() {
    let a = p(&both(true, true));
    assert_eq!(
        (a.call(), a.reply()),
        (CallForm::Read { position: 100 }, ReplyForm::Write)
    );
    let b = p(&both(true, false));
    assert_eq!(
        (b.call(), b.reply()),
        (CallForm::Read { position: 100 }, ReplyForm::Long)
    );
    let c = p(&both(false, false));
    assert_eq!((c.call(), c.reply()), (CallForm::Long, ReplyForm::Long));
    let d = p(&both(false, true));
    assert_eq!((d.call(), d.reply()), (CallForm::Long, ReplyForm::Write));
    for x in [a, b, c, d] {
        assert!(x.write_ranges().is_empty() || x.reply_ranges().is_empty());
        assert_eq!(
            x.ranges().len(),
            x.read_ranges().len() + x.write_ranges().len() + x.reply_ranges().len()
        );
    }
}

// ---- segments -------------------------------------------------------

#[test]
fn pages_split_by_mr_depth() {
    // page_base offset 100, three pages of data span four pages
    let a = plan(&call(100, 100, 3 * PS, 0), &th(Protocol::V1), &limits(2)).unwrap();
    assert_eq!(
        a.read_ranges(),
        &[
            Range {
                part: Part::Pages,
                offset: 0,
                len: 2 * PS - 100
            },
            Range {
                part: Part::Pages,
                offset: 2 * PS - 100,
                len: PS + 100
            },
        ]
    );
    let one = plan(&call(100, 100, 3 * PS, 0), &th(Protocol::V1), &limits(4)).unwrap();
    assert_eq!(one.read_ranges().len(), 1);
    let three = plan(&call(100, 100, 3 * PS, 0), &th(Protocol::V1), &limits(1)).unwrap();
    assert_eq!(three.read_ranges().len(), 4);
}

#[test]
fn too_many_segments() {
    // 17 pages at depth 1: no Read chunk; a Long Call needs head + 17
    match plan(&call(100, 0, 17 * PS, 0), &th(Protocol::V1), &limits(1)) {
        Err(
            e @ PlanError::TooManySegments {
                direction: Direction::Call,
                needed: 18,
                limit: 16,
            },
        ) => assert_eq!(e.errno(), rpcrdma_proto::Errno::EMSGSIZE),
        other => panic!("{other:?}"),
    }
    let ok = plan(&call(100, 0, 16 * PS, 0), &th(Protocol::V1), &limits(1)).unwrap();
    assert_eq!(ok.read_ranges().len(), 16);
    // write chunk: 15 pages + pad = 16 ok, 16 pages + pad = 17 too many
    let ok = plan(
        &reply(100, 0, 15 * PS - 1, 0, true),
        &th(Protocol::V1),
        &limits(1),
    )
    .unwrap();
    assert_eq!(ok.write_ranges().len(), 16);
    match plan(
        &reply(100, 0, 16 * PS - 1, 0, true),
        &th(Protocol::V1),
        &limits(1),
    ) {
        Err(PlanError::TooManySegments {
            direction: Direction::Reply,
            needed: 17,
            limit: 16,
        }) => {}
        other => panic!("{other:?}"),
    }
    // max_segs is capped at 16
    let l = Limits {
        max_segs: 1000,
        ..limits(1)
    };
    assert!(plan(&call(100, 0, 17 * PS, 0), &th(Protocol::V1), &l).is_err());
}

/// `frwr_query_device()` (frwr_ops.c) as the C client writes it, for
/// the device numbers `(max_fast_reg_page_list_len, max_sge_rd)`: the
/// depth and `re_max_rdma_segs`, or the errno (its Send-WR count is left
/// out: rpcrdma2 sizes its Send queue otherwise).
fn c_frwr_query_device(page_list_len: u32, max_sge_rd: u32) -> Result<(u32, u32), i32> {
    const MAX_DATA_SEGS: u32 = 257;
    const MAX_HDR_SEGS: u32 = 16;
    const MAX_SEGS: u32 = MAX_DATA_SEGS + 3;
    if page_list_len == 0 {
        return Err(-22);
    }
    let mut depth = page_list_len.min(MAX_DATA_SEGS);
    if max_sge_rd > MAX_HDR_SEGS {
        depth = max_sge_rd;
    }
    depth = depth.min(MAX_DATA_SEGS);
    let segs = (MAX_DATA_SEGS.div_ceil(depth) + 2).min(MAX_HDR_SEGS);
    if segs * depth < MAX_SEGS {
        return Err(-12);
    }
    Ok((depth, segs))
}

#[test]
fn frwr_sizing_matches_the_c_client() {
    use rpcrdma_proto::chunks::sizing::{FrwrSizing, SizingError, MAX_DATA_SEGS, MAX_SEGS};
    assert_eq!((MAX_DATA_SEGS, MAX_SEGS), (257, 260));
    let mut ok = 0;
    for page_list_len in 1..=600u32 {
        for max_sge_rd in [0, 1, 2, 15, 16, 17, 30, 32, 64, 256, 257, 300, 1024] {
            let ours = FrwrSizing::for_device(page_list_len, max_sge_rd);
            let c = c_frwr_query_device(page_list_len, max_sge_rd);
            match (ours, c) {
                (Ok(s), Ok(c)) => {
                    assert_eq!((s.depth, s.max_segs), c);
                    assert!(s.max_segs * s.depth >= MAX_SEGS);
                    // The transport's Config::max_segs (segs_for_depth
                    // with 4 KiB pages) is the same number.
                    assert_eq!(Limits::segs_for_depth(PS, s.depth), s.max_segs);
                    ok += 1;
                }
                (Err(SizingError::TooShallow { depth }), Err(-12)) => {
                    assert_eq!(depth, FrwrSizing::depth_for(page_list_len, max_sge_rd));
                }
                other => panic!("{page_list_len} {max_sge_rd}: {other:?}"),
            }
        }
    }
    assert!(ok > 0);
    // The smallest usable depth: 17 (ceil(257/17) + 2 = 18 > 16: 16 MRs
    // of 17 pages = 272 >= 260); 16 is refused.
    assert!(FrwrSizing::for_depth(16).is_err());
    assert_eq!(FrwrSizing::for_depth(17).map(|s| s.max_segs), Ok(16));
    assert_eq!(FrwrSizing::for_depth(0), Err(SizingError::NoDepth));
    assert_eq!(FrwrSizing::for_depth(u32::MAX), FrwrSizing::for_depth(257));
}

#[test]
fn limits_from_config_and_depth() {
    // mlx5: depth 256 (capped at RPCRDMA_MAX_DATA_SEGS 257): 2 + 2
    assert_eq!(Limits::segs_for_depth(4096, 257), 3);
    assert_eq!(Limits::segs_for_depth(4096, 256), 4);
    // small-depth devices hit the 16 cap
    assert_eq!(Limits::segs_for_depth(4096, 30), 11);
    assert_eq!(Limits::segs_for_depth(4096, 16), 16);
    assert_eq!(Limits::segs_for_depth(4096, 1), 16);
    assert_eq!(Limits::segs_for_depth(0, 0), 16);
    let c = Config {
        max_segs: 99,
        ..Config::default()
    };
    let l = Limits::new(&c, 4096, 256);
    assert_eq!((l.page_size, l.max_mr_pages, l.max_segs), (4096, 256, 16));
    // a 1 MiB NFS READ / WRITE at any page offset plans with those limits
    for depth in [1u32, 2, 16, 30, 64, 256, 257] {
        let segs = Limits::segs_for_depth(PS, depth);
        if depth * (segs - 2) < 257 {
            continue; // the device cannot carry 1 MiB in 16 segments
        }
        let l = Limits {
            page_size: PS,
            max_mr_pages: depth,
            max_segs: segs,
            write_pad: true,
            cont_reply: 0,
        };
        for base in [0, 1, 4095] {
            let w = plan(&call(120, base, 1 << 20, 0), &th(Protocol::V1), &l).unwrap();
            assert!(matches!(w.call(), CallForm::Read { .. }), "{depth} {base}");
            let r = plan(&reply(120, base, 1 << 20, 0, true), &th(Protocol::V1), &l).unwrap();
            assert_eq!(r.reply(), ReplyForm::Write, "{depth} {base}");
        }
    }
}

#[test]
fn bad_geometry() {
    let rpc = call(u32::MAX, 0, 1, 0);
    assert_eq!(
        plan(&rpc, &th(Protocol::V1), &limits(1)),
        Err(PlanError::BadGeometry)
    );
}

/// Fake registration: handle 0x100 + i, offset 0x1000_0000 * (i + 1).
fn register(plan: &ChunkPlan) -> Vec<Segment> {
    plan.ranges()
        .iter()
        .enumerate()
        .map(|(i, r)| Segment {
            handle: if r.part == Part::WritePad {
                0xbeef
            } else {
                0x100 + i as u32
            },
            length: r.len,
            offset: 0x1000_0000 * (i as u64 + 1),
        })
        .collect()
}

#[test]
fn chunk_lists_and_codec_agree() {
    for protocol in [Protocol::V1, Protocol::V2] {
        for rpc in [
            both(true, true),
            both(true, false),
            both(false, false),
            both(false, true),
            reply(100, 0, 8191, 4, true),
            call(100, 0, 100, 0),
        ] {
            let a = plan(&rpc, &th(protocol), &limits(1)).unwrap();
            let segs = register(&a);
            let cc = a.chunk_lists(&segs, true).unwrap();
            let lists = cc.lists();
            assert_eq!(lists.reads.len(), a.read_ranges().len());
            assert_eq!(
                lists.writes.len(),
                usize::from(!a.write_ranges().is_empty())
            );
            assert_eq!(lists.reply.is_some(), !a.reply_ranges().is_empty());
            let pos = match a.call() {
                CallForm::Read { position } => position,
                _ => 0,
            };
            assert!(lists.reads.iter().all(|r| r.position == pos));
            let spec = MsgSpec {
                xid: XID,
                credit: 32,
                kind: a.kind(),
                flags: Flags::NONE,
                inv_handle: cc.inv_handle(),
                chunks: lists,
            };
            let mut buf = [0u8; 2048];
            let n = header::encode_msg(&mut buf, protocol, &spec).unwrap();
            assert_eq!(n as u32, a.header_len(), "{protocol:?} {rpc:?}");
            // and it decodes to the same lists
            // (an RDMA_MSG header decodes only with a payload after it)
            let end = if a.kind() == MsgKind::Msg { n + 24 } else { n };
            let h = header::decode(&buf[..end]).unwrap();
            let chunks = match h.body {
                header::Body::Msg(m) => m.chunks,
                header::Body::NoMsg(m) => m.chunks,
                _ => panic!(),
            };
            assert_eq!(chunks.reads.len(), lists.reads.len());
            let inline = a.send_layout().len();
            assert!(a.header_len() + inline <= th(protocol).send);
        }
    }
}

#[test]
fn chunk_lists_rejects_mismatched_segments() {
    let a = p(&both(true, true));
    let mut segs = register(&a);
    assert!(a.chunk_lists(&segs, false).is_ok());
    assert_eq!(
        a.chunk_lists(&segs[..1], false),
        Err(PlanError::SegmentMismatch { index: 1 })
    );
    segs[1].length += 1;
    assert_eq!(
        a.chunk_lists(&segs, false),
        Err(PlanError::SegmentMismatch { index: 1 })
    );
    assert_eq!(
        PlanError::SegmentMismatch { index: 1 }.errno(),
        rpcrdma_proto::Errno::EIO
    );
}

#[test]
fn inv_handle_choice() {
    let rw = plan(&both(true, true), &th(Protocol::V2), &limits(256)).unwrap();
    let segs = register(&rw);
    // write chunk's MR before the Read chunk's
    assert_eq!(
        rw.chunk_lists(&segs, true).unwrap().inv_handle(),
        segs[1].handle
    );
    // no R bit, or v1: 0
    assert_eq!(rw.chunk_lists(&segs, false).unwrap().inv_handle(), 0);
    let v1 = plan(&both(true, true), &th(Protocol::V1), &limits(256)).unwrap();
    assert_eq!(v1.chunk_lists(&segs, true).unwrap().inv_handle(), 0);
    // reply chunk first
    let rr = plan(&both(true, false), &th(Protocol::V2), &limits(256)).unwrap();
    let segs = register(&rr);
    assert_eq!(rr.reply_ranges().len(), 2);
    assert_eq!(
        rr.chunk_lists(&segs, true).unwrap().inv_handle(),
        segs[1].handle
    );
    // never the pad MR, never a zero handle
    let wp = plan(
        &reply(100, 0, 8191, 4, true),
        &th(Protocol::V2),
        &limits(256),
    )
    .unwrap();
    let mut segs = register(&wp);
    assert_eq!(
        wp.chunk_lists(&segs, true).unwrap().inv_handle(),
        segs[0].handle
    );
    segs[0].handle = 0;
    assert_eq!(wp.chunk_lists(&segs, true).unwrap().inv_handle(), 0);
    // inline: nothing registered
    let i = plan(&call(100, 0, 0, 0), &th(Protocol::V2), &limits(256)).unwrap();
    assert_eq!(i.chunk_lists(&[], true).unwrap().inv_handle(), 0);
    assert!(i.chunk_lists(&[], true).unwrap().lists().is_empty());
}

#[test]
fn invalidated_rkeys() {
    let a = p(&Rpc {
        reply: Geometry {
            head: 100,
            page_base: 0,
            page_len: 8191,
            tail: 0,
        },
        reply_buflen: 8291,
        ..both(true, true)
    });
    let segs = register(&a);
    assert_eq!(segs.len(), 3);
    assert_eq!(
        a.invalidated(&segs, segs[0].handle),
        Invalidated::Mr { index: 0 }
    );
    assert_eq!(
        a.invalidated(&segs, segs[1].handle),
        Invalidated::Mr { index: 1 }
    );
    assert_eq!(a.invalidated(&segs, 0xbeef), Invalidated::WritePad);
    assert_eq!(a.invalidated(&segs, 0x4242), Invalidated::NotOurs);
}

// ---- replies --------------------------------------------------------

struct Fx {
    plan: ChunkPlan,
    segs: Vec<Segment>,
}

/// A plan with a Write chunk (two page segments + pad: 8191 bytes, depth
/// 1) and reply head 100.
fn write_fx() -> Fx {
    let plan = plan(&reply(100, 0, 8191, 4, true), &th(Protocol::V1), &limits(1)).unwrap();
    let segs = register(&plan);
    assert_eq!(segs.len(), 3);
    Fx { plan, segs }
}

/// A plan with a Read chunk and a Reply chunk (head 100 + 8192 pages).
fn reply_fx(protocol: Protocol) -> Fx {
    let plan = plan(&both(true, false), &th(protocol), &limits(256)).unwrap();
    let segs = register(&plan);
    Fx { plan, segs }
}

fn rpc_reply(xid: u32, extra: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [xid, 1, 0, 0, 0, 0] {
        v.extend_from_slice(&u32::to_be_bytes(w));
    }
    v.extend(std::iter::repeat_n(0u8, extra));
    v
}

fn msg(
    protocol: Protocol,
    kind: MsgKind,
    flags: Flags,
    lists: ChunkLists<'_>,
    payload: &[u8],
) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let spec = MsgSpec {
        xid: XID,
        credit: 32,
        kind,
        flags,
        inv_handle: 0,
        chunks: lists,
    };
    let n = header::encode_msg(&mut buf, protocol, &spec).unwrap();
    buf.truncate(n);
    if kind == MsgKind::Msg {
        buf.extend_from_slice(payload);
    }
    buf
}

/// An RDMA_MSG reply (version 1, no flags).
fn v1_msg(lists: ChunkLists<'_>, payload: &[u8]) -> Vec<u8> {
    msg(Protocol::V1, MsgKind::Msg, Flags::NONE, lists, payload)
}

/// Chunk lists with only a Write list.
fn with_writes<'a>(writes: &'a [&'a [Segment]]) -> ChunkLists<'a> {
    ChunkLists {
        writes,
        ..ChunkLists::EMPTY
    }
}

/// Chunk lists with only a Reply chunk.
fn with_reply(reply: &[Segment]) -> ChunkLists<'_> {
    ChunkLists {
        reply: Some(reply),
        ..ChunkLists::EMPTY
    }
}

fn check(fx: &Fx, bytes: &[u8]) -> Result<ReplyData<'static>, ReplyError> {
    let bytes: &'static [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
    let h = header::decode(bytes).unwrap();
    fx.plan.check_reply(&fx.segs, &h)
}

fn seg(s: Segment, length: u32) -> Segment {
    Segment { length, ..s }
}

#[test]
fn write_reply_layout() {
    let fx = write_fx();
    let s = &fx.segs;
    // full payload, pad not written: 8191 bytes
    let w = [s[0], seg(s[1], 4095), seg(s[2], 0)];
    let payload = rpc_reply(XID, 100 - 24 + 8);
    let b = v1_msg(with_writes(&[&w]), &payload);
    match check(&fx, &b).unwrap() {
        ReplyData::Written {
            head,
            written,
            pad,
            tail,
            rpc_len,
        } => {
            assert_eq!(head.len(), 100);
            assert_eq!(&head[..4], &XID.to_be_bytes());
            assert_eq!(written, 8191);
            assert_eq!(pad, 1);
            assert_eq!(tail.len(), 8);
            assert_eq!(rpc_len, 108 + 8192);
        }
        other => panic!("{other:?}"),
    }
    // short inline part: the head is trimmed; pad written into the pad MR
    let w = [s[0], s[1], seg(s[2], 1)];
    let b = v1_msg(with_writes(&[&w]), &rpc_reply(XID, 16));
    assert!(matches!(
        check(&fx, &b).unwrap(),
        ReplyData::Written {
            head,
            written: 8192,
            pad: 0,
            tail: [],
            rpc_len: 8232,
        } if head.len() == 40
    ));
    // unused Write chunk (all lengths 0): an inline reply
    let w = [seg(s[0], 0), seg(s[1], 0), seg(s[2], 0)];
    let b = v1_msg(with_writes(&[&w]), &rpc_reply(XID, 0));
    assert!(
        matches!(check(&fx, &b).unwrap(), ReplyData::Inline { payload } if payload.len() == 24)
    );
    // no Write list at all (an error reply)
    let b = v1_msg(ChunkLists::EMPTY, &rpc_reply(XID, 0));
    assert!(matches!(check(&fx, &b).unwrap(), ReplyData::Inline { .. }));
}

#[test]
fn write_reply_rejections() {
    let fx = write_fx();
    let s = &fx.segs;
    let payload = rpc_reply(XID, 0);
    let reply = |w: &[&[Segment]]| v1_msg(with_writes(w), &payload);
    // overlong segment: one byte more than registered
    let w = [seg(s[0], 4097)];
    assert_eq!(
        check(&fx, &reply(&[&w])),
        Err(ReplyError::Overrun {
            index: 0,
            written: 4097,
            registered: 4096
        })
    );
    // overlong pad
    let w = [s[0], s[1], seg(s[2], 5)];
    assert!(matches!(
        check(&fx, &reply(&[&w])),
        Err(ReplyError::Overrun { index: 2, .. })
    ));
    // a handle we did not register
    let w = [Segment { handle: 7, ..s[0] }];
    assert_eq!(
        check(&fx, &reply(&[&w])),
        Err(ReplyError::ForeignSegment { index: 0 })
    );
    let w = [s[0], Segment { offset: 0, ..s[1] }];
    assert_eq!(
        check(&fx, &reply(&[&w])),
        Err(ReplyError::ForeignSegment { index: 1 })
    );
    // more segments than offered
    let w = [s[0], s[1], s[2], s[2]];
    assert_eq!(
        check(&fx, &reply(&[&w])),
        Err(ReplyError::ForeignSegment { index: 3 })
    );
    // a gap
    let w = [seg(s[0], 10), seg(s[1], 1)];
    assert_eq!(check(&fx, &reply(&[&w])), Err(ReplyError::Gap { index: 1 }));
    // two Write chunks
    let w = [seg(s[0], 10)];
    assert_eq!(
        check(&fx, &reply(&[&w, &w])),
        Err(ReplyError::UnexpectedWriteChunk)
    );
    // Read list in a reply
    let reads = [ReadSegment {
        position: 0,
        target: s[0],
    }];
    let b = v1_msg(
        ChunkLists {
            reads: &reads,
            ..ChunkLists::EMPTY
        },
        &payload,
    );
    assert_eq!(check(&fx, &b), Err(ReplyError::ReadList));
    // a Reply chunk we did not offer
    let r = [s[0]];
    let b = v1_msg(with_reply(&r), &payload);
    assert_eq!(check(&fx, &b), Err(ReplyError::UnexpectedReplyChunk));
    // NOMSG carrying Write data
    let w = [seg(s[0], 10)];
    let b = msg(
        Protocol::V1,
        MsgKind::NoMsg,
        Flags::NONE,
        with_writes(&[&w]),
        &[],
    );
    assert_eq!(check(&fx, &b), Err(ReplyError::WriteInNoMsg));
    // wrong XID / not a REPLY in the inline part
    let w = [seg(s[0], 10)];
    let b = v1_msg(with_writes(&[&w]), &rpc_reply(XID + 1, 0));
    assert_eq!(check(&fx, &b), Err(ReplyError::BadRpcHeader));
    let mut call = rpc_reply(XID, 0);
    call[7] = 0;
    let b = v1_msg(ChunkLists::EMPTY, &call);
    assert_eq!(check(&fx, &b), Err(ReplyError::BadRpcHeader));
    for e in [ReplyError::ReadList, ReplyError::Gap { index: 0 }] {
        assert_eq!(e.errno(), rpcrdma_proto::Errno::EIO);
    }
}

#[test]
fn write_chunk_not_offered() {
    let fx = reply_fx(Protocol::V1);
    let w = [fx.segs[0]];
    let b = v1_msg(with_writes(&[&w]), &rpc_reply(XID, 0));
    assert_eq!(check(&fx, &b), Err(ReplyError::UnexpectedWriteChunk));
    // even an empty one
    let b = v1_msg(with_writes(&[&[]]), &rpc_reply(XID, 0));
    assert_eq!(check(&fx, &b), Err(ReplyError::UnexpectedWriteChunk));
}

#[test]
fn long_reply() {
    for protocol in [Protocol::V1, Protocol::V2] {
        let fx = reply_fx(protocol);
        let flags = match protocol {
            Protocol::V1 => Flags::NONE,
            Protocol::V2 => Flags::RESPONSE,
        };
        let r = &fx.segs[1..];
        assert_eq!(r.len(), 2);
        let ok = [r[0], seg(r[1], 1000)];
        let b = msg(protocol, MsgKind::NoMsg, flags, with_reply(&ok), &[]);
        assert_eq!(check(&fx, &b), Ok(ReplyData::Long { len: 1100 }));
        // overlong
        let bad = [r[0], seg(r[1], 8193)];
        let b = msg(protocol, MsgKind::NoMsg, flags, with_reply(&bad), &[]);
        assert!(matches!(
            check(&fx, &b),
            Err(ReplyError::Overrun { index: 1, .. })
        ));
        // no Reply chunk, or an empty one
        let b = msg(protocol, MsgKind::NoMsg, flags, ChunkLists::EMPTY, &[]);
        assert_eq!(check(&fx, &b), Err(ReplyError::NoReplyChunk));
        let zero = [seg(r[0], 0), seg(r[1], 0)];
        let b = msg(protocol, MsgKind::NoMsg, flags, with_reply(&zero), &[]);
        assert_eq!(check(&fx, &b), Err(ReplyError::NoReplyChunk));
        // RDMA_MSG with data in the Reply chunk
        let b = msg(
            protocol,
            MsgKind::Msg,
            flags,
            with_reply(&ok),
            &rpc_reply(XID, 0),
        );
        assert_eq!(check(&fx, &b), Err(ReplyError::ReplyChunkInMsg));
        // RDMA_MSG with the Reply chunk returned unused: inline
        let b = msg(
            protocol,
            MsgKind::Msg,
            flags,
            with_reply(&zero),
            &rpc_reply(XID, 0),
        );
        assert!(matches!(check(&fx, &b), Ok(ReplyData::Inline { .. })));
    }
}

#[test]
fn v2_flags() {
    let fx = reply_fx(Protocol::V2);
    let r = &fx.segs[1..];
    let ok = [r[0]];
    // no F_RESPONSE
    let b = msg(
        Protocol::V2,
        MsgKind::NoMsg,
        Flags::NONE,
        with_reply(&ok),
        &[],
    );
    assert_eq!(check(&fx, &b), Err(ReplyError::BadFlags));
    // F_MORE
    let b = msg(
        Protocol::V2,
        MsgKind::Msg,
        Flags::RESPONSE.with(Flags::MORE),
        ChunkLists::EMPTY,
        &rpc_reply(XID, 0),
    );
    assert_eq!(check(&fx, &b), Err(ReplyError::BadFlags));
    // with F_RESPONSE: fine
    let b = msg(
        Protocol::V2,
        MsgKind::NoMsg,
        Flags::RESPONSE,
        with_reply(&ok),
        &[],
    );
    assert_eq!(check(&fx, &b), Ok(ReplyData::Long { len: 100 }));
}

#[test]
fn not_a_reply() {
    let fx = write_fx();
    // RDMA_ERROR ERR_CHUNK (v1)
    let mut b = Vec::new();
    for w in [XID, 1, 32, 4, 2] {
        b.extend_from_slice(&u32::to_be_bytes(w));
    }
    assert_eq!(check(&fx, &b), Err(ReplyError::NotAReply));
    assert!(!ReplyError::NotAReply.is_bad_reply());
    assert!(ReplyError::Gap { index: 1 }.is_bad_reply());
}

// ---- randomised -----------------------------------------------------

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        (self.u64() % u64::from(n)) as u32
    }
    fn len(&mut self) -> u32 {
        match self.below(4) {
            0 => self.below(8),
            1 => self.below(2000),
            2 => self.below(70_000),
            _ => self.below(1 << 21),
        }
    }
    fn geometry(&mut self) -> Geometry {
        Geometry {
            head: self.len() & !3,
            page_base: self.below(3 * PS),
            page_len: self.len(),
            tail: self.below(20),
        }
    }
}

/// Checks that `ranges` cover `want` (part, start, len) pieces exactly,
/// each range within one MR's reach.
fn covers(ranges: &[Range], g: &Geometry, pages_only: bool, pad: bool, depth: u32) {
    let mut i = 0;
    if !pages_only && g.head > 0 {
        assert_eq!(
            ranges[i],
            Range {
                part: Part::Head,
                offset: 0,
                len: g.head
            }
        );
        i += 1;
    }
    let mut off = 0;
    while off < g.page_len {
        let r = ranges[i];
        assert_eq!((r.part, r.offset), (Part::Pages, off));
        assert!(r.len > 0);
        let start = (g.page_base + off) % PS;
        let pages = (start + r.len).div_ceil(PS);
        assert!(pages <= depth, "{r:?} spans {pages} pages");
        // only the first range may start inside a page
        if off > 0 {
            assert_eq!(start, 0);
        }
        off += r.len;
        i += 1;
    }
    assert_eq!(off, g.page_len);
    if !pages_only && g.tail > 0 {
        assert_eq!(ranges[i].part, Part::Tail);
        assert_eq!(ranges[i].len, g.tail);
        i += 1;
    }
    if pad {
        assert_eq!(ranges[i].part, Part::WritePad);
        i += 1;
    }
    assert_eq!(i, ranges.len());
}

#[test]
fn random_plans() {
    let mut rng = Rng(0x5eed);
    let mut seen = [0u32; 9];
    for _ in 0..200_000 {
        let protocol = if rng.below(2) == 0 {
            Protocol::V1
        } else {
            Protocol::V2
        };
        let call = rng.geometry();
        let reply_g = rng.geometry();
        let rpc = Rpc {
            call,
            call_ddp: rng.below(2) == 0,
            reply: reply_g,
            reply_buflen: reply_g.len().unwrap(),
            reply_ddp: rng.below(2) == 0,
            ddp_allowed: rng.below(4) != 0,
        };
        let depth = [1, 2, 4, 16, 256][rng.below(5) as usize];
        let max_segs = 1 + rng.below(16);
        let l = Limits {
            page_size: PS,
            max_mr_pages: depth,
            max_segs,
            write_pad: true,
            // v2 with continued Replies in place of a Reply chunk, a
            // third of the time
            cont_reply: if protocol == Protocol::V2 && rng.below(3) == 0 {
                rng.below(64 << 10)
            } else {
                0
            },
        };
        let t = th(protocol);
        let a = match plan(&rpc, &t, &l) {
            Ok(a) => a,
            Err(PlanError::TooManySegments { needed, limit, .. }) => {
                assert!(needed > limit);
                seen[8] += 1;
                continue;
            }
            Err(e) => panic!("{e:?} for {rpc:?}"),
        };
        // never Write + Reply; segment limits
        assert!(a.write_ranges().is_empty() || a.reply_ranges().is_empty());
        for chunk in [a.read_ranges(), a.write_ranges(), a.reply_ranges()] {
            assert!(chunk.len() <= max_segs as usize && chunk.len() <= MAX_CHUNK_SEGS);
        }
        // the Send fits
        assert!(a.header_len() + a.send_layout().len() <= t.send);
        let call_len = call.len().unwrap();
        match a.call() {
            CallForm::Inline => {
                assert!(call_len <= t.max_inline_call());
                assert!(a.read_ranges().is_empty());
                seen[0] += 1;
            }
            CallForm::Read { position } => {
                assert!(call_len > t.max_inline_call());
                assert!(rpc.ddp_allowed && rpc.call_ddp);
                assert_eq!(position, call.head);
                covers(a.read_ranges(), &call, true, false, depth);
                let s = a.send_layout();
                assert_eq!(s.head, call.head);
                assert!(s.tail_offset + s.tail <= call.tail);
                assert_eq!(s.tail % 4, 0);
                seen[1] += 1;
            }
            CallForm::Long => {
                assert!(call_len > t.max_inline_call());
                assert_eq!(a.kind(), MsgKind::NoMsg);
                covers(a.read_ranges(), &call, false, false, depth);
                seen[2] += 1;
            }
        }
        match a.reply() {
            ReplyForm::Inline if rpc.reply_buflen > t.max_inline_reply() => {
                // continued by the responder: not READ data
                assert!(rpc.reply_buflen <= l.cont_reply);
                assert!(!rpc.reply_ddp);
                seen[6] += 1;
            }
            ReplyForm::Inline => {
                seen[3] += 1;
            }
            ReplyForm::Write => {
                assert!(rpc.reply_buflen > t.max_inline_reply());
                assert!(rpc.ddp_allowed && rpc.reply_ddp);
                assert!(reply_g.head + reply_g.tail < t.max_inline_reply());
                covers(
                    a.write_ranges(),
                    &reply_g,
                    true,
                    !reply_g.page_len.is_multiple_of(4),
                    depth,
                );
                seen[4] += 1;
            }
            ReplyForm::Long => {
                assert!(rpc.reply_buflen > t.max_inline_reply());
                assert!(rpc.reply_ddp || rpc.reply_buflen > l.cont_reply);
                covers(a.reply_ranges(), &reply_g, false, false, depth);
                seen[5] += 1;
            }
        }
        // lists from a registration encode to exactly header_len
        let segs = register(&a);
        let cc = a.chunk_lists(&segs, true).unwrap();
        let mut buf = [0u8; 1024];
        let spec = MsgSpec {
            xid: XID,
            credit: 1,
            kind: a.kind(),
            flags: Flags::NONE,
            inv_handle: cc.inv_handle(),
            chunks: cc.lists(),
        };
        let n = header::encode_msg(&mut buf, protocol, &spec).unwrap();
        assert_eq!(n as u32, a.header_len());
        if protocol == Protocol::V2 && !a.is_inline() {
            let h = cc.inv_handle();
            assert_ne!(h, 0);
            assert!(matches!(a.invalidated(&segs, h), Invalidated::Mr { .. }));
        }
    }
    // every branch was exercised
    assert!(
        seen[..7].iter().chain(&seen[8..]).all(|&n| n > 100),
        "{seen:?}"
    );
}

#[test]
fn random_replies_stay_within_registration() {
    let mut rng = Rng(0xc0ffee);
    for _ in 0..50_000 {
        let fx = if rng.below(2) == 0 {
            write_fx()
        } else {
            reply_fx(Protocol::V1)
        };
        let offered: Vec<Segment> = fx.segs.clone();
        // a reply chunk / write chunk made of perturbed offered segments
        let n = rng.below(5) as usize;
        let mut segs = Vec::new();
        for i in 0..n {
            let base = offered[(i + rng.below(2) as usize) % offered.len()];
            let length = match rng.below(4) {
                0 => 0,
                1 => base.length,
                2 => base.length + 1,
                _ => rng.below(base.length + 2),
            };
            segs.push(Segment { length, ..base });
        }
        let writes: [&[Segment]; 1] = [&segs];
        let lists = match rng.below(3) {
            0 => with_writes(&writes),
            1 => with_reply(&segs),
            _ => ChunkLists::EMPTY,
        };
        let kind = if rng.below(2) == 0 {
            MsgKind::Msg
        } else {
            MsgKind::NoMsg
        };
        let b = msg(
            Protocol::V1,
            kind,
            Flags::NONE,
            lists,
            &rpc_reply(XID, rng.below(200) as usize),
        );
        let registered_w: u32 = fx.plan.write_ranges().iter().map(|r| r.len).sum();
        let registered_r: u32 = fx.plan.reply_ranges().iter().map(|r| r.len).sum();
        match check(&fx, &b) {
            Ok(ReplyData::Written { written, .. }) => {
                assert!(written > 0 && written <= registered_w)
            }
            Ok(ReplyData::Long { len }) => assert!(len > 0 && len <= registered_r),
            Ok(ReplyData::Inline { .. }) | Err(_) => {}
        }
    }
}
