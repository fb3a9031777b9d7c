// SPDX-License-Identifier: GPL-2.0

//! The reply to a reverse-direction Call on a connection: one inline Send,
//! or, on version 2 when it exceeds the call inline threshold, a sequence
//! of `RDMA2_MSG` pieces (-00 §6.5, §4.5.2) that stops where credits or
//! Send buffers run out and resumes when SUNRPC sends the reply again.
//! The decisions are [`proto::Transport::prepare_bc_reply`]'s; what the
//! backchannel makes of the outcome is [`crate::backchannel`]'s.

use super::continued::{fill_piece, Cursor};
use super::*;
use crate::backchannel::SendError as BcReplyError;
use crate::proto::backchannel::ReplyError;
use crate::sunrpc::rqst::BcTxRqst;

impl Conn {
    /// Sends the RPC Reply in `rqst` to reverse-direction Call `xid`
    /// (host order), from where it stopped if it is a continued reply
    /// half sent: each message a signalled Send of at most the call
    /// inline threshold, taking one credit in version 2. Returns the
    /// version once the last piece is posted. A reply stopped half-way
    /// keeps the connection's cursor: nothing else is sent on the
    /// connection (but credit grants) until SUNRPC sends the reply again
    /// and its last piece has gone.
    pub fn send_bc_reply(&self, rqst: &BcTxRqst<'_>, xid: u32) -> Result<Protocol, BcReplyError> {
        let q = &self.ep.qp().handler().0;
        let len = u32::try_from(rqst.call_len()).map_err(|_| BcReplyError::Failed(EINVAL))?;
        loop {
            let offset = match q.cursor.get() {
                None => 0,
                Some(c) if c.reply && c.xid == xid => c.offset,
                // Not between the pieces of another message.
                Some(_) => return Err(BcReplyError::Busy),
            };
            // The Send buffer first: a message counted as sent must go.
            let Some(mut sb) = q.sends.take() else {
                return Err(BcReplyError::Busy);
            };
            let plan = q.proto.lock().prepare_bc_reply(len, offset);
            let plan = match plan {
                Ok(p) => p,
                Err(e) => {
                    let _ = q.sends.give(sb);
                    if e != ReplyError::NoCredits {
                        q.cursor.set(None);
                    }
                    return Err(BcReplyError::Refused(e));
                }
            };
            let span = plan.span;
            let spec = plan.msg_spec(xid);
            let filled = fill_piece(&mut sb, plan.protocol, &spec, span, |out, at| {
                rqst.copy_call_range(out, at)
            });
            if let Err(e) = filled {
                // Counted as sent but not sent: the caller drops the
                // connection, which resets the count.
                let _ = q.sends.give(sb);
                q.cursor.set(None);
                return Err(BcReplyError::Failed(e));
            }
            let continued = span.more || span.offset > 0;
            q.cursor.set(span.more.then_some(Cursor {
                xid,
                offset: span.offset.saturating_add(span.len),
                reply: true,
            }));
            if continued {
                trace::piece(self.id, xid, c"bc_reply", span.offset, span.len, span.more);
            }
            self.ep
                .qp()
                .post_send_one(SendWr::send(SendOpCtx::Buf(sb)).signaled())
                .map_err(BcReplyError::Failed)?;
            if !span.more {
                return Ok(plan.protocol);
            }
        }
    }
}
