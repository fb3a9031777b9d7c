// SPDX-License-Identifier: GPL-2.0

//! Self tests of transport properties (our CONNPROP probe, the peer's
//! properties acted on, reassembly of a continued CONNPROP) and of
//! remote invalidation on version 2, that need nothing but `core`: the
//! host runs them from `cargo test` (tests/connprop.rs), the module's
//! KUnit variant as suite `rpcrdma2_connprop` (rpcrdma/tests.rs).
//! Messages are written out word by word from -00.

use core::ffi::CStr;

use super::super::chunks::{Geometry, Limits, PlanError, Rpc};
use super::super::config::Config;
use super::super::conn::send::CallError;
use super::super::conn::Transport;
use super::super::negotiate::Phase;
use super::super::reply::{Cause, Control, Reply};
use super::super::selftest::{geometry, peer, up};
use super::super::xdr::chunk::Segment;
use super::super::xdr::error::ErrorKind;
use super::super::xdr::header::{self, Body, Protocol};
use super::super::xdr::props::{Property, TransportProperties, RVREQSUP_INLINE, RVREQSUP_NONE};
use super::super::xdr::pvtdata::Peer;
use super::super::xdr::selftest::{case, check, run_table};
pub use super::super::xdr::selftest::{Failure, SelfTest, TestResult};
use super::{our_properties, Assembly, Plan, Step, MAX_SET_LEN, PROBE_XID};

/// Every self test of transport properties.
pub const SELF_TESTS: &[SelfTest] = &[
    case!(connprop_probe_is_first),
    case!(connprop_probe_answered_v2),
    case!(connprop_probe_svcrdma_falls_back),
    case!(connprop_probe_timeout),
    case!(connprop_probe_grant_floor),
    case!(connprop_reassembly),
    case!(connprop_reassembly_bounds),
    case!(connprop_unknown_ignored),
    case!(connprop_thresholds),
    case!(connprop_segment_limits),
    case!(connprop_reverse_support),
    case!(v2_inv_handle_choice),
];

/// Runs every self test; returns the number run, or the first failure.
pub fn run_all() -> core::result::Result<usize, (&'static str, Failure)> {
    run_table(SELF_TESTS)
}

/// A message built from XDR words (CONNPROPs need more room than most).
type Wire = super::super::selftest::WireBuf<256>;

/// v2 credit word: 1 newly granted, at most 32 outstanding.
const CRED_1_32: u32 = 0x0020_0001;

/// A transport whose CONNPROP probe is out, or the failure "no probe" at
/// the caller's line.
#[track_caller]
#[inline(never)]
fn probing(config: Config) -> Result<(Transport, Plan), Failure> {
    let line = core::panic::Location::caller().line();
    let mut t = up(config, peer(4096, 4096, false));
    match t.connprop_probe() {
        Some(plan) => Ok((t, plan)),
        None => Err(Failure {
            line,
            what: "no probe",
        }),
    }
}

/// The responder's CONNPROP (tools/responder): XID 0, credit word
/// `credit`, the five uint32 properties.
fn responder_connprop(credit: u32, segs: u32, seg_size: u32, brs: u32) -> Wire {
    Wire::new(&[
        0, 2, credit, 5, 0, // prefix: RDMA2_CONNPROP, no flags
        5, // five properties
        1, 4, 4096, // SBSIZ
        2, 4, 4096, // RBSIZ
        3, 4, seg_size, // RSSIZ
        4, 4, segs, // RCSIZ
        5, 4, brs, // BRS
    ])
}

/// Linux svcrdma's answer to a v2 message: v1 layout, the message's
/// XID and version word.
fn svcrdma_err_vers(xid: u32) -> Wire {
    Wire::new(&[xid, 2, 64, 4, 1, 1, 1])
}

/// Our CONNPROP is the first message: our XID, no flags, at most 1024
/// bytes, our properties; Calls wait while it is out.
fn connprop_probe_is_first() -> TestResult {
    let cfg = Config {
        bc_requests: 8,
        ..Config::default()
    };
    let (mut t, plan) = probing(cfg)?;
    check!(plan.xid == PROBE_XID && PROBE_XID != 0);
    check!(
        t.phase()
            == (Phase::Probing {
                probe: Some(PROBE_XID)
            })
    );
    check!(t.stats().connprop_sent == 1 && t.stats().probes == 1);
    let mut buf = [0u8; Plan::MAX_LEN];
    let n = plan.encode(&mut buf).unwrap_or(0);
    check!(n == Plan::MAX_LEN && n <= 1024);
    let w = Wire::from_bytes(buf.get(..n).unwrap_or(&[]));
    // xid, vers 2, credit (max = window 1 + 2 * 8 backchannel, 0 granted:
    // nothing received yet),
    // RDMA2_CONNPROP, flags 0 (F_RESPONSE clear: the XID is ours).
    check!(w.word(0) == PROBE_XID && w.word(1) == 2);
    check!(w.word(2) == 17 << 16);
    check!(w.word(3) == 5 && w.word(4) == 0);
    // count 3: RBSIZ 4096, SBSIZ 4096, BRS INLINE (the backchannel is
    // provisioned).
    let props = [3, 2, 4, 4096, 1, 4, 4096, 5, 4, RVREQSUP_INLINE];
    for (i, v) in props.iter().enumerate() {
        check!(w.word(i.saturating_add(5)) == *v);
    }
    // The codec reads it back as a complete CONNPROP.
    check!(
        matches!(header::decode(w.bytes()), Ok(h) if matches!(h.body, Body::ConnProp(s) if s.len() == 3))
    );
    // One message outstanding: no Call until the server answers.
    check!(t.prepare_call(1, 100, 100) == Err(CallError::NoCredits));
    // Only one probe per connection.
    check!(t.connprop_probe().is_none());
    // Without a backchannel we say RVREQSUP_NONE.
    let none = our_properties(&Config::default());
    check!(none.get(2) == Some(&Property::ReverseRequestSupport(RVREQSUP_NONE)));
    // force_v1: nothing to probe.
    let mut v1 = up(
        Config {
            policy: super::super::config::VersionPolicy::ForceV1,
            ..Config::default()
        },
        peer(4096, 4096, false),
    );
    check!(v1.connprop_probe().is_none());
    Ok(())
}

/// A version 2 server answers with its own CONNPROP: settled on v2, the
/// senders wake, and a first RPC larger than 1024 bytes goes in v2.
fn connprop_probe_answered_v2() -> TestResult {
    let (mut t, _) = probing(Config::default())?;
    let w = responder_connprop(CRED_1_32, 16, 1 << 20, RVREQSUP_NONE);
    let out = t.receive(w.bytes());
    check!(
        matches!(out.reply, Reply::Control(Control::Properties(p)) if p.max_segment_count == 16)
    );
    check!(t.phase() == Phase::Settled(Protocol::V2));
    check!(out.wake_senders);
    check!(t.stats().connprop_applied == 1 && t.memory().lost_probes() == 0);
    check!(!t.memory().v1_only());
    // No RPC was the probe: a 3000-byte Call goes in version 2.
    let plan = t.prepare_call(7, 3000, 100);
    check!(matches!(plan, Ok(p) if p.protocol == Protocol::V2 && !p.probe));
    check!(t.stats().probe_too_big == 0);
    // A disconnect loses no probe.
    check!(t.disconnected() == super::super::negotiate::ProbeLoss::None);
    Ok(())
}

/// svcrdma answers ERR_VERS (v1 layout, our XID): version 1, nothing
/// resent, the server remembered as v1-only.
fn connprop_probe_svcrdma_falls_back() -> TestResult {
    let (mut t, _) = probing(Config::default())?;
    let w = svcrdma_err_vers(PROBE_XID);
    let out = t.receive(w.bytes());
    check!(out.reply == Reply::Control(Control::Fallback));
    check!(t.phase() == Phase::Settled(Protocol::V1));
    check!(out.wake_senders);
    check!(t.memory().v1_only());
    check!(t.stats().v1_fallbacks == 1 && t.stats().err_vers == 1);
    let plan = t.prepare_call(7, 100, 100);
    check!(matches!(plan, Ok(p) if p.protocol == Protocol::V1 && !p.probe));
    // An ERR_VERS for another XID while probing is stray.
    let (mut t2, _) = probing(Config::default())?;
    let w = svcrdma_err_vers(0x1234);
    let out = t2.receive(w.bytes());
    check!(out.reply == Reply::Drop(Cause::StrayErrVers));
    check!(
        t2.phase()
            == (Phase::Probing {
                probe: Some(PROBE_XID)
            })
    );
    // The next connection starts in version 1 and sends no probe.
    t.connect();
    t.established(peer(1024, 1024, false));
    check!(t.protocol() == Some(Protocol::V1) && t.connprop_probe().is_none());
    Ok(())
}

/// No answer: the connection is given up without counting a lost
/// probe; the next connection probes with its first RPC, which a v2
/// server answers.
fn connprop_probe_timeout() -> TestResult {
    let (mut t, _) = probing(Config::default())?;
    check!(t.probe_timed_out());
    check!(t.phase() == Phase::Down);
    check!(!t.memory().connprop_probe() && !t.memory().v1_only());
    check!(t.stats().probe_timeouts == 1);
    check!(t.disconnected() == super::super::negotiate::ProbeLoss::None);
    check!(t.memory().lost_probes() == 0);
    check!(!t.probe_timed_out());
    // Next connection: no CONNPROP; the first RPC is the probe.
    t.connect();
    t.established(peer(4096, 4096, false));
    check!(t.connprop_probe().is_none());
    let plan = t.prepare_call(0x77, 200, 100);
    check!(matches!(plan, Ok(p) if p.probe && p.protocol == Protocol::V2));
    let w = Wire::new(&[0x77, 2, CRED_1_32, 0, 1, 0, 0, 0, 0, 0x77, 1, 0, 0, 0, 0, 0]);
    let out = t.receive(w.bytes());
    check!(matches!(out.reply, Reply::Deliver { xid: 0x77, .. }));
    check!(t.phase() == Phase::Settled(Protocol::V2));
    // A probe answered in time is not timed out.
    let (mut a, _) = probing(Config::default())?;
    a.receive(responder_connprop(CRED_1_32, 16, 1 << 20, 1).bytes());
    check!(!a.probe_timed_out() && a.memory().connprop_probe());
    Ok(())
}

/// The answer to the probe returns its credit even when its credit word
/// returns none (a zero low half).
fn connprop_probe_grant_floor() -> TestResult {
    let (mut t, _) = probing(Config::default())?;
    let w = responder_connprop(0x0020_0000, 16, 1 << 20, 1);
    let out = t.receive(w.bytes());
    check!(matches!(out.reply, Reply::Control(Control::Properties(_))));
    check!(t.credits().outstanding() == 0);
    check!(t.stats().bad_credit == 0);
    check!(t.prepare_call(1, 100, 100).is_ok());
    Ok(())
}

/// Encodes the property set `set` (count and elements) split into
/// CONNPROP messages of `piece` body bytes (the last one without
/// `F_MORE`) and feeds them to `t`; returns the last outcome's reply.
fn feed_split(t: &mut Transport, set: &[u32], piece: usize, xid: u32) -> Option<Reply<'static>> {
    let mut body = [0u8; 200];
    let mut len = 0;
    for x in set {
        let dst = body.get_mut(len..)?.first_chunk_mut::<4>()?;
        *dst = x.to_be_bytes();
        len = len.saturating_add(4);
    }
    let body = body.get(..len)?;
    let mut last = None;
    let mut at = 0;
    while at < len {
        let end = at.saturating_add(piece).min(len);
        let plen = end.saturating_sub(at);
        let more = end < len;
        let mut msg = [0u8; 220];
        let prefix = [xid, 2, CRED_1_32, 5, if more { 2 } else { 0 }];
        for (i, x) in prefix.iter().enumerate() {
            *msg.get_mut(i.saturating_mul(4)..)?.first_chunk_mut::<4>()? = x.to_be_bytes();
        }
        let src = body.get(at..end)?;
        for (d, s) in msg.iter_mut().skip(20).zip(src) {
            *d = *s;
        }
        let out = t.receive(msg.get(..plen.saturating_add(20))?);
        last = Some(match out.reply {
            Reply::Control(c) => Reply::Control(c),
            Reply::Drop(c) => Reply::Drop(c),
            _ => Reply::Drop(Cause::NotConnected),
        });
        at = end;
    }
    last
}

/// A set with a Host Auth Message and an unknown property among the
/// ones we use.
const SPLIT_SET: [u32; 20] = [
    5, // count
    6,
    12,
    5,
    0x6162_6364,
    0x6500_0000, // HOSTAUTH: opaque<5> "abcde"
    4,
    4,
    3, // RCSIZ 3
    99,
    8,
    1,
    2, // unknown property 99, 8 bytes
    3,
    4,
    65536, // RSSIZ 64 KiB
    2,
    4,
    2048, // RBSIZ 2048
    0,    // (extra word: trailing, used by the bounds test)
];

/// A continued CONNPROP (pieces of 7 bytes: words split across pieces)
/// is reassembled and applied; it also answers the probe.
fn connprop_reassembly() -> TestResult {
    let set = SPLIT_SET.get(..19).unwrap_or(&[]);
    for piece in [7usize, 4, 16, 200] {
        let (mut t, _) = probing(Config::default())?;
        let last = feed_split(&mut t, set, piece, 0);
        check!(matches!(last, Some(Reply::Control(Control::Properties(_)))));
        let p = t.peer_props().copied().unwrap_or_default();
        check!(p.max_segment_count == 3 && p.max_segment_size == 65536);
        check!(p.recv_buf_size == 2048 && p.max_send_size == 4096);
        check!(t.phase() == Phase::Settled(Protocol::V2));
        check!(t.thresholds().send == 2048);
        check!(t.stats().connprop_applied == 1 && t.stats().connprop_bad == 0);
    }
    // Directly: the stream parser over the same bytes, a byte at a time.
    let mut a = Assembly::new();
    let mut bytes = [0u8; 80];
    for (i, x) in set.iter().enumerate() {
        if let Some(d) = bytes
            .get_mut(i.saturating_mul(4)..)
            .and_then(|b| b.first_chunk_mut::<4>())
        {
            *d = x.to_be_bytes();
        }
    }
    let n = set.len().saturating_mul(4);
    let mut step = Step::Pending;
    for (i, b) in bytes.iter().take(n).enumerate() {
        step = a.piece(9, core::slice::from_ref(b), i.saturating_add(1) < n);
    }
    check!(matches!(step, Step::Done(p) if p.max_segment_count == 3));
    check!(a.xid().is_none());
    Ok(())
}

/// Malformed, truncated or too long sets are abandoned, never applied.
fn connprop_reassembly_bounds() -> TestResult {
    let whole = |set: &[u32]| {
        let mut a = Assembly::new();
        let mut b = [0u8; 128];
        let mut n = 0;
        for x in set {
            if let Some(d) = b.get_mut(n..).and_then(|s| s.first_chunk_mut::<4>()) {
                *d = x.to_be_bytes();
                n = n.saturating_add(4);
            }
        }
        let half = n / 2;
        match a.piece(1, b.get(..half).unwrap_or(&[]), true) {
            Step::Pending => a.piece(1, b.get(half..n).unwrap_or(&[]), false),
            s => s,
        }
    };
    // Trailing bytes after the last element.
    check!(
        matches!(whole(&SPLIT_SET), Step::Failed(e) if matches!(e.kind, ErrorKind::TrailingBytes(_)))
    );
    // Truncated: the last element is cut short.
    let cut = SPLIT_SET.get(..17).unwrap_or(&[]);
    check!(matches!(whole(cut), Step::Failed(e) if e.kind == ErrorKind::Truncated));
    // A uint32 property whose data is not four bytes.
    check!(
        matches!(whole(&[1, 2, 8, 1, 2]), Step::Failed(e) if e.kind == ErrorKind::BadPropVal(2))
    );
    // A Host Auth Message whose inner opaque does not fill rdma_data.
    check!(
        matches!(whole(&[1, 6, 8, 9, 0]), Step::Failed(e) if e.kind == ErrorKind::BadPropVal(6))
    );
    // A count that cannot fit the bound.
    check!(
        matches!(whole(&[MAX_SET_LEN, 0]), Step::Failed(e) if matches!(e.kind, ErrorKind::CountOverrun(_)))
    );
    // rdma_data longer than the bound.
    check!(
        matches!(whole(&[1, 99, MAX_SET_LEN + 1, 0]), Step::Failed(e) if matches!(e.kind, ErrorKind::LengthOverrun(_)))
    );
    // Many pieces of one huge unknown property: abandoned at the bound.
    let mut a = Assembly::new();
    let head = [0u8, 0, 0, 1, 0, 0, 0, 99, 0, 1, 0, 0];
    check!(a.piece(3, &head, true) == Step::Pending);
    let zeros = [0u8; 256];
    let mut failed = false;
    for _ in 0..(MAX_SET_LEN / 256 + 2) {
        if let Step::Failed(e) = a.piece(3, &zeros, true) {
            failed = matches!(e.kind, ErrorKind::LengthOverrun(_));
            break;
        }
    }
    check!(failed && a.xid().is_none());
    // In a transport: a malformed continued set is dropped and counted.
    let (mut t, _) = probing(Config::default())?;
    let last = feed_split(&mut t, cut, 8, 0);
    check!(matches!(
        last,
        Some(Reply::Control(Control::PropertiesPart))
    ));
    check!(t.peer_props().is_none() && t.stats().connprop_bad == 1);
    // A piece of another XID starts a new set.
    let mut a = Assembly::new();
    check!(a.piece(1, &[0, 0, 0, 1], true) == Step::Pending);
    check!(a.piece(2, &[0, 0, 0, 0], false) == Step::Done(TransportProperties::DEFAULTS));
    Ok(())
}

/// Unknown properties in a complete CONNPROP are ignored (-00 §6.4.4);
/// properties left out keep their defaults.
fn connprop_unknown_ignored() -> TestResult {
    let (mut t, _) = probing(Config::default())?;
    let w = Wire::new(&[0, 2, CRED_1_32, 5, 0, 2, 77, 4, 5, 4, 4, 8]);
    let out = t.receive(w.bytes());
    check!(matches!(out.reply, Reply::Control(Control::Properties(_))));
    let p = t.peer_props().copied().unwrap_or_default();
    check!(p.max_segment_count == 8);
    check!(p.max_segment_size == TransportProperties::DEFAULTS.max_segment_size);
    check!(p.reverse_request_support == RVREQSUP_INLINE);
    Ok(())
}

/// Receive Buffer Size and Maximum Send Size set the thresholds; with
/// valid private data they only lower them, without it they set them
/// (within our configuration).
fn connprop_thresholds() -> TestResult {
    let big = Config {
        inline_send: 16384,
        inline_recv: 16384,
        ..Config::default()
    };
    let props = |rb: u32, sb: u32| Wire::new(&[0, 2, CRED_1_32, 5, 0, 2, 1, 4, sb, 2, 4, rb]);
    // No private data: v2 default 4096 until the properties say 8192.
    let mut t = up(big, Peer::Absent);
    let _ = t.connprop_probe();
    t.receive(props(8192, 12288).bytes());
    check!(t.thresholds().send == 8192 && t.thresholds().recv == 12288);
    // Valid private data of 4096: properties cannot raise it.
    let mut t = up(big, peer(4096, 4096, false));
    let _ = t.connprop_probe();
    t.receive(props(8192, 12288).bytes());
    check!(t.thresholds().send == 4096 && t.thresholds().recv == 4096);
    // ... but lower it, never below 1024.
    let mut t = up(big, peer(4096, 4096, false));
    let _ = t.connprop_probe();
    t.receive(props(2048, 100).bytes());
    check!(t.thresholds().send == 2048 && t.thresholds().recv == 1024);
    Ok(())
}

fn read_rpc(len: u32) -> Rpc {
    Rpc {
        call: Geometry {
            head: 120,
            ..Geometry::default()
        },
        call_ddp: false,
        reply: geometry(200, len, 4),
        reply_buflen: len.saturating_add(204),
        reply_ddp: true,
        ddp_allowed: true,
    }
}

/// Maximum RDMA Segment Count and Size bound chunk planning: segments
/// per chunk, segments in the whole header, bytes per segment; and the
/// transport's payload follows.
/// A probing transport (16 segments) that received the responder's
/// CONNPROP with `segs` segments of `size` bytes.
#[inline(never)]
fn chunky(segs: u32, size: u32) -> Option<Transport> {
    let (mut t, _) = probing(Config::default()).ok()?;
    t.set_max_segs(16);
    t.receive(responder_connprop(CRED_1_32, segs, size, 1).bytes());
    Some(t)
}

fn connprop_segment_limits() -> TestResult {
    let mut t = chunky(2, 8192).ok_or(Failure {
        line: line!(),
        what: "setup",
    })?;
    let l = t.limits(4096, 256);
    check!(l.max_segs == 2 && l.max_mr_pages == 2);
    // 16 KiB READ: a Write chunk of two 8 KiB segments.
    let r = t.prepare_rpc(1, &read_rpc(16384), 4096, 256);
    check!(matches!(r, Ok((_, ref p)) if p.write_ranges().len() == 2
        && p.ranges().iter().all(|r| r.len <= 8192)));
    // 64 KiB READ: eight segments needed, two allowed.
    let r = t.prepare_rpc(2, &read_rpc(65536), 4096, 256);
    check!(matches!(
        r,
        Err(CallError::Plan(PlanError::TooManySegments { limit: 2, .. }))
    ));
    // The payload the upper layer may plan for: (2 - 2, at least 1)
    // segments of 8 KiB.
    check!(t.max_payload(4096, 256) == Some(8192));
    // A head longer than a segment may be: refused, never sent.
    let mut plan_rpc = read_rpc(0);
    plan_rpc.reply = Geometry {
        head: 9000,
        ..Geometry::default()
    };
    plan_rpc.reply_buflen = 9000;
    plan_rpc.reply_ddp = false;
    let r = t.prepare_rpc(3, &plan_rpc, 4096, 256);
    check!(matches!(
        r,
        Err(CallError::Plan(PlanError::TooManySegments { limit: 1, .. }))
    ));
    // A segment size below a page: no chunks at all (inline only).
    t = chunky(16, 1024).ok_or(Failure {
        line: line!(),
        what: "setup",
    })?;
    check!(t.limits(4096, 256).max_segs == 0);
    check!(t.max_payload(4096, 256).is_none());
    // The defaults do not constrain a 1 MiB payload.
    t = chunky(16, 1 << 20).ok_or(Failure {
        line: line!(),
        what: "setup",
    })?;
    let l = t.limits(4096, 256);
    check!(
        l == Limits::new(
            &Config {
                max_segs: 16,
                ..Config::default()
            },
            4096,
            256
        )
    );
    check!(t.max_payload(4096, 256).is_none());
    // The count bounds the whole header: one Read chunk and one Write
    // chunk of one segment each need two.
    t = chunky(1, 1 << 20).ok_or(Failure {
        line: line!(),
        what: "setup",
    })?;
    let both = Rpc {
        call: geometry(100, 8192, 0),
        call_ddp: true,
        ..read_rpc(8192)
    };
    let r = t.prepare_rpc(4, &both, 4096, 256);
    check!(matches!(
        r,
        Err(CallError::Plan(PlanError::TooManySegments {
            needed: 2,
            limit: 1,
            ..
        }))
    ));
    Ok(())
}

/// We advertise inline reverse-request support with a backchannel; a
/// peer that announced `RVREQSUP_NONE` gets its reverse Calls dropped,
/// one that announced more has them served.
fn connprop_reverse_support() -> TestResult {
    let call = Wire::new(&[
        0x99,
        2,
        CRED_1_32,
        0,
        0,
        0,
        0,
        0,
        0,
        0x99,
        0,
        2,
        0x4000_0000,
        1,
        0,
    ]);
    for (brs, served) in [(RVREQSUP_NONE, false), (RVREQSUP_INLINE, true)] {
        let cfg = Config {
            bc_requests: 8,
            ..Config::default()
        };
        let (mut t, plan) = probing(cfg)?;
        check!(plan.props.get(2) == Some(&Property::ReverseRequestSupport(RVREQSUP_INLINE)));
        t.receive(responder_connprop(CRED_1_32, 16, 1 << 20, brs).bytes());
        let out = t.receive(call.bytes());
        if served {
            check!(matches!(out.reply, Reply::ReverseCall { xid: 0x99, .. }));
            check!(t.stats().reverse_refused == 0);
        } else {
            check!(out.reply == Reply::Drop(Cause::ReverseRefused));
            check!(t.stats().reverse_refused == 1);
        }
    }
    Ok(())
}

/// -00 §6.3.3.2: a v2 Call with chunks names one of its own handles in
/// rdma_inv_handle (the Reply chunk's, else the Write chunk's, else the
/// Read chunk's), whatever the peer's RFC 8797 R bit says; zero without
/// chunks, on version 1, and when we do not accept remote invalidation.
fn v2_inv_handle_choice() -> TestResult {
    let handles = |t: &mut Transport, rpc: &Rpc| -> Option<u32> {
        let (_, plan) = t.prepare_rpc(5, rpc, 4096, 256).ok()?;
        let mut segs = [Segment::default(); 4];
        let mut handle = 0x100u32;
        for (s, r) in segs.iter_mut().zip(plan.ranges()) {
            *s = Segment {
                handle,
                length: r.len,
                offset: 0x1000,
            };
            handle = handle.saturating_add(1);
        }
        let n = plan.ranges().len();
        let lists = plan
            .chunk_lists(segs.get(..n)?, t.thresholds().remote_invalidation)
            .ok()?;
        Some(lists.inv_handle())
    };
    let v2 = |cfg: Config, r: bool| -> Option<Transport> {
        let mut t = up(cfg, peer(4096, 4096, r));
        t.set_max_segs(16);
        t.connprop_probe()?;
        t.receive(responder_connprop(CRED_1_32, 16, 1 << 20, 1).bytes());
        Some(t)
    };
    // A 16 KiB READ: one Write chunk segment, handle 0x100 (the peer
    // set no R bit: it does not matter on version 2).
    let mut t = v2(Config::default(), false).ok_or(Failure {
        line: line!(),
        what: "setup",
    })?;
    check!(handles(&mut t, &read_rpc(16384)) == Some(0x100));
    // A Long Reply: the Reply chunk's first MR.
    let mut long = read_rpc(0);
    long.reply = geometry(4096, 8192, 0);
    long.reply_buflen = 12288;
    long.reply_ddp = false;
    check!(handles(&mut t, &long) == Some(0x100));
    // A WRITE (Read chunk) with an inline reply: the Read chunk's MR.
    let write = Rpc {
        call: geometry(100, 8192, 0),
        call_ddp: true,
        reply: Geometry {
            head: 200,
            ..Geometry::default()
        },
        reply_buflen: 200,
        reply_ddp: false,
        ddp_allowed: true,
    };
    check!(handles(&mut t, &write) == Some(0x100));
    // A Read chunk and a Write chunk: the Write chunk's MR (index 1).
    let both = Rpc {
        call: write.call,
        call_ddp: true,
        ..read_rpc(16384)
    };
    check!(handles(&mut t, &both) == Some(0x101));
    // No chunks: zero.
    check!(handles(&mut t, &read_rpc(100)) == Some(0));
    // We refuse remote invalidation: zero.
    let mut t = v2(
        Config {
            remote_invalidate: false,
            ..Config::default()
        },
        true,
    )
    .ok_or(Failure {
        line: line!(),
        what: "setup",
    })?;
    check!(handles(&mut t, &read_rpc(16384)) == Some(0));
    // Version 1 names no handle (the R bit governs it there).
    let mut t = up(
        Config {
            policy: super::super::config::VersionPolicy::ForceV1,
            ..Config::default()
        },
        peer(4096, 4096, true),
    );
    t.set_max_segs(16);
    check!(t.thresholds().remote_invalidation);
    check!(handles(&mut t, &read_rpc(16384)) == Some(0));
    Ok(())
}
