// SPDX-License-Identifier: GPL-2.0

//! End-to-end model tests: a client driven the way the transport glue
//! drives [`Transport`] (SUNRPC's cwnd emulated, Receives counted) talks
//! through the codec to server models, with random interleavings. Checks
//! that every RPC completes, that neither side's Receives are ever
//! overrun, and that negotiation ends where it must without looping.

mod common;
use common::Rng;
use std::collections::VecDeque;

use rpcrdma_proto::credits::CALL_RING;
use rpcrdma_proto::xdr::chunk::ChunkLists;
use rpcrdma_proto::xdr::header::{self, Body, Credits, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_proto::xdr::pvtdata::{Peer, PrivateData};
use rpcrdma_proto::xdr::v2;
use rpcrdma_proto::{CallError, Config, Errno, Phase, Reply, Transport, VersionPolicy};

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.u64() % n as u64) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Linux svcrdma: v1 only, answers v2 with a v1-framed ERR_VERS that
    /// copies vers = 2.
    Svcrdma,
    /// A v1-only server that writes vers = 1 in its ERR_VERS.
    V1Echo,
    /// A server that supports no version we speak (ERR_VERS 3..=4).
    NoCommon,
    /// v2 with exact credit returns (our reading of -00).
    V2Exact,
    /// v2 that repeats granted == max in every reply (v1 habit).
    V2Echo,
    /// v2 that returns nothing in its replies' words (a zero low half:
    /// only rule 3's floor) and refreshes with asynchronous grants.
    V2Lazy,
    /// v2 of the other reading of -00 §4.3.1: the low half is its grant
    /// (never zero), the high half zero (`V2Echo` is the same reading
    /// with the grant in both halves).
    V2TotalZeroMax,
}

struct Server {
    kind: Kind,
    /// Receive credits the server grants (its posted Receives).
    limit: u32,
    /// Calls received and not answered yet: (xid, version).
    pending: Vec<(u32, Protocol)>,
    /// The limit the client has been told (1 until the first grant).
    told: u32,
    /// Messages to the client, in RC order.
    out: VecDeque<Vec<u8>>,
    /// Version settled on (for the "same version" rule).
    version: Option<Protocol>,
    /// v2: the client's asynchronous credit grants received whose credit
    /// has not been returned yet (their Receives were reposted at once).
    owed: u32,
    /// Client grants received.
    grants: u32,
}

impl Server {
    fn new(kind: Kind, limit: u32) -> Self {
        Server {
            kind,
            limit,
            pending: Vec::new(),
            told: 1,
            out: VecDeque::new(),
            version: None,
            owed: 0,
            grants: 0,
        }
    }

    /// The client's asynchronous credit grant arrives (`RDMA2_NOMSG`, XID
    /// 0, empty lists): -00 lets it use one Receive beyond the credits
    /// granted, so it never overruns; its credit is returned with the
    /// next reply.
    fn on_grant(&mut self, bytes: &[u8]) -> Result<(), String> {
        let h = header::decode(bytes).map_err(|e| format!("bad grant header: {e}"))?;
        let ok = matches!(h.body, Body::NoMsg(ref n) if n.chunks.is_empty())
            && h.xid == 0
            && h.protocol == Protocol::V2
            && h.flags == Flags::NONE
            && Credits::from_word(h.credit).is_valid();
        if !ok || self.version != Some(Protocol::V2) {
            return Err(format!("malformed client credit grant {h:?}"));
        }
        self.owed += 1;
        self.grants += 1;
        Ok(())
    }

    fn reset(&mut self) {
        self.pending.clear();
        self.told = 1;
        self.out.clear();
        self.version = None;
        self.owed = 0;
    }

    /// A Call arrives (one Receive consumed).
    fn on_call(&mut self, bytes: &[u8]) -> Result<(), String> {
        // Overrun: more client messages in our Receives than granted.
        // Every model frees one Receive per Call answered.
        let in_use = self.pending.len() as u32;
        if in_use >= self.told {
            return Err(format!(
                "server overrun: {in_use} in use, {} granted",
                self.told
            ));
        }
        let h = header::decode(bytes).map_err(|e| format!("bad call header: {e}"))?;
        if !matches!(h.body, Body::Msg(ref m) if m.chunks.is_empty()) {
            return Err("call is not an inline RDMA_MSG".into());
        }
        if h.flags.is_response() {
            return Err("call with F_RESPONSE".into());
        }
        if let Some(v) = self.version {
            if v != h.protocol {
                return Err("client changed version mid-connection".into());
            }
        }
        let vers = h.protocol.vers();
        match self.kind {
            Kind::Svcrdma | Kind::V1Echo if h.protocol == Protocol::V2 => {
                let echo = if self.kind == Kind::Svcrdma { vers } else { 1 };
                self.out
                    .push_back(words(&[h.xid, echo, self.limit, 4, 1, 1, 1]));
                return Ok(());
            }
            Kind::NoCommon => {
                self.out
                    .push_back(words(&[h.xid, 1, self.limit, 4, 1, 3, 4]));
                return Ok(());
            }
            _ => {}
        }
        self.version = Some(h.protocol);
        if h.protocol == Protocol::V2 {
            let c = Credits::from_word(h.credit);
            if !c.is_valid() {
                return Err(format!(
                    "client sent an invalid credit word {:#x}",
                    h.credit
                ));
            }
        }
        self.pending.push((h.xid, h.protocol));
        Ok(())
    }

    /// Answers a random pending Call.
    fn reply_one(&mut self, rng: &mut Rng) {
        if self.pending.is_empty() {
            return;
        }
        let (xid, p) = self.pending.swap_remove(rng.below(self.pending.len()));
        let mut buf = vec![0u8; 256];
        let (credit, flags) = match p {
            Protocol::V1 => (self.limit, Flags::NONE),
            Protocol::V2 => {
                let c = match self.kind {
                    // One Receive freed: one credit newly granted.
                    Kind::V2Exact => Credits {
                        granted: 1 + std::mem::take(&mut self.owed) as u16,
                        max: self.limit as u16,
                    },
                    Kind::V2Lazy => Credits {
                        granted: 0,
                        max: self.limit as u16,
                    },
                    Kind::V2TotalZeroMax => Credits {
                        granted: self.limit as u16,
                        max: 0,
                    },
                    _ => Credits {
                        granted: self.limit as u16,
                        max: self.limit as u16,
                    },
                };
                (c.to_word(), Flags::RESPONSE)
            }
        };
        self.told = self.limit;
        let spec = MsgSpec {
            xid,
            credit,
            kind: MsgKind::Msg,
            flags,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        };
        let n = header::encode_msg(&mut buf, p, &spec).unwrap();
        buf.truncate(n);
        for w in [xid, 1, 0, 0, 0, 0] {
            buf.extend_from_slice(&w.to_be_bytes());
        }
        self.out.push_back(buf);
        if self.kind == Kind::V2Lazy && p == Protocol::V2 && rng.below(3) == 0 {
            let mut g = vec![0u8; 64];
            let c = Credits {
                granted: 1,
                max: self.limit as u16,
            };
            let n = v2::encode_credit_grant(&mut g, c.to_word(), Flags::NONE).unwrap();
            g.truncate(n);
            self.out.push_back(g);
        }
    }
}

fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

#[derive(Default, Debug)]
struct Results {
    ok: usize,
    failed: Vec<(u32, Errno)>,
    resends: usize,
}

/// Runs `n` RPCs against `server`; reconnects every `reconnect_every`
/// steps if non-zero.
fn run(kind: Kind, cfg: Config, n: u32, seed: u64, reconnect_every: usize) -> (Transport, Results) {
    let mut rng = Rng(seed);
    let mut server = Server::new(kind, 1 + (seed % 40) as u32);
    let mut t = Transport::new(cfg);
    let mut res = Results::default();
    let mut to_send: VecDeque<u32> = (1..=n).collect();
    let mut inflight: Vec<u32> = Vec::new();
    let mut window = 1u32;
    let pvt = Peer::Valid(PrivateData {
        remote_invalidate: true,
        send_size: 4096,
        recv_size: 4096,
    });

    let connect = |t: &mut Transport, window: &mut u32| {
        let plan = t.connect();
        *window = plan.credits.credits;
        assert_eq!(plan.credits.cwnd, 256);
        t.established(pvt);
    };
    connect(&mut t, &mut window);
    let mut steps = 0usize;
    while res.ok + res.failed.len() < n as usize {
        steps += 1;
        assert!(steps < 200_000, "no progress: {kind:?} seed {seed}");
        if reconnect_every != 0 && steps.is_multiple_of(reconnect_every) {
            // Connection lost: SUNRPC retransmits what was in flight.
            t.disconnected();
            server.reset();
            for x in inflight.drain(..).rev() {
                to_send.push_front(x);
            }
            connect(&mut t, &mut window);
            continue;
        }
        match rng.below(3) {
            0 => {
                // Client sends, as SUNRPC allows (cwnd).
                let Some(&xid) = to_send.front() else {
                    continue;
                };
                if inflight.len() as u32 >= window {
                    continue;
                }
                let len = if rng.below(10) == 0 {
                    3000
                } else {
                    100 + rng.below(800) as u32
                };
                match t.prepare_call(xid, len, 1000) {
                    Ok(plan) => {
                        if plan.probe {
                            assert!(plan.hdr_len + len <= 1024);
                        }
                        assert!(plan.hdr_len + len <= t.thresholds().send);
                        let mut buf = vec![0u8; 64];
                        let h = header::encode_msg(&mut buf, plan.protocol, &plan.msg_spec(xid))
                            .unwrap();
                        assert_eq!(h as u32, plan.hdr_len);
                        buf.truncate(h);
                        buf.extend_from_slice(&xid.to_be_bytes());
                        buf.extend_from_slice(&[0, 0, 0, 0]);
                        to_send.pop_front();
                        inflight.push(xid);
                        if let Err(e) = server.on_call(&buf) {
                            panic!("{kind:?} seed {seed}: {e}");
                        }
                    }
                    Err(CallError::NoCredits) => {}
                    Err(CallError::TooBig(tb)) => {
                        to_send.pop_front();
                        res.failed.push((xid, tb.errno()));
                    }
                    Err(CallError::NotConnected) => panic!("not connected"),
                    Err(CallError::Plan(e)) => panic!("prepare_call planned chunks: {e:?}"),
                    Err(CallError::NoMrs { needed }) => {
                        panic!("prepare_call needs {needed} MRs: it plans no chunks")
                    }
                }
            }
            1 => server.reply_one(&mut rng),
            _ => {
                let Some(m) = server.out.pop_front() else {
                    continue;
                };
                assert!(
                    t.credits().posted() > 0,
                    "client Receive overrun ({kind:?} seed {seed})"
                );
                let o = t.receive(&m);
                if let Some(word) = o.grant_due.then(|| t.prepare_grant()).flatten() {
                    // What the glue sends: the codec's encoding of it.
                    let mut g = vec![0u8; 64];
                    let spec = rpcrdma_proto::conn::send::grant_spec(word);
                    let n = header::encode_msg(&mut g, Protocol::V2, &spec).unwrap();
                    g.truncate(n);
                    if let Err(e) = server.on_grant(&g) {
                        panic!("{kind:?} seed {seed}: {e}");
                    }
                }
                if let Some(u) = o.credits {
                    assert_ne!(u.credits, window);
                    assert_eq!(u.cwnd, u.credits << 8);
                    window = u.credits;
                }
                assert_eq!(window, t.credits().window());
                assert!((1..=t.config().max_requests).contains(&window));
                match o.reply {
                    Reply::Deliver { xid, payload } => {
                        assert_eq!(&payload[..4], &xid.to_be_bytes());
                        let i = inflight
                            .iter()
                            .position(|&x| x == xid)
                            .expect("unknown xid");
                        inflight.swap_remove(i);
                        res.ok += 1;
                    }
                    Reply::Resend { xid } => {
                        let i = inflight
                            .iter()
                            .position(|&x| x == xid)
                            .expect("unknown xid");
                        inflight.swap_remove(i);
                        to_send.push_front(xid);
                        res.resends += 1;
                    }
                    Reply::Fail { xid, errno, .. } => {
                        let i = inflight
                            .iter()
                            .position(|&x| x == xid)
                            .expect("unknown xid");
                        inflight.swap_remove(i);
                        res.failed.push((xid, errno));
                    }
                    Reply::Control(_) => {}
                    r => panic!("{kind:?} seed {seed}: unexpected {r:?}"),
                }
                assert!(t.credits().posted() <= t.config().recv_queue_depth());
            }
        }
    }
    (t, res)
}

const SEEDS: u64 = 40;

#[test]
fn v2_servers_settle_v2() {
    for kind in [
        Kind::V2Exact,
        Kind::V2Echo,
        Kind::V2Lazy,
        Kind::V2TotalZeroMax,
    ] {
        let mut grants = 0;
        for seed in 0..SEEDS {
            let (t, r) = run(kind, Config::default(), 300, seed, 0);
            grants += t.stats().grants_sent;
            assert!(!t.memory().v1_only());
            assert_eq!(r.resends, 0);
            assert!(
                r.failed.iter().all(|&(_, e)| e == Errno::EMSGSIZE),
                "{kind:?} {seed}: {r:?}"
            );
            if t.stats().probe_too_big == 1 {
                // The first Call did not fit the probe: v1 connection.
                assert_eq!(t.phase(), Phase::Settled(Protocol::V1), "{kind:?} {seed}");
                assert_eq!(t.stats().probes, 0);
                continue;
            }
            assert_eq!(t.phase(), Phase::Settled(Protocol::V2), "{kind:?} {seed}");
            assert_eq!(t.stats().probes, 1);
            // No model server sends a word without any limit (a zero
            // limit half with a non-zero grant is the other reading).
            assert_eq!(t.stats().bad_credit, 0, "{kind:?} {seed}");
            if kind == Kind::V2TotalZeroMax {
                // Its grant is the limit, and the window follows it.
                let limit = 1 + (seed % 40) as u32;
                assert_eq!(t.credits().limit(), limit, "{kind:?} {seed}");
                assert_eq!(
                    t.credits().window(),
                    limit.min(t.config().max_requests).min(CALL_RING)
                );
            }
        }
        // Replies pile up while the client sends nothing: it grants
        // credits back (and the servers never see an overrun).
        assert!(grants > 0, "{kind:?}: no credit grant sent");
    }
}

#[test]
fn v1_only_servers_fall_back_once() {
    for kind in [Kind::Svcrdma, Kind::V1Echo] {
        for seed in 0..SEEDS {
            let (t, r) = run(kind, Config::default(), 200, seed, 0);
            assert_eq!(t.phase(), Phase::Settled(Protocol::V1));
            // One fallback, unless the first Call was too big for the
            // probe (then the connection opened in v1 without probing and
            // the server is not known to be v1-only).
            assert!(r.resends <= 1, "{kind:?} {seed}: {r:?}");
            assert_eq!(t.memory().v1_only(), r.resends == 1);
            assert_eq!(t.stats().probe_too_big as usize, 1 - r.resends);
            assert_eq!(r.resends as u64, t.stats().v1_fallbacks);
            assert!(r.failed.iter().all(|&(_, e)| e == Errno::EMSGSIZE));
        }
    }
}

#[test]
fn force_v1_never_probes() {
    let cfg = Config {
        policy: VersionPolicy::ForceV1,
        ..Config::default()
    };
    for kind in [Kind::Svcrdma, Kind::V2Exact] {
        for seed in 0..10 {
            let (t, r) = run(kind, cfg, 100, seed, 0);
            assert_eq!(t.stats().probes, 0);
            assert_eq!(r.resends, 0);
            assert_eq!(t.phase(), Phase::Settled(Protocol::V1));
        }
    }
}

#[test]
fn no_common_version_fails_without_looping() {
    for seed in 0..SEEDS {
        let (t, r) = run(Kind::NoCommon, Config::default(), 50, seed, 0);
        assert_eq!(r.ok, 0);
        assert!(r
            .failed
            .iter()
            .all(|&(_, e)| e == Errno::EPROTONOSUPPORT || e == Errno::EMSGSIZE));
        assert!(!t.memory().v1_only());
    }
}

#[test]
fn reconnects() {
    for kind in [
        Kind::Svcrdma,
        Kind::V2Exact,
        Kind::V2Echo,
        Kind::V2Lazy,
        Kind::V2TotalZeroMax,
    ] {
        for seed in 0..SEEDS {
            let (t, r) = run(kind, Config::default(), 200, seed, 97);
            assert!(
                r.failed.iter().all(|&(_, e)| e == Errno::EMSGSIZE),
                "{kind:?} {seed}: {r:?}"
            );
            match kind {
                Kind::Svcrdma => {
                    assert_eq!(t.phase(), Phase::Settled(Protocol::V1));
                    assert!(t.stats().v1_fallbacks <= 1 + t.stats().lost_probes);
                }
                _ => {
                    // Lost probes may mark the server v1-only; then v1 it is.
                    if t.memory().v1_only() {
                        assert_eq!(t.phase(), Phase::Settled(Protocol::V1));
                    }
                }
            }
        }
    }
}

#[test]
fn small_limits_and_backchannel_reserve() {
    let cfg = Config {
        max_requests: 4,
        bc_requests: 3,
        ..Config::default()
    };
    for kind in [Kind::V2Exact, Kind::V2Lazy, Kind::Svcrdma] {
        for seed in 0..SEEDS {
            let (t, _) = run(kind, cfg, 100, seed, 0);
            assert!(t.credits().window() <= 4);
        }
    }
}

/// A responder like tools/responder: it reposts each Receive as the
/// message in it is taken, so it has `limit + 1` Receives for our
/// messages on the way to it (the credits it grants, and one for a
/// credit grant, -00 §4.3.1); it continues every reply in `PIECES`
/// pieces, honours our credits, and sends its words in the other reading
/// of the credit word (the grant in the low half, the high half the same
/// or, with `zero_max`, zero).
/// When our credits stop it, it sends an asynchronous credit grant (in
/// the one Receive -00 keeps for one) if it has taken a message of ours
/// since its previous grant, as tools/responder does. Returns the RPCs
/// completed; panics on an overrun either way.
fn run_reposting(zero_max: bool, seed: u64, n: u32) -> (Transport, u32) {
    const PIECES: u32 = 6;
    let mut rng = Rng(seed);
    let limit = 2 + (seed % 8) as u16;
    let word = Credits {
        granted: limit,
        max: if zero_max { 0 } else { limit },
    }
    .to_word();
    let mut t = Transport::new(Config::default());
    t.connect();
    t.established(Peer::Valid(PrivateData {
        remote_invalidate: true,
        send_size: 4096,
        recv_size: 4096,
    }));
    // Our messages on the way to the responder (not yet taken).
    let mut wire: VecDeque<Vec<u8>> = VecDeque::new();
    let push = |wire: &mut VecDeque<Vec<u8>>, m: Vec<u8>| {
        wire.push_back(m);
        assert!(
            wire.len() <= usize::from(limit) + 1,
            "seed {seed} zero_max {zero_max}: responder overrun: {} of our messages for {} Receives",
            wire.len(),
            limit + 1
        );
    };
    let plan = t.connprop_probe().expect("probe");
    push(&mut wire, words(&[0, 2, plan.credit, 5, 0, 0]));
    // The responder: Calls to answer (xid, pieces left), its messages to
    // us, its credit accounting of us (our reading: we send it).
    let mut pending: Vec<(u32, u32)> = Vec::new();
    let mut out: VecDeque<Vec<u8>> = VecDeque::new();
    let (mut to_us, mut returned, mut our_limit) = (0u32, 0u32, 1u32);
    let mut connprop_due = false;
    // Messages of ours it took since its previous credit grant.
    let mut taken = 0u32;
    let (mut next_xid, mut inflight, mut done) = (1u32, 0u32, 0u32);
    let mut steps = 0;
    while done < n {
        steps += 1;
        assert!(
            steps < 400_000,
            "seed {seed} zero_max {zero_max}: no progress: {:?}",
            t.credits()
        );
        match rng.below(4) {
            0 => {
                if next_xid > n || inflight >= t.credits().window() {
                    continue;
                }
                let Ok(plan) = t.prepare_call(next_xid, 200, 4000) else {
                    continue;
                };
                let mut buf = vec![0u8; 64];
                let h =
                    header::encode_msg(&mut buf, plan.protocol, &plan.msg_spec(next_xid)).unwrap();
                buf.truncate(h);
                buf.extend_from_slice(&words(&[next_xid, 0]));
                push(&mut wire, buf);
                next_xid += 1;
                inflight += 1;
            }
            1 => {
                // The responder takes one of our messages.
                let Some(m) = wire.pop_front() else {
                    continue;
                };
                let h = header::decode(&m).expect("our message decodes");
                let c = Credits::from_word(h.credit);
                assert!(c.is_valid());
                our_limit = u32::from(c.max);
                returned = to_us.min(returned + u32::from(c.granted));
                taken += 1;
                match h.body {
                    Body::ConnProp(_) => connprop_due = true,
                    Body::Msg(_) => pending.push((h.xid, PIECES)),
                    _ => {}
                }
            }
            2 => {
                // The responder sends, as our credits allow.
                if to_us - returned >= our_limit {
                    if to_us - returned == our_limit && taken > 0 {
                        taken = 0;
                        let mut g = vec![0u8; 64];
                        let k = v2::encode_credit_grant(&mut g, word, Flags::NONE).unwrap();
                        g.truncate(k);
                        out.push_back(g);
                        to_us += 1;
                    }
                    continue;
                }
                if connprop_due {
                    connprop_due = false;
                    out.push_back(words(&[0, 2, word, 5, 0, 2, 1, 4, 4096, 2, 4, 4096]));
                    to_us += 1;
                    continue;
                }
                if pending.is_empty() {
                    continue;
                }
                // One sequence at a time: the oldest Call first.
                let (xid, left) = &mut pending[0];
                let more = *left > 1;
                let flags = if more { 3 } else { 1 };
                let mut m = words(&[*xid, 2, word, 0, flags, 0, 0, 0, 0]);
                if *left == PIECES {
                    m.extend_from_slice(&words(&[*xid, 1]));
                }
                m.extend_from_slice(&words(&[0, 0]));
                *left -= 1;
                if !more {
                    pending.remove(0);
                }
                out.push_back(m);
                to_us += 1;
            }
            _ => {
                let Some(m) = out.pop_front() else {
                    continue;
                };
                assert!(
                    t.credits().posted() > 0,
                    "seed {seed}: our Receives overrun"
                );
                let o = t.receive(&m);
                if let Reply::Piece { last: Some(_), .. } = o.reply {
                    inflight -= 1;
                    done += 1;
                }
                if let Some(w) = o.grant_due.then(|| t.prepare_grant()).flatten() {
                    let mut g = vec![0u8; 64];
                    let spec = rpcrdma_proto::conn::send::grant_spec(w);
                    let k = header::encode_msg(&mut g, Protocol::V2, &spec).unwrap();
                    g.truncate(k);
                    push(&mut wire, g);
                }
            }
        }
    }
    (t, done)
}

/// The other reading of the credit word against a responder whose
/// Receives are exactly what it grants plus one: every word used to
/// declare all our messages consumed, so the pieces of continued replies
/// let us send credit grants (and Calls) to a responder that had not
/// taken the previous ones yet.
#[test]
fn other_reading_never_overruns_a_reposting_responder() {
    for zero_max in [false, true] {
        for seed in 0..SEEDS {
            let (t, done) = run_reposting(zero_max, seed, 200);
            assert_eq!(done, 200);
            assert_eq!(t.phase(), Phase::Settled(Protocol::V2));
            assert_eq!(t.stats().bad_credit, 0);
        }
    }
}
