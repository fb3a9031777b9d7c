// SPDX-License-Identifier: GPL-2.0

//! Random event sequences with hostile messages (random bytes and mutated
//! valid messages): nothing panics (overflow checks are on) and the
//! invariants hold after every event.

mod common;
use common::Rng;
use rpcrdma_proto::xdr::pvtdata::{self, Peer};
use rpcrdma_proto::{Config, Phase, Reply, Transport, VersionPolicy};

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.u64() % n as u64) as usize
    }
    fn word(&mut self) -> u32 {
        const V: [u32; 10] = [
            0,
            1,
            2,
            3,
            4,
            5,
            0xffff,
            0x0001_0001,
            0xffff_ffff,
            0x8000_0000,
        ];
        if self.below(2) == 0 {
            V[self.below(V.len())]
        } else {
            self.u64() as u32
        }
    }
}

fn message(rng: &mut Rng, xids: &[u32]) -> Vec<u8> {
    let xid = if !xids.is_empty() && rng.below(2) == 0 {
        xids[rng.below(xids.len())]
    } else {
        rng.word()
    };
    let vers = [1, 2, 2, 3][rng.below(4)];
    let mut w: Vec<u32> = vec![xid, vers, rng.word()];
    match rng.below(6) {
        // inline reply
        0 => {
            w.push(0);
            if vers == 2 {
                w.extend([rng.below(4) as u32, 0]);
            }
            w.extend([0, 0, 0, xid, rng.below(3) as u32, 0, 0, 0, 0]);
        }
        // ERR_VERS, any framing
        1 => w.extend([4, 1, rng.word() % 4, rng.word() % 4]),
        2 => w.extend([4, 1, 1, 1, 1]),
        // credit grant / NOMSG
        3 => w.extend([1, 0, 0, 0, 0, 0]),
        // CONNPROP
        4 => w.extend([5, 0, 2, 1, 4, rng.word(), 2, 4, rng.word()]),
        _ => {
            for _ in 0..rng.below(12) {
                w.push(rng.word());
            }
        }
    }
    let mut b: Vec<u8> = w.iter().flat_map(|x| x.to_be_bytes()).collect();
    // Mutate: truncate, flip bytes, append.
    match rng.below(4) {
        0 => {
            let n = rng.below(b.len() + 1);
            b.truncate(n);
        }
        1 => {
            for _ in 0..1 + rng.below(3) {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
            }
        }
        2 => b.extend((0..rng.below(9)).map(|_| rng.u64() as u8)),
        _ => {}
    }
    b
}

#[test]
fn hostile_sequences() {
    for seed in 0..300u64 {
        let mut rng = Rng(seed);
        let cfg = Config {
            policy: if rng.below(4) == 0 {
                VersionPolicy::ForceV1
            } else {
                VersionPolicy::TryV2
            },
            max_requests: rng.word(),
            bc_requests: rng.word() % 100,
            inline_send: rng.word(),
            inline_recv: rng.word(),
            remote_invalidate: rng.below(2) == 0,
            max_segs: rng.word() % 40,
            cont_reply_pieces: rng.word() % 2000,
        };
        let mut t = Transport::new(cfg);
        let max = t.config().max_requests;
        let depth = t.config().recv_queue_depth();
        let mut window = 1u32;
        let mut v1_only = false;
        let mut settled: Option<Phase> = None;
        let mut xids: Vec<u32> = Vec::new();
        for _ in 0..2000 {
            match rng.below(20) {
                0 => {
                    let p = t.connect();
                    window = p.credits.credits;
                    assert_eq!(window, 1);
                    settled = None;
                }
                1 => {
                    let mut pd = [0u8; 12];
                    pd.iter_mut().for_each(|b| *b = rng.u64() as u8);
                    if rng.below(2) == 0 {
                        pd[..8].copy_from_slice(&[0xf6, 0xab, 0x0e, 0x18, 1, 1, 0, 0]);
                        pd[6] = rng.u64() as u8;
                        pd[7] = rng.u64() as u8;
                    }
                    let peer: Peer = pvtdata::decode(&pd);
                    let th = t.established(peer);
                    assert!(th.send >= 1024 && th.recv >= 1024);
                }
                2 => {
                    t.disconnected();
                    settled = None;
                }
                3 => t.receive_flushed(),
                4 => t.receives_unposted(rng.word() % 20),
                5..=10 => {
                    let xid = rng.word();
                    let len = rng.word() % 70000;
                    if let Ok(plan) = t.prepare_call(xid, len, rng.word() % 70000) {
                        assert!(plan.hdr_len + len <= t.thresholds().send);
                        if plan.probe {
                            assert!(plan.hdr_len + len <= 1024);
                        }
                        xids.push(xid);
                        if xids.len() > 32 {
                            xids.remove(0);
                        }
                    }
                }
                _ => {
                    let m = message(&mut rng, &xids);
                    let o = t.receive(&m);
                    if let Some(u) = o.credits {
                        assert_ne!(u.credits, window);
                        window = u.credits;
                    }
                    if let Reply::Deliver { xid, payload } = o.reply {
                        assert_eq!(payload.get(..4), Some(&xid.to_be_bytes()[..]));
                    }
                }
            }
            assert_eq!(window, t.credits().window());
            assert!((1..=max).contains(&window));
            assert!(t.credits().posted() <= depth);
            assert!(!v1_only || t.memory().v1_only(), "v1-only memory reverted");
            v1_only = t.memory().v1_only();
            match (settled, t.phase()) {
                (Some(a), b) if b != Phase::Down => {
                    assert_eq!(a, b, "version changed mid-connection")
                }
                (None, p @ Phase::Settled(_)) => settled = Some(p),
                _ => {}
            }
        }
    }
}
