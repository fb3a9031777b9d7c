// SPDX-License-Identifier: GPL-2.0

//! The event loop: rdma_cm events, completions and the TCP connections to
//! nfsd, one thread, `poll(2)`. Each RDMA connection has its own TCP
//! connection to nfsd, its own registered buffer (Receive buffers, control
//! Send buffers, and one slot per Call in flight), and its own protocol
//! state (`proto::ConnProto`). A failure on one connection closes only
//! that connection.

#![forbid(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rpcrdma_xdr::pvtdata;

use crate::nfs::{self, CallHdr};
use crate::proto::{log, Action, Call, ConnProto, Options, ReplyPlan};
use crate::stats::{Path, Stats};
use crate::verbs::{self, cm_event, signals, CmEvent, EventChannel, Listener, Qp, SendOp, Wc};

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

const K_RECV: u64 = 1;
const K_CTRL: u64 = 2;
const K_SLOT: u64 = 3;
const K_READ: u64 = 4;
const CTRL_SIZE: usize = 4096;
const NCTRL: usize = 16;
/// Room for the transport headers and inline parts of a reply that is not
/// continued.
const SEND_AREA: usize = 64 * 1024;
/// Bytes reserved per piece of a continued reply beyond its payload (its
/// header, with room for a Write list echo on the last).
const PIECE_OVERHEAD: usize = 64;

fn wr(kind: u64, idx: usize) -> u64 {
    (kind << 48) | idx as u64
}

struct Layout {
    recv_size: usize,
    nrecv: usize,
    nslot: usize,
    slot_size: usize,
    send_area: usize,
}

impl Layout {
    fn new(o: &Options) -> Self {
        let credits = usize::from(o.credits.max(1));
        // A reply continued in pieces of at least `piece` bytes (the
        // smallest client Receive is 1024 bytes) must fit whole.
        let piece = o.continue_over.unwrap_or(1024).clamp(4, 1024 - 36) & !3;
        let send_area = SEND_AREA + o.max_data + (o.max_data / piece + 2) * PIECE_OVERHEAD;
        Self {
            recv_size: o.recv_size as usize,
            nrecv: credits + 8,
            nslot: credits + 4,
            slot_size: send_area + o.max_data + 64 * 1024,
            send_area,
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
/// must be consecutive.
enum Out {
    /// A control message (error, CONNPROP, reverse Call, credit grant),
    /// copied into a control buffer when sent.
    Ctrl(Vec<u8>),
    /// A Send already laid out in a Call slot's send area.
    Slot(SendOp),
}

/// True for an asynchronous credit grant (v2 `RDMA2_NOMSG`, XID 0).
fn is_grant(b: &[u8]) -> bool {
    nfs::word_at(b, 0) == Some(0) && nfs::word_at(b, 4) == Some(2) && nfs::word_at(b, 12) == Some(1)
}

struct Conn {
    qp: Qp,
    proto: ConnProto,
    tcp: TcpStream,
    tcp_in: Vec<u8>,
    tcp_out: Vec<u8>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    ctrl_free: Vec<usize>,
    /// Messages waiting for a control buffer or the client's credits.
    outq: VecDeque<Out>,
    waiting: VecDeque<Call>,
    by_xid: HashMap<u32, usize>,
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
    conns: HashMap<usize, Conn>,
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
            conns: HashMap::new(),
            stats: Stats::default(),
            dirty: true,
            last_write: Instant::now(),
            delayed: Vec::new(),
        })
    }

    /// Serves until SIGTERM/SIGINT.
    pub fn run(&mut self) -> io::Result<()> {
        signals::install();
        self.write_stats();
        while !signals::TERM.load(Ordering::Relaxed) {
            let mut fds = vec![(self.ch.fd(), libc::POLLIN)];
            let mut keys = Vec::new();
            for (&k, c) in &self.conns {
                let out = if c.tcp_out.is_empty() {
                    0
                } else {
                    libc::POLLOUT
                };
                fds.push((c.qp.comp_fd(), libc::POLLIN));
                fds.push((tcp_fd(&c.tcp), libc::POLLIN | out));
                keys.push(k);
            }
            let mut timeout = 500i32;
            if let Some(d) = self.delayed.iter().map(|d| d.due).min() {
                let ms = d.saturating_duration_since(Instant::now()).as_millis();
                timeout = timeout.min(ms as i32);
            }
            let rev = verbs::poll_fds(&fds, timeout);
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
            self.run_timers();
            if signals::USR1.swap(false, Ordering::Relaxed)
                || (self.dirty && self.last_write.elapsed() > Duration::from_millis(500))
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
            tcp_in: Vec::new(),
            tcp_out: Vec::new(),
            slots: (0..self.layout.nslot).map(|_| None).collect(),
            free: (0..self.layout.nslot).rev().collect(),
            ctrl_free: (0..NCTRL).collect(),
            outq: VecDeque::new(),
            waiting: VecDeque::new(),
            by_xid: HashMap::new(),
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

    fn completions(&mut self, k: usize) {
        let mut wcs: Vec<Wc> = Vec::new();
        if let Some(c) = self.conns.get(&k) {
            c.qp.poll(&mut wcs);
        }
        for w in wcs {
            self.dirty = true;
            let kind = w.wr_id >> 48;
            let idx = (w.wr_id & 0xffff_ffff) as usize;
            if w.status != 0 {
                let closing = self.conns.get(&k).is_some_and(|c| c.closing);
                if !closing {
                    self.close(
                        k,
                        &format!("completion error status {} (wr kind {kind})", w.status),
                    );
                }
                if kind == K_CTRL {
                    if let Some(c) = self.conns.get_mut(&k) {
                        c.ctrl_free.push(idx);
                    }
                }
                continue;
            }
            match kind {
                K_RECV => self.on_recv(k, idx, w.byte_len as usize),
                K_CTRL => {
                    if let Some(c) = self.conns.get_mut(&k) {
                        c.ctrl_free.push(idx);
                    }
                    self.flush_out(k);
                }
                K_SLOT => {
                    let close = match self.conns.get_mut(&k) {
                        Some(c) if c.close_on_slot == Some(idx) => {
                            c.close_on_slot = None;
                            true
                        }
                        _ => false,
                    };
                    self.free_slot(k, idx);
                    if close {
                        self.close(k, "fault injection: closed mid-sequence");
                    }
                }
                K_READ => self.read_done(k, idx),
                _ => {}
            }
        }
    }

    fn on_recv(&mut self, k: usize, idx: usize, len: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        if c.closing {
            return;
        }
        let off = self.layout.recv_off(idx);
        let data = c.qp.buf()[off..off + len.min(self.layout.recv_size)].to_vec();
        if let Err(e) = c.qp.post_recv(wr(K_RECV, idx), off, self.layout.recv_size) {
            self.close(k, &format!("post_recv: {e}"));
            return;
        }
        c.received += 1;
        if self.cfg.verbose {
            let w: Vec<String> = data
                .chunks(4)
                .take(12)
                .map(|x| format!("{:08x}", nfs::word_at(x, 0).unwrap_or(0)))
                .collect();
            log::info(format_args!(
                "{} recv {} bytes: {}",
                c.peer,
                data.len(),
                w.join(" ")
            ));
        }
        let actions = c.proto.on_receive(&data, &mut self.stats);
        if self.cfg.disconnect_after == Some(c.received) {
            self.stats.disconnects_injected += 1;
            self.close(k, "fault injection: disconnect after N messages");
            return;
        }
        for a in actions {
            match a {
                Action::Send(b) => self.send_ctrl(k, b),
                Action::Call(call) => self.start_call(k, call),
                Action::Nothing => {}
                Action::ToNfsd(reply) => {
                    if let Some(c) = self.conns.get_mut(&k) {
                        c.tcp_out.extend_from_slice(&nfs::record(&reply));
                    }
                    self.tcp_flush(k);
                }
                Action::Disconnect(why) => self.close(k, why),
            }
        }
        // The message may have returned credits something waits for.
        self.flush_out(k);
    }

    fn send_ctrl(&mut self, k: usize, b: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        c.outq.push_back(Out::Ctrl(b));
        self.flush_out(k);
    }

    /// Sends what waits, in order, while the client has credits (and a
    /// control buffer is free for a control message).
    fn flush_out(&mut self, k: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        self.stats.client_credit_limit = u64::from(c.proto.client_limit());
        while let Some(front) = c.outq.front() {
            let grant = matches!(front, Out::Ctrl(b) if is_grant(b));
            if !c.proto.may_send_client(grant) {
                self.stats.credit_waits += 1;
                break;
            }
            let op = match front {
                Out::Ctrl(b) => {
                    let Some(i) = c.ctrl_free.pop() else {
                        break;
                    };
                    let n = b.len().min(CTRL_SIZE);
                    let off = self.layout.ctrl_off(i);
                    c.qp.buf_mut()[off..off + n].copy_from_slice(&b[..n]);
                    count_sent(&mut self.stats, b);
                    SendOp::Send {
                        off,
                        len: n,
                        inv: None,
                        signal: Some(wr(K_CTRL, i)),
                    }
                }
                Out::Slot(op) => *op,
            };
            c.outq.pop_front();
            c.proto.sent_client();
            if let Err(e) = c.qp.post(&[op]) {
                if let SendOp::Send {
                    signal: Some(id), ..
                } = op
                {
                    if id >> 48 == K_CTRL {
                        c.ctrl_free.push((id & 0xffff_ffff) as usize);
                    }
                }
                let m = format!("post send: {e}");
                self.close(k, &m);
                return;
            }
        }
    }

    fn start_call(&mut self, k: usize, call: Call) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(s) = c.free.pop() else {
            c.waiting.push_back(call);
            return;
        };
        if call.reads.is_empty() {
            let inline = call.inline.clone();
            c.slots[s] = Some(Slot {
                call,
                hdr: None,
                bc_prog: None,
            });
            self.forward(k, s, inline);
            return;
        }
        self.stats.read_chunk_calls += 1;
        if call.reads.first().is_some_and(|r| r.position == 0) {
            self.stats.position_zero_calls += 1;
        }
        let base = self.layout.data_off(s);
        let mut ops = Vec::new();
        let mut at = 0usize;
        let n = call.reads.len();
        for (i, r) in call.reads.iter().enumerate() {
            let len = r.target.length as usize;
            ops.push(SendOp::Read {
                off: base + at,
                len,
                rkey: r.target.handle,
                addr: r.target.offset,
                signal: (i + 1 == n).then_some(wr(K_READ, s)),
            });
            at += len;
        }
        self.stats.bytes_read_chunk += at as u64;
        let xid = call.xid;
        c.slots[s] = Some(Slot {
            call,
            hdr: None,
            bc_prog: None,
        });
        if at > self.layout.data_size() {
            let e = c
                .proto
                .call_error(xid, rpcrdma_xdr::v2::ERR_SYSTEM, &mut self.stats);
            self.send_ctrl(k, e);
            self.free_slot(k, s);
            return;
        }
        if let Err(e) = c.qp.post(&ops) {
            self.close(k, &format!("post RDMA Read: {e}"));
        }
    }

    fn read_done(&mut self, k: usize, s: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_ref() else {
            return;
        };
        let base = self.layout.data_off(s);
        let total = slot.call.read_len() as usize;
        let data = &c.qp.buf()[base..base + total];
        match slot.call.splice(data) {
            Some(full) => self.forward(k, s, full),
            None => {
                let xid = slot.call.xid;
                log::warn(format_args!(
                    "Read chunk positions do not fit the Call (xid {xid:#x})"
                ));
                self.stats.malformed += 1;
                let e = c
                    .proto
                    .call_error(xid, rpcrdma_xdr::v2::ERR_BAD_XDR, &mut self.stats);
                self.send_ctrl(k, e);
                self.free_slot(k, s);
            }
        }
    }

    fn forward(&mut self, k: usize, s: usize, rpc: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_mut() else {
            return;
        };
        let hdr = nfs::parse_call(&rpc);
        let xid = slot.call.xid;
        if hdr.map(|h| h.xid) != Some(xid) || c.by_xid.contains_key(&xid) {
            log::warn(format_args!(
                "not an RPC Call, or its XID is in use (xid {xid:#x})"
            ));
            self.stats.malformed += 1;
            let e = c
                .proto
                .call_error(xid, rpcrdma_xdr::v2::ERR_BAD_XDR, &mut self.stats);
            self.send_ctrl(k, e);
            self.free_slot(k, s);
            return;
        }
        slot.hdr = hdr;
        if c.proto.opts.probe_callbacks {
            slot.bc_prog = nfs::backchannel_request(&rpc);
        }
        c.by_xid.insert(xid, s);
        c.tcp_out.extend_from_slice(&nfs::record(&rpc));
        self.stats.calls_forwarded += 1;
        self.tcp_flush(k);
    }

    fn tcp_flush(&mut self, k: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        while !c.tcp_out.is_empty() {
            match c.tcp.write(&c.tcp_out) {
                Ok(0) => break,
                Ok(n) => {
                    c.tcp_out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    let m = format!("nfsd connection: {e}");
                    self.close(k, &m);
                    return;
                }
            }
        }
    }

    fn tcp_io(&mut self, k: usize) {
        self.tcp_flush(k);
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let mut buf = [0u8; 65536];
        let mut eof = false;
        loop {
            match c.tcp.read(&mut buf) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => c.tcp_in.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        let max = self.layout.data_size();
        let recs = match nfs::take_records(&mut c.tcp_in, max) {
            Ok(r) => r,
            Err(n) => {
                let m = format!("nfsd sent a {n}-byte record");
                self.close(k, &m);
                return;
            }
        };
        for rec in recs {
            self.nfsd_record(k, rec);
        }
        if eof {
            self.close(k, "nfsd closed the TCP connection");
        }
    }

    fn nfsd_record(&mut self, k: usize, rec: Vec<u8>) {
        self.dirty = true;
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let xid = nfs::word_at(&rec, 0).unwrap_or(0);
        if nfs::word_at(&rec, 4) == Some(nfs::RPC_CALL) {
            match c.proto.reverse_call(&rec) {
                Some(m) => {
                    self.stats.reverse_calls_sent += 1;
                    log::info(format_args!(
                        "{}: callback Call from nfsd (xid {xid:#x}, {} bytes) relayed",
                        c.peer,
                        rec.len()
                    ));
                    self.send_ctrl(k, m);
                }
                None => {
                    self.stats.reverse_calls_dropped += 1;
                    log::info(format_args!(
                        "callback Call from nfsd (xid {xid:#x}) not relayed"
                    ));
                }
            }
            return;
        }
        let Some(s) = c.by_xid.remove(&xid) else {
            log::warn(format_args!("reply from nfsd for unknown xid {xid:#x}"));
            return;
        };
        c.replies += 1;
        let n = c.replies;
        // nfsd gave the session its backchannel here: probe it after the
        // reply (as nfsd did for NFSv4.0 and early NFSv4.1).
        let probe = c.slots[s]
            .as_ref()
            .and_then(|sl| sl.bc_prog)
            .filter(|_| nfs::reply_ok(&rec, true));
        if self.cfg.drop_nth == Some(n) {
            self.stats.replies_dropped += 1;
            c.proto.forget_call();
            log::info(format_args!(
                "fault injection: dropping reply {n} (xid {xid:#x})"
            ));
            self.free_slot(k, s);
            return;
        }
        if let Some((nth, ms)) = self.cfg.delay_nth {
            if nth == n {
                self.stats.replies_delayed += 1;
                log::info(format_args!(
                    "fault injection: delaying reply {n} by {ms} ms"
                ));
                self.delayed.push(Delayed {
                    due: Instant::now() + Duration::from_millis(ms),
                    conn: k,
                    slot: s,
                    rec,
                });
                return;
            }
        }
        self.reply(k, s, rec);
        if let Some(prog) = probe {
            self.probe_callbacks(k, prog);
        }
    }

    /// Sends the client a CB_NULL of callback program `prog`.
    fn probe_callbacks(&mut self, k: usize, prog: u32) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        match c.proto.cb_null(prog) {
            Some(m) => {
                self.stats.cb_null_sent += 1;
                log::info(format_args!(
                    "{}: CB_NULL probe of program {prog:#x} sent",
                    c.peer
                ));
                self.send_ctrl(k, m);
            }
            None => log::info(format_args!(
                "{}: CB_NULL probe of program {prog:#x} does not fit the client's receive size",
                c.peer
            )),
        }
    }

    fn run_timers(&mut self) {
        let now = Instant::now();
        let (due, rest): (Vec<Delayed>, Vec<Delayed>) = std::mem::take(&mut self.delayed)
            .into_iter()
            .partition(|d| d.due <= now);
        self.delayed = rest;
        for d in due {
            self.reply(d.conn, d.slot, d.rec);
        }
    }

    fn reply(&mut self, k: usize, s: usize, rec: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_ref() else {
            return;
        };
        let cap: usize = slot
            .call
            .writes
            .first()
            .map_or(0, |w| w.iter().map(|x| x.length as usize).sum());
        let ddp = match slot.hdr {
            Some(h) if cap > 0 => nfs::ddp_range(&h, &rec, cap),
            _ => None,
        };
        let mut plan: ReplyPlan =
            c.proto
                .plan_reply(&slot.call, &rec, ddp.clone(), &mut self.stats);
        if let Some((nth, kind)) = self.cfg.malform_nth {
            // The Nth reply, or for a kind that rewrites chunk lists the
            // first reply from the Nth on that moves data by RDMA Write.
            let due = c.replies >= nth
                && !c.malformed
                && (!kind.needs_chunks() || !plan.writes.is_empty());
            if due {
                c.malformed = true;
                self.stats.malformed_sent += 1;
                log::info(format_args!(
                    "fault injection: malformed reply {} (xid {:#010x}): {kind:?}",
                    c.replies, slot.call.xid
                ));
                crate::malform::apply(kind, &mut plan);
                if plan.close_after {
                    c.close_on_slot = Some(s);
                }
            }
        }
        if self.cfg.verbose {
            log::info(format_args!(
                "{} reply xid {:#x}: {} bytes, ddp {:?}, path {:?}, {} writes, {} sends ({:?} bytes), invalidate {:?}",
                c.peer,
                slot.call.xid,
                rec.len(),
                ddp,
                plan.path,
                plan.writes.len(),
                plan.sends.len(),
                plan.sends.iter().map(|b| b.len()).collect::<Vec<_>>(),
                plan.invalidate
            ));
        }
        let base = self.layout.data_off(s);
        let sbase = self.layout.slot_off(s);
        let total_send: usize = plan.sends.iter().map(|b| b.len()).sum();
        if rec.len() > self.layout.data_size() || total_send > self.layout.send_area {
            let e = c
                .proto
                .call_error(slot.call.xid, rpcrdma_xdr::v2::ERR_SYSTEM, &mut self.stats);
            self.send_ctrl(k, e);
            self.free_slot(k, s);
            return;
        }
        c.qp.buf_mut()[base..base + rec.len()].copy_from_slice(&rec);
        let mut ops = Vec::new();
        for w in &plan.writes {
            ops.push(SendOp::Write {
                off: base + w.src.start,
                len: w.src.len(),
                rkey: w.rkey,
                addr: w.addr,
            });
        }
        let mut at = sbase;
        let n = plan.sends.len();
        for (i, b) in plan.sends.iter().enumerate() {
            c.qp.buf_mut()[at..at + b.len()].copy_from_slice(b);
            let last = i + 1 == n;
            // After the RDMA Writes (posted first, in order on the QP),
            // when the client's credits allow.
            c.outq.push_back(Out::Slot(SendOp::Send {
                off: at,
                len: b.len(),
                inv: if last { plan.invalidate } else { None },
                signal: last.then_some(wr(K_SLOT, s)),
            }));
            at += b.len();
            count_sent(&mut self.stats, b);
        }
        if plan.invalidate.is_some() {
            self.stats.invalidations += 1;
        }
        if let Some(p) = plan.path {
            let inline = total_send;
            self.stats.count_reply(p, inline, plan.written);
        }
        if let Err(e) = c.qp.post(&ops) {
            self.close(k, &format!("post reply: {e}"));
            return;
        }
        if n == 0 {
            self.free_slot(k, s);
            return;
        }
        self.flush_out(k);
    }

    fn free_slot(&mut self, k: usize, s: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        if c.slots[s].take().is_none() {
            return;
        }
        c.free.push(s);
        if let Some(call) = c.waiting.pop_front() {
            self.start_call(k, call);
        }
    }
}

fn count_sent(st: &mut Stats, b: &[u8]) {
    st.msgs_sent += 1;
    match nfs::word_at(b, 12) {
        Some(0) => st.msg_sent += 1,
        Some(1) => st.nomsg_sent += 1,
        _ => {}
    }
}

fn tcp_fd(t: &TcpStream) -> i32 {
    use std::os::fd::AsRawFd;
    t.as_raw_fd()
}

/// Which reply path a plan took (re-exported for tests).
pub type ReplyPath = Path;
