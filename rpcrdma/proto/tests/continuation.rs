// SPDX-License-Identifier: GPL-2.0

//! Randomised properties of the reassembly of continued replies
//! (`continuation::Reassembly`) and of the split of continued Calls.
//!
//! A responder model sends the replies of several Calls, each split at
//! random boundaries, and now and then breaks the rules (interleaves
//! another sequence, drops F_RESPONSE, sends a piece that does not decode,
//! a credit grant between pieces). For every sequence: the pieces that are
//! placed cover the Reply from offset 0 without gap or overlap; a Reply is
//! completed only when all its pieces arrived in order and their
//! concatenation is the Reply; and no Call is answered (credit rule 3)
//! more than once, whatever was refused or discarded.

mod common;
use common::Rng;
use std::collections::HashMap;

use rpcrdma_proto::continuation::{piece_room, pieces, split, Piece, Reassembly, Step};
use rpcrdma_proto::xdr::v2;

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.u64() % n.max(1)
    }
}

/// An RPC Reply of `len` bytes (at least 8) for `xid`.
fn reply(xid: u32, len: usize, rng: &mut Rng) -> Vec<u8> {
    let mut r: Vec<u8> = (0..len).map(|_| rng.u64() as u8).collect();
    r[..4].copy_from_slice(&xid.to_be_bytes());
    r[4..8].copy_from_slice(&1u32.to_be_bytes());
    r
}

#[derive(Default)]
struct Seen {
    /// Bytes placed so far, by offset.
    placed: Vec<u8>,
    completed: bool,
    answers: u32,
}

#[test]
fn random_sequences_keep_offsets_and_answer_once() {
    for seed in 0..300u64 {
        let mut rng = Rng(seed);
        let mut r = Reassembly::new();
        let mut seen: HashMap<u32, Seen> = HashMap::new();
        let mut intact: HashMap<u32, Vec<u8>> = HashMap::new();
        for n in 0..40u32 {
            let xid = 0x1000 + n;
            let len = 8 + rng.below(3000) as usize;
            let body = reply(xid, len, &mut rng);
            // Random boundaries (pieces of at least 1 byte; the codec
            // requires 4 on the wire, the state machine does not care).
            let mut cuts = vec![0usize];
            while *cuts.last().unwrap() < len {
                let step = 1 + rng.below(700) as usize;
                cuts.push((cuts.last().unwrap() + step).min(len));
            }
            let mut broken = false;
            for w in cuts.windows(2) {
                let more = w[1] < len;
                let mut p = Piece {
                    xid,
                    htype: v2::RDMA2_MSG,
                    more,
                    response: true,
                    chunks: false,
                    valid: true,
                    payload: &body[w[0]..w[1]],
                };
                match rng.below(40) {
                    0 => {
                        // a piece of another XID in between
                        let other = Piece {
                            xid: xid ^ 0x8000_0000,
                            ..p
                        };
                        feed(&mut r, &other, &mut seen);
                        broken = true;
                    }
                    1 => {
                        p.response = false;
                        broken = true;
                    }
                    2 => {
                        p.valid = false;
                        p.payload = &[];
                        broken = true;
                    }
                    3 | 4 => {
                        let grant = Piece {
                            xid: 0,
                            htype: v2::RDMA2_NOMSG,
                            more: false,
                            response: false,
                            chunks: false,
                            valid: true,
                            payload: &[],
                        };
                        assert_eq!(r.on_message(&grant), Step::Single);
                    }
                    _ => {}
                }
                feed(&mut r, &p, &mut seen);
            }
            if !broken {
                intact.insert(xid, body);
            }
        }
        for (xid, s) in &seen {
            assert!(
                s.answers <= 1,
                "seed {seed}: xid {xid:#x} answered {} times",
                s.answers
            );
            if let Some(body) = intact.get(xid) {
                assert!(
                    s.completed,
                    "seed {seed}: intact xid {xid:#x} not completed"
                );
                assert_eq!(
                    &s.placed, body,
                    "seed {seed}: xid {xid:#x} reassembled wrongly"
                );
                assert_eq!(s.answers, 1);
            }
            if s.completed {
                assert_eq!(s.answers, 1);
            }
        }
    }
}

fn feed(r: &mut Reassembly, p: &Piece<'_>, seen: &mut HashMap<u32, Seen>) {
    let step = r.on_message(p);
    let answers = step.answers_call();
    let target = match step {
        Step::Append {
            xid,
            offset,
            payload,
        }
        | Step::Last {
            xid,
            offset,
            payload,
            ..
        } => {
            let s = seen.entry(xid).or_default();
            if offset == 0 {
                // A new sequence (after a broken one of the same XID, the
                // rest of that one: its head check fails it).
                s.placed.clear();
            }
            assert_eq!(
                offset as usize,
                s.placed.len(),
                "gap or overlap for {xid:#x}"
            );
            s.placed.extend_from_slice(payload);
            if let Step::Last { len, .. } = step {
                assert_eq!(len as usize, s.placed.len());
                s.completed = true;
            }
            Some(xid)
        }
        Step::Fail { xid, .. } => Some(xid),
        // A dropped message answers the Call of its own XID.
        Step::Drop { .. } => Some(p.xid),
        Step::Single => {
            // Only whole messages and grants are Single here: a single
            // valid message without F_MORE answers its own Call.
            (p.valid && !p.more && p.xid != 0 && p.htype == v2::RDMA2_MSG).then_some(p.xid)
        }
    };
    let single_answers = matches!(step, Step::Single)
        && p.valid
        && !p.more
        && p.xid != 0
        && p.htype == v2::RDMA2_MSG;
    if single_answers && p.response {
        // A Reply in one message: delivered whole (if not a leftover).
        let s = seen.entry(p.xid).or_default();
        if s.placed.is_empty() {
            s.placed = p.payload.to_vec();
            s.completed = true;
        }
    }
    if answers || single_answers {
        if let Some(x) = target {
            seen.entry(x).or_default().answers += 1;
        }
    }
}

#[test]
fn split_covers_the_call() {
    let mut rng = Rng(7);
    for _ in 0..10_000 {
        let len = 1 + rng.below(2 << 20) as u32;
        let send = 1024 + rng.below(64 * 1024) as u32;
        let room = piece_room(send);
        assert!(room >= 988 && room.is_multiple_of(4) && room + 36 <= send);
        let mut at = 0;
        let mut n = 0;
        while let Some(s) = split(len, at, room) {
            assert_eq!(s.offset, at);
            assert!(s.len > 0 && s.len <= room);
            at += s.len;
            n += 1;
            assert_eq!(s.more, at < len);
        }
        assert_eq!(at, len);
        assert_eq!(n, pieces(len, room));
    }
}
