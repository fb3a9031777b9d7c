// SPDX-License-Identifier: GPL-2.0

//! The event loop: rdma_cm events, completions and the TCP connections to
//! nfsd, one thread, `poll(2)`. Each RDMA connection has its own TCP
//! connection to nfsd, its own registered buffer (Receive buffers, control
//! Send buffers, and one slot per Call in flight), and its own protocol
//! state (`proto::ConnProto`). A failure on one connection closes only
//! that connection.
//!
//! One job per file: this one has the configuration, a connection's state
//! and the buffer layout, the loop itself and the CM events (connection
//! setup and teardown); `rdma.rs` the completions, Receives and the
//! ordered Send queue under the client's credits; `nfsd.rs` Calls on
//! their way to nfsd (Read chunks pulled, forwarded over TCP) and nfsd's
//! records; `reply.rs` a reply laid out and sent to the client.

#![forbid(unsafe_code)]

mod nfsd;
mod out_records;
mod rdma;
mod reply;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rpcrdma_xdr::pvtdata;

use crate::nfs::CallHdr;
use crate::proto::call::Call;
use crate::proto::{log, ConnProto, Options};
use crate::splice::PageSender;
use crate::stats::{Path, Stats};
use crate::verbs::{self, cm_event, signals, CmEvent, EventChannel, Listener, Qp, SendOp};
use out_records::OutRecords;
use out_records::ZEROS;

/// Server configuration (command line).
#[derive(Clone, Debug)]
pub struct Config {
    /// RDMA-CM port.
    pub port: u16,
    /// nfsd's TCP address.
    pub nfsd: SocketAddr,
    /// Protocol switches.
    pub opts: Options,
    /// Where to write the counters.
    pub stats_file: Option<String>,
    /// Accept without RFC 8797 private data.
    pub no_private_data: bool,
    /// Disconnect after this many received messages (per connection).
    pub disconnect_after: Option<u64>,
    /// Drop the Nth reply (per connection).
    pub drop_nth: Option<u64>,
    /// Delay the Nth reply by this many milliseconds.
    pub delay_nth: Option<(u64, u64)>,
    /// Replace the Nth reply by a malformed message of this kind.
    pub malform_nth: Option<(u64, crate::malform::Kind)>,
    /// Log every message received and every reply planned.
    pub verbose: bool,
}

/// A hasher for the integer keys of the per-RPC maps (connection ids,
/// XIDs): one multiply, not SipHash, whose rounds cost on every lookup
/// on the TCG guests. The keys come from rdma_cm and from the client
/// under test, not from an adversary.
#[derive(Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

const K_RECV: u64 = 1;
const K_CTRL: u64 = 2;
const K_SLOT: u64 = 3;
const K_READ: u64 = 4;
/// A signaled RDMA Write (from the read area, on iWARP: `Qp::iwarp`);
/// its completion frees nothing (the reply's last Send's does).
const K_WRITE: u64 = 5;
const CTRL_SIZE: usize = 4096;
const NCTRL: usize = 16;
/// Room for the transport headers and inline parts of a reply that is not
/// continued.
const SEND_AREA: usize = 64 * 1024;
/// Bytes reserved per piece of a continued reply beyond its payload (its
/// header, with room for a Write list echo on the last).
const PIECE_OVERHEAD: usize = 64;
/// Bytes a `read(2)` from nfsd's socket is given room for at least
/// (when the record being read leaves it).
const TCP_READ: usize = 256 * 1024;
/// The read area holds this many of the largest records nfsd may send
/// (and `TCP_READ` more): a reply's RDMA Writes go straight from where
/// its record lies, which stays pinned until they completed; while all
/// the room is pinned, nfsd's socket is not read.
const AREA_RECORDS: usize = 6;
/// A reply's last Send is signaled (its completion frees the slot) when
/// fewer slots than this are free, or this many replies wait unsignaled;
/// otherwise it goes unsignaled and its slot is freed by the next
/// signaled completion (see `Conn::unsig`).
const SIGNAL_FREE_BELOW: usize = 2;
const MAX_UNSIGNALED: usize = 16;
/// ... or when this many work requests were queued since the last
/// signaled one (a provider may reclaim Send-queue entries only at a
/// signaled completion; the Send queue has 4096).
const MAX_UNSIGNALED_WRS: u64 = 1024;
/// Bytes of the pipe that carries Read chunk data to nfsd (`Conn::pages`):
/// 1 MiB, the most `/proc/sys/fs/pipe-max-size` allows by default.
const PIPE_SIZE: usize = 1024 * 1024;
/// Loop turns between two looks at the clock for the stats file.
const CLOCK_EVERY: u32 = 16;

fn wr(kind: u64, idx: usize) -> u64 {
    (kind << 48) | idx as u64
}

struct Layout {
    recv_size: usize,
    nrecv: usize,
    nslot: usize,
    slot_size: usize,
    send_area: usize,
    /// Bytes of the read area (`Qp::take_area`): room for
    /// `AREA_RECORDS` of the largest records nfsd may send, and a read.
    area: usize,
}

impl Layout {
    fn new(o: &Options) -> Self {
        let credits = usize::from(o.credits.max(1));
        // A reply continued in pieces of at least `piece` bytes (the
        // smallest client Receive is 1024 bytes) must fit whole.
        let piece = o.continue_over.unwrap_or(1024).clamp(4, 1024 - 36) & !3;
        // --tiny-pieces: three pieces more.
        let pieces = o.max_data / piece + 2 + if o.tiny_pieces { 3 } else { 0 };
        let send_area = SEND_AREA + o.max_data + pieces * PIECE_OVERHEAD;
        let slot_size = send_area + o.max_data + 64 * 1024;
        Self {
            recv_size: o.recv_size as usize,
            nrecv: o.receives(),
            nslot: credits + 4,
            slot_size,
            send_area,
            area: AREA_RECORDS * (slot_size - send_area + 4) + TCP_READ,
        }
    }
    fn recv_off(&self, i: usize) -> usize {
        i * self.recv_size
    }
    fn ctrl_off(&self, i: usize) -> usize {
        self.nrecv * self.recv_size + i * CTRL_SIZE
    }
    fn slot_off(&self, i: usize) -> usize {
        self.ctrl_off(NCTRL) + i * self.slot_size
    }
    fn data_off(&self, i: usize) -> usize {
        self.slot_off(i) + self.send_area
    }
    fn data_size(&self) -> usize {
        self.slot_size - self.send_area
    }
    fn total(&self) -> usize {
        self.slot_off(self.nslot)
    }
}

struct Slot {
    call: Call,
    hdr: Option<CallHdr>,
    /// The Call gives the session a backchannel on this connection: the
    /// callback program to probe once nfsd accepts it.
    bc_prog: Option<u32>,
}

/// A message waiting to go to the client, in order: every message takes
/// one of the client's v2 credits, and the pieces of a continued reply
/// must be consecutive; only a credit grant may go between them (it
/// carries no payload: Documentation/design-proto.rst, "The next
/// received message"), and does when the client's credits run out
/// mid-reply (`Server::flush_out`).
enum Out {
    /// A control message (error, CONNPROP, reverse Call, credit grant),
    /// copied into a control buffer when sent.
    Ctrl(Vec<u8>),
    /// A Send already laid out in a Call slot's send area; `true` if
    /// its credit word may be topped up when it leaves (not a
    /// deliberately malformed reply).
    Slot(SendOp, bool),
}

struct Conn {
    qp: Qp,
    proto: ConnProto,
    tcp: TcpStream,
    /// Records for nfsd not written yet (written with `writev(2)`, no
    /// copy into one buffer).
    tcp_out: OutRecords,
    /// Large pieces of Read chunk data go to nfsd through this pipe, by
    /// `vmsplice(2)` and `splice(2)`: the socket refers to the slot's
    /// pages, which stay unchanged until nfsd answered the Call (the
    /// slot is freed only then), so they are not copied.
    pages: PageSender,
    /// What nfsd sent and was not handled yet lies at
    /// `[tcp_lo, tcp_hi)` of the read area (`Qp::take_area`, registered,
    /// allocated once): records are handled where they lie, a large one
    /// read into place piece by piece (no copy into a reassembly
    /// buffer), and a reply's RDMA Writes go from there.
    tcp_lo: usize,
    tcp_hi: usize,
    /// Per slot: the range of the read area its reply's RDMA Writes read
    /// from (pinned until the slot is freed, after its Sends completed:
    /// the Send queue completes in order).
    pins: Vec<Option<std::ops::Range<usize>>>,
    /// No room to read into outside the pins: nfsd's socket is left out
    /// of `poll(2)` until a pin is released.
    tcp_stalled: bool,
    /// Send-queue work requests of this turn of the event loop, posted
    /// together (one `ibv_post_send`, one system call on rxe and siw)
    /// at its end.
    sq_pending: Vec<SendOp>,
    /// Work requests queued so far: the sequence number of the latest.
    sq_seq: u64,
    /// The sequence number of the latest signaled work request queued.
    sq_last_sig: u64,
    /// The sequence number of each slot's latest signaled work request
    /// (its RDMA Read, or its reply's last Send), and of each control
    /// Send's.
    slot_sig: Vec<u64>,
    ctrl_sig: [u64; NCTRL],
    /// Slots whose reply's last Send went unsignaled, with its sequence
    /// number: freed when a later signaled work request completes (the
    /// Send queue completes in order).
    unsig: VecDeque<(u64, usize)>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    ctrl_free: Vec<usize>,
    /// Messages waiting for a control buffer or the client's credits.
    outq: VecDeque<Out>,
    waiting: VecDeque<Call>,
    by_xid: IntMap<u32, usize>,
    received: u64,
    replies: u64,
    /// `--malform-nth` has malformed a reply of this connection.
    malformed: bool,
    /// Close the connection when the Sends of this slot completed (a
    /// malformed reply with `close_after`).
    close_on_slot: Option<usize>,
    closing: bool,
    peer: String,
}

impl Conn {
    /// Queues `ops` for the end of this turn (`Server::end_turn`), in
    /// order, noting the sequence number of each signaled one.
    fn queue(&mut self, ops: &[SendOp]) {
        for op in ops {
            self.sq_seq += 1;
            if let Some(id) = op.signal() {
                self.sq_last_sig = self.sq_seq;
                let idx = (id & 0xffff_ffff) as usize;
                match id >> 48 {
                    K_CTRL => {
                        if let Some(x) = self.ctrl_sig.get_mut(idx) {
                            *x = self.sq_seq;
                        }
                    }
                    K_SLOT | K_READ => {
                        if let Some(x) = self.slot_sig.get_mut(idx) {
                            *x = self.sq_seq;
                        }
                    }
                    _ => {}
                }
            }
            self.sq_pending.push(*op);
        }
    }

    /// Queues the last Send of slot `s`'s reply: unsignaled while enough
    /// slots are free and few replies wait unsignaled (no completion, so
    /// no wakeup of the responder, per reply), else signaled; always
    /// signaled when the reply pins part of the read area (released
    /// promptly). With fewer
    /// than `SIGNAL_FREE_BELOW` free slots it is always signaled, so a
    /// Call waiting for a slot always has a completion coming that frees
    /// one (every slot held by an unsignaled reply was sent before it).
    fn queue_last_send(&mut self, mut op: SendOp, s: usize) {
        let must = self.close_on_slot == Some(s)
            || self.pins.get(s).is_some_and(|p| p.is_some())
            || self.free.len() < SIGNAL_FREE_BELOW
            || self.unsig.len() + 1 >= MAX_UNSIGNALED
            || self.sq_seq - self.sq_last_sig + 1 >= MAX_UNSIGNALED_WRS;
        if !must {
            if let SendOp::Send { signal, .. } = &mut op {
                *signal = None;
            }
            self.unsig.push_back((self.sq_seq + 1, s));
        }
        self.queue(&[op]);
    }

    /// The sequence number of the signaled work request `wr_id`.
    fn signaled_seq(&self, wr_id: u64) -> Option<u64> {
        let idx = (wr_id & 0xffff_ffff) as usize;
        match wr_id >> 48 {
            K_CTRL => self.ctrl_sig.get(idx).copied(),
            K_SLOT | K_READ => self.slot_sig.get(idx).copied(),
            _ => None,
        }
    }

    /// The slots of unsignaled replies sent before the work request with
    /// sequence number `seq`, which has completed: they are done too.
    fn retire_before(&mut self, seq: u64) -> Vec<usize> {
        let mut done = Vec::new();
        while let Some(&(q, s)) = self.unsig.front() {
            if q >= seq {
                break;
            }
            self.unsig.pop_front();
            done.push(s);
        }
        done
    }
}

struct Delayed {
    due: Instant,
    conn: usize,
    slot: usize,
    rec: Vec<u8>,
}

/// The responder.
pub struct Server {
    cfg: Config,
    layout: Layout,
    ch: EventChannel,
    _listener: Listener,
    conns: IntMap<usize, Conn>,
    stats: Stats,
    dirty: bool,
    last_write: Instant,
    delayed: Vec<Delayed>,
}

impl Server {
    /// Listens on the configured port.
    pub fn new(cfg: Config) -> io::Result<Self> {
        let ch = EventChannel::new()?;
        let listener = Listener::new(&ch, cfg.port)?;
        let layout = Layout::new(&cfg.opts);
        log::info(format_args!(
            "listening on RDMA-CM port {} (forwarding to nfsd at {}){}",
            cfg.port,
            cfg.nfsd,
            if cfg.opts.v1_only {
                ", version 1 only"
            } else {
                ""
            }
        ));
        Ok(Self {
            cfg,
            layout,
            ch,
            _listener: listener,
            conns: IntMap::default(),
            stats: Stats::default(),
            dirty: true,
            last_write: Instant::now(),
            delayed: Vec::new(),
        })
    }

    /// Serves until SIGTERM/SIGINT.
    ///
    /// One thread: every turn waits in `poll(2)` for the rdma_cm channel,
    /// each connection's completion channel and its socket to nfsd,
    /// handles what is ready, then posts the turn's Send-queue work
    /// requests of each connection in one chain and writes the Calls it
    /// forwarded to nfsd in one `write(2)` (see `end_turn`).
    pub fn run(&mut self) -> io::Result<()> {
        signals::install();
        self.write_stats();
        let mut fds = Vec::new();
        let mut keys = Vec::new();
        let mut turns = 0u32;
        while !signals::TERM.load(Ordering::Relaxed) {
            fds.clear();
            keys.clear();
            fds.push((self.ch.fd(), libc::POLLIN));
            for (&k, c) in &self.conns {
                let out = if c.tcp_out.is_empty() {
                    0
                } else {
                    libc::POLLOUT
                };
                fds.push((c.qp.comp_fd(), libc::POLLIN));
                // a negative fd is not polled (`tcp_stalled`; what it
                // must write waits with it)
                let fd = if c.tcp_stalled { -1 } else { tcp_fd(&c.tcp) };
                fds.push((fd, libc::POLLIN | out));
                keys.push(k);
            }
            // Counters changed: written within about 0.5 s (below).
            let mut timeout = if self.dirty { 250i32 } else { 500 };
            if let Some(d) = self.delayed.iter().map(|d| d.due).min() {
                let ms = d.saturating_duration_since(Instant::now()).as_millis();
                timeout = timeout.min(ms as i32);
            }
            let rev = verbs::poll_fds(&fds, timeout);
            let idle = rev.iter().all(|&r| r == 0);
            if rev[0] != 0 {
                while let Some(ev) = self.ch.get() {
                    self.cm_event(ev);
                }
            }
            for (i, k) in keys.iter().enumerate() {
                if !self.conns.contains_key(k) {
                    continue;
                }
                if rev[1 + 2 * i] != 0 {
                    self.completions(*k);
                }
                if rev[2 + 2 * i] != 0 {
                    self.tcp_io(*k);
                }
            }
            if !self.delayed.is_empty() {
                self.run_timers();
            }
            self.end_turn();
            // The clock only every CLOCK_EVERY turns or after a timeout:
            // on the testbed's TCG guests a clock read is not free.
            turns = turns.wrapping_add(1);
            let look = idle || turns.is_multiple_of(CLOCK_EVERY);
            if signals::USR1.swap(false, Ordering::Relaxed)
                || (self.dirty && look && self.last_write.elapsed() > Duration::from_millis(500))
            {
                self.write_stats();
            }
        }
        log::info(format_args!("exiting"));
        self.conns.clear();
        self.write_stats();
        eprint!("{}", self.stats.render());
        Ok(())
    }

    /// The end of a turn of the event loop: each connection's queued
    /// Send-queue work requests posted as one chain (RDMA Reads of new
    /// Calls, RDMA Writes and Sends of replies, control messages, in the
    /// order queued), then the Calls forwarded to nfsd written.
    fn end_turn(&mut self) {
        let mut failed = Vec::new();
        for (&k, c) in &mut self.conns {
            if c.sq_pending.is_empty() {
                continue;
            }
            let r = c.qp.post(&c.sq_pending);
            c.sq_pending.clear();
            if let Err(e) = r {
                failed.push((k, e));
            }
        }
        for (k, e) in failed {
            self.close(k, &format!("post send: {e}"));
        }
        let flush: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.tcp_out.is_empty())
            .map(|(&k, _)| k)
            .collect();
        for k in flush {
            self.tcp_flush(k);
        }
    }

    fn write_stats(&mut self) {
        self.dirty = false;
        self.last_write = Instant::now();
        if let Some(f) = &self.cfg.stats_file {
            let tmp = format!("{f}.tmp");
            if std::fs::write(&tmp, self.stats.render()).is_ok() {
                let _ = std::fs::rename(&tmp, f);
            }
        }
    }

    fn cm_event(&mut self, ev: CmEvent) {
        self.dirty = true;
        match ev.kind {
            cm_event::RDMA_CM_EVENT_CONNECT_REQUEST => self.connect_request(ev),
            cm_event::RDMA_CM_EVENT_ESTABLISHED => {
                if let Some(c) = self.conns.get(&ev.id) {
                    log::info(format_args!("connection {} established", c.peer));
                }
            }
            cm_event::RDMA_CM_EVENT_DISCONNECTED
            | cm_event::RDMA_CM_EVENT_CONNECT_ERROR
            | cm_event::RDMA_CM_EVENT_UNREACHABLE
            | cm_event::RDMA_CM_EVENT_REJECTED
            | cm_event::RDMA_CM_EVENT_DEVICE_REMOVAL => {
                if let Some(c) = self.conns.remove(&ev.id) {
                    self.stats.connections_closed += 1;
                    log::info(format_args!(
                        "connection {} closed (event {}, {} messages received)",
                        c.peer, ev.kind, c.received
                    ));
                    self.delayed.retain(|d| d.conn != ev.id);
                    if ev.kind != cm_event::RDMA_CM_EVENT_DISCONNECTED {
                        c.qp.disconnect();
                    }
                }
            }
            _ => {}
        }
    }

    fn connect_request(&mut self, ev: CmEvent) {
        let peer_pd = pvtdata::decode(&ev.private_data);
        let client = peer_pd.or_v1_defaults();
        let qp = match Qp::new(
            ev.id,
            self.layout.total(),
            self.layout.area,
            4096,
            self.layout.nrecv as u32 + 4,
        ) {
            Ok(q) => q,
            Err(e) => {
                log::warn(format_args!("cannot set up a connection: {e}"));
                self.stats.connections_rejected += 1;
                verbs::reject(ev.id);
                return;
            }
        };
        let tcp = match TcpStream::connect_timeout(&self.cfg.nfsd, Duration::from_secs(5)) {
            Ok(t) => t,
            Err(e) => {
                log::warn(format_args!(
                    "cannot connect to nfsd at {}: {e}",
                    self.cfg.nfsd
                ));
                self.stats.connections_rejected += 1;
                qp.reject();
                return;
            }
        };
        let _ = tcp.set_nonblocking(true);
        let _ = tcp.set_nodelay(true);
        let pages = match PageSender::new(PIPE_SIZE) {
            Ok(p) => p,
            Err(e) => {
                log::warn(format_args!("cannot create a pipe: {e}"));
                self.stats.connections_rejected += 1;
                qp.reject();
                return;
            }
        };
        for i in 0..self.layout.nrecv {
            if let Err(e) = qp.post_recv(
                wr(K_RECV, i),
                self.layout.recv_off(i),
                self.layout.recv_size,
            ) {
                log::warn(format_args!("post_recv: {e}"));
                self.stats.connections_rejected += 1;
                qp.reject();
                return;
            }
        }
        let proto = ConnProto::new(self.cfg.opts.clone(), client);
        let mine = proto.our_private_data().to_bytes().unwrap_or_default();
        let pvt: &[u8] = if self.cfg.no_private_data { &[] } else { &mine };
        let depth = ev.responder_resources.clamp(1, 16);
        if let Err(e) = qp.accept(pvt, depth, ev.initiator_depth) {
            log::warn(format_args!("{e}"));
            self.stats.connections_rejected += 1;
            return;
        }
        self.stats.connections += 1;
        let peer = format!("#{}", self.stats.connections);
        log::info(format_args!(
            "connection {peer}: client private data {:?} (send {} recv {} remote-invalidate {}){}",
            match peer_pd {
                pvtdata::Peer::Valid(_) => "valid",
                pvtdata::Peer::Absent => "absent",
                pvtdata::Peer::Invalid(_) => "invalid",
            },
            client.send_size,
            client.recv_size,
            client.remote_invalidate,
            if qp.read_sink_remote_write() {
                "; iWARP: RDMA Read sinks registered with remote write"
            } else {
                ""
            }
        ));
        let c = Conn {
            qp,
            proto,
            tcp,
            tcp_out: OutRecords::default(),
            pages,
            tcp_lo: 0,
            tcp_hi: 0,
            pins: vec![None; self.layout.nslot],
            tcp_stalled: false,
            sq_pending: Vec::new(),
            sq_seq: 0,
            sq_last_sig: 0,
            slot_sig: vec![0; self.layout.nslot],
            ctrl_sig: [0; NCTRL],
            unsig: VecDeque::new(),
            slots: (0..self.layout.nslot).map(|_| None).collect(),
            free: (0..self.layout.nslot).rev().collect(),
            ctrl_free: (0..NCTRL).collect(),
            outq: VecDeque::new(),
            waiting: VecDeque::new(),
            by_xid: IntMap::default(),
            received: 0,
            replies: 0,
            malformed: false,
            close_on_slot: None,
            closing: false,
            peer,
        };
        self.conns.insert(ev.id, c);
    }

    fn close(&mut self, k: usize, why: &str) {
        if let Some(c) = self.conns.get_mut(&k) {
            if !c.closing {
                log::warn(format_args!("closing connection {}: {why}", c.peer));
                c.closing = true;
                c.qp.disconnect();
            }
        }
    }
}

fn tcp_fd(t: &TcpStream) -> i32 {
    use std::os::fd::AsRawFd;
    t.as_raw_fd()
}

/// Which reply path a plan took (re-exported for tests).
pub type ReplyPath = Path;
