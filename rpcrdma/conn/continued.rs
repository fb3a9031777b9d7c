// SPDX-License-Identifier: GPL-2.0

//! Message Continuation on a connection (-00 §4.5.2, §6.3.2): a Call, or
//! the reply to a reverse-direction Call, sent as a sequence of pieces,
//! the pieces of a continued Reply placed straight into the request's
//! receive buffer, and the asynchronous credit grants the protocol state
//! asks for. The decisions are [`proto::continuation`]'s and
//! [`proto::Transport`]'s.

use super::reply::ChunkedCheck;
use super::*;
use crate::sunrpc::rqst::ReplyRqst;

/// Where a continued message stopped: its XID (host order), the offset
/// of its next piece, and whether it is a Call or the reply to a
/// reverse-direction Call (`reply`: the two directions have separate XID
/// spaces). While it is set the connection sends nothing but that
/// message's next piece (and credit grants): the peer concatenates the
/// next message it receives to the pieces it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cursor {
    pub(super) xid: u32,
    pub(super) offset: u32,
    pub(super) reply: bool,
}

/// The connection's [`Cursor`], if a continued message stopped half-way:
/// a word, not a lock. Only the senders read and write it (`Conn::send`,
/// [`Conn::send_bc_reply`], and [`Conn::post_send`] of the connect
/// worker's probe), and SUNRPC's transport send lock (`XPRT_LOCKED`)
/// serialises all of them, so plain loads and stores keep it.
pub(super) struct CursorCell(AtomicU64);

/// No cursor: an offset no message reaches (its length is below the
/// transport's largest payload, far below 2 GiB).
const NO_CURSOR: u64 = u64::MAX;

/// The low word's top bit: the cursor is a reply's; the other 31 bits
/// hold the offset.
const REPLY_BIT: u32 = 1 << 31;

impl CursorCell {
    pub(super) const fn new() -> Self {
        CursorCell(AtomicU64::new(NO_CURSOR))
    }

    pub(super) fn get(&self) -> Option<Cursor> {
        let v = self.0.load(Relaxed);
        (v != NO_CURSOR).then_some(Cursor {
            xid: (v >> 32) as u32,
            offset: v as u32 & !REPLY_BIT,
            reply: v as u32 & REPLY_BIT != 0,
        })
    }

    pub(super) fn set(&self, c: Option<Cursor>) {
        let v = c.map_or(NO_CURSOR, |c| {
            let low = c.offset.min(REPLY_BIT - 2) | if c.reply { REPLY_BIT } else { 0 };
            (u64::from(c.xid) << 32) | u64::from(low)
        });
        self.0.store(v, Relaxed);
    }
}

/// Writes one message of a continued sequence into Send buffer `sb`:
/// header `spec` in `protocol`, then bytes `span` of the message, which
/// `copy(out, offset)` copies; sets the buffer's length and syncs it for
/// the device.
pub(super) fn fill_piece(
    sb: &mut SendBuf,
    protocol: Protocol,
    spec: &header::MsgSpec<'_>,
    span: proto::continuation::Span,
    copy: impl FnOnce(&mut [u8], u32) -> Result,
) -> Result {
    let buf = sb.buf.as_mut_slice();
    let hdr = header::encode_msg(buf, protocol, spec).map_err(|_| EINVAL)?;
    let end = hdr.checked_add(span.len as usize).ok_or(EINVAL)?;
    copy(buf.get_mut(hdr..end).ok_or(EINVAL)?, span.offset)?;
    sb.len = end;
    sb.buf.sync_for_device(end);
    Ok(())
}

impl Conn {
    /// Sends continued Call `rqst` (XID `xid`, host order) from where it
    /// stopped: each piece an `RDMA2_MSG` of at most the call inline
    /// threshold, `F_MORE` on all but the last, each taking one credit.
    /// `ENOBUFS` when the credits or the Send buffers run out in the
    /// middle: the transport waits for buffer space and SUNRPC calls
    /// `->send_request` again, which resumes here (the Call stays at the
    /// head of the transmit queue). `Ok` once the last piece is posted.
    pub(super) fn send_continued(&self, rqst: &TxRqst<'_>, xid: u32, stats: &ConnStats) -> Result {
        let q = &self.ep.qp().handler().0;
        let call_len = u32::try_from(rqst.call_len()).map_err(|_| EINVAL)?;
        loop {
            let offset = match q.cursor.get() {
                Some(c) if c.xid == xid && !c.reply => c.offset,
                _ => 0,
            };
            // The Send buffer first: a piece counted as sent must go.
            let Some(mut sb) = q.sends.take() else {
                return Err(crate::compat::errno::enobufs());
            };
            let plan = q.proto.lock().prepare_piece(xid, call_len, offset);
            let plan = match plan {
                Ok(p) => p,
                Err(e) => {
                    let _ = q.sends.give(sb);
                    if e == CallError::NoCredits {
                        // -00 §6.3.2: wait for a further credit grant.
                        stats.no_credits.fetch_add(1, Relaxed);
                        let c = *q.proto.lock().credits();
                        trace::credit_wait(self.id, xid, &c);
                        return Err(crate::compat::errno::enobufs());
                    }
                    q.cursor.set(None);
                    return Err(match e {
                        CallError::TooBig(t) => {
                            stats.too_big.fetch_add(1, Relaxed);
                            if crate::compat::print::ratelimit() {
                                pr_err!(
                                    "send: {:?} of {} bytes exceeds the inline limit of {}, and this connection has neither chunks nor (in version 1) Message Continuation (-EMSGSIZE)\n",
                                    t.direction, t.len, t.limit
                                );
                            }
                            crate::compat::errno::emsgsize()
                        }
                        _ => crate::compat::errno::enotconn(),
                    });
                }
            };
            let span = plan.span;
            let spec = plan.msg_spec(xid);
            let filled = fill_piece(&mut sb, Protocol::V2, &spec, span, |out, at| {
                rqst.copy_call_range(out, at)
            });
            if let Err(e) = filled {
                // Counted as sent but not sent: the caller drops the
                // connection, which resets the count.
                let _ = q.sends.give(sb);
                q.cursor.set(None);
                return Err(e);
            }
            q.cursor.set(span.more.then_some(Cursor {
                xid,
                offset: span.offset.saturating_add(span.len),
                reply: false,
            }));
            super::send::add_sent(&stats.req_bytes, u64::from(span.len));
            trace::piece(self.id, xid, c"call", span.offset, span.len, span.more);
            self.ep
                .qp()
                .post_send_one(SendWr::send(SendOpCtx::Buf(sb)).signaled())?;
            if !span.more {
                return Ok(());
            }
        }
    }

    /// Whether Call `xid` (host order) goes on as a continued Call: `true`
    /// if it is the continued Call half sent, `false` if none is. If
    /// another message is (another Call, or a callback reply), nothing
    /// else may go on this connection until its last piece has (SUNRPC
    /// sends the request it stopped at first): `EPIPE` then (the
    /// transport drops the connection: the peer holds pieces it can
    /// never complete, and SUNRPC sends both again on the next
    /// connection). One look at the cursor on every Send.
    pub(super) fn continues(&self, xid: u32) -> Result<bool> {
        let q = &self.ep.qp().handler().0;
        let Some(c) = q.cursor.get() else {
            return Ok(false);
        };
        if c.xid == xid && !c.reply {
            return Ok(true);
        }
        if crate::compat::print::ratelimit() {
            pr_err!(
                "send: xid {:#010x} while continued {} {:#010x} stopped at byte {} (abandoned?): reconnecting\n",
                xid,
                if c.reply { "callback reply" } else { "Call" },
                c.xid,
                c.offset
            );
        }
        Err(EPIPE)
    }

    /// A continued Call is half sent on this connection.
    pub(super) fn continuing(&self) -> bool {
        self.ep.qp().handler().0.cursor.get().is_some()
    }

    /// A message could be sent now: a Send buffer is free, the credit
    /// budget allows one and, if a Call found too few free MRs, as many
    /// as it needs are free now.
    pub fn ready_to_send(&self) -> bool {
        let q = &self.ep.qp().handler().0;
        q.sends.has_any()
            && q.proto.lock().credits().may_send()
            && self.chunking.as_deref().is_none_or(Chunking::mrs_ready)
    }
}

impl QpState {
    /// Places a piece of continued Reply `xid` (host order) at `offset`
    /// of the request's receive buffer; the last piece (`last` = the
    /// Reply's length) completes the RPC. A piece that does not fit the
    /// receive buffer fails the RPC with `-EMSGSIZE`; then, as when no
    /// request waits, the rest of the sequence is dropped.
    pub(super) fn deliver_piece(
        &self,
        qp: &Qp<ConnQp>,
        xid: u32,
        offset: u32,
        payload: &[u8],
        last: Option<u32>,
        inv: Option<u32>,
    ) {
        let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        trace::piece(self.id, xid, c"reply", offset, len, last.is_none());
        let rqst = self.xprt.find_reply(xid.to_be());
        let placed = rqst.as_ref().map(|rqst| {
            rqst.write_reply_at(offset, payload)
                .map_err(|e| (e, rqst.reply_buflen()))
        });
        match (placed, rqst) {
            (Some(Ok(())), Some(rqst)) => {
                self.stats.reply_bytes.fetch_add(u64::from(len), Relaxed);
                match last {
                    Some(total) => {
                        let n = i32::try_from(total).unwrap_or(i32::MAX);
                        self.end_rpc(qp, rqst, xid, Finish::Complete(n), inv);
                    }
                    None if inv.is_some() => {
                        // Send With Invalidate belongs on the last piece:
                        // the RPC's MRs are invalidated locally at its end.
                        self.remote_inv_foreign(xid, inv);
                    }
                    None => {}
                }
            }
            (Some(Err((e, buflen))), Some(rqst)) => {
                self.stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "reply: continued reply for xid {:#010x} exceeds its receive buffer of {} bytes at byte {} ({:?}): RPC failed, rest of the sequence dropped\n",
                        xid,
                        buflen,
                        u64::from(offset) + u64::from(len),
                        e
                    );
                }
                if last.is_none() {
                    self.proto.lock().abandon_continuation(xid);
                }
                self.fail_piece(qp, rqst, xid, e, inv);
            }
            _ => {
                pr_debug!("reply: no request waits for xid {:#010x}\n", xid);
                if last.is_none() {
                    self.proto.lock().abandon_continuation(xid);
                }
            }
        }
    }

    /// Places the last piece of a continued Reply, whose header `h`
    /// carries the Reply's chunk lists (-00 §4.5.3), at the end of the
    /// reduced Reply's `len` bytes as [`QpState::deliver_piece`] does;
    /// then reads the reassembled reduced Reply back and handles it as a
    /// Reply that uses chunks ([`QpState::check_chunked`],
    /// [`QpState::deliver_chunked`]) whose payload it is. The pieces were
    /// placed from the start of the receive buffer before its chunk lists
    /// were known; bytes after a Write chunk's data (none with the Linux
    /// NFS client, whose COMPOUNDs end with the READ) would have gone
    /// into the pages the data was written to, so such a Reply fails the
    /// RPC with `-EIO`.
    pub(super) fn deliver_chunked_piece(
        &self,
        qp: &Qp<ConnQp>,
        len: u32,
        h: &crate::xdr::header::Header<'_>,
        inv: Option<u32>,
    ) {
        let xid = h.xid;
        // The reassembly hands over RDMA2_MSG pieces only.
        let crate::xdr::header::Body::Msg(body) = h.body else {
            return;
        };
        let payload = body.payload;
        let plen = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        let offset = len.saturating_sub(plen);
        trace::piece(self.id, xid, c"reply", offset, plen, false);
        let Some(rqst) = self.xprt.find_reply(xid.to_be()) else {
            pr_debug!("reply: no request waits for xid {:#010x}\n", xid);
            return;
        };
        let reduced = rqst.write_reply_at(offset, payload).and_then(|()| {
            let mut v = KVec::from_elem(0u8, len as usize, GFP_NOWAIT)?;
            rqst.read_reply_at(0, &mut v)?;
            Ok(v)
        });
        let reduced = match reduced {
            Ok(v) => v,
            Err(e) => {
                self.stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "reply: continued reply for xid {:#010x} with chunks in its last piece: {} bytes not placed ({:?}): RPC failed\n",
                        xid,
                        len,
                        e
                    );
                }
                return self.fail_piece(qp, rqst, xid, e, inv);
            }
        };
        // The earlier pieces counted their bytes; delivering the reduced
        // Reply counts all of them.
        self.stats.reply_bytes.fetch_sub(u64::from(offset), Relaxed);
        let whole = crate::xdr::header::Header {
            body: crate::xdr::header::Body::Msg(crate::xdr::header::Msg {
                payload: &reduced,
                ..body
            }),
            ..*h
        };
        let checked = self.check_chunked(usize::from(rqst.slot()), xid, &whole, inv);
        if let ChunkedCheck::Checked(Some((Ok(ReplyData::Written { tail, .. }), _)), _) = &checked {
            if !tail.is_empty() {
                drop(checked);
                self.stats.bad_chunk_replies.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "reply: continued reply for xid {:#010x}: inline bytes after its Write chunk's data, placed before the chunk was known (-EIO)\n",
                        xid
                    );
                }
                return self.fail_piece(qp, rqst, xid, EIO, inv);
            }
        }
        if matches!(checked, ChunkedCheck::Stale) {
            return self.stale_reply(xid, inv);
        }
        self.deliver_chunked(qp, rqst, xid, &whole, inv, checked);
    }

    /// Fails RPC `xid` (host order), whose continued Reply could not be
    /// delivered, with `e` once its MRs are invalidated; traced as a
    /// failed reply.
    fn fail_piece(&self, qp: &Qp<ConnQp>, rqst: ReplyRqst, xid: u32, e: Error, inv: Option<u32>) {
        trace::reply(self.id, xid, Some(Protocol::V2), c"fail", 0, e.to_errno());
        self.end_rpc(qp, rqst, xid, Finish::Fail(e.to_errno()), inv);
    }

    /// Sends the asynchronous credit grant the protocol state says is due
    /// (`RDMA2_NOMSG`, XID 0, empty chunk lists): skipped if no Send buffer
    /// is free (a later message is then due one).
    pub(super) fn send_grant(&self, qp: &Qp<ConnQp>) {
        let Some(mut sb) = self.sends.take() else {
            return;
        };
        let Some(word) = self.proto.lock().prepare_grant() else {
            let _ = self.sends.give(sb);
            return;
        };
        let spec = proto::conn::send::grant_spec(word);
        match header::encode_msg(sb.buf.as_mut_slice(), Protocol::V2, &spec) {
            Ok(n) => sb.len = n,
            Err(_) => {
                // Cannot happen with a Send buffer of >= 1024 bytes; the
                // count is off by one message until the next connection.
                let _ = self.sends.give(sb);
                return;
            }
        }
        sb.buf.sync_for_device(sb.len);
        trace::grant(self.id, word);
        if qp
            .post_send_one(SendWr::send(SendOpCtx::Buf(sb)).signaled())
            .is_err()
        {
            self.xprt.force_disconnect();
        }
    }
}
