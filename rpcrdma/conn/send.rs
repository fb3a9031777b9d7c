// SPDX-License-Identifier: GPL-2.0

//! The send path of a connection: [`Conn::send`] plans an RPC with the
//! protocol state, registers its chunks (REG_MR WRs chained before the
//! Send) and posts it, the Send signalled only as [`proto::signal`]
//! says; [`Conn::release`] invalidates and gives back
//! what a request slot still has registered.

use super::*;
use crate::proto::reqlife::{Action, Event};

/// Adds `v` to one of the [`ConnStats`] counters that only the sender
/// writes (`nomsg_calls`, the chunk counts, `rdma_request`, `req_bytes`):
/// SUNRPC's transport send lock (`XPRT_LOCKED`) serialises every
/// `send_request`, so a plain load and store does, without a locked
/// read-modify-write per counter per RPC; mountstats reads whole values.
pub(super) fn add_sent(c: &AtomicU64, v: u64) {
    if v != 0 {
        c.store(c.load(Relaxed).wrapping_add(v), Relaxed);
    }
}

/// A Call counted as sent, to be encoded into its Send buffer: the
/// transport header (with the chunk lists of its segments) and the parts
/// of the Call that go inline behind it.
struct CallMsg<'a, 'r> {
    rqst: &'a TxRqst<'r>,
    xid: u32,
    plan: &'a proto::CallPlan,
    chunks: &'a ChunkPlan,
    /// Whether the peer may invalidate remotely (the header names an
    /// rkey for it).
    remote_inv: bool,
}

impl CallMsg<'_, '_> {
    /// Encodes the transport header into `sb` with the RPC's segments
    /// (`segs`, in [`ChunkPlan::ranges`] order); `sb.len` is its length.
    fn encode_header(&self, sb: &mut SendBuf, segs: &[crate::xdr::chunk::Segment]) -> Result {
        let lists = self
            .chunks
            .chunk_lists(segs, self.remote_inv)
            .map_err(|_| EINVAL)?;
        let spec = crate::xdr::header::MsgSpec {
            kind: self.chunks.kind(),
            chunks: lists.lists(),
            inv_handle: lists.inv_handle(),
            ..self.plan.msg_spec(self.xid)
        };
        sb.len = header::encode_msg(sb.buf.as_mut_slice(), self.plan.protocol, &spec)
            .map_err(|_| EINVAL)?;
        Ok(())
    }

    /// Copies what goes inline of the Call behind the header in `sb`,
    /// and syncs the whole message for the device.
    fn encode_body(&self, sb: &mut SendBuf) -> Result {
        let layout = self.chunks.send_layout();
        if !layout.is_empty() {
            let hdr = sb.len;
            let total = hdr.checked_add(layout.len() as usize).ok_or(EINVAL)?;
            let body = sb.buf.as_mut_slice().get_mut(hdr..total).ok_or(EINVAL)?;
            xdrbuf::copy_call_layout(self.rqst, body, &layout)?;
            sb.len = total;
        }
        sb.buf.sync_for_device(sb.len);
        Ok(())
    }

    /// Both, for a Call without registrations.
    fn encode(&self, sb: &mut SendBuf, segs: &[crate::xdr::chunk::Segment]) -> Result {
        self.encode_header(sb, segs)?;
        self.encode_body(sb)
    }
}

impl Conn {
    /// Marshals `rqst` (in request slot `slot`) and posts it: inline as
    /// `RDMA_MSG` / `RDMA2_MSG`, or with a Reply chunk over the whole
    /// receive buffer (Long Reply) and/or as `RDMA_NOMSG` with a
    /// Position-Zero Read chunk over the whole Call (Long Call). The MRs
    /// are registered by REG_MR WRs chained before the Send; the Send is
    /// signalled one in [`proto::signal::SIGNAL_EVERY`] (or while Send
    /// buffers are scarce or the Send queue is half full).
    pub fn send(&self, rqst: &TxRqst<'_>, slot: u16, stats: &ConnStats) -> Result {
        let q = &self.ep.qp().handler().0;
        // Registrations left from an earlier transmission on this
        // connection (the v2 probe sent again in v1) go first.
        self.release(slot);
        let xid = u32::from_be(rqst.xid());
        if self.continues(xid)? {
            return self.send_continued(rqst, xid, stats);
        }
        let chunking = self.chunking.as_deref();
        // Receive pages the upper layer left to the transport.
        rqst.fill_sparse_pages()?;
        let mut rpc = proto::Rpc::from(rqst.shape());
        rpc.ddp_allowed &= crate::compat::params::ddp();
        let page_size = mr::page_size() as u32;
        let depth = chunking.map_or(1, |c| c.sizing.depth);
        // A resend after a transport error is planned as its recovery says.
        // (Most RPCs were never refused: no lock for them.)
        let recovery = q.recovery.begin(usize::from(slot), xid);
        let hints = recovery.hints();
        // Everything a Send can run short of is taken, or checked, before
        // the Call is counted as sent (credits, the probe, the count of
        // unanswered Calls): a shortage then only makes SUNRPC wait for
        // buffer space and send again, which counts once. What fails
        // after the count drops the connection (`send_request`), which
        // resets it.
        //
        // The Send buffer first; the buffers left free decide whether the
        // Send is signalled (`Conn::signal_call`).
        let (sb, free) = if crate::fault::fires(crate::fault::Point::SendBuf) {
            (None, 0)
        } else {
            let sb = q.sends.take();
            (sb, q.sends.held())
        };
        let Some(sb) = sb else {
            return Err(crate::compat::errno::enobufs());
        };
        // The MRs: a Send that finds too few free waits for space (an RPC
        // ending frees its MRs, `QpState::put_mr` wakes it). Only this
        // sender takes MRs from the pool, so the count cannot shrink
        // before they are taken.
        let mrs_free = chunking.map_or(usize::MAX, |c| c.pool.available());
        // One lock of the protocol state per Send: what the header needs
        // later (remote invalidation) and the credits of a refusal are
        // read under it too.
        let (plan, remote_inv, credits) = {
            let mut p = q.proto.lock();
            let plan = p.prepare_rpc_within(xid, &rpc, page_size, depth, &hints, mrs_free);
            let credits = matches!(plan, Err(CallError::NoCredits)).then(|| *p.credits());
            (plan, p.thresholds().remote_invalidation, credits)
        };
        let (plan, chunks) = match plan {
            Ok(p) => p,
            Err(CallError::Plan(proto::PlanError::TooBig(t)))
                if chunking.is_none() && t.direction == proto::Direction::Call =>
            {
                // Inline only: a version 2 connection continues the Call
                // (-00 §4.5.2); version 1 cannot.
                let _ = q.sends.give(sb);
                return self.send_continued(rqst, xid, stats);
            }
            Err(e) => {
                let _ = q.sends.give(sb);
                return Err(self.refused(xid, e, credits, stats));
            }
        };
        trace::marshal(
            self.id,
            rqst.task_id(),
            xid,
            chunks.protocol(),
            &chunks,
            u32::try_from(rqst.call_len()).unwrap_or(u32::MAX),
            plan.probe,
            &recovery,
        );
        if let Some(c) = chunking {
            c.satisfied();
        }
        // Counted as sent from here on: no failure below may ask SUNRPC
        // to send again on this connection.
        let r = self.marshal_and_post(
            rqst,
            slot,
            xid,
            &plan,
            &chunks,
            remote_inv,
            (sb, free),
            stats,
        );
        r.map_err(|e| {
            if e == crate::compat::errno::enobufs() {
                EIO
            } else {
                e
            }
        })
    }

    /// Why Call `xid` was not sent (`prepare_rpc_within` refused it,
    /// nothing counted), as the errno `send_request` acts on: `ENOBUFS`
    /// to wait for buffer space (MRs, credits), another to fail it.
    fn refused(
        &self,
        xid: u32,
        e: CallError,
        credits: Option<proto::CreditState>,
        stats: &ConnStats,
    ) -> Error {
        match e {
            CallError::NoMrs { needed } => {
                stats.no_mrs.fetch_add(1, Relaxed);
                if let Some(c) = self.chunking.as_deref() {
                    c.want(needed);
                }
                crate::compat::errno::enobufs()
            }
            CallError::NoCredits => {
                stats.no_credits.fetch_add(1, Relaxed);
                if let Some(c) = credits {
                    trace::credit_wait(self.id, xid, &c);
                }
                crate::compat::errno::enobufs()
            }
            CallError::NotConnected => crate::compat::errno::enotconn(),
            CallError::TooBig(t) => {
                stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "send: {:?} of {} bytes exceeds the inline limit of {} and this connection has no chunks (-EMSGSIZE)\n",
                        t.direction, t.len, t.limit
                    );
                }
                crate::compat::errno::emsgsize()
            }
            CallError::Plan(e) => {
                stats.too_big.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "send: xid {:#010x} cannot be sent: {:?} ({})\n",
                        xid,
                        e,
                        e.errno().to_kernel()
                    );
                }
                Error::from_errno(e.errno().to_kernel())
            }
        }
    }

    /// Registers the chunks of Call `xid` (counted as sent, `plan` and
    /// `chunks`), encodes its header into the Send buffer `sb` (taken
    /// with `free` left) behind it and posts it.
    #[allow(clippy::too_many_arguments)]
    fn marshal_and_post(
        &self,
        rqst: &TxRqst<'_>,
        slot: u16,
        xid: u32,
        plan: &proto::CallPlan,
        chunks: &ChunkPlan,
        remote_inv: bool,
        (mut sb, free): (SendBuf, usize),
        stats: &ConnStats,
    ) -> Result {
        let q = &self.ep.qp().handler().0;
        let n = chunks.ranges().len();
        // One MR (the common chunked RPC): mapped here; it enters the slot
        // under the one look at it that also encodes the header
        // (`post_one_reg`).
        let one = if n == 1 {
            match self
                .chunking
                .as_deref()
                .ok_or(EIO)
                .and_then(|c| self.map_one(rqst, xid, chunks, 0, c))
            {
                Ok(m) => Some(m),
                Err(e) => {
                    let _ = q.sends.give(sb);
                    return Err(e);
                }
            }
        } else {
            None
        };
        if n > 1 {
            if let Err(e) = self.register(rqst, slot, xid, chunks, self.chunking.as_deref()) {
                let _ = q.sends.give(sb);
                self.release(slot);
                return Err(e);
            }
        }
        if chunks.call() == proto::CallForm::Long {
            add_sent(&stats.nomsg_calls, 1);
        }
        let sum = |r: &[proto::Range]| r.iter().map(|r| u64::from(r.len)).sum::<u64>();
        add_sent(&stats.read_chunks, chunks.read_ranges().len() as u64);
        add_sent(&stats.write_chunks, chunks.write_ranges().len() as u64);
        add_sent(&stats.reply_chunks, chunks.reply_ranges().len() as u64);
        add_sent(
            &stats.rdma_request,
            sum(chunks.write_ranges()) + sum(chunks.reply_ranges()),
        );
        add_sent(&stats.req_bytes, u64::from(chunks.send_layout().len()));
        let call = CallMsg {
            rqst,
            xid,
            plan,
            chunks,
            remote_inv,
        };
        if n == 0 {
            // An inline RPC has no registrations: no look at the table.
            return match call.encode(&mut sb, &[]) {
                Ok(()) => self.post_inline(sb, free, rqst.task_id(), xid),
                Err(e) => {
                    let _ = q.sends.give(sb);
                    Err(e)
                }
            };
        }
        match one {
            Some((mr, seg)) => self.post_one_reg(slot, mr, seg, sb, free, &call),
            None => self.post_with_regs(slot, n, sb, free, &call),
        }
    }

    /// Takes an MR from the pool and maps range `k` of `chunks` (Call
    /// `xid`) into it: the MR and the segment that advertises it.
    /// `ENOBUFS` if the pool is empty; on failure the MR is back in the
    /// pool.
    fn map_one(
        &self,
        rqst: &TxRqst<'_>,
        xid: u32,
        chunks: &ChunkPlan,
        k: usize,
        c: &Chunking,
    ) -> Result<(Mr, crate::xdr::chunk::Segment)> {
        let range = chunks.ranges().get(k).ok_or(EINVAL)?;
        if range.part == Part::WritePad {
            return Err(EINVAL);
        }
        let Some(mut mr) = c.pool.get() else {
            return Err(crate::compat::errno::enobufs());
        };
        let (side, access) = if k < chunks.read_ranges().len() {
            (XdrSide::Call, MrAccess::RemoteRead)
        } else {
            (XdrSide::Reply, MrAccess::RemoteWrite)
        };
        let mapped = xdrbuf::xdr_range(range)
            .and_then(|r| rqst.map_range(side, &r, &mut mr, access, xid))
            .and_then(|()| mr.region().ok_or(EIO));
        match mapped {
            Ok(region) => {
                let seg = super::frwr::segment(region);
                let q = &self.ep.qp().handler().0;
                trace::mr_reg(q.id, xid, seg.handle, seg.length, seg.offset);
                Ok((mr, seg))
            }
            Err(e) => {
                c.pool.put(mr);
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "send: xid {:#010x}: mapping {:?} failed ({:?})\n",
                        xid,
                        range,
                        e
                    );
                }
                Err(e)
            }
        }
    }

    /// Maps every range of `chunks` into an MR from the pool and keeps
    /// the MRs and their segments in `slot` (made active for `xid` with
    /// the first one).
    fn register(
        &self,
        rqst: &TxRqst<'_>,
        slot: u16,
        xid: u32,
        chunks: &ChunkPlan,
        chunking: Option<&Chunking>,
    ) -> Result {
        let q = &self.ep.qp().handler().0;
        let c = chunking.ok_or(EIO)?;
        let i = usize::from(slot);
        for k in 0..chunks.ranges().len() {
            let (mr, seg) = self.map_one(rqst, xid, chunks, k, c)?;
            let mut g = q.frwr.lock();
            // The slot holds this RPC from its first MR on (one lock for
            // both): until then nothing of it is registered, so a failure
            // before leaves nothing to release.
            let r = if k == 0 {
                let mut r = g.activate(i, xid);
                if let Some(r) = r.as_mut() {
                    r.plan = Some(*chunks);
                }
                r
            } else {
                g.get_mut(i)
            };
            let Some(place) = r.and_then(|r| {
                let place = r.segs.get_mut(k)?;
                *place = seg;
                r.nsegs = k + 1;
                Some(r)
            }) else {
                drop(g);
                c.pool.put(mr);
                return Err(EINVAL);
            };
            if let Err(mr) = place.store(mr) {
                drop(g);
                c.pool.put(mr);
                return Err(EINVAL);
            }
        }
        Ok(())
    }

    /// Posts the inline Call in `sb` (taken with `free` Send buffers
    /// left) alone, signalled as [`proto::signal`] says. Traced
    /// (`rpcrdma2_post_send`) under Call `xid` of task `task`.
    fn post_inline(&self, sb: SendBuf, free: usize, task: u32, xid: u32) -> Result {
        let q = &self.ep.qp().handler().0;
        // Decided once: it moves the count of unsignalled Sends.
        let signaled = self.signal_inline(free);
        trace::post_send(self.id, task, xid, 0, signaled, free);
        if crate::fault::fires(crate::fault::Point::PostSend) {
            // As a refused post: the buffer comes back unposted.
            let _ = q.sends.give(sb);
            return Err(EIO);
        }
        let wr = SendWr::send(SendOpCtx::Buf(sb));
        self.ep
            .qp()
            .post_send_one(if signaled { wr.signaled() } else { wr })
    }

    /// Posts the REG_MRs of `slot`'s `n` MRs chained before the Send `sb`
    /// (taken with `free` left) of `call`, whose header is encoded with
    /// the slot's segments under the look at the slot that counts the
    /// REG_MRs as posted. The MRs stay in the slot; each REG_MR's context
    /// holds a reference to its MR's hardware object
    /// ([`mr::Mr::share`]). Signalled as [`Conn::signal_call`] says.
    fn post_with_regs(
        &self,
        slot: u16,
        n: usize,
        mut sb: SendBuf,
        free: usize,
        call: &CallMsg<'_, '_>,
    ) -> Result {
        let q = &self.ep.qp().handler().0;
        let qp = self.ep.qp();
        let i = usize::from(slot);
        let mut chain = match q.frwr.take_chain() {
            Ok(c) => c,
            Err(e) => {
                // Nothing posted: the MRs stay in the slot (`Mapped`: a
                // reply is stale) until the next transmission releases
                // them.
                let _ = q.sends.give(sb);
                return Err(if e == ENOMEM {
                    crate::compat::errno::enobufs()
                } else {
                    e
                });
            }
        };
        // MRs whose REG_MR is in a chain.
        let mut queued = 0usize;
        let mut counted = false;
        loop {
            // One look at the slot per chain (one for most Calls). The
            // last also encodes the header with the slot's segments and
            // counts the REG_MRs as posted, before the post that carries
            // the Send (from then on a reply with the XID may be for this
            // transmission; until then it is stale, `end_rpc`, and only
            // this sender touches the slot's MRs).
            let mut g = q.frwr.lock();
            let Some(r) = g.get_mut(i) else { break };
            let mut full = false;
            for mr in r.mrs.iter().flatten().skip(queued) {
                queued += 1;
                let _ = chain.push(SendWr::reg_mr(SendOpCtx::Reg(mr.share())));
                if chain.len() + 1 == MAX_SEND_CHAIN {
                    full = true;
                    break;
                }
            }
            if !full || queued == n {
                let encoded = r
                    .segs
                    .get(..r.nsegs)
                    .ok_or(EINVAL)
                    .and_then(|segs| call.encode_header(&mut sb, segs));
                // Only this sender moves the slot out of `Mapped` (a
                // reply leaves it as it is), so the step cannot fail.
                let stepped =
                    encoded.and_then(|()| r.life.step(Event::Posted).map(|_| ()).map_err(|_| EIO));
                drop(g);
                if let Err(e) = stepped {
                    qp.discard_send_chain(&mut chain);
                    q.frwr.put_chain(chain);
                    let _ = q.sends.give(sb);
                    self.release(slot);
                    return Err(e);
                }
                counted = true;
                break;
            }
            drop(g);
            // REG_MRs alone; the Send's chain follows.
            if let Err(e) = qp.post_send_chain(&mut chain) {
                // That chain came back as Aborted (its MRs `Mapped`
                // again); the REG_MRs of earlier chains are posted, and
                // the release invalidates those MRs.
                q.frwr.put_chain(chain);
                let _ = q.sends.give(sb);
                self.release(slot);
                return Err(e);
            }
        }
        if !counted || queued != n {
            // The slot does not exist or lost MRs (cannot happen: only
            // this sender takes them before the post).
            qp.discard_send_chain(&mut chain);
            q.frwr.put_chain(chain);
            let _ = q.sends.give(sb);
            self.release(slot);
            return Err(EIO);
        }
        // Decided once: it moves the count of unsignalled Sends.
        let signaled = self.signal_call(free, chain.len());
        let task = call.rqst.task_id();
        trace::post_send(self.id, task, call.xid, n, signaled, free);
        // The Call's body behind its header, outside the lock.
        let r = if let Err(e) = call.encode_body(&mut sb) {
            Err(e)
        } else if crate::fault::fires(crate::fault::Point::PostSend) {
            Err(EIO)
        } else {
            Ok(())
        };
        let r = match r {
            Ok(()) => {
                let wr = SendWr::send(SendOpCtx::Buf(sb));
                let _ = chain.push(if signaled { wr.signaled() } else { wr });
                qp.post_send_chain(&mut chain)
            }
            Err(e) => {
                // As a refused post: every REG_MR comes back aborted.
                qp.discard_send_chain(&mut chain);
                let _ = q.sends.give(sb);
                Err(e)
            }
        };
        q.frwr.put_chain(chain);
        if r.is_err() {
            // Everything came back as Aborted.
            self.release(slot);
        }
        r
    }

    /// Posts the REG_MR of a Call's one MR (`mr`, mapped, advertised as
    /// `seg`: a READ of up to one MR's pages, the common chunked RPC) and
    /// its Send `sb` (taken with `free` left) together, from the stack.
    /// One look at `slot`: it is made active for the Call and takes the
    /// MR, its header is encoded with the segment and the REG_MR counted
    /// as posted (before the post, as in [`Conn::post_with_regs`]).
    fn post_one_reg(
        &self,
        slot: u16,
        mr: Mr,
        seg: crate::xdr::chunk::Segment,
        mut sb: SendBuf,
        free: usize,
        call: &CallMsg<'_, '_>,
    ) -> Result {
        let q = &self.ep.qp().handler().0;
        let qp = self.ep.qp();
        let i = usize::from(slot);
        let hw = mr.share();
        let mut left = None;
        let ready = {
            let mut g = q.frwr.lock();
            match g.activate(i, call.xid) {
                Some(r) => {
                    r.plan = Some(*call.chunks);
                    r.nsegs = 1;
                    // From here on the slot holds the MR (a release takes
                    // it back).
                    if let Err(mr) = r.store(mr) {
                        left = Some(mr);
                    }
                    match r.segs.get_mut(0) {
                        Some(place) if left.is_none() => {
                            *place = seg;
                            let segs = core::slice::from_ref(place);
                            call.encode_header(&mut sb, segs).and_then(|()| {
                                // Active since just now (`Mapped`): never
                                // refused.
                                r.life.step(Event::Posted).map(|_| ()).map_err(|_| EIO)
                            })
                        }
                        _ => Err(EINVAL),
                    }
                }
                None => {
                    left = Some(mr);
                    Err(EIO)
                }
            }
        };
        if let Err(e) = ready {
            // Nothing of the Call is posted: the release takes the MR
            // back from the slot.
            drop(hw);
            if let Some(mr) = left {
                q.put_mr(mr);
            }
            let _ = q.sends.give(sb);
            self.release(slot);
            return Err(e);
        }
        let reg = SendWr::reg_mr(SendOpCtx::Reg(hw));
        // Decided once: it moves the count of unsignalled Sends.
        let signaled = self.signal_call(free, 1);
        trace::post_send(self.id, call.rqst.task_id(), call.xid, 1, signaled, free);
        // The Call's body behind its header, outside the lock.
        let r = match call.encode_body(&mut sb) {
            Ok(()) if crate::fault::fires(crate::fault::Point::PostSend) => Err(EIO),
            r => r,
        };
        let r = match r {
            Ok(()) => {
                let wr = SendWr::send(SendOpCtx::Buf(sb));
                qp.post_send_pair(reg, if signaled { wr.signaled() } else { wr })
            }
            Err(e) => {
                // As a refused post: the REG_MR comes back aborted.
                qp.discard_send(reg);
                let _ = q.sends.give(sb);
                Err(e)
            }
        };
        if r.is_err() {
            // Everything came back as Aborted.
            self.release(slot);
        }
        r
    }

    /// Invalidates and releases whatever `slot` still has registered
    /// (an abandoned RPC, `buf_free`; or before sending again). Waits
    /// for an invalidation a reply started, and for its own LOCAL_INVs
    /// (nothing else: a LOCAL_INV posted now runs after the REG_MRs
    /// posted before it). Process context.
    pub fn release(&self, slot: u16) {
        let q = &self.ep.qp().handler().0;
        // The caller is the slot's sender: an idle slot stays idle.
        if q.frwr.is_active(usize::from(slot)) {
            self.release_slot(slot);
        }
    }

    /// [`Conn::release`] of a slot with registrations: out of line, as it
    /// needs a few KiB of stack (a synchronous invalidation) that the
    /// common path of [`Conn::send`] should not pay for.
    #[inline(never)]
    #[cold]
    fn release_slot(&self, slot: u16) {
        let q = &self.ep.qp().handler().0;
        let i = usize::from(slot);
        {
            let mut g = q.frwr.lock();
            loop {
                // Keeps a reply from starting an invalidation.
                let a = g.get_mut(i).map(|r| r.life.step(Event::Release));
                match a {
                    Some(Ok(Action::TakeBack)) => break,
                    Some(Ok(Action::Wait)) => {}
                    // Idle: nothing (left) to release.
                    _ => return,
                }
                // A reply's invalidation runs: its last LOCAL_INV is
                // signalled, so it completes, flushed if the QP goes to
                // error (C: frwr_unmap_sync waits uninterruptibly on
                // mr_linv_done the same way); drain_slot notifies.
                q.frwr.wait_idle(&mut g);
            }
        }
        let mut mrs = KVec::new();
        loop {
            let next = q.frwr.lock().get_mut(i).and_then(|r| r.take());
            let Some(mr) = next else { break };
            if mr.state() == MrState::Registered {
                // Without memory the MR is dropped, which deregisters it.
                let _ = mrs.push(mr, GFP_KERNEL);
            } else {
                q.put_mr(mr);
            }
        }
        if !mrs.is_empty() {
            let xid = q.frwr.lock().get(i).map_or(0, |r| r.xid);
            trace::mr_inv(
                q.id,
                xid,
                c"sync",
                0,
                u32::try_from(mrs.len()).unwrap_or(u32::MAX),
            );
            match mr::inv::invalidate_sync(self.ep.qp(), mrs, SendOpCtx::SyncInv) {
                Ok(back) | Err((_, back)) => {
                    for mr in back {
                        q.put_mr(mr);
                    }
                }
            }
        }
        q.frwr.lock().deactivate(i);
    }
}
