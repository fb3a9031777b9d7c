// SPDX-License-Identifier: GPL-2.0

//! A connection's FRWR bookkeeping for chunks: the registrations of each
//! request slot ([`Regs`], in a [`RegTable`] indexed by the slot a reply's
//! request names, [`ReplyRqst::slot`]), the MR pool, and the asynchronous
//! invalidation that ends an RPC once its MRs are safe (C: `frwr_unmap_async`
//! then `rpcrdma_complete_rqst`). The mapping itself is in `Conn::send`
//! and `ib::mr`.

use super::*;
use crate::proto::reqlife::{Action, Event, Life, Phase};
use crate::sunrpc::rqst::ReplyRqst;
use crate::xdr::chunk::Segment;

/// Inline Reply bytes that follow a Write chunk's payload, and the offset
/// in the Reply where they go.
pub(super) type Tail = (u32, KVec<u8>);

/// How an RPC whose MRs are being invalidated ends afterwards.
#[derive(Clone, Copy, Debug)]
pub(super) enum Finish {
    /// `xprt_complete_rqst` with this many reply bytes.
    Complete(i32),
    /// Fail it with this (negative) errno.
    Fail(i32),
    /// Complete it without a reply so that SUNRPC sends it again on this
    /// connection (error recovery, see `recovery.rs`).
    Retry,
}

/// How an RPC whose reply arrived ends, and its request, pinned since the
/// reply handler found it (C keeps `rl_kref`'s pin the same way): what a
/// slot's [`Life`] holds from the reply until its MRs are invalidated.
/// Dropping it unpins the request without completing it.
pub(super) struct Ending {
    pub(super) how: Finish,
    pub(super) rqst: ReplyRqst,
}

/// The registration table, locked.
pub(super) type RegGuard<'a> =
    kernel::sync::lock::Guard<'a, RegTable, kernel::sync::lock::spinlock::SpinLockBackend>;

/// The chunk registrations of the RPC in one request slot.
pub(super) struct Regs {
    /// Where the slot is in its lifecycle (`proto::reqlife`): whether an
    /// RPC with MRs holds it, whether its REG_MRs are posted, whether the
    /// reply arrived (and how the RPC then ends), whether LOCAL_INVs are
    /// outstanding and one failed, whether `Conn::release` is taking the
    /// MRs back. Changed only through
    /// [`Life::step`] (and [`Life::reset`] by [`RegTable`]).
    pub(super) life: Life<Ending>,
    /// Its XID (host order).
    pub(super) xid: u32,
    pub(super) plan: Option<ChunkPlan>,
    /// The segments advertised, in [`ChunkPlan::ranges`] order.
    pub(super) segs: [Segment; MAX_RANGES],
    pub(super) nsegs: usize,
    /// The RPC's MRs, from their mapping until their invalidation gives
    /// them back to the pool (`None`: empty place). A REG_MR's context
    /// holds only a reference to its MR's hardware object; a LOCAL_INV's
    /// takes the MR out.
    pub(super) mrs: KVec<Option<Mr>>,
    /// The rkey the responder invalidated with the reply (Send With
    /// Invalidate), already checked to be one of this RPC's.
    pub(super) remote_rkey: Option<u32>,
    /// Inline bytes that follow a Write chunk's payload in the Reply,
    /// and their offset: written into the Reply after the MRs are
    /// invalidated and unmapped (they may land in the DMA-mapped pages).
    pub(super) tail: Option<Tail>,
}

/// A mapped MR advertised as a chunk segment (RFC 8166
/// `xdr_rdma_segment`): the rkey is the handle, the iova the offset.
pub(super) fn segment(r: RemoteRegion) -> Segment {
    Segment {
        handle: r.rkey,
        length: r.length,
        offset: r.iova,
    }
}

impl Regs {
    pub(super) fn new(n: usize) -> Result<Self> {
        let mut mrs = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            mrs.push(None, GFP_KERNEL)?;
        }
        Ok(Regs {
            life: Life::new(),
            xid: 0,
            plan: None,
            segs: [Segment::default(); MAX_RANGES],
            nsegs: 0,
            mrs,
            remote_rkey: None,
            tail: None,
        })
    }

    pub(super) fn reset(&mut self) {
        self.life.reset();
        self.plan = None;
        self.nsegs = 0;
        self.remote_rkey = None;
        self.tail = None;
    }

    /// Stores an MR; gives it back if there is no room.
    pub(super) fn store(&mut self, mr: Mr) -> core::result::Result<(), Mr> {
        match self.mrs.iter_mut().find(|m| m.is_none()) {
            Some(e) => {
                *e = Some(mr);
                Ok(())
            }
            None => Err(mr),
        }
    }

    /// Whether the slot holds an MR.
    pub(super) fn holds_mrs(&self) -> bool {
        self.mrs.iter().any(Option::is_some)
    }

    /// Takes one MR out.
    pub(super) fn take(&mut self) -> Option<Mr> {
        // Only the place found is moved out of.
        self.mrs
            .iter_mut()
            .find(|m| m.is_some())
            .and_then(Option::take)
    }

    /// Marks the MR the responder invalidated (if any) as such; then
    /// counts the MRs that still need a LOCAL_INV.
    pub(super) fn registered(&mut self) -> (usize, Option<u32>) {
        let mut remote = None;
        if let Some(rkey) = self.remote_rkey.take() {
            for m in self.mrs.iter_mut().flatten() {
                if m.state() == MrState::Registered
                    && m.rkey() == rkey
                    && m.remote_invalidated(rkey).is_ok()
                {
                    remote = Some(rkey);
                }
            }
        }
        let n = self
            .mrs
            .iter()
            .flatten()
            .filter(|m| m.state() == MrState::Registered)
            .count();
        (n, remote)
    }
}

/// The registrations of every request slot, indexed by the slot's
/// position in the transport's pool: a reply reaches them through the
/// request SUNRPC found for it ([`ReplyRqst::slot`]), without a lookup of
/// its own. Dereferences to the slots; an RPC becomes active and inactive
/// only through [`RegTable::activate`] and [`RegTable::deactivate`],
/// which keep its [`SlotFlags`] (`active`: which slots hold
/// registrations, read without the lock) in step.
pub(super) struct RegTable {
    slots: KVec<Regs>,
    active: Arc<SlotFlags>,
    /// The transport's record of which connection holds each slot's
    /// registrations, kept in step with `active` as connection `id`.
    owners: Arc<SlotOwners>,
    id: u32,
}

impl RegTable {
    /// `n` slots of `mrs_per_rpc` MRs, all idle, of connection `id`
    /// (recorded in `owners` while active).
    pub(super) fn new(
        n: usize,
        mrs_per_rpc: usize,
        owners: Arc<SlotOwners>,
        id: u32,
    ) -> Result<Self> {
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(Regs::new(mrs_per_rpc)?, GFP_KERNEL)?;
        }
        let active = SlotFlags::new(n)?;
        Ok(RegTable {
            slots,
            active,
            owners,
            id,
        })
    }

    /// Which slots hold registrations, for readers without the lock. Only
    /// a slot's sender makes it active, so for the sender, and for the
    /// reply handler while the slot's request is pinned (its task cannot
    /// encode again meanwhile), a slot seen idle stays idle but for a
    /// transmission already under way; one seen active may turn idle at
    /// any time (its invalidation ends), and the caller then takes the
    /// lock and finds it so. A slot seen idle holds no MR: they are back
    /// in the pool, or on their way there (the last one of a drain goes
    /// back after the slot is reset, before its RPC ends).
    pub(super) fn active(&self) -> Arc<SlotFlags> {
        self.active.clone()
    }

    /// The registrations of `slot` if they are RPC `xid`'s (host order)
    /// and active.
    pub(super) fn of(&mut self, slot: usize, xid: u32) -> Option<&mut Regs> {
        self.slots
            .get_mut(slot)
            .filter(|r| r.life.is_active() && r.xid == xid)
    }

    /// Makes `slot` hold the registrations of RPC `xid` from now on
    /// (cleared; what it held before is forgotten).
    pub(super) fn activate(&mut self, slot: usize, xid: u32) -> Option<&mut Regs> {
        self.deactivate(slot);
        let r = self.slots.get_mut(slot)?;
        // Idle after `deactivate`: never refused.
        r.life.step(Event::Activate).ok()?;
        r.xid = xid;
        self.owners.claim(slot, self.id);
        self.active.set(slot, true);
        Some(r)
    }

    /// Clears `slot`: its RPC, if any, has no registrations any more.
    pub(super) fn deactivate(&mut self, slot: usize) {
        if let Some(r) = self.slots.get_mut(slot) {
            r.reset();
        }
        // After the MRs left the slot (for the pool).
        self.active.set(slot, false);
        self.owners.disown(slot, self.id);
    }
}

impl core::ops::Deref for RegTable {
    type Target = [Regs];

    fn deref(&self) -> &[Regs] {
        &self.slots
    }
}

impl core::ops::DerefMut for RegTable {
    fn deref_mut(&mut self) -> &mut [Regs] {
        &mut self.slots
    }
}

/// A connection's chunk registrations: the [`RegTable`] behind its lock
/// (`regs`), which slots are active without it, the condition
/// `Conn::release` waits on, and the spare Send chains that post REG_MRs
/// and LOCAL_INVs.
#[pin_data]
pub(super) struct Registrations {
    #[pin]
    regs: SpinLock<RegTable>,
    /// Which slots of `regs` hold registrations, without its lock
    /// ([`RegTable::active`]).
    active: Arc<SlotFlags>,
    /// Notified when a slot that is being released ([`Conn::release`])
    /// ends the invalidation a reply started.
    #[pin]
    idle: CondVar,
    /// Send chains for REG_MR and LOCAL_INV WRs: a few KiB each, so kept
    /// on the heap, never on the (deep) stacks of rpciod and the CQ
    /// workqueue.
    chains: Idle<KBox<SendChain<SendOpCtx>>>,
}

impl Registrations {
    pub(super) fn new(
        table: RegTable,
        chains: Idle<KBox<SendChain<SendOpCtx>>>,
    ) -> impl PinInit<Self> {
        let active = table.active();
        pin_init!(Registrations {
            regs <- new_spinlock!(table),
            active,
            idle <- new_condvar!(),
            chains,
        })
    }

    /// The registration table, locked.
    pub(super) fn lock(&self) -> RegGuard<'_> {
        self.regs.lock()
    }

    /// Whether `slot` holds registrations, read without the lock (see
    /// [`RegTable::active`] for what a reader may conclude).
    pub(super) fn is_active(&self, slot: usize) -> bool {
        self.active.get(slot)
    }

    /// Waits (with the table unlocked meanwhile) until a slot's
    /// LOCAL_INVs come back.
    pub(super) fn wait_idle(&self, g: &mut RegGuard<'_>) {
        self.idle.wait(g);
    }

    /// Wakes the waiters of [`Registrations::wait_idle`].
    fn wake_idle(&self) {
        self.idle.notify_all();
    }

    /// An empty Send chain from the spares, else a new one.
    pub(super) fn take_chain(&self) -> Result<KBox<SendChain<SendOpCtx>>> {
        match self.chains.take() {
            Some(c) => Ok(c),
            None => SendChain::new_boxed(GFP_NOWAIT),
        }
    }

    /// Gives an (empty) chain back; one too many is freed.
    pub(super) fn put_chain(&self, chain: KBox<SendChain<SendOpCtx>>) {
        if self.chains.held() < CHAINS {
            let _ = self.chains.give(chain);
        }
    }
}

/// How much chunk-registration state a connection keeps.
pub(super) struct RegSizing {
    /// Request slots.
    pub(super) slots: usize,
    /// MRs one RPC may use.
    pub(super) mrs_per_rpc: usize,
    /// Pages per MR.
    pub(super) depth: usize,
}

/// FRWR for chunks: the sizing for the device and the connection's MR
/// pool.
pub(super) struct Chunking {
    pub(super) sizing: FrwrSizing,
    pub(super) pool: Arc<MrPool>,
    /// How many free MRs the Call that found too few waits for (0: none
    /// waits). Set by the sender before it waits for buffer space; the
    /// MR that makes that many free wakes it (`QpState::put_mr`).
    wanted: AtomicUsize,
}

impl Chunking {
    pub(super) fn new(sizing: FrwrSizing, pool: Arc<MrPool>) -> Self {
        Chunking {
            sizing,
            pool,
            wanted: AtomicUsize::new(0),
        }
    }

    /// A Call needs `n` free MRs and found fewer: the sender waits for
    /// buffer space until that many are free.
    pub(super) fn want(&self, n: usize) {
        self.wanted.store(n, SeqCst);
    }

    /// No Call waits for MRs (the sender got them).
    pub(super) fn satisfied(&self) {
        if self.wanted.load(Relaxed) != 0 {
            self.wanted.store(0, Relaxed);
        }
    }

    /// Whether the Call waiting for MRs, if any, would find enough now.
    pub(super) fn mrs_ready(&self) -> bool {
        let n = self.wanted.load(SeqCst);
        n == 0 || self.pool.available() >= n
    }
}

impl QpState {
    /// Gives an MR back to the pool (deregisters it if it is not clean),
    /// and wakes the sender if it waits for MRs and now enough are free.
    /// The common case, nobody waiting, costs one load.
    pub(super) fn put_mr(&self, mr: Mr) {
        match self.chunking() {
            Some(c) => {
                let lost = c.pool.lost();
                c.pool.put(mr);
                if c.pool.lost() > lost {
                    self.stats.mrs_orphaned.fetch_add(1, Relaxed);
                }
                // The put stores the pool's count before this load of
                // `wanted`; the sender stores `wanted` before it reads the
                // count again (`Conn::ready_to_send`), all sequentially
                // consistent: one of the two sees the other.
                let n = c.wanted.load(SeqCst);
                if n != 0 && c.pool.available() >= n {
                    c.wanted.store(0, Relaxed);
                    self.xprt.write_space();
                }
            }
            None => drop(mr),
        }
    }

    /// Ends the request of `e` as it says, after writing a deferred Reply
    /// `tail` (see [`Regs::tail`]): completes and unpins it under one
    /// `queue_lock`.
    pub(super) fn finish(&self, e: Ending, tail: Option<Tail>) {
        let rqst = e.rqst;
        match e.how {
            Finish::Complete(len) => match tail {
                Some((at, bytes)) => match rqst.write_reply_at(at, &bytes) {
                    Ok(()) => rqst.complete(len),
                    Err(e) => rqst.fail(e.to_errno()),
                },
                None => rqst.complete(len),
            },
            Finish::Fail(e) => rqst.fail(e),
            Finish::Retry => {
                // The responder refused the transmission without
                // executing it, and its error returned the credit.
                rqst.allow_resend();
                rqst.retry(EAGAIN.to_errno());
            }
        }
    }

    /// RPC `xid` (host order), in request slot `slot`, has its MRs mapped
    /// for a transmission whose REG_MRs and Send are not posted yet
    /// ([`Life::Mapped`]): a reply with its XID now answers an earlier
    /// transmission. Once true for a reply it stays true for it (the reply
    /// was received before the post); [`QpState::end_rpc`] decides again
    /// under the lock.
    pub(super) fn unposted(&self, slot: usize, xid: u32) -> bool {
        self.frwr.is_active(slot)
            && self
                .frwr
                .lock()
                .of(slot, xid)
                .is_some_and(|r| r.life.phase() == Phase::Mapped)
    }

    /// Ends RPC `xid`, whose request the reply handler found and pinned
    /// (`rqst`), as `how` says once its MRs, if it has any, are
    /// invalidated (C: `frwr_unmap_async`, then `rpcrdma_complete_rqst`).
    /// A reply before the RPC's current transmission is posted is stale
    /// ([`Action::Stale`]): it ends nothing and invalidates nothing.
    ///
    /// The registration table is locked once for the reply's step and the
    /// start of the MRs' invalidation ([`QpState::start_inv_locked`]);
    /// again per MR it takes out for a LOCAL_INV or gives back to the
    /// pool.
    pub(super) fn end_rpc(
        &self,
        qp: &Qp<ConnQp>,
        rqst: ReplyRqst,
        xid: u32,
        how: Finish,
        inv: Option<u32>,
    ) {
        let slot = usize::from(rqst.slot());
        if !self.frwr.is_active(slot) {
            // No registrations (an inline RPC): no lock.
            if inv.is_some() {
                self.remote_inv_foreign(xid, inv);
            }
            self.finish(Ending { how, rqst }, None);
            return;
        }
        self.end_rpc_locked(qp, self.frwr.lock(), rqst, xid, how, inv);
    }

    /// [`QpState::end_rpc`] with the registration table locked (by the
    /// reply handler's check of a reply that uses chunks,
    /// [`QpState::check_chunked`], so that such a reply locks it once).
    pub(super) fn end_rpc_locked<'a>(
        &'a self,
        qp: &Qp<ConnQp>,
        mut g: RegGuard<'a>,
        rqst: ReplyRqst,
        xid: u32,
        how: Finish,
        inv: Option<u32>,
    ) {
        let slot = usize::from(rqst.slot());
        let e = Ending { how, rqst };
        let Some(r) = g.of(slot, xid) else {
            drop(g);
            if inv.is_some() {
                self.remote_inv_foreign(xid, inv);
            }
            self.finish(e, None);
            return;
        };
        // Ignored while `Conn::release` takes the MRs back, stale before
        // the post.
        let a = r.life.step(Event::Reply(e));
        // A stale reply's remote invalidation was of an earlier
        // transmission's MR: this one's are re-keyed when mapped
        // (`Mr::map_*`), and their REG_MRs, posted after this reply was
        // received, register them again. It must not spare one of them
        // a LOCAL_INV.
        if !matches!(a, Ok(Action::Stale)) {
            r.remote_rkey = inv;
        }
        match a {
            Ok(Action::StartInvalidation) => self.start_inv_locked(qp, g, slot),
            Ok(Action::Stale) => {
                drop(g);
                self.stale_reply(xid, inv)
            }
            // An active slot takes every reply (cannot happen): end the
            // RPC without its MRs, as if it had none.
            Err(crate::proto::reqlife::Illegal {
                event: Event::Reply(e),
                ..
            }) => {
                drop(g);
                self.finish(e, None);
            }
            _ => {}
        }
    }

    /// Posts LOCAL_INV for the registered MRs of `slot` (invalidating
    /// since [`Action::StartInvalidation`]), with the registration table
    /// locked; the last completion ends the RPC.
    fn start_inv_locked<'a>(&'a self, qp: &Qp<ConnQp>, mut g: RegGuard<'a>, slot: usize) {
        let tag = u16::try_from(slot).unwrap_or(u16::MAX);
        // MRs that are not registered need no invalidation.
        let Some(r) = g.get_mut(slot) else { return };
        let (n, remote) = r.registered();
        let xid = r.xid;
        if n == 0 {
            // Remotely invalidated (or never registered): the RPC ends
            // now, its MRs drained under the same lock.
            let (xid, e, tail) = self.drain_locked(g, slot);
            self.count_inv(xid, 0, remote);
            if let Some(e) = e {
                self.finish(e, tail);
            }
            return;
        }
        drop(g);
        self.count_inv(xid, n, remote);
        // Without a spare chain (no memory), post them one by one.
        let mut chain = self.frwr.take_chain().ok();
        let mut i = 0;
        let mut failed = false;
        loop {
            let next = {
                let mut g = self.frwr.lock();
                g.get_mut(slot).and_then(|r| r.take())
            };
            let Some(mr) = next else { break };
            if mr.state() != MrState::Registered {
                self.put_mr(mr);
                continue;
            }
            i += 1;
            let last = i == n;
            if failed {
                self.inv_done(slot, mr, last);
                continue;
            }
            let wr = SendWr::local_inv(SendOpCtx::Inv {
                wr: MrWr::new(mr),
                slot: tag,
                last,
            });
            // A failed post hands the WRs back as Aborted.
            failed = qp.post_batched(chain.as_deref_mut(), wr, last).is_err();
        }
        if let Some(c) = chain {
            self.frwr.put_chain(c);
        }
    }

    /// Counts and traces the invalidations of RPC `xid`: `n` LOCAL_INVs,
    /// and the MR the responder invalidated (`remote`), if any.
    fn count_inv(&self, xid: u32, n: usize, remote: Option<u32>) {
        if let Some(rkey) = remote {
            self.stats.remote_inv.fetch_add(1, Relaxed);
            trace::mr_inv(self.id, xid, c"remote", rkey, 1);
        }
        if n > 0 {
            self.stats.local_inv.fetch_add(n as u64, Relaxed);
            trace::mr_inv(
                self.id,
                xid,
                c"local",
                0,
                u32::try_from(n).unwrap_or(u32::MAX),
            );
        }
    }

    /// Takes everything out of `slot` (MRs to the pool) and resets it;
    /// returns the XID and how the RPC was to end.
    pub(super) fn drain_slot(&self, slot: usize) -> (u32, Option<Ending>, Option<Tail>) {
        self.drain_locked(self.frwr.lock(), slot)
    }

    /// [`QpState::drain_slot`] with the registration table locked. Each
    /// MR goes back to the pool with the lock dropped (one that is not
    /// clean is deregistered there, which may sleep); the last one after
    /// the slot is reset under the lock it was taken under, so that an
    /// RPC with one MR takes the lock once. The RPC ends (the caller
    /// finishes it) only after every MR is back.
    fn drain_locked<'a>(
        &'a self,
        mut g: RegGuard<'a>,
        slot: usize,
    ) -> (u32, Option<Ending>, Option<Tail>) {
        let mut last = None;
        while let Some(mr) = g.get_mut(slot).and_then(|r| r.take()) {
            if !g.get(slot).is_some_and(Regs::holds_mrs) {
                last = Some(mr);
                break;
            }
            drop(g);
            self.put_mr(mr);
            g = self.frwr.lock();
        }
        let (out, wake) = match g.get_mut(slot) {
            Some(r) => match r.life.step(Event::Drain) {
                // `finish` is `None` if a LOCAL_INV failed.
                Ok(Action::Drained { finish, wake }) => ((r.xid, finish, r.tail.take()), wake),
                // Not invalidating (cannot happen): leave the slot alone
                // (and its last MR in it).
                _ => {
                    let xid = r.xid;
                    if let Some(mr) = last.take() {
                        if let Err(mr) = r.store(mr) {
                            last = Some(mr);
                        }
                    }
                    drop(g);
                    if let Some(mr) = last {
                        self.put_mr(mr);
                    }
                    return (xid, None, None);
                }
            },
            None => {
                drop(g);
                if let Some(mr) = last {
                    self.put_mr(mr);
                }
                return (0, None, None);
            }
        };
        g.deactivate(slot);
        drop(g);
        if let Some(mr) = last {
            self.put_mr(mr);
        }
        if wake {
            self.frwr.wake_idle();
        }
        out
    }

    /// A LOCAL_INV of `slot` came back (or was never posted).
    pub(super) fn inv_done(&self, slot: usize, mr: Mr, last: bool) {
        let ok = mr.state() == MrState::Invalidated;
        self.put_mr(mr);
        if !ok {
            if let Some(r) = self.frwr.lock().get_mut(slot) {
                // Refused if the slot is not invalidating (a LOCAL_INV
                // back after its chain's last one): nothing to mark.
                let _ = r.life.step(Event::InvFailed);
            }
        }
        if last {
            let (_, e, tail) = self.drain_slot(slot);
            if let Some(e) = e {
                self.finish(e, tail);
            }
        }
    }
}
