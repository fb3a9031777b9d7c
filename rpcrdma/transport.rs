// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA transport built on the safe wrappers.
//!
//! [`RdmaXprt`] implements [`Transport`] for SUNRPC. Requests come from a
//! pool of preallocated slots, each with its Call and Reply buffers, so
//! the send path does not allocate.

use crate::backchannel::Backchannel;
use crate::compat::init::PinInit;
use crate::conn::{Conn, ConnStats, ProtoState, SlotOwners};
use crate::proto;
use crate::sunrpc::bc::BcRqst;
use crate::sunrpc::pool::SlotPool;
use crate::sunrpc::rqst::{BcTxRqst, BufRqst, TxRqst};
use crate::sunrpc::slot::{SlotBox, Task};
use crate::sunrpc::transport::{SeqFile, Transport};
use crate::sunrpc::xprt;
use crate::sunrpc::xprt_box::{self, NewXprt, XprtBox};
use crate::sunrpc::XprtCreate;
use crate::trace;
use crate::why::Why;
use core::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use kernel::alloc::{flags::GFP_KERNEL, KBox};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};

/// Default number of concurrent requests (the C client's
/// `rdma_slot_table_entries` default).
pub const DEFAULT_MAX_REQUESTS: u16 = 128;
/// Largest RPC payload: 256 data pages plus one, as the C client.
pub const MAX_PAYLOAD: usize = 257 << kernel::page::PAGE_SHIFT;
/// Backchannel slots offered to NFSv4.1 (the C client's
/// RPCRDMA_BACKWARD_WRS >> 1).
const BC_SLOTS: u32 = proto::backchannel::SLOTS;

/// Initial reconnect delay (the C client's RPCRDMA_INIT_REEST_TO), seconds.
const REESTABLISH_TIMEOUT_S: usize = 5;

/// The keepalive period, seconds: a connection awaiting replies that
/// received nothing for a whole period is probed (`conn/keepalive.rs`).
/// A dead peer is then found within a period or two plus the RC retries
/// (about 4 s on rxe), not at the RPC timeout (60 s by default).
const KEEPALIVE_PERIOD_S: usize = 1;

fn hz() -> usize {
    crate::sunrpc::HZ
}

/// Initial Call/Reply buffer size of a slot; grown on demand in buf_alloc.
const SLOT_BUF_SIZE: usize = 2048;

/// Per-request state after each `rpc_rqst`, beyond what the slot itself
/// keeps (its pool index, its Call and Reply buffers): none. What a
/// connection keeps for the request is indexed by the slot's position
/// (`conn::SlotOwners`, the connection's registration and recovery
/// tables).
pub struct Slot;

/// What only the holder of the transport send lock touches
/// ([`Transport::Sender`]): the sender's own reference to the current
/// connection, so that a Call looks up the connection without `conn`'s
/// lock while it stays the same.
#[derive(Default)]
pub struct Sender {
    conn: Option<Arc<Conn>>,
}

impl Sender {
    /// The current connection, from the sender's copy while that one is
    /// not closed; otherwise looked up again under `conn`'s lock (after
    /// a reconnect, or when there is none).
    fn conn<'a>(&'a mut self, x: &RdmaXprt) -> Option<&'a Arc<Conn>> {
        // A connection is closed (`Conn::disconnect`) before another
        // replaces it: a copy that is not closed is the current one.
        let stale = match &self.conn {
            Some(c) => c.closed(),
            None => true,
        };
        if stale {
            self.conn = x.current_conn();
        }
        self.conn.as_ref()
    }
}

/// Transport-level counters (the connection keeps the data-path ones).
#[derive(Default)]
pub struct Stats {
    /// Bytes by which buf_alloc had to grow buffers (C: hardway).
    pub hardway: AtomicU64,
    /// Marshaling failures.
    pub failed_marshal: AtomicU64,
    /// Calls and backchannel replies that waited for buffer space: no
    /// free Send buffer, too few free MRs or no credit (C:
    /// empty_sendctx_q, which counts only the first).
    pub empty_sendq: AtomicU64,
}

/// The rpcrdma2 transport instance.
#[pin_data]
pub struct RdmaXprt {
    /// The request slots, fixed for the transport's lifetime (lent and
    /// taken back by SUNRPC's `alloc_slot` and `free_slot`).
    #[pin]
    slots: SlotPool<Slot>,
    /// The current connection, if any. Replaced only by the connect
    /// worker and close/destroy, which SUNRPC serialises (XPRT_LOCKED);
    /// the sender keeps its own reference ([`Sender`]) and takes this
    /// lock only when that one was closed.
    #[pin]
    conn: SpinLock<Option<Arc<Conn>>>,
    /// The last connect attempt failed: back off before the next.
    connect_failed: AtomicBool,
    stats: Stats,
    conn_stats: Arc<ConnStats>,
    /// Which connection holds registrations of each request slot: only
    /// for those does `buf_free` look at the connection.
    owners: Arc<SlotOwners>,
    /// Protocol state: negotiation, credits, thresholds (survives
    /// reconnects; shared with the connection's handlers).
    proto: Arc<ProtoState>,
    /// NFSv4.1 callbacks (shared with the connection's reply handler).
    bc: Arc<Backchannel>,
    /// The last connection that ended and why (`conn id << 8 | Why`; 0:
    /// none yet), for the `rpcrdma2_reconnect` tracepoint.
    last_close: AtomicU64,
    /// The keepalive worker is queued or running: it runs while replies
    /// are awaited, and the first Call sent after it stopped starts it.
    keepalive_on: AtomicBool,
}

impl RdmaXprt {
    fn new(max_reqs: u16) -> Result<impl PinInit<Self, Error>> {
        let slots =
            SlotPool::new::<_, core::convert::Infallible>(max_reqs, SLOT_BUF_SIZE, |_| Slot)?;
        Ok(try_pin_init!(RdmaXprt {
            slots <- slots,
            conn <- new_spinlock!(None, "rpcrdma2_conn"),
            connect_failed: AtomicBool::new(false),
            stats: Stats::default(),
            conn_stats: Arc::new(ConnStats::default(), GFP_KERNEL)?,
            owners: SlotOwners::new(max_reqs.into())?,
            proto: Arc::pin_init(new_spinlock!(proto::Transport::new(Self::config(max_reqs))), GFP_KERNEL)?,
            bc: Backchannel::new()?,
            last_close: AtomicU64::new(0),
            keepalive_on: AtomicBool::new(false),
        }? Error))
    }

    /// The protocol configuration, from the module parameters.
    fn config(max_reqs: u16) -> proto::Config {
        proto::Config {
            policy: if crate::compat::params::force_v1() {
                proto::VersionPolicy::ForceV1
            } else {
                proto::VersionPolicy::TryV2
            },
            max_requests: max_reqs.into(),
            // Receives for the backchannel are provisioned on every
            // connection (C: RPCRDMA_BACKWARD_WRS in the Receive Queue),
            // so a session's backchannel needs no new QP.
            bc_requests: BC_SLOTS,
            // Advertise the R bit (RFC 8797): the server may invalidate
            // an MR with Send With Invalidate.
            remote_invalidate: true,
            // Version 2: Replies continued over up to this many Sends
            // instead of a Reply chunk (clamped to max_requests).
            cont_reply_pieces: crate::compat::params::cont_reply_pieces(),
            ..proto::Config::DEFAULT
        }
        .validated()
    }

    /// How many request slots are free (KUnit variant only).
    #[cfg(rpcrdma2_kunit)]
    pub fn free_slots(&self) -> usize {
        self.slots.free_count()
    }

    fn current_conn(&self) -> Option<Arc<Conn>> {
        self.conn.lock().clone()
    }

    /// Remembers that connection `id` ended because of `why`.
    fn closed(&self, id: u32, why: Option<Why>) {
        if let Some(w) = why {
            self.last_close
                .store(u64::from(id) << 8 | u64::from(w as u8), Relaxed);
        }
    }

    /// Tears the connection down (drains the QP, destroys the id);
    /// `reason` is for the tracepoint.
    fn disconnect(this: &XprtBox<Self>, reason: Why) {
        let d = &this.data;
        let conn = d.conn.lock().take();
        if let Some(conn) = conn {
            d.closed(conn.id, conn.disconnect(reason));
            // Every completion of the connection is handled now, not when
            // the last reference goes: another holder (a `buf_free`, the
            // keepalive) may drop it after the next connection is up, and
            // its handlers must not reach the protocol state or the
            // transport of that one (a flushed Receive's credit, a flushed
            // Send's forced disconnect). Posts after this are refused.
            conn.drain();
            drop(conn);
            // The next connection starts with an empty congestion window.
            this.reset_slots_cong();
            if d.proto.lock().disconnected() == proto::ProbeLoss::NowV1Only {
                pr_info!(
                    "the server lost two version 2 probes in a row: using version 1 from now on\n"
                );
            }
        }
    }
}

impl Transport for RdmaXprt {
    type Slot = Slot;
    type Sender = Sender;

    fn setup(args: &XprtCreate<'_>) -> Result<NewXprt<Self>> {
        create(args).inspect_err(|e| {
            pr_err!("transport setup failed: {:?}\n", e);
        })
    }

    fn slots(&self) -> &SlotPool<Slot> {
        &self.slots
    }

    fn set_port(this: &XprtBox<Self>, port: u16) {
        this.update_port(port);
    }

    fn connect(this: &XprtBox<Self>, task: &Task) {
        if !this.lock_connect(task) {
            pr_warn!("connect: the transport is not locked by the connecting task\n");
        }
        let delay = if this.data.connect_failed.load(Relaxed) {
            xprt::reconnect_delay_and_backoff(this.xprt(), REESTABLISH_TIMEOUT_S * hz())
        } else {
            0
        };
        this.queue_connect(delay);
    }

    fn buf_alloc(this: &XprtBox<Self>, _slot: &SlotBox<Slot>, rqst: BufRqst<'_>) -> Result {
        let grown = rqst.use_slot_buffers()?;
        if grown > 0 {
            this.data.stats.hardway.fetch_add(grown as u64, Relaxed);
        }
        Ok(())
    }

    fn buf_free(this: &XprtBox<Self>, slot: &SlotBox<Slot>) {
        // An RPC abandoned with MRs still registered (a signal, a soft
        // timeout): invalidate them before its memory is reused. A
        // connection that is gone took its MRs with it (deregistered).
        // An RPC whose MRs were all invalidated (every RPC that got its
        // reply), or that never registered any, has nothing to look at:
        // SUNRPC releases the request after its last transmission and
        // its reply (if any) are done with it.
        let may_hold = this.data.owners.may_hold(slot.index().into());
        // Fault injection: keep the connection past a disconnect.
        let hold = crate::fault::fires(crate::fault::Point::HoldConn);
        if !may_hold && !hold {
            return;
        }
        if let Some(conn) = this.data.current_conn() {
            if may_hold {
                conn.release(slot.index());
            }
            if hold {
                crate::fault::sleep_ms(2000);
            }
        }
    }

    fn send_request(
        this: &XprtBox<Self>,
        slot: &SlotBox<Slot>,
        rqst: TxRqst<'_>,
        sender: &mut Sender,
    ) -> Result {
        let xprt = this.xprt();
        if !xprt.connected() {
            return Err(crate::compat::errno::enotconn());
        }
        if !rqst.get_cong() {
            return Err(crate::compat::errno::ebadslt());
        }
        let Some(conn) = sender.conn(&this.data) else {
            return Err(crate::compat::errno::enotconn());
        };
        // A retransmit on the same connection would break credit
        // accounting (RFC 8166 §3.3.3): reconnect instead.
        if rqst.connect_cookie() == xprt.connect_cookie() {
            Self::close(this, sender);
            return Err(crate::compat::errno::enotconn());
        }
        match conn.send(&rqst, slot.index(), &this.data.conn_stats) {
            Ok(()) => {}
            Err(e) if e == crate::compat::errno::enobufs() => {
                this.data.stats.empty_sendq.fetch_add(1, Relaxed);
                xprt.wait_for_buffer_space();
                // Credits or a Send buffer may have come back before
                // XPRT_WRITE_SPACE was set (a continued Call may wait for
                // the one grant the responder will send): look again.
                if conn.ready_to_send() {
                    xprt.write_space();
                }
                return Err(EAGAIN);
            }
            Err(e) if e == crate::compat::errno::emsgsize() => {
                this.data.stats.failed_marshal.fetch_add(1, Relaxed);
                return Err(e);
            }
            Err(e) => {
                this.data.stats.failed_marshal.fetch_add(1, Relaxed);
                if crate::compat::print::ratelimit() {
                    pr_err!("send_request: posting failed ({:?}), reconnecting\n", e);
                }
                Self::close(this, sender);
                return Err(crate::compat::errno::enotconn());
            }
        }
        rqst.mark_sent(rqst.call_len());
        // An RPC with no reply would throw off credit accounting: drop
        // the connection to reset the grant, as the C client does.
        if !rqst.reply_expected() {
            Self::close(this, sender);
            return Err(crate::compat::errno::enotconn());
        }
        // A reply is awaited: make sure the keepalive looks (one load on
        // the common path, where it runs already). The request joined
        // SUNRPC's receive queue before the transport lock was taken for
        // this transmission, a fully ordered test_and_set_bit, so a worker
        // that stops after this load sees it (`keepalive`).
        if !this.data.keepalive_on.load(Relaxed) && !this.data.keepalive_on.swap(true, SeqCst) {
            this.queue_keepalive(KEEPALIVE_PERIOD_S * hz());
        }
        Ok(())
    }

    fn keepalive(this: &XprtBox<Self>) -> Option<usize> {
        let period = KEEPALIVE_PERIOD_S * hz();
        let d = &this.data;
        let go_on = d
            .current_conn()
            .is_some_and(|c| c.keepalive(this.xprt().awaiting_replies()));
        if go_on {
            return Some(period);
        }
        // Nothing awaited, or no connection: stop until the next Call.
        d.keepalive_on.store(false, SeqCst);
        // A Call sent since the look above may have found the worker
        // still on and not started it: look once more.
        (this.xprt().awaiting_replies() && !d.keepalive_on.swap(true, SeqCst)).then_some(period)
    }

    fn timer(this: &XprtBox<Self>) {
        // RDMA has no keepalive: a timeout while connected forces a
        // reconnect, which retransmits everything pending.
        if let Some(conn) = this.data.current_conn() {
            conn.note(Why::Timeout);
        }
        this.xprt().force_disconnect();
    }

    fn close(this: &XprtBox<Self>, sender: &mut Sender) {
        // The sender's reference goes with the connection.
        sender.conn = None;
        Self::disconnect(this, Why::Close);
        this.xprt().record_close();
        this.xprt().disconnect_done();
    }

    fn set_connect_timeout(this: &XprtBox<Self>, connect: usize, reconnect: usize) {
        // As the C client: the RPC timeout never drops below twice the
        // initial reconnect delay.
        this.apply_connect_timeout(connect, reconnect, 2 * REESTABLISH_TIMEOUT_S * hz());
    }

    fn print_stats(this: &XprtBox<Self>, seq: &mut SeqFile<'_>) {
        use core::fmt::Write;
        let s = &this.data.stats;
        let c = &this.data.conn_stats;
        // The C client's layout (transport.c xprt_rdma_print_stats):
        // generic fields; read/write/reply chunk segments, bytes offered
        // to and written by the server (total_rdma_request/reply), bytes
        // copied into Sends (pullup) and out of Receives (fixup),
        // hardway, failed marshal, bad reply, nomsg calls; MRs recycled
        // (never: a failed MR is orphaned and replaced with the next
        // connection's pool), orphaned, allocated, local_inv_needed,
        // empty_sendctx_q, a constant 0 (was reply_waits_for_send); then
        // fields of rpcrdma2's own: MRs the server invalidated (remote
        // invalidation), which C does not count; backchannel Calls
        // served (C counts bcall_count but does not print it), replies
        // sent, Calls or replies dropped; RPCs sent again after a
        // transport error, by recovery (Position-Zero Read, Reply chunk
        // instead of Write chunks, fewer segments, Write resource, Reply
        // resource), and RPCs failed by a transport error; continued
        // replies received, continued Calls sent, asynchronous credit
        // grants sent (version 2 Message Continuation and credits);
        // replies dropped as stale (for an earlier transmission of an RPC
        // sent again, received before this one was posted).
        let _ = this.xprt().write_generic_stats(seq);
        let ld = |a: &core::sync::atomic::AtomicU64| a.load(Relaxed);
        let ps = *this.data.proto.lock().stats();
        let rec = ps.recovery;
        let _ = write!(
            seq,
            "{} {} {} {} {} {} {} {} {} {} {} 0 {} {} {} {} 0 {} {} {} {}",
            ld(&c.read_chunks),
            ld(&c.write_chunks),
            ld(&c.reply_chunks),
            ld(&c.rdma_request),
            ld(&c.rdma_reply),
            ld(&c.req_bytes),
            ld(&c.reply_bytes),
            ld(&s.hardway),
            ld(&s.failed_marshal),
            ps.bad_reply + ld(&c.bad_chunk_replies),
            ld(&c.nomsg_calls),
            ld(&c.mrs_orphaned),
            ld(&c.mrs_allocated),
            ld(&c.local_inv),
            ld(&s.empty_sendq),
            ld(&c.remote_inv),
            ld(&this.data.bc.stats.calls),
            ld(&this.data.bc.stats.replies),
            ld(&this.data.bc.stats.dropped),
        );
        let _ = writeln!(
            seq,
            " {} {} {} {} {} {} {} {} {} {}",
            rec.position_zero,
            rec.reply_chunk,
            rec.segments,
            rec.write_resource,
            rec.reply_resource,
            rec.failed,
            ps.continued_replies,
            ps.continued_calls,
            ps.grants_sent,
            ld(&c.stale_replies),
        );
    }

    fn inject_disconnect(this: &XprtBox<Self>) {
        // As the C client: a real rdma_disconnect, so the whole path runs
        // (DISCONNECTED event, autoclose, close, reconnect, retransmit).
        match this.data.current_conn() {
            Some(conn) => {
                this.data.closed(conn.id, conn.disconnect(Why::Injected));
            }
            None => this.xprt().force_disconnect(),
        }
    }

    fn connect_worker(this: &XprtBox<Self>) {
        let xprt = this.xprt();
        // A connection left from before (e.g. after a failed attempt) is
        // torn down first; close normally did it already.
        Self::disconnect(this, Why::Reconnect);
        let last = this.data.last_close.load(Relaxed);
        if last != 0 {
            let why = Why::from_u8(last as u8).unwrap_or(Why::Close);
            trace::reconnect((last >> 8) as u32, why.name());
        }
        let r = xprt.dst_addr().and_then(|dst| {
            Conn::establish(
                xprt.net(),
                &dst,
                &|| this.xprt_ref(),
                &this.data.proto,
                &this.data.conn_stats,
                &this.data.bc,
                &this.data.owners,
            )
        });
        xprt::clear_connecting(xprt);
        let status = match r.and_then(|c| Ok(Arc::new(c, GFP_KERNEL)?)) {
            Ok(conn) => {
                *this.data.conn.lock() = Some(conn);
                this.data.connect_failed.store(false, Relaxed);
                // (The window was reset to one credit before connecting.)
                xprt.record_connect();
                xprt.set_connected();
                EAGAIN.to_errno()
            }
            Err(e) => {
                // EAGAIN: the version 2 probe went unanswered or was lost
                // with its connection (Conn::probe); connect again at once
                // (the protocol state remembers what to do differently).
                this.data.connect_failed.store(e != EAGAIN, Relaxed);
                e.to_errno()
            }
        };
        this.unlock_connect();
        xprt.wake_pending_tasks(status);
    }

    fn bc_max_payload(this: &XprtBox<Self>) -> usize {
        // As the C client: the smaller inline threshold, at most a page,
        // less the minimal transport header.
        let t = *this.data.proto.lock().thresholds();
        crate::backchannel::max_payload(&t)
    }

    fn bc_num_slots(_this: &XprtBox<Self>) -> u32 {
        BC_SLOTS
    }

    fn bc_setup(this: &XprtBox<Self>, min_reqs: u32) -> Result {
        this.data.bc.setup(min_reqs)
    }

    fn bc_send_reply(this: &XprtBox<Self>, rqst: BcTxRqst<'_>, sender: &mut Sender) -> Result {
        // As the C client's xprt_rdma_bc_send_reply: a reply takes a
        // credit like a Call (it lands in one of the server's Receives).
        let xprt = this.xprt();
        if !xprt.connected() {
            return Err(crate::compat::errno::enotconn());
        }
        if !rqst.get_cong() {
            return Err(crate::compat::errno::ebadslt());
        }
        let r = match sender.conn(&this.data) {
            Some(conn) => this
                .data
                .bc
                .send_reply(conn.id, &this.data.proto, &rqst, |xid| {
                    conn.send_bc_reply(&rqst, xid)
                }),
            None => Err(crate::compat::errno::enotconn()),
        };
        // Held only while sending, as the C client's backchannel task
        // does (it releases it as soon as the transmission is done): no
        // reply will return it, and a reconnect resets the window.
        rqst.put_cong();
        match r {
            Ok(()) => {
                rqst.mark_sent(rqst.call_len());
                Ok(())
            }
            Err(e) if e == crate::compat::errno::enobufs() => {
                this.data.stats.empty_sendq.fetch_add(1, Relaxed);
                xprt.wait_for_buffer_space();
                Err(EAGAIN)
            }
            // Too large: dropped for good (call_bc_transmit_status logs
            // it); the server's session layer sees no reply.
            Err(e) if e == crate::compat::errno::emsgsize() => Err(e),
            Err(e) if e == crate::compat::errno::enotconn() => Err(e),
            Err(e) => {
                if crate::compat::print::ratelimit() {
                    pr_err!(
                        "backchannel: posting a reply failed ({:?}), reconnecting\n",
                        e
                    );
                }
                Self::close(this, sender);
                Err(crate::compat::errno::enotconn())
            }
        }
    }

    fn bc_free_rqst(this: &XprtBox<Self>, rq: KBox<BcRqst>) {
        this.data.bc.put(rq);
    }

    fn bc_destroy(this: &XprtBox<Self>) {
        this.data.bc.destroy();
    }

    fn destroy(this: &XprtBox<Self>) {
        // The connection's handlers hold back-references: tear it down
        // before the transport goes away.
        Self::disconnect(this, Why::Destroy);
        this.data.bc.destroy();
        let free = this.data.slots.free_count();
        let all = this.data.slots.size();
        if free != all {
            pr_err!(
                "destroy: {} of {} request slots still in use\n",
                all - free,
                all
            );
        }
    }
}

/// RPC timeouts, as the C client (xprt_rdma.h): jiffies.
fn params<'a>(args: &'a XprtCreate<'a>) -> xprt_box::CreateParams<'a> {
    let hz = crate::sunrpc::HZ;
    xprt_box::CreateParams {
        args,
        max_reqs: DEFAULT_MAX_REQUESTS.into(),
        timeout: 60 * hz,
        bind_timeout: 60 * hz,
        reestablish_timeout: 5 * hz,
        idle_timeout: 5 * 60 * hz,
        max_payload: MAX_PAYLOAD,
    }
}

/// Creates a transport instance for `args` (not yet connected).
pub fn create(args: &XprtCreate<'_>) -> Result<NewXprt<RdmaXprt>> {
    XprtBox::<RdmaXprt>::create(&params(args), RdmaXprt::new(DEFAULT_MAX_REQUESTS)?)
}
