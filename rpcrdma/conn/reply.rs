// SPDX-License-Identifier: GPL-2.0

//! A connection's reply handler: a Receive's message is classified by the
//! protocol state ([`QpState::handle`]), then delivered inline, checked and
//! placed when it uses chunks, or turned into a failure, a resend or a
//! disconnect; the RPC ends through `frwr` once its MRs are invalidated.

use super::frwr::RegGuard;
use super::*;
use crate::proto::chunks::reply::{Invalidated, ReplyError};
use crate::proto::reqlife::Phase;
use crate::sunrpc::rqst::ReplyRqst;

/// What a reply that uses chunks found in its RPC's registrations
/// ([`QpState::check_chunked`]).
pub(super) enum ChunkedCheck<'a, 'g> {
    /// The RPC's current transmission is not posted yet: the reply
    /// answers an earlier one.
    Stale,
    /// The reply checked against the registrations, and the remotely
    /// invalidated rkey against the MRs; `None` if the RPC has none.
    /// The registration table stays locked (`Some`) while the RPC has
    /// registrations, until the reply ends it
    /// ([`QpState::end_rpc_locked`]): one lock per such reply.
    Checked(
        Option<(Result<ReplyData<'a>, ReplyError>, Option<Invalidated>)>,
        Option<RegGuard<'g>>,
    ),
}

impl QpState {
    /// Copies an inline reply into request `rqst` (RPC `xid`) and ends it.
    pub(super) fn deliver_inline(
        &self,
        qp: &Qp<ConnQp>,
        rqst: ReplyRqst,
        xid: u32,
        payload: &[u8],
        inv: Option<u32>,
    ) {
        self.deliver_inline_locked(qp, None, rqst, xid, payload, inv);
    }

    /// [`QpState::deliver_inline`], with the registration table locked
    /// if `g` holds it (a reply with chunk lists whose data came inline).
    fn deliver_inline_locked<'g>(
        &'g self,
        qp: &Qp<ConnQp>,
        g: Option<RegGuard<'g>>,
        rqst: ReplyRqst,
        xid: u32,
        payload: &[u8],
        inv: Option<u32>,
    ) {
        let f = match rqst.copy_reply(payload) {
            Ok(()) => {
                self.stats
                    .reply_bytes
                    .fetch_add(payload.len() as u64, Relaxed);
                Finish::Complete(payload.len() as i32)
            }
            Err(e) => {
                self.stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "reply: {} bytes do not fit the receive buffer ({:?})\n",
                        payload.len(),
                        e
                    );
                }
                Finish::Fail(e.to_errno())
            }
        };
        match g {
            Some(g) => self.end_rpc_locked(qp, g, rqst, xid, f, inv),
            None => self.end_rpc(qp, rqst, xid, f, inv),
        }
    }

    /// Keeps a copy of the inline bytes that follow a Write chunk's
    /// payload (none with Linux's NFS client, whose COMPOUNDs end with
    /// READ) for [`QpState::finish`] to write at offset `at`: with the
    /// registrations of RPC `xid` in request slot `slot` (`g`: the
    /// registration table, locked).
    fn defer_tail(
        g: Option<&mut RegGuard<'_>>,
        slot: usize,
        xid: u32,
        at: u32,
        tail: &[u8],
    ) -> Result {
        if tail.is_empty() {
            return Ok(());
        }
        let mut v = KVec::with_capacity(tail.len(), GFP_NOWAIT)?;
        v.extend_from_slice(tail, GFP_NOWAIT)?;
        let r = g.ok_or(EINVAL)?.of(slot, xid).ok_or(EINVAL)?;
        r.tail = Some((at, v));
        Ok(())
    }

    /// A Send With Invalidate named `rkey`, which is none of RPC `xid`'s
    /// MRs: counted and logged; the RPC's MRs are invalidated locally.
    pub(super) fn remote_inv_foreign(&self, xid: u32, rkey: Option<u32>) {
        self.stats.remote_inv_foreign.fetch_add(1, Relaxed);
        if crate::compat::print::ratelimit() {
            pr_err!(
                "reply: xid {:#010x}: the server invalidated rkey {:#x}, which is not one of the RPC's\n",
                xid,
                rkey.unwrap_or(0)
            );
        }
    }

    /// A reply for RPC `xid` received before the RPC's current
    /// transmission was posted (its MRs mapped, its REG_MRs and Send not
    /// posted: `proto::reqlife`'s `Action::Stale`): it answers an earlier
    /// transmission of the XID on this connection (the RPC is sent again
    /// after a transport error, or retransmitted). Dropped: it does not
    /// end the RPC (the reply to this transmission does) and invalidates
    /// nothing; its remote invalidation `rkey`, if any, was of the earlier
    /// transmission's MRs. Counted and logged.
    pub(super) fn stale_reply(&self, xid: u32, rkey: Option<u32>) {
        self.stats.stale_replies.fetch_add(1, Relaxed);
        if crate::compat::print::ratelimit() {
            match rkey {
                Some(rkey) => pr_info!(
                    "reply: xid {:#010x}: a reply to an earlier transmission (it invalidated that one's rkey {:#x}) arrived before the RPC was sent again; ignored, the reply to this transmission ends the RPC\n",
                    xid,
                    rkey
                ),
                None => pr_info!(
                    "reply: xid {:#010x}: a reply to an earlier transmission arrived before the RPC was sent again; ignored, the reply to this transmission ends the RPC\n",
                    xid
                ),
            }
        }
    }

    /// Looks once, under one lock, at what RPC `xid` in request slot
    /// `slot` registered, for a reply that uses chunks (header `h`,
    /// remotely invalidated `inv`): whether the reply is stale (the RPC's
    /// current transmission is not posted yet, see
    /// [`QpState::unposted`]), else the reply checked against the
    /// registration and the remotely invalidated rkey against its MRs,
    /// with the lock kept for the RPC's end.
    pub(super) fn check_chunked<'a, 'g>(
        &'g self,
        slot: usize,
        xid: u32,
        h: &crate::xdr::header::Header<'a>,
        inv: Option<u32>,
    ) -> ChunkedCheck<'a, 'g> {
        if !self.frwr.is_active(slot) {
            return ChunkedCheck::Checked(None, None);
        }
        let mut g = self.frwr.lock();
        let Some(r) = g.of(slot, xid) else {
            return ChunkedCheck::Checked(None, None);
        };
        if r.life.phase() == Phase::Mapped {
            return ChunkedCheck::Stale;
        }
        // Borrowed: a copy of the plan (its 32 ranges, about 500 bytes)
        // per reply showed in the profile as memcpy.
        let checked = r.plan.as_ref().and_then(|plan| {
            let segs = r.segs.get(..r.nsegs)?;
            let ours = inv.map(|k| plan.invalidated(segs, k));
            Some((plan.check_reply(segs, h), ours))
        });
        ChunkedCheck::Checked(checked, Some(g))
    }

    /// A reply that uses chunks, checked against what RPC `xid` (request
    /// `rqst`) registered ([`QpState::check_chunked`]): ends the RPC.
    pub(super) fn deliver_chunked<'g>(
        &'g self,
        qp: &Qp<ConnQp>,
        rqst: ReplyRqst,
        xid: u32,
        h: &crate::xdr::header::Header<'_>,
        inv: Option<u32>,
        checked: ChunkedCheck<'_, 'g>,
    ) {
        let slot = usize::from(rqst.slot());
        let (checked, mut g) = match checked {
            ChunkedCheck::Checked(c, g) => (c, g),
            // Dropped before (`handle`): not reached.
            ChunkedCheck::Stale => return self.stale_reply(xid, inv),
        };
        let (checked, inv) = match checked {
            Some((c, Some(Invalidated::NotOurs))) => {
                self.remote_inv_foreign(xid, inv);
                (Some(c), None)
            }
            Some((c, _)) => (Some(c), inv),
            None => (None, inv),
        };
        let f = match checked {
            Some(Ok(ReplyData::Inline { payload })) => {
                return self.deliver_inline_locked(qp, g, rqst, xid, payload, inv);
            }
            Some(Ok(ReplyData::Long { len })) => {
                self.stats.rdma_reply.fetch_add(u64::from(len), Relaxed);
                Finish::Complete(i32::try_from(len).unwrap_or(i32::MAX))
            }
            Some(Ok(ReplyData::Written {
                head,
                written,
                tail,
                ..
            })) => match rqst.place_written(head, written, tail.len() as u32) {
                Ok((at, len)) => match Self::defer_tail(g.as_mut(), slot, xid, at, tail) {
                    Ok(()) => {
                        self.stats.rdma_reply.fetch_add(u64::from(written), Relaxed);
                        self.stats
                            .reply_bytes
                            .fetch_add((head.len() + tail.len()) as u64, Relaxed);
                        Finish::Complete(i32::try_from(len).unwrap_or(i32::MAX))
                    }
                    Err(e) => {
                        if crate::compat::print::ratelimit() {
                            pr_err!(
                                    "reply: xid {:#010x}: no memory for {} inline bytes after the payload ({:?})\n",
                                    xid,
                                    tail.len(),
                                    e
                                );
                        }
                        Finish::Fail(e.to_errno())
                    }
                },
                Err(e) => {
                    self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                    if crate::compat::print::ratelimit() {
                        pr_err!(
                                "reply: xid {:#010x}: {} written bytes with {} + {} inline do not fit the receive buffer ({:?})\n",
                                xid,
                                written,
                                head.len(),
                                tail.len(),
                                e
                            );
                    }
                    Finish::Fail(e.to_errno())
                }
            },
            None => {
                // Chunks for an RPC that registered none are the
                // responder's error.
                self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "reply: xid {:#010x} uses chunks it was not offered (-EIO)\n",
                        xid
                    );
                }
                Finish::Fail(EIO.to_errno())
            }
            Some(Err(e)) => {
                self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "reply: xid {:#010x} does not match its chunks: {:?} ({})\n",
                        xid,
                        e,
                        e.errno().to_kernel()
                    );
                }
                Finish::Fail(e.errno().to_kernel())
            }
        };
        if let Finish::Fail(errno) = f {
            // Classified "chunked" on receipt; the chunks then failed the
            // RPC (unoffered, overrunning, or not fitting): say so.
            trace::reply(self.id, xid, Some(h.protocol), c"fail", 0, errno);
        }
        match g {
            Some(g) => self.end_rpc_locked(qp, g, rqst, xid, f, inv),
            None => self.end_rpc(qp, rqst, xid, f, inv),
        }
    }

    /// Fires the tracepoints of a received message (`recovery`: what is
    /// done about a transport error; `stale`: a reply dropped as
    /// [`QpState::stale_reply`], traced as class `stale`).
    fn trace_received(
        &self,
        data: &[u8],
        out: &proto::Outcome<'_>,
        vers: Option<Protocol>,
        settled: Option<Protocol>,
        recovery: Option<&proto::Recovery>,
        stale: bool,
    ) {
        if !trace::received_enabled() {
            return;
        }
        let msg_xid = header::peek(data).map_or(0, |c| c.xid);
        match settled {
            Some(Protocol::V2) => trace::version(self.id, Protocol::V2, c"the probe was answered"),
            Some(Protocol::V1) => trace::version(
                self.id,
                Protocol::V1,
                c"ERR_VERS: falling back to version 1",
            ),
            None => {}
        }
        let (class, xid, status): (&CStr, u32, i32) = match out.reply {
            Reply::Deliver { xid, .. } => (c"deliver", xid, 0),
            Reply::Chunked { xid, .. } => (c"chunked", xid, 0),
            Reply::Fail { xid, errno, cause } => {
                if let proto::Cause::RdmaError { protocol, body } = cause {
                    trace::peer_error(self.id, xid, protocol, &body, recovery);
                }
                match recovery {
                    Some(proto::Recovery::Resend { .. }) => (c"recover", xid, 0),
                    Some(proto::Recovery::Fail { errno, .. }) => (c"fail", xid, errno.to_kernel()),
                    None => (c"fail", xid, errno.to_kernel()),
                }
            }
            Reply::Resend { xid } => (c"resend", xid, 0),
            Reply::ReverseCall { xid, .. }
            | Reply::ReverseCallPiece {
                xid, last: Some(_), ..
            } => (c"reverse_call", xid, 0),
            Reply::ReverseCallPiece { xid, .. } => (c"reverse_piece", xid, 0),
            Reply::Piece {
                xid, last: None, ..
            } => (c"piece", xid, 0),
            Reply::Piece { xid, .. } => (c"last_piece", xid, 0),
            Reply::LastChunkedPiece { ref header, .. } => (c"last_piece", header.xid, 0),
            Reply::Control(proto::Control::CreditGrant) => (c"credit_grant", msg_xid, 0),
            Reply::Control(proto::Control::Properties(ref p)) => {
                trace::connprop(self.id, c"received", p);
                (c"connprop", msg_xid, 0)
            }
            Reply::Control(proto::Control::PropertiesPart) => (c"connprop_part", msg_xid, 0),
            Reply::Control(proto::Control::Fallback) => (c"fallback", msg_xid, 0),
            Reply::Drop(proto::Cause::ReverseError { xid, .. }) => (c"reverse_error", xid, 0),
            Reply::Drop(cause) => {
                if let proto::Cause::RdmaError { protocol, body } = cause {
                    trace::peer_error(self.id, msg_xid, protocol, &body, None);
                }
                (c"drop", msg_xid, 0)
            }
            Reply::Disconnect(_) => (c"disconnect", msg_xid, 0),
        };
        let class = if stale { c"stale" } else { class };
        trace::reply(self.id, xid, vers, class, data.len(), status);
        if let Some(u) = out.credits {
            trace::credits(self.id, msg_xid, u.credits);
        }
    }

    /// Acts on one received message (the reply handler).
    pub(super) fn handle(&self, qp: &Qp<ConnQp>, data: &[u8], inv: Option<u32>) -> u32 {
        let (out, vers, settled, answered) = {
            let mut p = self.proto.lock();
            let was = p.phase();
            let out = p.receive(data);
            let settled = match p.phase() {
                proto::Phase::Settled(v) if p.phase() != was => Some(v),
                _ => None,
            };
            let probe = proto::Phase::Probing {
                probe: Some(proto::connprop::PROBE_XID),
            };
            // A continued CONNPROP settles the version with its first
            // piece, but the connect worker waits for the whole set: its
            // segment limits size the transport at connect.
            let answered = (was == probe
                && p.phase() != was
                && !matches!(out.reply, Reply::Control(proto::Control::PropertiesPart)))
                || matches!(out.reply, Reply::Control(proto::Control::Properties(_)));
            (out, p.protocol(), settled, answered)
        };
        if answered {
            // The connect worker waits for this (Conn::probe).
            self.cm.probe_answered();
        }
        // Credits first: they take `transport_lock`, which is not taken
        // under the registration table's lock (held below from a chunked
        // reply's check to its RPC's end).
        if let Some(u) = out.credits {
            self.xprt.set_cwnd(u.credits, false);
        }
        if out.wake_senders {
            self.xprt.write_space();
        }
        // The request a reply is for: looked up once (SUNRPC's receive
        // queue, under its `queue_lock`) and pinned until the RPC ends;
        // what the transport keeps for it is reached through its slot.
        let mut rqst = match out.reply {
            Reply::Deliver { xid, .. }
            | Reply::Chunked { xid, .. }
            | Reply::Fail { xid, .. }
            | Reply::Resend { xid } => self.xprt.find_reply(xid.to_be()),
            _ => None,
        };
        // A reply while the RPC's current transmission is not posted yet
        // answers an earlier one: dropped before it reaches the request,
        // its registrations or its recovery state (`end_rpc` decides
        // again under the lock, for a transmission that starts meanwhile).
        // A reply that uses chunks is checked against its registrations
        // under the same lock (most replies with chunks are replies to
        // RPCs with MRs; an inline RPC's has no lock).
        let chunked = match (&out.reply, &rqst) {
            (Reply::Chunked { xid, header }, Some(r)) => {
                Some(self.check_chunked(usize::from(r.slot()), *xid, header, inv))
            }
            _ => None,
        };
        let stale = match (&out.reply, &rqst) {
            (Reply::Chunked { .. }, _) => matches!(chunked, Some(ChunkedCheck::Stale)),
            (Reply::Deliver { xid, .. } | Reply::Fail { xid, .. }, Some(r)) => {
                self.unposted(usize::from(r.slot()), *xid)
            }
            _ => false,
        };
        // A transport error: resend the RPC or fail it (recovery.rs).
        let recovery = match (&out.reply, &rqst) {
            _ if stale => None,
            (
                Reply::Fail {
                    xid,
                    cause: proto::Cause::RdmaError { protocol, body },
                    ..
                },
                Some(r),
            ) => self.recovery_for(r, *xid, *protocol, body),
            _ => None,
        };
        self.trace_received(data, &out, vers, settled, recovery.as_ref(), stale);
        if settled == Some(Protocol::V2) {
            pr_info!(
                "server answered in RPC-over-RDMA version 2: connection settled on version 2\n"
            );
        }
        match out.reply {
            Reply::Deliver { xid, .. } | Reply::Chunked { xid, .. } | Reply::Fail { xid, .. }
                if stale =>
            {
                self.stale_reply(xid, inv)
            }
            Reply::Deliver { xid, payload } => match rqst.take() {
                Some(r) => self.deliver_inline(qp, r, xid, payload, inv),
                None => no_request(xid),
            },
            Reply::Chunked { xid, header } => match (rqst.take(), chunked) {
                (Some(r), Some(c)) => self.deliver_chunked(qp, r, xid, &header, inv, c),
                _ => no_request(xid),
            },
            Reply::Fail {
                xid,
                cause: proto::Cause::RdmaError { protocol, body },
                ..
            } if matches!(recovery, Some(proto::Recovery::Resend { .. })) => {
                if let (Some(r), Some(rq)) = (&recovery, rqst.take()) {
                    self.resend_after_error(qp, rq, xid, protocol, &body, r, inv);
                }
            }
            Reply::Piece {
                xid,
                offset,
                payload,
                last,
            } => self.deliver_piece(qp, xid, offset, payload, last, inv),
            Reply::LastChunkedPiece { len, header } => {
                self.deliver_chunked_piece(qp, len, &header, inv)
            }
            Reply::Fail { xid, errno, cause } => {
                let (errno, why) = match recovery {
                    Some(r @ proto::Recovery::Fail { errno, why }) => {
                        self.proto.lock().recovered(&r);
                        (errno, Some(why))
                    }
                    _ => (errno, None),
                };
                if crate::compat::print::ratelimit() {
                    match cause {
                        proto::Cause::RdmaError {
                            protocol: Protocol::V1,
                            body: crate::xdr::header::ErrorBody::BadXdr,
                        } => {
                            // v1 ERR_CHUNK: svcrdma sends it for a Reply
                            // larger than its inline threshold with no (or
                            // too small a) chunk for it, and for a header it
                            // cannot process.
                            pr_err!("reply: server answered ERR_CHUNK (xid {:#010x}): the reply does not fit inline and no Write or Reply chunk could hold it, or the server could not process the Call's header ({})\n", xid, errno.to_kernel());
                        }
                        proto::Cause::RdmaError { protocol, body } => match why {
                            Some(why) if why != proto::recovery::Why::Permanent => pr_err!(
                                "reply: server answered {} (xid {:#010x}, {:?}): RPC failed ({}): {}\n",
                                body.name(protocol),
                                xid,
                                body,
                                errno.to_kernel(),
                                why
                            ),
                            _ => pr_err!(
                                "reply: server answered {} (xid {:#010x}, {:?}): RPC failed ({})\n",
                                body.name(protocol),
                                xid,
                                body,
                                errno.to_kernel()
                            ),
                        },
                        _ => {
                            pr_err!(
                                "reply: xid {:#010x} failed ({}): {:?}\n",
                                xid,
                                errno.to_kernel(),
                                cause
                            );
                        }
                    }
                }
                match rqst.take() {
                    Some(r) => self.end_rpc(qp, r, xid, Finish::Fail(errno.to_kernel()), inv),
                    None => no_request(xid),
                }
            }
            Reply::Resend { .. } => {
                pr_info!(
                    "server answered the RPC-over-RDMA version 2 probe with ERR_VERS: continuing in version 1\n"
                );
                if let Some(r) = rqst.take() {
                    // The probe was not executed: send it again, in v1, on
                    // this same connection.
                    r.allow_resend();
                    r.retry(EAGAIN.to_errno());
                }
            }
            Reply::ReverseCall { xid, payload } => {
                if self
                    .bc
                    .receive_call(&self.xprt, self.id, vers, xid, payload)
                {
                    self.why.note(why::Why::BackchannelOverflow);
                    self.xprt.force_disconnect();
                }
            }
            Reply::ReverseCallPiece {
                xid,
                offset,
                payload,
                last,
            } => {
                if self
                    .bc
                    .receive_piece(&self.xprt, self.id, vers, xid, offset, payload, last)
                {
                    self.why.note(why::Why::BackchannelOverflow);
                    self.xprt.force_disconnect();
                }
            }
            Reply::Control(proto::Control::Fallback) => {
                pr_info!(
                    "server answered the RPC-over-RDMA version 2 probe with ERR_VERS: continuing in version 1 (the probe was our RDMA2_CONNPROP: nothing to send again)\n"
                );
            }
            Reply::Control(_) => {}
            Reply::Drop(cause @ proto::Cause::ReverseError { .. }) => {
                self.send_reverse_error(qp, &cause)
            }
            Reply::Drop(cause) => {
                let unsolicited_error = matches!(cause, proto::Cause::RdmaError { .. });
                if (cause.is_bad_reply() || unsolicited_error) && crate::compat::print::ratelimit()
                {
                    pr_err!("reply: dropped: {:?}\n", cause);
                }
            }
            Reply::Disconnect(cause) => {
                pr_err!("reply: protocol error, disconnecting: {:?}\n", cause);
                self.why.note(why::Why::ProtocolError);
                self.xprt.force_disconnect();
            }
        }
        if out.grant_due {
            self.send_grant(qp);
        }
        out.post_receives
    }
}

impl QpState {
    /// Answers a reverse-direction Call we cannot serve
    /// ([`proto::Cause::ReverseError`], -00 §6.4.3) with `RDMA2_ERROR`, as
    /// its responder: posted like a credit grant ([`QpState::send_grant`]).
    /// Nothing is sent (the peer's Call times out, as if the message were
    /// lost) when no Send buffer is free, or when the protocol state
    /// allows no message now (not a settled version 2 connection, no
    /// credit of the peer's left). A failed post drops the connection.
    fn send_reverse_error(&self, qp: &Qp<ConnQp>, cause: &proto::Cause) {
        let proto::Cause::ReverseError { xid, body } = *cause else {
            return;
        };
        // The Send buffer first: a message counted as sent must go.
        let Some(mut sb) = self.sends.take() else {
            if crate::compat::print::ratelimit() {
                pr_info!(
                    "reply: reverse-direction Call xid {:#010x} not answered with {}: no Send buffer free\n",
                    xid,
                    body.name(Protocol::V2)
                );
            }
            return;
        };
        let Some((err, credit)) = self.proto.lock().prepare_reverse_error(cause) else {
            let _ = self.sends.give(sb);
            if crate::compat::print::ratelimit() {
                pr_info!(
                    "reply: reverse-direction Call xid {:#010x} not answered with {}: no credit or version 2 not settled\n",
                    xid,
                    body.name(Protocol::V2)
                );
            }
            return;
        };
        match err.encode(sb.buf.as_mut_slice(), credit) {
            Ok(n) => sb.len = n,
            Err(_) => {
                // Cannot happen with a Send buffer of >= 1024 bytes; the
                // count is off by one message until the next connection.
                let _ = self.sends.give(sb);
                return;
            }
        }
        sb.buf.sync_for_device(sb.len);
        if crate::compat::print::ratelimit() {
            pr_info!(
                "reply: answered reverse-direction Call xid {:#010x} with {} (-00 6.4.3)\n",
                xid,
                body.name(Protocol::V2)
            );
        }
        if qp
            .post_send_one(SendWr::send(SendOpCtx::Buf(sb)).signaled())
            .is_err()
        {
            self.xprt.force_disconnect();
        }
    }
}

/// A reply for an RPC that no request waits for any more (it timed out,
/// was interrupted, or is being sent again): nothing to deliver. Its MRs,
/// if any, are invalidated when its slot is released or sent from again
/// (`Conn::release`).
fn no_request(xid: u32) {
    pr_debug!("reply: no request waits for xid {:#010x}\n", xid);
}
