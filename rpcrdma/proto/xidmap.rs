// SPDX-License-Identifier: GPL-2.0

//! XID → request slot in O(1) (on average), for the reply handler.
//!
//! A reply names its RPC only by XID. The glue keeps a table of
//! [`XidEntry`] per connection, at least twice as many entries as RPCs can
//! be outstanding, and finds the request slot of a reply here instead of
//! scanning every slot. Open addressing with linear probing (sequential
//! XIDs spread by a multiplicative hash) and backward-shift deletion, so
//! there are no tombstones and a lookup stops at the first empty entry.
//!
//! The table is the caller's (`core` only, nothing allocated here); every
//! function works on any length, an empty table holding nothing.

/// One entry of the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XidEntry {
    used: bool,
    xid: u32,
    slot: u16,
}

/// The table has no free entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// Where the probe sequence of `xid` starts in a table of `len` entries.
fn home(xid: u32, len: usize) -> Option<usize> {
    // Fibonacci hashing: consecutive XIDs land far apart.
    let h = xid.wrapping_mul(0x9e37_79b9);
    usize::try_from(h).ok()?.checked_rem(len)
}

/// The entry after `i`, wrapping at `len`.
fn next(i: usize, len: usize) -> usize {
    let n = i.wrapping_add(1);
    if n >= len {
        0
    } else {
        n
    }
}

/// The index of `xid`'s entry, if it is in the table.
fn position(t: &[XidEntry], xid: u32) -> Option<usize> {
    let len = t.len();
    let mut i = home(xid, len)?;
    for _ in 0..len {
        let e = t.get(i)?;
        if !e.used {
            return None;
        }
        if e.xid == xid {
            return Some(i);
        }
        i = next(i, len);
    }
    None
}

/// The slot recorded for `xid`.
pub fn get(t: &[XidEntry], xid: u32) -> Option<u16> {
    position(t, xid).and_then(|i| t.get(i)).map(|e| e.slot)
}

/// Records `xid` → `slot`, replacing what `xid` had.
pub fn insert(t: &mut [XidEntry], xid: u32, slot: u16) -> Result<(), Full> {
    let len = t.len();
    let mut i = home(xid, len).ok_or(Full)?;
    for _ in 0..len {
        let e = t.get_mut(i).ok_or(Full)?;
        if !e.used || e.xid == xid {
            *e = XidEntry {
                used: true,
                xid,
                slot,
            };
            return Ok(());
        }
        i = next(i, len);
    }
    Err(Full)
}

/// Forgets `xid`; returns the slot it had.
pub fn remove(t: &mut [XidEntry], xid: u32) -> Option<u16> {
    let len = t.len();
    let mut hole = position(t, xid)?;
    let slot = t.get(hole)?.slot;
    // Backward shift: move each later entry of the cluster into the hole
    // unless its home lies cyclically in (hole, j], where a lookup starting
    // at its home would not pass the hole.
    let mut j = hole;
    for _ in 0..len {
        j = next(j, len);
        let Some(&e) = t.get(j) else { break };
        if !e.used {
            break;
        }
        let Some(k) = home(e.xid, len) else { break };
        let movable = if hole <= j {
            k <= hole || k > j
        } else {
            k <= hole && k > j
        };
        if movable {
            if let Some(h) = t.get_mut(hole) {
                *h = e;
            }
            hole = j;
        }
    }
    if let Some(h) = t.get_mut(hole) {
        *h = XidEntry::default();
    }
    Some(slot)
}
