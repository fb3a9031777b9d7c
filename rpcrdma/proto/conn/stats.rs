// SPDX-License-Identifier: GPL-2.0

//! [`Stats`]: the counters of a [`Transport`], and the counting of the
//! messages it receives.

use super::super::recovery;
use super::super::reply::{Cause, Control, Reply};
use super::Transport;

/// Counters for `/proc/self/mountstats` and debugging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stats {
    /// Messages the responder got wrong (C: `bad_reply_count`).
    pub bad_reply: u64,
    /// v2 credit words with a zero limit (high half), ignored.
    pub bad_credit: u64,
    /// Connections whose peer was found to read the low half of the v2
    /// credit word as its total grant ([`super::super::CreditState::total_reading`]).
    pub credit_total_reading: u64,
    /// `RDMA_ERROR` replies other than `ERR_VERS`.
    pub rdma_error: u64,
    /// `ERR_VERS` replies.
    pub err_vers: u64,
    /// v2 probes sent.
    pub probes: u64,
    /// Connections switched to v1 by `ERR_VERS`.
    pub v1_fallbacks: u64,
    /// Connections opened in v1 because the first Call did not fit the
    /// 1024-byte probe.
    pub probe_too_big: u64,
    /// Probes lost with their connection.
    pub lost_probes: u64,
    /// v2 asynchronous credit grants.
    pub credit_grants: u64,
    /// `RDMA2_CONNPROP` messages received (whole or pieces).
    pub connprop: u64,
    /// Our `RDMA2_CONNPROP` probes sent ([`Transport::connprop_probe`]).
    pub connprop_sent: u64,
    /// Peer property sets applied (whole or reassembled).
    pub connprop_applied: u64,
    /// Peer property sets dropped: malformed, too long, or abandoned
    /// pieces of a continued set.
    pub connprop_bad: u64,
    /// Peer property sets after the first of the connection: ignored
    /// (-00 §6.4.4: properties do not change).
    pub connprop_repeated: u64,
    /// CONNPROP probes that went unanswered ([`Transport::probe_timed_out`]).
    pub probe_timeouts: u64,
    /// Reverse-direction Calls dropped because the peer's Reverse Request
    /// Support property said it sends none (`RVREQSUP_NONE`).
    pub reverse_refused: u64,
    /// `RDMA2_ERROR`s sent as the responder of the reverse direction
    /// ([`Transport::prepare_reverse_error`]).
    pub reverse_errors: u64,
    /// Reverse-direction (backchannel) Calls received (a continued one
    /// when its last piece is in).
    pub reverse_calls: u64,
    /// Pieces of continued reverse-direction Calls received (every piece,
    /// last included).
    pub reverse_call_pieces: u64,
    /// Continued reverse-direction Calls dropped part-way: a message
    /// that is not a reverse-direction Call arrived before the last piece
    /// (the peer retries the Call as one that was lost).
    pub reverse_calls_interrupted: u64,
    /// Reverse-direction replies sent ([`Transport::prepare_bc_reply`]),
    /// each counted once its last piece is.
    pub bc_replies: u64,
    /// Replies using what we do not support: chunks on a connection that
    /// offers none, a continued reply whose last piece has chunks, a
    /// continued reverse-direction Call that starts while a continued
    /// reply is being reassembled, and the rest of such sequences.
    pub unsupported: u64,
    /// Connections closed for a protocol error.
    pub disconnects: u64,
    /// Replies using chunks handed to the transport for checking
    /// ([`Reply::Chunked`]).
    pub chunked_replies: u64,
    /// RPCs resent or failed after a transport error
    /// ([`Transport::recovered`]).
    pub recovery: recovery::Counters,
    /// Continued replies reassembled (their last piece arrived).
    pub continued_replies: u64,
    /// Pieces of continued replies received (every piece, last included).
    pub reply_pieces: u64,
    /// Continued Calls sent (counted when their first piece is sent).
    pub continued_calls: u64,
    /// Pieces of continued Calls sent.
    pub call_pieces: u64,
    /// Asynchronous credit grants sent ([`Transport::prepare_grant`]).
    pub grants_sent: u64,
}

impl Transport {
    pub(super) fn count(&mut self, r: &Reply<'_>) {
        let s = &mut self.stats;
        let bump = |c: &mut u64| *c = c.wrapping_add(1);
        match *r {
            Reply::Deliver { .. } => {}
            Reply::Chunked { .. } => bump(&mut s.chunked_replies),
            Reply::Resend { .. } | Reply::Control(Control::Fallback) => {
                bump(&mut s.err_vers);
                bump(&mut s.v1_fallbacks);
            }
            Reply::ReverseCall { .. } => bump(&mut s.reverse_calls),
            Reply::ReverseCallPiece { last, .. } => {
                bump(&mut s.reverse_call_pieces);
                if last.is_some() {
                    bump(&mut s.reverse_calls);
                }
            }
            Reply::Piece { last, .. } => {
                bump(&mut s.reply_pieces);
                if last.is_some() {
                    bump(&mut s.continued_replies);
                }
            }
            Reply::LastChunkedPiece { .. } => {
                bump(&mut s.reply_pieces);
                bump(&mut s.continued_replies);
                bump(&mut s.chunked_replies);
            }
            Reply::Control(Control::CreditGrant) => bump(&mut s.credit_grants),
            Reply::Control(Control::Properties(_) | Control::PropertiesPart) => {
                bump(&mut s.connprop)
            }
            Reply::Fail { cause, .. } | Reply::Drop(cause) | Reply::Disconnect(cause) => {
                if cause.is_bad_reply() {
                    bump(&mut s.bad_reply);
                }
                match cause {
                    Cause::RdmaError { .. } => bump(&mut s.rdma_error),
                    Cause::ErrVers { .. } | Cause::StrayErrVers => bump(&mut s.err_vers),
                    Cause::Continuation(f) if !f.is_bad_reply() => bump(&mut s.unsupported),
                    Cause::Chunks(_) => bump(&mut s.unsupported),
                    _ => {}
                }
                if matches!(r, Reply::Disconnect(_)) {
                    bump(&mut s.disconnects);
                }
            }
        }
    }
}
