// SPDX-License-Identifier: GPL-2.0

//! Recovery from the responder's transport errors: what each RPC of the
//! connection has tried ([`RecoveryTable`], by request slot, which the
//! reply's request names), the decision
//! of [`proto::recovery::decide`] for an `RDMA_ERROR` / `RDMA2_ERROR`, and
//! carrying it out: the RPC is sent again (same XID, on this connection)
//! once its MRs are invalidated, or fails with the decision's errno.
//!
//! The state lives with the connection: an RPC sent again after a
//! reconnect is planned afresh (and may be refused and recovered again,
//! within the same bounds), as is the segment limit the connection learnt.

use super::*;
use crate::proto::recovery::{self, Recovery, Sent, State};
use crate::sunrpc::rqst::ReplyRqst;
use crate::xdr::header::ErrorBody;

/// One request slot's RPC and what it tried.
#[derive(Clone, Copy, Default)]
struct Entry {
    /// XID (host order) of the RPC last sent from the slot.
    xid: u32,
    state: State,
}

/// The recovery state of each request slot's RPC.
///
/// Most RPCs are never refused: their slot's entry says nothing was tried
/// ([`State::NEW`]), and `tried` (a [`SlotFlags`], which only this table
/// writes) says so without the lock, so that sending them costs no lock.
pub(super) struct RecoveryTable {
    entries: KVec<Entry>,
    /// Slot `i`'s entry holds a state other than [`State::NEW`].
    tried: Arc<SlotFlags>,
}

impl RecoveryTable {
    /// A table for `n` request slots.
    pub(super) fn new(n: usize) -> Result<Self> {
        let mut entries = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            entries.push(Entry::default(), GFP_KERNEL)?;
        }
        let tried = SlotFlags::new(n)?;
        Ok(RecoveryTable { entries, tried })
    }

    /// Which slots' RPCs were refused and are being sent again, for the
    /// sender without the lock: only the reply handler sets a slot's flag,
    /// before it completes the RPC for SUNRPC to send it again.
    pub(super) fn tried(&self) -> Arc<SlotFlags> {
        self.tried.clone()
    }

    /// RPC `xid` is about to be sent from `slot`: its state (the hints of
    /// this transmission). A slot's new RPC starts with nothing tried.
    pub(super) fn begin(&mut self, slot: usize, xid: u32) -> State {
        self.entry(slot, xid).map_or(State::NEW, |e| e.state)
    }

    /// The entry of RPC `xid` in `slot`, started afresh if the slot's
    /// last RPC was another.
    fn entry(&mut self, slot: usize, xid: u32) -> Option<&mut Entry> {
        let e = self.entries.get_mut(slot)?;
        if e.xid != xid {
            *e = Entry {
                xid,
                state: State::NEW,
            };
            self.tried.set(slot, false);
        }
        Some(e)
    }

    /// Stores the state of RPC `xid` in `slot` for its next transmission.
    fn store(&mut self, slot: usize, xid: u32, state: State) {
        if let Some(e) = self.entry(slot, xid) {
            e.state = state;
            self.tried.set(slot, state != State::NEW);
        }
    }
}

/// A connection's [`RecoveryTable`] and, for the sender without its lock,
/// which slots hold anything but [`State::NEW`].
#[pin_data]
pub(super) struct SlotRecovery {
    #[pin]
    table: SpinLock<RecoveryTable>,
    /// [`RecoveryTable::tried`].
    tried: Arc<SlotFlags>,
}

impl SlotRecovery {
    pub(super) fn new(table: RecoveryTable) -> impl PinInit<Self> {
        let tried = table.tried();
        pin_init!(SlotRecovery {
            table <- new_spinlock!(table),
            tried,
        })
    }

    /// RPC `xid` (host order) is about to be sent from `slot`: its
    /// recovery state. An RPC that was never refused (most) takes no
    /// lock.
    pub(super) fn begin(&self, slot: usize, xid: u32) -> State {
        if self.tried.get(slot) {
            self.table.lock().begin(slot, xid)
        } else {
            State::NEW
        }
    }
}

impl QpState {
    /// Decides what to do with RPC `xid` (request `rqst`), refused with
    /// `body` in version `protocol`. A resend's new state is stored for
    /// its next transmission.
    pub(super) fn recovery_for(
        &self,
        rqst: &ReplyRqst,
        xid: u32,
        protocol: Protocol,
        body: &ErrorBody,
    ) -> Option<Recovery> {
        let slot = usize::from(rqst.slot());
        // How the refused transmission was sent: its chunk plan (none:
        // inline), and the RPC's receive buffer.
        let plan = self.frwr.lock().of(slot, xid).and_then(|r| r.plan);
        let rpc = proto::Rpc::from(rqst.shape());
        let chunks = self.chunking().is_some() && self.proto.lock().config().max_segs > 0;
        let sent = Sent::of(plan.as_ref(), &rpc, chunks);
        let mut g = self.recovery.table.lock();
        let Some(e) = g.entry(slot, xid) else {
            // A slot the table does not have (cannot happen): a resend
            // could not carry its hints, so it would be refused the same
            // way again: fail instead.
            return Some(Recovery::Fail {
                errno: proto::Errno::EIO,
                why: recovery::Why::Permanent,
            });
        };
        let r = recovery::decide(protocol, body, &sent, &e.state);
        if let Recovery::Resend { state, .. } = r {
            g.store(slot, xid, state);
        }
        Some(r)
    }

    /// Sends RPC `xid` again as `r` (a [`Recovery::Resend`]) decided,
    /// after the error `body` of version `protocol`: counted, logged, and
    /// once its MRs are invalidated the RPC is completed for SUNRPC to
    /// transmit it again on this connection.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resend_after_error(
        &self,
        qp: &Qp<ConnQp>,
        rqst: ReplyRqst,
        xid: u32,
        protocol: Protocol,
        body: &ErrorBody,
        r: &Recovery,
        inv: Option<u32>,
    ) {
        self.proto.lock().recovered(r);
        if let Recovery::Resend { kind, state } = *r {
            if crate::compat::print::ratelimit() {
                pr_warn!(
                    "reply: server answered {} (xid {:#010x}, {:?}): {} (recovery {} of this RPC)\n",
                    body.name(protocol),
                    xid,
                    body,
                    kind.action(),
                    state.resends()
                );
            }
        }
        self.end_rpc(qp, rqst, xid, Finish::Retry, inv);
    }
}
