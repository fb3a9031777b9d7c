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
pub(super) struct RecoveryTable {
    entries: KVec<Entry>,
}

impl RecoveryTable {
    /// A table for `n` request slots.
    pub(super) fn new(n: usize) -> Result<Self> {
        let mut entries = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            entries.push(Entry::default(), GFP_KERNEL)?;
        }
        Ok(RecoveryTable { entries })
    }

    /// RPC `xid` is about to be sent from `slot`: its state (the hints of
    /// this transmission). A slot's new RPC starts with nothing tried.
    pub(super) fn begin(&mut self, slot: usize, xid: u32) -> State {
        match self.entries.get_mut(slot) {
            Some(e) if e.xid == xid => e.state,
            Some(e) => {
                *e = Entry {
                    xid,
                    state: State::NEW,
                };
                State::NEW
            }
            None => State::NEW,
        }
    }

    /// The entry of `slot` if its RPC is `xid`.
    fn of(&mut self, slot: usize, xid: u32) -> Option<&mut Entry> {
        self.entries.get_mut(slot).filter(|e| e.xid == xid)
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
        let plan = self.regs.lock().of(slot, xid).and_then(|r| r.plan);
        let rpc = proto::Rpc::from(rqst.shape());
        let chunks = self.chunking().is_some() && self.proto.lock().config().max_segs > 0;
        let sent = Sent::of(plan.as_ref(), &rpc, chunks);
        let mut g = self.recovery.lock();
        let Some(e) = g.of(slot, xid) else {
            // Every Call sent on this connection has an entry; without
            // one a resend could not carry its hints, so it would be
            // refused the same way again: fail instead.
            return Some(Recovery::Fail {
                errno: proto::Errno::EIO,
                why: recovery::Why::Permanent,
            });
        };
        let r = recovery::decide(protocol, body, &sent, &e.state);
        if let Recovery::Resend { state, .. } = r {
            e.state = state;
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
