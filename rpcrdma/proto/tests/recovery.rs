// SPDX-License-Identifier: GPL-2.0

//! Error recovery (`proto::recovery`): the core-only self tests (the ones
//! the kernel runs under KUnit, suite `rpcrdma2_recovery`), one by one,
//! and randomised properties over every error body and RPC shape.

use rpcrdma_proto::chunks::{self, Geometry, Limits, ReplyForm, Rpc};
use rpcrdma_proto::inline::Thresholds;
use rpcrdma_proto::recovery::{
    decide, selftest::SELF_TESTS, Hints, Kind, Recovery, Sent, State, Why,
};
use rpcrdma_proto::xdr::header::{ErrorBody, Protocol};
use rpcrdma_proto::xdr::pvtdata::{Peer, PrivateData};
use rpcrdma_proto::{Config, Errno};

#[path = "common/selftests.rs"]
mod selftests;

#[test]
fn self_tests() {
    selftests::check_table(SELF_TESTS, rpcrdma_proto::recovery::selftest::run_all);
}

/// xorshift64*
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u32 {
        (self.next() % n.max(1)) as u32
    }
}

fn th() -> Thresholds {
    let config = Config {
        max_segs: 16,
        ..Config::default()
    };
    Thresholds {
        protocol: Protocol::V2,
        ..Thresholds::new(
            &config,
            &Peer::Valid(PrivateData {
                remote_invalidate: true,
                send_size: 4096,
                recv_size: 4096,
            }),
            Protocol::V1,
            false,
        )
    }
}

fn random_rpc(r: &mut Rng) -> Rpc {
    let g = |r: &mut Rng, max_pages: u64| Geometry {
        head: 4 * (1 + r.below(300)),
        page_base: r.below(4096),
        page_len: if r.below(2) == 0 {
            0
        } else {
            r.below(max_pages * 4096) + 1
        },
        tail: r.below(40),
    };
    let call = g(r, 64);
    let reply = g(r, 256);
    Rpc {
        call,
        call_ddp: r.below(2) == 0,
        reply,
        reply_buflen: reply.len().unwrap(),
        reply_ddp: r.below(2) == 0,
        ddp_allowed: r.below(4) != 0,
    }
}

fn random_body(r: &mut Rng, s: &Sent) -> ErrorBody {
    let near = |r: &mut Rng, x: u32| match r.below(4) {
        0 => 0,
        1 => x.saturating_add(r.below(8192)),
        2 => x.saturating_sub(r.below(64)),
        _ => r.below(1 << 21),
    };
    match r.below(12) {
        0 => ErrorBody::BadXdr,
        1 => ErrorBody::InvalHtype,
        2 => ErrorBody::InvalFlag,
        3 => ErrorBody::ReadChunks {
            max_chunks: r.below(3),
        },
        4 => ErrorBody::WriteChunks {
            max_chunks: r.below(3),
        },
        5 => ErrorBody::Segments {
            max_segments: r.below(5),
        },
        6 => ErrorBody::WriteResource {
            chunk_index: r.below(3),
            length_needed: near(r, s.write_len),
        },
        7 => ErrorBody::ReplyResource {
            length_needed: near(r, s.reply_chunk_len.max(s.reply_capacity)),
        },
        8 => ErrorBody::System,
        9 => ErrorBody::Vers { low: 1, high: 2 },
        _ => ErrorBody::Other(11 + r.below(100)),
    }
}

/// Random RPCs refused by random errors until they fail or are served:
/// the number of transmissions is bounded, a resend always changes the
/// plan in the direction the error asked, failures carry -EIO or
/// -EMSGSIZE, and no error body makes `decide` or `plan_with` misbehave.
#[test]
fn random_refusals_are_bounded_and_obeyed() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let limits = Limits {
        page_size: 4096,
        max_mr_pages: 32,
        max_segs: 16,
        write_pad: false,
        cont_reply: 0,
    };
    let t = th();
    let mut resends = [0u64; 5];
    let mut fails = 0u64;
    for _ in 0..50_000 {
        let rpc = random_rpc(&mut r);
        let mut state = State::NEW;
        let mut sends = 0;
        loop {
            sends += 1;
            assert!(sends <= 6, "{rpc:?}: sent {sends} times");
            let Ok(p) = chunks::plan_with(&rpc, &t, &limits, &state.hints()) else {
                break;
            };
            let s = Sent::of((!p.is_inline()).then_some(&p), &rpc, true);
            let h = state.hints();
            // (max_segs 0: no chunks at all, the other hints are moot)
            let chunked = h.max_segs != Some(0);
            if chunked && h.position_zero {
                assert_eq!(s.call, chunks::CallForm::Long, "{rpc:?} {h:?}");
            }
            if chunked && h.reply_chunk {
                assert_eq!(s.reply, ReplyForm::Long, "{rpc:?} {h:?}");
                assert!(s.reply_chunk_len >= h.reply_min);
            }
            if let Some(m) = h.max_segs {
                assert!(s.max_chunk_segs <= m);
            }
            if r.below(3) == 0 {
                break; // served
            }
            let body = random_body(&mut r, &s);
            match decide(Protocol::V2, &body, &s, &state) {
                Recovery::Resend { kind, state: next } => {
                    assert!(!state.tried(kind));
                    resends[Kind::ALL.iter().position(|k| *k == kind).unwrap()] += 1;
                    match body {
                        ErrorBody::ReadChunks { .. } => assert!(next.hints().position_zero),
                        ErrorBody::WriteChunks { .. } => assert!(next.hints().reply_chunk),
                        ErrorBody::Segments { max_segments } => {
                            assert!(next.hints().max_segs.unwrap() <= max_segments)
                        }
                        ErrorBody::WriteResource { length_needed, .. }
                        | ErrorBody::ReplyResource { length_needed } => {
                            assert!(next.hints().reply_chunk);
                            assert!(next.hints().reply_min >= length_needed);
                            assert!(length_needed <= s.reply_capacity);
                        }
                        _ => panic!("{body:?} recovered"),
                    }
                    state = next;
                }
                Recovery::Fail { errno, why } => {
                    fails += 1;
                    assert!(errno == Errno::EIO || errno == Errno::EMSGSIZE);
                    assert_eq!(
                        errno == Errno::EMSGSIZE,
                        matches!(why, Why::TooLarge { .. })
                    );
                    break;
                }
            }
        }
    }
    // every kind of recovery happened (WRITE_RESOURCE is the rarest: it
    // needs a Write chunk and a length just above it)
    assert!(resends.iter().all(|n| *n > 0), "{resends:?}");
    assert!(fails > 1000);
}

#[test]
fn hints_none_changes_nothing() {
    let mut r = Rng(42);
    let limits = Limits {
        page_size: 4096,
        max_mr_pages: 8,
        max_segs: 16,
        write_pad: false,
        cont_reply: 0,
    };
    for _ in 0..20_000 {
        let rpc = random_rpc(&mut r);
        assert_eq!(
            chunks::plan_with(&rpc, &th(), &limits, &Hints::NONE),
            chunks::plan(&rpc, &th(), &limits)
        );
    }
}
