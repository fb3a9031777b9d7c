// SPDX-License-Identifier: GPL-2.0

//! The XID map against a `HashMap` model: random inserts, lookups and
//! removals (sequential XIDs as SUNRPC allocates them, with wrap-around,
//! and random ones), at every fill level up to a full table.

mod common;
use common::Rng;
use rpcrdma_proto::xidmap::{self, Full, XidEntry};
use std::collections::HashMap;

impl Rng {
    fn u32(&mut self) -> u32 {
        (self.u64() >> 32) as u32
    }
}

fn check(t: &[XidEntry], model: &HashMap<u32, u16>, probe: &[u32]) {
    for (&x, &s) in model {
        assert_eq!(xidmap::get(t, x), Some(s), "xid {x:#x}");
    }
    for &x in probe {
        assert_eq!(xidmap::get(t, x), model.get(&x).copied(), "xid {x:#x}");
    }
}

#[test]
fn empty_table_holds_nothing() {
    let mut t: [XidEntry; 0] = [];
    assert_eq!(xidmap::get(&t, 1), None);
    assert_eq!(xidmap::insert(&mut t, 1, 1), Err(Full));
    assert_eq!(xidmap::remove(&mut t, 1), None);
}

#[test]
fn full_table_refuses_then_accepts_after_remove() {
    let mut t = [XidEntry::default(); 8];
    for x in 0..8u32 {
        assert_eq!(xidmap::insert(&mut t, x, x as u16), Ok(()));
    }
    assert_eq!(xidmap::insert(&mut t, 100, 1), Err(Full));
    // replacing an existing XID needs no free entry
    assert_eq!(xidmap::insert(&mut t, 3, 33), Ok(()));
    assert_eq!(xidmap::get(&t, 3), Some(33));
    assert_eq!(xidmap::remove(&mut t, 5), Some(5));
    assert_eq!(xidmap::insert(&mut t, 100, 1), Ok(()));
    assert_eq!(xidmap::get(&t, 100), Some(1));
    for x in (0..8u32).filter(|&x| x != 5) {
        assert!(xidmap::get(&t, x).is_some());
    }
}

#[test]
fn random_against_model() {
    let mut rng = Rng(0x1d_5eed);
    for &len in &[1usize, 2, 3, 7, 16, 64, 256, 257] {
        let mut t = vec![XidEntry::default(); len];
        let mut model: HashMap<u32, u16> = HashMap::new();
        let mut next_xid = rng.u32();
        for step in 0..20_000u32 {
            let op = rng.u64() % 10;
            if op < 4 && model.len() < len {
                // SUNRPC hands out XIDs in sequence
                let x = next_xid;
                next_xid = next_xid.wrapping_add(1);
                let s = (step % 1000) as u16;
                assert_eq!(xidmap::insert(&mut t, x, s), Ok(()));
                model.insert(x, s);
            } else if op < 5 && model.len() < len {
                let x = rng.u32();
                let s = (step % 1000) as u16;
                assert_eq!(xidmap::insert(&mut t, x, s), Ok(()));
                model.insert(x, s);
            } else if op < 9 {
                // remove a present XID (oldest-ish first) or an absent one
                let x = if !model.is_empty() && !rng.u64().is_multiple_of(4) {
                    *model
                        .keys()
                        .nth((rng.u64() % model.len() as u64) as usize)
                        .unwrap()
                } else {
                    rng.u32()
                };
                assert_eq!(xidmap::remove(&mut t, x), model.remove(&x), "remove {x:#x}");
            } else {
                let x = rng.u32();
                assert_eq!(xidmap::get(&t, x), model.get(&x).copied());
            }
            if step.is_multiple_of(97) {
                check(&t, &model, &[next_xid, next_xid.wrapping_sub(1), rng.u32()]);
            }
        }
        check(&t, &model, &[]);
    }
}
