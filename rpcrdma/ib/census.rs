// SPDX-License-Identifier: GPL-2.0

//! A census of the ib_core and rdma_cm objects the module holds.
//!
//! Each wrapper of this layer counts its object in when it is created and
//! out when it is destroyed: rdma_cm ids ([`super::cm::CmId`]), protection
//! domains ([`super::verbs::Pd`]), completion queues
//! ([`super::verbs::Cq`]), queue pairs ([`super::endpoint::Endpoint`]), FRWR MRs
//! ([`super::mr::Mr`]), the scatterlists an MR has DMA-mapped, and mapped
//! buffers ([`super::dma::DmaBuf`]). The counts are relaxed atomics: no
//! lock, and nothing on the data path but the MR mappings' increments.
//!
//! [`Guard`] checks the census when it is dropped (the module keeps one
//! as its last field, so the check runs after everything else of the
//! module is gone): anything still held then is a leak, reported as
//! `rpcrdma2: ib census at unload: ... leaked` (the testbed fails a test
//! on that line, see `tools/testing/vm/run.sh`).

use core::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use kernel::prelude::*;

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An rdma_cm id.
    CmId,
    /// A protection domain.
    Pd,
    /// A completion queue.
    Cq,
    /// A queue pair.
    Qp,
    /// An allocated FRWR MR.
    Mr,
    /// An MR's scatterlist, DMA-mapped.
    MrMapping,
    /// A DMA-mapped buffer.
    DmaBuf,
}

const KINDS: [(Kind, &str); 7] = [
    (Kind::CmId, "cm_id"),
    (Kind::Pd, "pd"),
    (Kind::Cq, "cq"),
    (Kind::Qp, "qp"),
    (Kind::Mr, "mr"),
    (Kind::MrMapping, "mr_mapping"),
    (Kind::DmaBuf, "dma_buf"),
];

static HELD: [AtomicIsize; KINDS.len()] = [const { AtomicIsize::new(0) }; KINDS.len()];

/// The counter of `kind`. Every kind has one ([`KINDS`] lists them all,
/// checked at compile time below); `None` cannot happen, and is ignored
/// rather than risk a panic.
fn counter(kind: Kind) -> Option<&'static AtomicIsize> {
    HELD.get(kind as usize)
}

// Every kind's discriminant indexes `HELD`, and `KINDS` names each kind once.
const _: () = {
    let mut i = 0;
    while i < KINDS.len() {
        assert!(KINDS[i].0 as usize == i);
        i += 1;
    }
};

/// Counts one object of `kind` in.
pub(crate) fn enter(kind: Kind) {
    if let Some(c) = counter(kind) {
        c.fetch_add(1, Relaxed);
    }
}

/// Counts one object of `kind` out.
pub(crate) fn leave(kind: Kind) {
    if let Some(c) = counter(kind) {
        c.fetch_sub(1, Relaxed);
    }
}

/// How many objects of `kind` are held now.
pub fn held(kind: Kind) -> isize {
    counter(kind).map_or(0, |c| c.load(Relaxed))
}

/// Checks the census when dropped: reports what is still held (a leak).
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        if KINDS.iter().all(|(k, _)| held(*k) == 0) {
            pr_info!("ib census at unload: nothing held\n");
            return;
        }
        for (k, name) in KINDS {
            let n = held(k);
            if n != 0 {
                pr_err!("ib census at unload: {} {} leaked\n", n, name);
            }
        }
    }
}
