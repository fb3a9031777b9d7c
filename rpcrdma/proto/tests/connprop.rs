// SPDX-License-Identifier: GPL-2.0

//! Transport properties (`proto::connprop`): the core-only self tests (the
//! ones the kernel runs under KUnit, suite `rpcrdma2_connprop`), one by
//! one, and randomised properties of the CONNPROP reassembly.

use rpcrdma_proto::connprop::{selftest::SELF_TESTS, Assembly, Step, MAX_SET_LEN};
use rpcrdma_proto::xdr::props::{PropSet, Property};
use rpcrdma_proto::xdr::stream::XdrWriter;

#[path = "common/selftests.rs"]
mod selftests;

#[test]
fn self_tests() {
    selftests::check_table(SELF_TESTS, rpcrdma_proto::connprop::selftest::run_all);
}

/// A small deterministic generator (no registry dependencies).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

/// Any valid property set, split at random points, reassembles to the
/// values the codec's own decoder gives the whole set.
#[test]
fn reassembly_matches_whole_decode() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let auth = [0xa5u8; 700];
    let unknown = [7u8; 40];
    for _ in 0..2000 {
        let mut props = Vec::new();
        for _ in 0..(rng.next() % 9) {
            let v = rng.next();
            props.push(match rng.next() % 9 {
                0 => Property::MaxSendSize(v),
                1 => Property::RecvBufSize(v),
                2 => Property::MaxSegmentSize(v),
                3 => Property::MaxSegmentCount(v),
                4 => Property::ReverseRequestSupport(v % 3),
                5 => Property::HostAuth(&auth[..(v % 700) as usize]),
                6 => Property::Default(1 + v % 5),
                7 => Property::Unknown {
                    id: 100 + v % 50,
                    data: &unknown[..1 + (v % 40) as usize],
                },
                _ => Property::Default(1000 + v % 7),
            });
        }
        let mut buf = vec![0u8; 8192];
        let mut w = XdrWriter::new(&mut buf);
        PropSet::encode(&mut w, &props).unwrap();
        let n = w.finish();
        let set = &buf[..n];
        let whole = PropSet::parse(set).unwrap().values();
        let mut a = Assembly::new();
        let mut at = 0;
        let mut last = Step::Pending;
        while at < n {
            let take = 1 + rng.next() as usize % 300;
            let end = (at + take).min(n);
            last = a.piece(42, &set[at..end], end < n);
            if end < n {
                assert_eq!(last, Step::Pending);
            }
            at = end;
        }
        assert_eq!(last, Step::Done(whole));
    }
}

/// Random bytes never panic the parser, and nothing longer than the bound
/// is ever accepted.
#[test]
fn random_pieces_never_panic() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..2000 {
        let mut a = Assembly::new();
        let mut total = 0u32;
        for i in 0..(1 + rng.next() % 20) {
            let len = rng.next() as usize % 64;
            let piece: Vec<u8> = (0..len).map(|_| (rng.next() % 7) as u8).collect();
            total += len as u32;
            let more = i + 1 < 20 && !rng.next().is_multiple_of(4);
            match a.piece(1, &piece, more) {
                Step::Done(_) => assert!(total <= MAX_SET_LEN),
                Step::Failed(_) | Step::Pending => {}
            }
            if !more {
                break;
            }
        }
    }
}
