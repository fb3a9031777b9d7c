// SPDX-License-Identifier: GPL-2.0

//! [`Transport`] as the responder of the reverse direction: the
//! `RDMA2_ERROR` that answers a reverse-direction Call we cannot serve
//! ([`Cause::ReverseError`]).

use super::super::backchannel::ErrorReply;
use super::super::negotiate::Phase;
use super::super::reply::Cause;
use super::super::xdr::header::Protocol;
use super::Transport;

impl Transport {
    /// If `cause` (of a dropped message, [`super::super::Reply::Drop`])
    /// asks for an `RDMA2_ERROR` answer and one may be sent now (a settled
    /// version 2 connection, a credit of the peer's available), counts it
    /// as sent and returns it with its credit word: encode it with
    /// [`ErrorReply::encode`] and post it. `None`: send nothing (the peer
    /// times out on its Call, as it would had the message been lost).
    pub fn prepare_reverse_error(&mut self, cause: &Cause) -> Option<(ErrorReply, u32)> {
        let Cause::ReverseError { xid, body } = *cause else {
            return None;
        };
        if self.neg.phase() != Phase::Settled(Protocol::V2)
            || !self.established
            || !self.credits.may_send()
        {
            return None;
        }
        self.stats.reverse_errors = self.stats.reverse_errors.wrapping_add(1);
        let credit = self.credits.on_send();
        Some((ErrorReply { xid, body }, credit))
    }
}
