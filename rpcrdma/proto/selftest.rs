// SPDX-License-Identifier: GPL-2.0

//! Self tests of the protocol logic that need nothing but `core`.
//!
//! The host runs them from `cargo test` (tests/selftest.rs); the kernel
//! module runs each entry of [`SELF_TESTS`] as a KUnit case
//! (`rpcrdma2_proto` in rpcrdma/tests.rs). Messages are written out word
//! by word from the specifications, independently of the codec's
//! encoders.

use core::ffi::CStr;

use super::xdr::chunk::Segment;
use super::xdr::header::{self, Credits, ErrorBody, Flags, Header, MsgSpec, Protocol};
use super::xdr::pvtdata::{self, Peer, PrivateData};
// The codec's self-test kit: one set of types and macros, one KUnit
// adapter for both tables.
use super::chunks::reply::{Invalidated, ReplyData, ReplyError};
use super::chunks::sizing::{FrwrSizing, SizingError};
use super::chunks::{
    self, CallForm, ChunkPlan, Geometry, Limits, Part, PlanError, Range, ReplyForm, Rpc,
    WRITE_PAD_LEN,
};
use super::config::{Config, VersionPolicy};
use super::conn::send::{grant_spec, CallError};
use super::conn::Transport;
use super::continuation::{piece_room, pieces, split, Fault, Piece, Reassembly, Span, Step};
use super::credits::{CreditState, CreditUpdate, Grant};
use super::errno::Errno;
use super::inline::{max_call_header, max_reply_header, Direction, Thresholds};
use super::negotiate::{Phase, ProbeLoss, LOST_PROBE_LIMIT};
use super::recovery::Hints;
use super::reply::{Cause, Control, Reply};
use super::reqlife::{self, Action, Event, Illegal, Life};
use super::xdr::selftest::{case, check, run_table};
pub use super::xdr::selftest::{Failure, SelfTest, TestResult};

/// Every self test.
pub const SELF_TESTS: &[SelfTest] = &[
    case!(policy_and_memory),
    case!(probe_then_v2),
    case!(svcrdma_err_vers_falls_back),
    case!(err_vers_framings),
    case!(err_vers_without_v1),
    case!(stray_err_vers_dropped),
    case!(v1_rejected_too),
    case!(settled_v2_then_err_vers),
    case!(version_mismatch_disconnects),
    case!(lost_probes_bound_the_loop),
    case!(probe_too_big_opens_v1),
    case!(prepare_rpc_long_call_and_reply),
    case!(prepare_rpc_waits_for_mrs),
    case!(v2_metadata_replies_continued),
    case!(v2_continued_reply_limits),
    case!(v1_credit_window),
    case!(v2_credit_accounting),
    case!(v2_advertisement),
    case!(receive_replenish),
    case!(thresholds_from_private_data),
    case!(header_sizes_and_fit),
    case!(reply_classes),
    case!(continuation_reassembly),
    case!(continuation_interrupted),
    case!(continuation_refused),
    case!(continuation_bounds),
    case!(continued_call_pieces),
    case!(credit_grants_sent),
    case!(malformed_replies),
    case!(unsolicited_messages_dropped),
    case!(config_and_errno),
    case!(frwr_sizing),
    case!(chunk_call_forms),
    case!(chunk_reply_forms),
    case!(chunk_lists_encode),
    case!(chunk_write_reply),
    case!(chunk_long_reply),
    case!(chunk_reply_rejections),
    case!(chunk_invalidation),
    case!(backchannel_v1),
    case!(request_lifecycle),
];

/// Runs every self test; returns the number run, or the first failure with
/// its test name.
pub fn run_all() -> core::result::Result<usize, (&'static str, Failure)> {
    run_table(SELF_TESTS)
}

/// A message built from XDR words, in a buffer of `N` bytes (words past
/// it are dropped). Shared by the self-test tables of `proto`.
pub(super) struct WireBuf<const N: usize> {
    b: [u8; N],
    len: usize,
}

/// The message buffer of most tests.
type Wire = WireBuf<128>;

impl<const N: usize> WireBuf<N> {
    /// The message of `words`.
    pub(super) fn new(words: &[u32]) -> Self {
        let mut w = WireBuf { b: [0; N], len: 0 };
        for x in words {
            w.push(*x);
        }
        w
    }

    /// The message `bytes` (cut to `N` bytes).
    pub(super) fn from_bytes(bytes: &[u8]) -> Self {
        let mut w = WireBuf { b: [0; N], len: 0 };
        for (d, s) in w.b.iter_mut().zip(bytes) {
            *d = *s;
            w.len = w.len.saturating_add(1);
        }
        w
    }

    /// Appends word `x`.
    pub(super) fn push(&mut self, x: u32) {
        let dst = self
            .b
            .get_mut(self.len..)
            .and_then(|r| r.first_chunk_mut::<4>());
        if let Some(dst) = dst {
            *dst = x.to_be_bytes();
            self.len = self.len.saturating_add(4);
        }
    }

    /// The message so far.
    pub(super) fn bytes(&self) -> &[u8] {
        self.b.get(..self.len).unwrap_or(&[])
    }

    /// Word `i` (0 past the end).
    pub(super) fn word(&self, i: usize) -> u32 {
        self.b
            .get(i.saturating_mul(4)..)
            .and_then(|b| b.first_chunk::<4>())
            .map_or(0, |b| u32::from_be_bytes(*b))
    }
}

const XID: u32 = 0x0bad_cafe;
/// v2 credit word: 1 newly granted, at most 32 outstanding.
const CRED_1_32: u32 = 0x0020_0001;

/// RPC Reply words after the transport header: xid, REPLY, MSG_ACCEPTED,
/// AUTH_NONE verifier, SUCCESS.
fn rpc_reply(w: &mut Wire, xid: u32) {
    for x in [xid, 1, 0, 0, 0, 0] {
        w.push(x);
    }
}

/// An inline v2 reply (`RDMA2_MSG`, `F_RESPONSE`, empty chunk lists).
fn v2_reply(xid: u32, credit: u32) -> Wire {
    let mut w = Wire::new(&[xid, 2, credit, 0, 1, 0, 0, 0, 0]);
    rpc_reply(&mut w, xid);
    w
}

/// An inline v1 reply (`RDMA_MSG`, empty chunk lists).
fn v1_reply(xid: u32, credit: u32) -> Wire {
    let mut w = Wire::new(&[xid, 1, credit, 0, 0, 0, 0]);
    rpc_reply(&mut w, xid);
    w
}

/// Linux svcrdma's answer to a v2 Call: v1 framing, the Call's vers (2).
fn svcrdma_err_vers(xid: u32) -> Wire {
    Wire::new(&[xid, 2, 64, 4, 1, 1, 1])
}

pub(super) fn peer(send: u32, recv: u32, r: bool) -> Peer {
    Peer::Valid(PrivateData {
        remote_invalidate: r,
        send_size: send,
        recv_size: recv,
    })
}

/// A transport with `config`, connected, established with `peer`.
#[inline(never)]
pub(super) fn up(config: Config, peer: Peer) -> Transport {
    let mut t = Transport::new(config);
    t.connect();
    t.established(peer);
    t
}

fn is_deliver(r: &Reply<'_>, xid: u32) -> bool {
    matches!(*r, Reply::Deliver { xid: x, payload } if x == xid && payload.len() == 24)
}

fn policy_and_memory() -> TestResult {
    let mut t = Transport::new(Config::default());
    check!(t.phase() == Phase::Down);
    check!(t.prepare_call(1, 100, 100) == Err(CallError::NotConnected));
    let plan = t.connect();
    check!(plan.protocol == Protocol::V2);
    check!(
        plan.credits
            == CreditUpdate {
                credits: 1,
                cwnd: 256
            }
    );
    check!(t.phase() == Phase::Probing { probe: None });
    // Not established yet.
    check!(t.prepare_call(1, 100, 100) == Err(CallError::NotConnected));

    let force = Config {
        policy: VersionPolicy::ForceV1,
        ..Config::default()
    };
    let mut t = up(force, Peer::Absent);
    check!(t.phase() == Phase::Settled(Protocol::V1));
    let plan = t.prepare_call(7, 100, 100);
    check!(matches!(plan, Ok(p) if p.protocol == Protocol::V1 && !p.probe && p.credit == 128));
    check!(VersionPolicy::from_force_v1(true) == VersionPolicy::ForceV1);
    check!(VersionPolicy::from_force_v1(false) == VersionPolicy::TryV2);
    Ok(())
}

fn probe_then_v2() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    // Probing: 1024-byte call threshold, v2 header.
    check!(t.thresholds().send == 1024);
    check!(t.thresholds().max_inline_call() == 1024 - 36);
    let plan = t.prepare_call(XID, 200, 900);
    check!(matches!(plan, Ok(p) if p.protocol == Protocol::V2 && p.probe && p.hdr_len == 36));
    // We advertise one credit (1 outstanding at most) and return none
    // (nothing received yet).
    check!(matches!(plan, Ok(p) if p.credit == 0x0001_0000));
    check!(t.phase() == Phase::Probing { probe: Some(XID) });
    // One message at a time until the server grants credits.
    check!(t.prepare_call(XID.wrapping_add(1), 200, 900) == Err(CallError::NoCredits));
    check!(CallError::NoCredits.errno() == Errno::EAGAIN);

    let w = v2_reply(XID, CRED_1_32);
    let o = t.receive(w.bytes());
    check!(is_deliver(&o.reply, XID));
    check!(o.credits == Some(CreditUpdate::new(32)));
    // The second Call above waited for the budget: wake it.
    check!(o.wake_senders);
    check!(t.phase() == Phase::Settled(Protocol::V2));
    check!(!t.memory().v1_only());
    // No private data: the v2 default threshold, 4096.
    check!(t.thresholds().send == 4096 && t.thresholds().recv == 4096);
    let plan = t.prepare_call(XID.wrapping_add(1), 3000, 4000);
    check!(matches!(plan, Ok(p) if p.protocol == Protocol::V2 && !p.probe));
    check!(t.stats().probes == 1);
    Ok(())
}

fn svcrdma_err_vers_falls_back() -> TestResult {
    let mut t = up(Config::default(), peer(4096, 4096, true));
    check!(t.prepare_call(XID, 100, 2000).is_ok());
    let w = svcrdma_err_vers(XID);
    let o = t.receive(w.bytes());
    check!(o.reply == Reply::Resend { xid: XID });
    // An error grants no credits: still one in flight.
    check!(o.credits.is_none());
    check!(t.credits().window() == 1);
    check!(t.phase() == Phase::Settled(Protocol::V1));
    check!(t.memory().v1_only());
    check!(t.stats().v1_fallbacks == 1);
    // The resent Call is v1 and may use v1's (private-data) thresholds.
    let plan = t.prepare_call(XID, 3000, 2000);
    check!(
        matches!(plan, Ok(p) if p.protocol == Protocol::V1 && p.credit == 128 && p.hdr_len == 28)
    );
    let w = v1_reply(XID, 64);
    let o = t.receive(w.bytes());
    check!(is_deliver(&o.reply, XID));
    check!(o.credits == Some(CreditUpdate::new(64)));
    // Reconnects start in v1: no second probe, no loop.
    check!(t.disconnected() == ProbeLoss::None);
    check!(t.connect().protocol == Protocol::V1);
    check!(t.phase() == Phase::Settled(Protocol::V1));
    Ok(())
}

fn err_vers_framings() -> TestResult {
    // v1 ERR_VERS with vers 1, and v2 RDMA2_ERR_VERS offering 1..=1.
    let v1_echo = Wire::new(&[XID, 1, 32, 4, 1, 1, 1]);
    let v2_err = Wire::new(&[XID, 2, 32, 4, 1, 1, 1, 1]);
    for w in [&v1_echo, &v2_err] {
        let mut t = up(Config::default(), Peer::Absent);
        check!(t.prepare_call(XID, 100, 100).is_ok());
        let o = t.receive(w.bytes());
        check!(o.reply == Reply::Resend { xid: XID });
        check!(t.phase() == Phase::Settled(Protocol::V1));
    }
    // A range 1..=3 also offers v1.
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    let w = Wire::new(&[XID, 2, 32, 4, 1, 1, 1, 3]);
    check!(t.receive(w.bytes()).reply == Reply::Resend { xid: XID });
    Ok(())
}

fn err_vers_without_v1() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    let w = Wire::new(&[XID, 2, 32, 4, 1, 1, 3, 4]);
    let o = t.receive(w.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EPROTONOSUPPORT,
            cause: Cause::ErrVers {
                low: 3,
                high: 4,
                ..
            }
        }
    ));
    check!(!t.memory().v1_only());
    // The probe is answered; the next Call probes again.
    check!(t.phase() == Phase::Probing { probe: None });
    let next = XID.wrapping_add(1);
    check!(matches!(t.prepare_call(next, 100, 100), Ok(p) if p.probe));
    Ok(())
}

fn stray_err_vers_dropped() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    // Before the probe is sent.
    let w = svcrdma_err_vers(XID);
    check!(t.receive(w.bytes()).reply == Reply::Drop(Cause::StrayErrVers));
    check!(t.prepare_call(XID, 100, 100).is_ok());
    // Another XID.
    let w = svcrdma_err_vers(XID.wrapping_add(5));
    let o = t.receive(w.bytes());
    check!(o.reply == Reply::Drop(Cause::StrayErrVers));
    check!(t.phase() == Phase::Probing { probe: Some(XID) });
    check!(!t.memory().v1_only());
    check!(Cause::StrayErrVers.is_bad_reply());
    Ok(())
}

fn v1_rejected_too() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(t.receive(svcrdma_err_vers(XID).bytes()).reply == Reply::Resend { xid: XID });
    // The resent v1 Call is rejected as well: fail it, clearly.
    check!(t.prepare_call(XID, 100, 100).is_ok());
    let w = Wire::new(&[XID, 1, 32, 4, 1, 3, 3]);
    let o = t.receive(w.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EPROTONOSUPPORT,
            ..
        }
    ));
    check!(t.phase() == Phase::Settled(Protocol::V1));
    // Same on a later connection that starts in v1.
    t.disconnected();
    t.connect();
    t.established(Peer::Absent);
    check!(t.prepare_call(9, 100, 100).is_ok());
    let w = Wire::new(&[9, 1, 32, 4, 1, 1, 1]);
    let o = t.receive(w.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: 9,
            errno: Errno::EPROTONOSUPPORT,
            ..
        }
    ));
    Ok(())
}

fn settled_v2_then_err_vers() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(is_deliver(
        &t.receive(v2_reply(XID, CRED_1_32).bytes()).reply,
        XID
    ));
    let x = XID.wrapping_add(1);
    check!(t.prepare_call(x, 100, 100).is_ok());
    // No flip-flop: the RPC fails, the connection stays v2.
    let msg = svcrdma_err_vers(x);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail { xid, errno: Errno::EIO, cause: Cause::ErrVers { settled: true, .. } } if xid == x
    ));
    check!(t.phase() == Phase::Settled(Protocol::V2));
    check!(!t.memory().v1_only());
    Ok(())
}

fn version_mismatch_disconnects() -> TestResult {
    // v2 connection, v1 reply.
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(is_deliver(
        &t.receive(v2_reply(XID, CRED_1_32).bytes()).reply,
        XID
    ));
    let msg = v1_reply(XID, 5);
    let o = t.receive(msg.bytes());
    check!(o.reply == Reply::Disconnect(Cause::VersionMismatch { got: 1 }));
    check!(o.credits.is_none());
    // A v1 reply to the v2 probe.
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    let msg = v1_reply(XID, 5);
    let o = t.receive(msg.bytes());
    check!(o.reply == Reply::Disconnect(Cause::VersionMismatch { got: 1 }));
    check!(t.phase() == Phase::Probing { probe: Some(XID) });
    // v1 connection, v2 reply; unknown version.
    let mut t = up(
        Config {
            policy: VersionPolicy::ForceV1,
            ..Config::default()
        },
        Peer::Absent,
    );
    let msg = v2_reply(XID, CRED_1_32);
    let o = t.receive(msg.bytes());
    check!(o.reply == Reply::Disconnect(Cause::VersionMismatch { got: 2 }));
    let msg = Wire::new(&[XID, 7, 1, 0, 0, 0, 0]);
    let o = t.receive(msg.bytes());
    check!(o.reply == Reply::Disconnect(Cause::VersionMismatch { got: 7 }));
    check!(t.stats().disconnects == 2);
    Ok(())
}

fn lost_probes_bound_the_loop() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    let mut lost = 0u8;
    loop {
        check!(t.phase() == Phase::Probing { probe: None });
        check!(t.prepare_call(XID, 100, 100).is_ok());
        let loss = t.disconnected();
        lost = lost.saturating_add(1);
        if loss == ProbeLoss::NowV1Only {
            break;
        }
        check!(loss == ProbeLoss::Lost);
        check!(lost < LOST_PROBE_LIMIT);
        t.connect();
        t.established(Peer::Absent);
    }
    check!(lost == LOST_PROBE_LIMIT);
    check!(t.memory().v1_only());
    check!(t.connect().protocol == Protocol::V1);
    // An answered probe resets the count.
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(t.disconnected() == ProbeLoss::Lost);
    t.connect();
    t.established(Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(is_deliver(
        &t.receive(v2_reply(XID, CRED_1_32).bytes()).reply,
        XID
    ));
    check!(t.memory().lost_probes() == 0);
    // Losing a settled connection is not a lost probe.
    check!(t.disconnected() == ProbeLoss::None);
    Ok(())
}

fn probe_too_big_opens_v1() -> TestResult {
    // The first Call (2000 bytes) does not fit the 1024-byte probe but fits
    // v1 with the server's 4096-byte private data.
    let mut t = up(Config::default(), peer(4096, 4096, false));
    let plan = t.prepare_call(XID, 2000, 1000);
    check!(matches!(plan, Ok(p) if p.protocol == Protocol::V1 && !p.probe));
    check!(t.phase() == Phase::Settled(Protocol::V1));
    check!(!t.memory().v1_only());
    check!(t.stats().probe_too_big == 1);
    // The next connection probes again.
    t.disconnected();
    check!(t.connect().protocol == Protocol::V2);
    // Too big for v1 as well: EMSGSIZE, and the connection keeps probing.
    let mut t = up(Config::default(), Peer::Absent);
    let e = t.prepare_call(XID, 2000, 1000);
    check!(
        matches!(e, Err(CallError::TooBig(tb)) if tb.direction == Direction::Call && tb.limit == 1024 - 36)
    );
    check!(matches!(e, Err(err) if err.errno() == Errno::EMSGSIZE));
    check!(t.phase() == Phase::Probing { probe: None });
    Ok(())
}

fn prepare_rpc_long_call_and_reply() -> TestResult {
    // Chunks on, v1 with the server's 4096-byte thresholds.
    let v1 = Config {
        policy: VersionPolicy::ForceV1,
        ..Config::default()
    };
    let mut t = up(v1, peer(4096, 4096, false));
    t.set_max_segs(8);
    // A small RPC stays inline.
    let small = Rpc {
        call: Geometry {
            head: 200,
            ..Geometry::default()
        },
        reply: Geometry {
            head: 1000,
            ..Geometry::default()
        },
        reply_buflen: 1000,
        ..Rpc::default()
    };
    let r = t.prepare_rpc(XID, &small, 4096, 32);
    check!(
        matches!(r, Ok((c, p)) if p.is_inline() && c.hdr_len == 28 && p.kind() == header::MsgKind::Msg)
    );
    // An 8 KiB Call and a 68 KiB Reply buffer: Long Call + Long Reply.
    let big = long_rpc();
    let r = t.prepare_rpc(XID + 1, &big, 4096, 32);
    check!(r.is_ok());
    let Ok((call, plan)) = r else {
        return Ok(());
    };
    check!(call.protocol == Protocol::V1 && !call.probe);
    check!(plan.call() == CallForm::Long && plan.reply() == ReplyForm::Long);
    check!(plan.kind() == header::MsgKind::NoMsg);
    check!(plan.send_layout().is_empty());
    check!(call.hdr_len == plan.header_len());
    check!(plan.read_ranges().len() == 2 && plan.reply_ranges().len() == 2);
    let seg = |handle: u32, length: u32| Segment {
        handle,
        length,
        offset: 0x1000_0000_0000 + u64::from(handle),
    };
    let segs = [seg(1, 200), seg(2, 8192), seg(3, 4096), seg(4, 65536)];
    check!(plan.chunk_lists(&segs, false).is_ok());
    // The server wrote 4196 bytes through the Reply chunk: RDMA_NOMSG.
    let x = XID + 1;
    let msg = Wire::new(&[
        x, 1, 32, 1, 0, 0, 1, 2, 3, 4096, 0x1000, 3, 4, 100, 0x1000, 4,
    ]);
    let o = t.receive(msg.bytes());
    let Reply::Chunked { xid, header: h } = o.reply else {
        return Err(Failure {
            line: line!(),
            what: "a NOMSG reply with a Reply chunk is not Reply::Chunked",
        });
    };
    check!(xid == x && t.stats().chunked_replies == 1);
    check!(plan.check_reply(&segs, &h) == Ok(ReplyData::Long { len: 4196 }));
    // More than registered: refused.
    let msg = Wire::new(&[x, 1, 32, 1, 0, 0, 1, 1, 3, 4097, 0x1000, 3]);
    let o = t.receive(msg.bytes());
    check!(matches!(o.reply, Reply::Chunked { header: h, .. }
        if matches!(plan.check_reply(&segs, &h), Err(ReplyError::Overrun { .. }))));
    // Without chunks the same reply fails its RPC, as before.
    t = up(v1, peer(4096, 4096, false));
    let msg = Wire::new(&[
        x, 1, 32, 1, 0, 0, 1, 2, 3, 4096, 0x1000, 3, 4, 100, 0x1000, 4,
    ]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            cause: Cause::Chunks(_),
            ..
        }
    ));
    check!(matches!(
        t.prepare_rpc(x, &big, 4096, 32),
        Err(CallError::Plan(PlanError::TooBig(_)))
    ));
    Ok(())
}

/// An 8 KiB Call and a 68 KiB Reply buffer: with 4096-byte thresholds,
/// a Long Call and a Long Reply (two segments each).
fn long_rpc() -> Rpc {
    Rpc {
        call: geometry(200, 8192, 0),
        reply: geometry(4096, 65536, 0),
        reply_buflen: 4096 + 65536,
        ..Rpc::default()
    }
}

/// An RPC whose chunks need more MRs than are free waits (planned once,
/// nothing counted as sent).
fn prepare_rpc_waits_for_mrs() -> TestResult {
    let v1 = Config {
        policy: VersionPolicy::ForceV1,
        ..Config::default()
    };
    let mut t = up(v1, peer(4096, 4096, false));
    t.set_max_segs(8);
    // Four segments, four MRs.
    let big = long_rpc();
    let before = t.credits().outstanding();
    let r = t.prepare_rpc_within(XID, &big, 4096, 32, &Hints::NONE, 3);
    check!(r == Err(CallError::NoMrs { needed: 4 }));
    check!(CallError::NoMrs { needed: 4 }.errno() == Errno::EAGAIN);
    check!(t.credits().outstanding() == before);
    let r = t.prepare_rpc_within(XID, &big, 4096, 32, &Hints::NONE, 4);
    check!(matches!(r, Ok((_, ref p)) if p.ranges().len() == 4));
    check!(t.credits().outstanding() == before.wrapping_add(1));
    Ok(())
}

/// A transport settled on v2 (no private data: 4096-byte thresholds)
/// with chunks (8 segments) and `config`.
#[inline(never)]
fn v2_chunked(config: Config) -> Transport {
    let mut t = up(config, Peer::Absent);
    t.set_max_segs(8);
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, CRED_1_32).bytes());
    t
}

/// [`v2_chunked`] with `pieces` continued Reply pieces in place of a
/// Reply chunk.
#[inline(never)]
fn v2_cont(pieces: u32) -> Transport {
    v2_chunked(Config {
        cont_reply_pieces: pieces,
        ..Config::default()
    })
}

/// 128 pieces of 4060 bytes: the most a v2 Reply continued in place of a
/// Reply chunk may be with 4096-byte Receives and 128 credits.
const CONT_128: u32 = 128 * 4060;

/// A metadata RPC as the Linux NFS client builds it: a small Call, a
/// Reply buffer of a 4 KiB head and `pages` bytes of pages (READDIR; 0:
/// OPEN), no DDP.
fn meta_rpc(pages: u32) -> Rpc {
    Rpc {
        call: Geometry {
            head: 300,
            ..Geometry::default()
        },
        reply: geometry(4096, pages, 0),
        reply_buflen: 4096u32.saturating_add(pages),
        ddp_allowed: true,
        ..Rpc::default()
    }
}

/// True if `r` planned the RPC inline in v2, nothing registered.
fn v2_inline(r: &Result<(super::conn::send::CallPlan, ChunkPlan), CallError>) -> bool {
    matches!(r, Ok((c, p)) if p.is_inline() && p.ranges().is_empty()
        && c.protocol == Protocol::V2 && c.hdr_len == 36)
}

/// True if `r` planned a Long Reply (a Reply chunk).
fn long_reply(r: &Result<(super::conn::send::CallPlan, ChunkPlan), CallError>) -> bool {
    matches!(r, Ok((_, p)) if p.reply() == ReplyForm::Long && !p.reply_ranges().is_empty())
}

/// On v2 with chunks, an OPEN or READDIR whose Reply buffer
/// exceeds the inline threshold is sent with no Reply chunk (nothing
/// registered) when the responder can continue the Reply to us; the
/// continued Reply completes it. A READ keeps its Write chunk.
fn v2_metadata_replies_continued() -> TestResult {
    let mut t = v2_cont(128);
    check!(t.limits(4096, 32).cont_reply == CONT_128);
    // OPEN: a 4 KiB head over the 4096 - 300 reply threshold.
    let open = meta_rpc(0);
    check!(open.reply_buflen > t.thresholds().max_inline_reply());
    let x = XID + 2;
    check!(v2_inline(&t.prepare_rpc(x, &open, 4096, 32)));
    // Its Reply arrives in two continued pieces and completes it.
    let m = piece(x, CRED_0_32, true, &[x, 1, 0]);
    check!(is_piece(&t.receive(m.bytes()).reply, x, 0, 12, None));
    let m = piece(x, CRED_1_32, false, &[0, 0]);
    check!(is_piece(&t.receive(m.bytes()).reply, x, 12, 8, Some(20)));
    let s = *t.stats();
    check!(s.continued_replies == 1 && s.chunked_replies == 0 && s.bad_reply == 0);
    // READDIR of 256 KiB, and the largest buffer continuation carries.
    check!(v2_inline(&t.prepare_rpc(
        x + 1,
        &meta_rpc(256 << 10),
        4096,
        32
    )));
    check!(v2_inline(&t.prepare_rpc(
        x + 2,
        &meta_rpc(CONT_128 - 4096),
        4096,
        32
    )));
    // One byte more: a Reply chunk, as before.
    check!(long_reply(&t.prepare_rpc(
        x + 3,
        &meta_rpc(CONT_128 - 4095),
        4096,
        32
    )));
    // A READ keeps its Write chunk (data, not metadata).
    let read = Rpc {
        reply: geometry(200, 8192, 0),
        reply_buflen: 200 + 8192,
        reply_ddp: true,
        ..meta_rpc(0)
    };
    check!(matches!(t.prepare_rpc(x + 4, &read, 4096, 32),
        Ok((_, p)) if p.reply() == ReplyForm::Write));
    // Recovery asking for a Reply chunk (e.g. RDMA2_ERR_REPLY_RESOURCE
    // from a responder that does not continue) gets one.
    let hints = Hints {
        reply_chunk: true,
        ..Hints::NONE
    };
    check!(long_reply(&t.prepare_rpc_hinted(
        x + 5,
        &open,
        4096,
        32,
        &hints
    )));
    Ok(())
}

/// Where continued Replies do not replace a Reply chunk: off
/// (`cont_reply_pieces` 0), version 1, and inline-only connections (no
/// chunks: unchanged); the bound follows the credits we ask for.
fn v2_continued_reply_limits() -> TestResult {
    let open = meta_rpc(0);
    let mut t = v2_cont(0);
    check!(t.limits(4096, 32).cont_reply == 0);
    check!(long_reply(&t.prepare_rpc(XID, &open, 4096, 32)));
    let v1 = Config {
        policy: VersionPolicy::ForceV1,
        cont_reply_pieces: 128,
        ..Config::default()
    };
    let mut t = up(v1, peer(4096, 4096, false));
    t.set_max_segs(8);
    check!(t.limits(4096, 32).cont_reply == 0);
    check!(long_reply(&t.prepare_rpc(XID, &open, 4096, 32)));
    // No more pieces than credits asked for, nor than 1024.
    let few = Config {
        max_requests: 16,
        cont_reply_pieces: 1000,
        ..Config::default()
    };
    check!(few.validated().cont_reply_pieces == 16);
    check!(v2_chunked(few).limits(4096, 32).cont_reply == 16 * 4060);
    let many = Config {
        max_requests: 4096,
        cont_reply_pieces: 5000,
        ..Config::default()
    };
    check!(many.validated().cont_reply_pieces == 1024);
    // Inline only (no chunks): no limit to apply, the Reply is not
    // checked against the threshold (as before).
    let mut t = up(
        Config {
            cont_reply_pieces: 128,
            ..Config::default()
        },
        Peer::Absent,
    );
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, CRED_1_32).bytes());
    check!(t.limits(4096, 32).cont_reply == 0);
    check!(v2_inline(&t.prepare_rpc(XID, &open, 4096, 32)));
    Ok(())
}

fn v1_credit_window() -> TestResult {
    let c = Config::default();
    let mut s = CreditState::new(&c, Protocol::V1);
    check!(
        s.window() == 1
            && s.current()
                == CreditUpdate {
                    credits: 1,
                    cwnd: 256
                }
    );
    check!(s.credit_word() == 128);
    // Zero is clamped to 1 (no change: no update).
    check!(s.on_grant(Grant::V1(0)).update.is_none());
    check!(
        s.on_grant(Grant::V1(20)).update
            == Some(CreditUpdate {
                credits: 20,
                cwnd: 20 << 8
            })
    );
    check!(s.on_grant(Grant::V1(20)).update.is_none());
    // More than we asked for is clamped to max_requests.
    check!(s.on_grant(Grant::V1(u32::MAX)).update == Some(CreditUpdate::new(128)));
    check!(s.on_grant(Grant::V1(0)).update == Some(CreditUpdate::new(1)));
    // v1 has no message budget.
    for _ in 0..1000 {
        s.on_send();
    }
    check!(s.may_send());
    Ok(())
}

fn v2_credit_accounting() -> TestResult {
    let c = Config::default();
    let mut s = CreditState::new(&c, Protocol::V2);
    check!(s.may_send() && s.limit() == 1);
    s.on_send();
    check!(!s.may_send() && s.outstanding() == 1);
    // A zero low half returns nothing, but a reply still returns the Call
    // it answers; the limit applies.
    let none = Credits {
        granted: 0,
        max: 16,
    };
    let e = s.on_grant(Grant::V2 {
        credits: none,
        answers_call: true,
        credit_grant: false,
    });
    check!(!e.bad_word && e.update == Some(CreditUpdate::new(16)) && e.wake);
    check!(s.limit() == 16 && s.outstanding() == 0);
    let e = s.on_grant(Grant::V2 {
        credits: Credits { granted: 1, max: 1 },
        answers_call: false,
        credit_grant: false,
    });
    check!(e.update == Some(CreditUpdate::new(1)) && s.limit() == 1);
    s.on_send();
    // A word without any limit (zero both halves) is invalid: ignored
    // (and counted), the rest too.
    let e = s.on_grant(Grant::V2 {
        credits: Credits { granted: 0, max: 0 },
        answers_call: false,
        credit_grant: false,
    });
    check!(e.bad_word && !e.wake && s.outstanding() == 1);
    // Asynchronous grant: 1 returned, limit 4.
    let e = s.on_grant(Grant::V2 {
        credits: Credits { granted: 1, max: 4 },
        answers_call: false,
        credit_grant: true,
    });
    check!(e.update == Some(CreditUpdate::new(4)) && e.wake);
    check!(s.outstanding() == 0 && s.limit() == 4);
    check!(!s.total_reading());
    for _ in 0..4 {
        check!(s.may_send());
        s.on_send();
    }
    check!(!s.may_send());
    // RDMA2_ERROR: word ignored, one credit back.
    let e = s.on_grant(Grant::Ignored);
    check!(e.wake && e.update.is_none() && s.outstanding() == 3);
    // A v1-style "echo" reply (granted == max) returns more than is
    // outstanding: read the other way, it returns only what the peer's
    // messages show it received (here nothing: no Call of ours was
    // recorded), and its low half is the limit.
    let e = s.on_grant(Grant::V2 {
        credits: Credits {
            granted: 64,
            max: 64,
        },
        answers_call: true,
        credit_grant: false,
    });
    check!(s.outstanding() == 3 && e.update == Some(CreditUpdate::new(32)));
    // The window never exceeds max_requests.
    let e = s.on_grant(Grant::V2 {
        credits: Credits {
            granted: 0,
            max: 60000,
        },
        answers_call: true,
        credit_grant: false,
    });
    check!(e.update == Some(CreditUpdate::new(128)) && s.limit() == 60000);
    // A shrinking limit closes the budget.
    for _ in 0..10 {
        s.on_send();
    }
    let e = s.on_grant(Grant::V2 {
        credits: Credits { granted: 1, max: 2 },
        answers_call: true,
        credit_grant: false,
    });
    check!(e.update == Some(CreditUpdate::new(2)) && !s.may_send() && s.outstanding() == 11);
    Ok(())
}

fn v2_advertisement() -> TestResult {
    let c = Config {
        bc_requests: 2,
        ..Config::default()
    };
    let mut s = CreditState::new(&c, Protocol::V2);
    // window 1 + 2 * 2 backchannel = 5; nothing consumed yet: granted 0.
    check!(s.recv_credits() == 5);
    check!(s.on_send() == Credits { granted: 0, max: 5 }.to_word());
    s.on_grant(Grant::V2 {
        credits: Credits {
            granted: 1,
            max: 10,
        },
        answers_call: true,
        credit_grant: false,
    });
    for _ in 0..3 {
        s.on_receive();
    }
    // 3 Receives consumed since our last Send.
    check!(
        s.on_send()
            == Credits {
                granted: 3,
                max: 14
            }
            .to_word()
    );
    // Nothing consumed since: the next word returns none (rule 4).
    check!(
        s.credit_word()
            == Credits {
                granted: 0,
                max: 14
            }
            .to_word()
    );
    // More consumed than one word can return: the rest goes with the
    // next message, none is lost.
    for _ in 0..20 {
        s.on_receive();
    }
    check!(
        s.on_send()
            == Credits {
                granted: 14,
                max: 14
            }
            .to_word()
    );
    check!(
        s.on_send()
            == Credits {
                granted: 6,
                max: 14
            }
            .to_word()
    );
    check!(
        s.on_send()
            == Credits {
                granted: 0,
                max: 14
            }
            .to_word()
    );
    // v1 sends max_requests.
    s.set_protocol(Protocol::V1);
    check!(s.credit_word() == 128);
    Ok(())
}

fn receive_replenish() -> TestResult {
    // v1 before connect: needed 1 -> 1 + batch of 7, as the C client.
    let mut t = Transport::new(Config {
        policy: VersionPolicy::ForceV1,
        ..Config::default()
    });
    check!(t.connect().post_receives == 8);
    t.established(Peer::Absent);
    // v2 (probe): needed 1 + 1 reserve -> 9.
    let mut t = Transport::new(Config::default());
    check!(t.connect().post_receives == 9);
    t.established(Peer::Absent);
    check!(t.credits().posted() == 9);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    let msg = v2_reply(XID, 0x0010_0001);
    let o = t.receive(msg.bytes());
    // window 16, needed 17, posted 8: post 17 - 8 + 7 = 16.
    check!(o.post_receives == 16 && t.credits().posted() == 24);
    // Nothing to post while more than needed remain.
    let mut n = 0u32;
    let mut i = 0u32;
    while i < 6 {
        let x = XID.wrapping_add(1).wrapping_add(i);
        check!(t.prepare_call(x, 100, 100).is_ok());
        n = n.saturating_add(t.receive(v2_reply(x, 0x0010_0001).bytes()).post_receives);
        i = i.saturating_add(1);
    }
    check!(n == 0 && t.credits().posted() == 18);
    // The seventh brings it to needed: a batch again.
    let x = XID.wrapping_add(100);
    check!(t.prepare_call(x, 100, 100).is_ok());
    check!(t.receive(v2_reply(x, 0x0010_0001).bytes()).post_receives == 7);
    // A shortfall is taken back; flushed Receives are no longer posted.
    t.receives_unposted(3);
    t.receive_flushed();
    check!(t.credits().posted() == 20);
    check!(Config::default().recv_queue_depth() == 128 + 1 + 7);
    Ok(())
}

fn thresholds_from_private_data() -> TestResult {
    let c = Config::default();
    // The peer's Receive size caps our Sends, its Send size our Receives.
    let th = Thresholds::new(&c, &peer(2048, 8192, true), Protocol::V1, false);
    check!(th.send == 4096 && th.recv == 2048 && th.remote_invalidation);
    // Version 2 names an rdma_inv_handle per Call (-00 §6.3.3.2): the
    // peer's R bit (RFC 8797, version 1) does not matter there.
    let th = Thresholds::new(&c, &peer(65536, 1024, false), Protocol::V2, false);
    check!(th.send == 1024 && th.recv == 4096 && th.remote_invalidation);
    // We do not accept remote invalidation: off whatever the peer says.
    let no_r = Config {
        remote_invalidate: false,
        ..c
    };
    check!(
        !Thresholds::new(&no_r, &peer(4096, 4096, true), Protocol::V1, false).remote_invalidation
    );
    // Absent or invalid private data: v1 defaults, then v2's once settled.
    let invalid = pvtdata::decode(&[0xf6, 0xab, 0x0e, 0x18, 9, 1, 3, 3]);
    check!(matches!(invalid, Peer::Invalid(_)));
    for p in [Peer::Absent, invalid] {
        let th = Thresholds::new(&c, &p, Protocol::V1, false);
        check!(th.send == 1024 && th.recv == 1024 && !th.remote_invalidation);
        let th = Thresholds::new(&c, &p, Protocol::V2, true);
        check!(th.send == 1024 && th.recv == 1024);
        let th = Thresholds::new(&c, &p, Protocol::V2, false);
        check!(th.send == 4096 && th.recv == 4096);
    }
    // The probe is capped at 1024 whatever the peer allows.
    let th = Thresholds::new(&c, &peer(65536, 65536, true), Protocol::V2, true);
    check!(th.send == 1024 && th.recv == 4096);
    // A larger configuration is capped by the peer.
    let big = Config {
        inline_send: 65536,
        inline_recv: 65536,
        ..c
    };
    let th = Thresholds::new(&big, &peer(16384, 32768, true), Protocol::V1, false);
    check!(th.send == 32768 && th.recv == 16384);
    // CONNPROP lowers, never raises, never below 1024.
    let mut th = Thresholds::new(&c, &peer(4096, 4096, true), Protocol::V2, false);
    let mut props = super::xdr::props::TransportProperties::DEFAULTS;
    props.recv_buf_size = 2048;
    props.max_send_size = 100;
    check!(th.apply_props(&props));
    check!(th.send == 2048 && th.recv == 1024);
    check!(!th.apply_props(&super::xdr::props::TransportProperties::DEFAULTS));
    Ok(())
}

fn header_sizes_and_fit() -> TestResult {
    // Inline-only: the exact empty-list headers.
    check!(max_call_header(Protocol::V1, 0) == 28 && max_reply_header(Protocol::V1, 0) == 28);
    check!(max_call_header(Protocol::V2, 0) == 36 && max_reply_header(Protocol::V2, 0) == 36);
    // The C client's bounds (rpc_rdma.c:62-97) for 8 segments.
    check!(max_call_header(Protocol::V1, 8) == 28 + 8 * 24 + 24);
    check!(max_reply_header(Protocol::V1, 8) == 28 + 4 + 8 * 16 + 4);
    check!(max_call_header(Protocol::V2, 8) == 28 + 8 * 24 + 24 + 8);
    check!(max_call_header(Protocol::V1, u32::MAX) == u32::MAX);
    let th = Thresholds::new(
        &Config::default(),
        &peer(4096, 4096, true),
        Protocol::V1,
        false,
    );
    check!(th.max_inline_call() == 4068 && th.max_inline_reply() == 4068);
    check!(th.fit(4068, 4068).is_ok());
    check!(
        matches!(th.fit(4069, 0), Err(e) if e.direction == Direction::Call && e.len == 4069 && e.limit == 4068)
    );
    check!(matches!(th.fit(0, 4069), Err(e) if e.direction == Direction::Reply && e.limit == 4068));
    check!(matches!(th.fit(u32::MAX, u32::MAX), Err(e) if e.errno() == Errno::EMSGSIZE));
    // The whole probe Send is at most 1024 bytes.
    let mut t = up(Config::default(), peer(4096, 4096, true));
    check!(t.prepare_call(1, 0, 100).is_ok());
    let mut t = up(Config::default(), peer(4096, 4096, true));
    check!(matches!(t.prepare_call(1, 988, 100), Ok(p) if p.probe && p.hdr_len == 1024 - 988));
    Ok(())
}

fn reply_classes() -> TestResult {
    let settle = |t: &mut Transport| {
        let _ = t.prepare_call(1, 100, 100);
        let _ = t.receive(v2_reply(1, CRED_1_32).bytes());
    };
    let mut t = up(Config::default(), Peer::Absent);
    settle(&mut t);
    // RDMA2_ERROR: -EIO with the error for the log; credit word ignored.
    let msg = Wire::new(&[XID, 2, 0, 4, 1, 10]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EIO,
            cause: Cause::RdmaError { .. }
        }
    ));
    check!(o.credits.is_none());
    // A Write chunk in a reply: not supported yet.
    let mut w = Wire::new(&[XID, 2, CRED_0_32, 0, 1, 0, 0, 1, 1, 7, 512, 0, 4096, 0, 0]);
    rpc_reply(&mut w, XID);
    let o = t.receive(w.bytes());
    check!(
        matches!(o.reply, Reply::Fail { errno: Errno::EIO, cause: Cause::Chunks(u), .. } if u.write_list && !u.nomsg)
    );
    // A Long reply (RDMA2_NOMSG with a Reply chunk).
    let w = Wire::new(&[XID, 2, CRED_0_32, 1, 1, 0, 0, 0, 1, 1, 7, 512, 0, 4096]);
    let o = t.receive(w.bytes());
    check!(
        matches!(o.reply, Reply::Fail { cause: Cause::Chunks(u), .. } if u.reply_chunk && u.nomsg)
    );
    // Asynchronous credit grant (nothing to return: every Call answered).
    let msg = Wire::new(&[0, 2, 0x0040_0000, 1, 0, 0, 0, 0, 0]);
    let o = t.receive(msg.bytes());
    check!(o.reply == Reply::Control(Control::CreditGrant));
    check!(o.credits == Some(CreditUpdate::new(64)));
    // ... which must have XID 0.
    let msg = Wire::new(&[XID, 2, 0x0040_0002, 1, 1, 0, 0, 0, 0]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            cause: Cause::EmptyNoMsg,
            ..
        }
    ));
    // The same with F_RESPONSE clear is in the peer's XID space
    // (-00 §6.3.2.1): no Call of ours is failed; it is answered as a
    // reverse-direction Call that does not parse.
    let msg = Wire::new(&[XID, 2, 0x0040_0002, 1, 0, 0, 0, 0, 0]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Drop(Cause::ReverseError {
            xid: XID,
            body: ErrorBody::BadXdr
        })
    ));
    // CONNPROP: Receive Buffer Size 2048 lowers the call threshold.
    let msg = Wire::new(&[0, 2, CRED_1_32, 5, 0, 1, 2, 4, 2048]);
    let o = t.receive(msg.bytes());
    check!(matches!(o.reply, Reply::Control(Control::Properties(p)) if p.recv_buf_size == 2048));
    check!(t.thresholds().send == 2048);
    // A reverse-direction Call (F_RESPONSE clear, msg_type CALL).
    let w = Wire::new(&[77, 2, CRED_1_32, 0, 0, 0, 0, 0, 0, 77, 0, 2, 100003]);
    check!(matches!(
        t.receive(w.bytes()).reply,
        Reply::ReverseCall { xid: 77, .. }
    ));
    // RPC header inconsistent with the transport header.
    let mut w = Wire::new(&[XID, 2, CRED_1_32, 0, 1, 0, 0, 0, 0]);
    rpc_reply(&mut w, XID.wrapping_add(1));
    check!(matches!(
        t.receive(w.bytes()).reply,
        Reply::Fail {
            cause: Cause::BadRpcHeader,
            ..
        }
    ));
    // A reply without F_RESPONSE.
    let mut w = Wire::new(&[XID, 2, CRED_1_32, 0, 0, 0, 0, 0, 0]);
    rpc_reply(&mut w, XID);
    check!(matches!(
        t.receive(w.bytes()).reply,
        Reply::Fail {
            cause: Cause::BadRpcHeader,
            ..
        }
    ));
    // v1: NOMSG without chunks; ERR_CHUNK (its grant applies, as in C).
    t = up(
        Config {
            policy: VersionPolicy::ForceV1,
            ..Config::default()
        },
        Peer::Absent,
    );
    let msg = Wire::new(&[XID, 1, 8, 1, 0, 0, 0]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            cause: Cause::EmptyNoMsg,
            ..
        }
    ));
    let msg = Wire::new(&[XID, 1, 9, 4, 2]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            errno: Errno::EIO,
            cause: Cause::RdmaError { .. },
            ..
        }
    ));
    check!(o.credits == Some(CreditUpdate::new(9)));
    check!(t.stats().rdma_error == 1 && t.stats().bad_reply == 1);
    Ok(())
}

/// v2 credit word with a zero low half: invalid, so a message carrying it
/// returns only what credit rule 3 returns (1 if it answers a Call).
const CRED_0_32: u32 = 0x0020_0000;
/// Limit 1, nothing returned.
const CRED_0_1: u32 = 0x0001_0000;

/// A transport settled on v2 (inline only, limit 32) with Call `XID`
/// outstanding.
#[inline(never)]
fn v2_with_call() -> Transport {
    let mut t = up(Config::default(), Peer::Absent);
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, CRED_1_32).bytes());
    let _ = t.prepare_call(XID, 100, 100);
    t
}

/// A piece of a continued reply: `RDMA2_MSG`, `F_RESPONSE`, `F_MORE` if
/// `more`, empty chunk lists, then `words`.
fn piece(xid: u32, credit: u32, more: bool, words: &[u32]) -> Wire {
    let flags = if more { 3 } else { 1 };
    let mut w = Wire::new(&[xid, 2, credit, 0, flags, 0, 0, 0, 0]);
    for x in words {
        w.push(*x);
    }
    w
}

fn is_piece(r: &Reply<'_>, xid: u32, offset: u32, len: usize, last: Option<u32>) -> bool {
    matches!(*r, Reply::Piece { xid: x, offset: o, payload, last: l }
        if x == xid && o == offset && payload.len() == len && l == last)
}

fn continuation_reassembly() -> TestResult {
    let mut t = v2_with_call();
    check!(t.credits().outstanding() == 1);
    // Three pieces: offsets follow, only the last one answers the Call
    // (the credit words return nothing, the last returns rule 3's floor).
    let m = piece(XID, CRED_0_32, true, &[XID, 1]);
    let o = t.receive(m.bytes());
    check!(is_piece(&o.reply, XID, 0, 8, None));
    check!(t.credits().outstanding() == 1);
    let m = piece(XID, CRED_0_32, true, &[0, 0, 0]);
    let o = t.receive(m.bytes());
    check!(is_piece(&o.reply, XID, 8, 12, None));
    check!(t.credits().outstanding() == 1);
    let m = piece(XID, CRED_0_32, false, &[0, 7]);
    let o = t.receive(m.bytes());
    check!(is_piece(&o.reply, XID, 20, 8, Some(28)));
    check!(t.credits().outstanding() == 0);
    let s = *t.stats();
    check!(s.reply_pieces == 3 && s.continued_replies == 1 && s.bad_reply == 0);
    check!(s.bad_credit == 0);
    // A credit grant between two pieces does not interrupt the sequence;
    // valid credit words of pieces count as usual.
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(is_piece(
        &t.receive(piece(XID, CRED_1_32, true, &[XID, 1]).bytes())
            .reply,
        XID,
        0,
        8,
        None
    ));
    check!(t.credits().outstanding() == 0);
    let grant = Wire::new(&[0, 2, CRED_1_32, 1, 0, 0, 0, 0, 0]);
    check!(t.receive(grant.bytes()).reply == Reply::Control(Control::CreditGrant));
    check!(is_piece(
        &t.receive(piece(XID, CRED_1_32, false, &[0]).bytes()).reply,
        XID,
        8,
        4,
        Some(12)
    ));
    // Afterwards replies with that XID are ordinary again.
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(is_deliver(
        &t.receive(v2_reply(XID, CRED_1_32).bytes()).reply,
        XID
    ));
    check!(t.stats().continued_replies == 2 && t.stats().bad_reply == 0);
    Ok(())
}

/// The second XID of [`continuation_interrupted`]'s cases.
const B: u32 = XID + 1;

/// `r` fails RPC `xid` with `-EIO` for continuation fault `f`.
fn cont_failed(r: &Reply<'_>, xid: u32, f: Fault) -> bool {
    *r == Reply::Fail {
        xid,
        errno: Errno::EIO,
        cause: Cause::Continuation(f),
    }
}

/// Starts a continued reply to `XID` on `t` (its first piece), then
/// receives `w`: whether `w` interrupted the sequence (`XID` failed).
fn interrupts(t: &mut Transport, w: &Wire) -> bool {
    let _ = t.receive(piece(XID, CRED_0_32, true, &[XID, 1]).bytes());
    cont_failed(&t.receive(w.bytes()).reply, XID, Fault::Interrupted)
}

/// Whether `t` drops a piece of `xid`'s sequence (`F_MORE` if `more`)
/// as the discarded rest of a sequence.
fn discards(t: &mut Transport, xid: u32, more: bool) -> bool {
    let m = piece(xid, CRED_0_32, more, &[0]);
    t.receive(m.bytes()).reply == Reply::Drop(Cause::Continuation(Fault::Discarded))
}

// Each case has a frame of its own, as in `continuation_refused`.
fn continuation_interrupted() -> TestResult {
    interrupted_by_xid()?;
    interrupted_by_htype()?;
    interrupted_by_flags()?;
    interrupted_by_sequence()?;
    interrupted_by_malformed()?;
    Ok(())
}

#[inline(never)]
fn interrupted_by_xid() -> TestResult {
    // Another XID interrupts: the sequence's RPC fails, the interrupting
    // message is dropped and answers nothing; the interrupted RPC's own
    // later last piece is then an ordinary (bad) reply, its one answer.
    let mut t = v2_with_call();
    check!(t.prepare_call(B, 100, 100).is_ok());
    check!(interrupts(&mut t, &v2_reply(B, CRED_0_32)));
    check!(t.credits().outstanding() == 2 && t.stats().bad_reply == 1);
    let m = piece(XID, CRED_0_32, false, &[0, 7]);
    let o = t.receive(m.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            cause: Cause::BadRpcHeader,
            ..
        }
    ));
    check!(t.credits().outstanding() == 1);
    Ok(())
}

#[inline(never)]
fn interrupted_by_htype() -> TestResult {
    // The same XID with another header type (NOMSG) ends it: one answer.
    let mut t = v2_with_call();
    let nomsg = Wire::new(&[XID, 2, CRED_0_32, 1, 1, 0, 0, 0, 0]);
    check!(interrupts(&mut t, &nomsg));
    check!(t.credits().outstanding() == 0);
    Ok(())
}

#[inline(never)]
fn interrupted_by_flags() -> TestResult {
    // F_RESPONSE dropped half-way is an interruption too.
    let mut t = v2_with_call();
    let w = Wire::new(&[XID, 2, CRED_0_32, 0, 0, 0, 0, 0, 0, 1]);
    check!(interrupts(&mut t, &w));
    check!(t.credits().outstanding() == 0);
    Ok(())
}

#[inline(never)]
fn interrupted_by_sequence() -> TestResult {
    // An interrupting piece of another sequence: the rest of that one is
    // discarded; its last piece answers B's Call, once.
    let mut t = v2_with_call();
    check!(t.prepare_call(B, 100, 100).is_ok());
    check!(interrupts(&mut t, &piece(B, CRED_0_32, true, &[B, 1])));
    check!(discards(&mut t, B, true));
    check!(t.credits().outstanding() == 2);
    check!(discards(&mut t, B, false));
    check!(t.credits().outstanding() == 1);
    Ok(())
}

#[inline(never)]
fn interrupted_by_malformed() -> TestResult {
    // A piece that does not decode (F_MORE with a chunk list) interrupts;
    // the rest of the sequence is discarded, its last piece answers.
    let mut t = v2_with_call();
    let w = Wire::new(&[XID, 2, CRED_0_32, 0, 3, 0, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 1]);
    check!(interrupts(&mut t, &w));
    check!(t.credits().outstanding() == 1);
    check!(discards(&mut t, XID, false));
    check!(t.credits().outstanding() == 0);
    check!(t.stats().bad_reply == 1 && t.stats().unsupported == 1);
    Ok(())
}

// Each case of `continuation_refused` has a frame of its own: a
// `Transport` is large, and a handful of them in one frame exceed the
// kernel's stack budget for KUnit tests (tools/testing/stack-check.sh).
fn continuation_refused() -> TestResult {
    refused_no_xid()?;
    refused_reverse_call()?;
    refused_bad_rpc_header()?;
    refused_chunks_on_last()?;
    chunks_on_last_offered()?;
    refused_unplaced()?;
    refused_reconnect()?;
    Ok(())
}

#[inline(never)]
fn refused_no_xid() -> TestResult {
    // XID 0 with F_MORE: dropped with its sequence, answers nothing.
    let mut t = v2_with_call();
    let m = piece(0, CRED_0_32, true, &[0, 1]);
    let o = t.receive(m.bytes());
    check!(o.reply == Reply::Drop(Cause::Continuation(Fault::NoXid)));
    check!(discards(&mut t, 0, false));
    check!(t.credits().outstanding() == 1 && t.stats().bad_reply == 1);
    Ok(())
}

#[inline(never)]
fn refused_reverse_call() -> TestResult {
    // A continued reverse-direction Call (F_RESPONSE clear) is not a
    // reply of ours: it is reassembled for the backchannel, and answers
    // none of our Calls.
    let mut t = v2_with_call();
    let w = Wire::new(&[77, 2, CRED_0_32, 0, 2, 0, 0, 0, 0, 77, 0]);
    check!(matches!(
        t.receive(w.bytes()).reply,
        Reply::ReverseCallPiece {
            xid: 77,
            offset: 0,
            last: None,
            payload,
        } if payload.len() == 8
    ));
    let w = Wire::new(&[77, 2, CRED_0_32, 0, 0, 0, 0, 0, 0, 1]);
    check!(matches!(
        t.receive(w.bytes()).reply,
        Reply::ReverseCallPiece {
            xid: 77,
            offset: 8,
            last: Some(12),
            payload,
        } if payload.len() == 4
    ));
    check!(t.credits().outstanding() == 1 && t.stats().unsupported == 0);
    check!(t.stats().reverse_calls == 1 && t.stats().reverse_call_pieces == 2);
    check!(t.stats().bad_reply == 0);
    Ok(())
}

#[inline(never)]
fn refused_bad_rpc_header() -> TestResult {
    // A first piece that is not this RPC's Reply fails at once.
    let mut t = v2_with_call();
    let m = piece(XID, CRED_0_32, true, &[XID, 0]);
    let o = t.receive(m.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EIO,
            cause: Cause::Continuation(Fault::BadRpcHeader)
        }
    ));
    check!(discards(&mut t, XID, false));
    check!(t.credits().outstanding() == 0 && t.stats().bad_reply == 1);
    Ok(())
}

#[inline(never)]
fn refused_chunks_on_last() -> TestResult {
    // Chunks on the last piece (allowed by -00) where the transport
    // offers none: the peer's error (-EIO, counted as unsupported, not
    // as a bad reply); answers the Call.
    let mut t = v2_with_call();
    let _ = t.receive(piece(XID, CRED_0_32, true, &[XID, 1]).bytes());
    let w = Wire::new(&[XID, 2, CRED_0_32, 0, 1, 0, 0, 1, 1, 9, 8, 0, 0, 0, 0, 0, 0]);
    let o = t.receive(w.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EIO,
            cause: Cause::Continuation(Fault::ChunksOnLast)
        }
    ));
    check!(t.credits().outstanding() == 0);
    check!(t.stats().bad_reply == 0 && t.stats().unsupported == 1);
    Ok(())
}

#[inline(never)]
fn chunks_on_last_offered() -> TestResult {
    // Where chunks are offered, the last piece's chunk lists come to the
    // transport with the reduced Reply's length, for its check against
    // the RPC's registration; the piece answers the Call.
    let mut t = up(
        Config {
            max_segs: 8,
            ..Config::default()
        },
        Peer::Absent,
    );
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, CRED_1_32).bytes());
    let _ = t.prepare_call(XID, 100, 100);
    let _ = t.receive(piece(XID, CRED_0_32, true, &[XID, 1]).bytes());
    let w = Wire::new(&[XID, 2, CRED_0_32, 0, 1, 0, 0, 1, 1, 9, 8, 0, 0, 0, 0, 0, 0]);
    let o = t.receive(w.bytes());
    check!(matches!(
        o.reply,
        Reply::LastChunkedPiece {
            len: 16,
            header: Header {
                xid: XID,
                body: header::Body::Msg(header::Msg { payload, .. }),
                ..
            },
        } if payload.len() == 8
    ));
    check!(t.credits().outstanding() == 0);
    check!(t.stats().unsupported == 0 && t.stats().chunked_replies == 1);
    check!(t.stats().continued_replies == 1);
    Ok(())
}

#[inline(never)]
fn refused_unplaced() -> TestResult {
    // The transport could not place a piece: the rest is dropped.
    let mut t = v2_with_call();
    let _ = t.receive(piece(XID, CRED_0_32, true, &[XID, 1]).bytes());
    t.abandon_continuation(XID + 5);
    check!(is_piece(
        &t.receive(piece(XID, CRED_0_32, true, &[0]).bytes()).reply,
        XID,
        8,
        4,
        None
    ));
    t.abandon_continuation(XID);
    check!(discards(&mut t, XID, true));
    check!(discards(&mut t, XID, false));
    check!(t.credits().outstanding() == 0);
    Ok(())
}

#[inline(never)]
fn refused_reconnect() -> TestResult {
    // A reconnect forgets a sequence in progress.
    let mut t = v2_with_call();
    let _ = t.receive(piece(XID, CRED_0_32, true, &[XID, 1]).bytes());
    t.disconnected();
    t.connect();
    t.established(Peer::Absent);
    let _ = t.prepare_call(XID, 100, 100);
    check!(is_deliver(
        &t.receive(v2_reply(XID, CRED_1_32).bytes()).reply,
        XID
    ));
    Ok(())
}

/// Zeros for the pieces of [`continuation_bounds`].
static ZEROS: [u8; 4096] = [0; 4096];

fn continuation_bounds() -> TestResult {
    let head = [0x0b, 0xad, 0xca, 0xfe, 0, 0, 0, 1];
    let p = |payload, more| Piece {
        xid: XID,
        htype: 0,
        more,
        response: true,
        chunks: false,
        valid: true,
        payload,
    };
    let mut r = Reassembly::new();
    check!(matches!(
        r.on_message(&p(&head, true)),
        Step::Append { offset: 0, .. }
    ));
    let mut last = Step::Single;
    let mut n = 0u32;
    while n < 2000 {
        last = r.on_message(&p(&ZEROS, true));
        if !matches!(last, Step::Append { .. }) {
            break;
        }
        n = n.saturating_add(1);
    }
    // 8 + 1023 * 4096 fits 4 MiB; the next piece does not.
    check!(n == 1023);
    check!(
        last == Step::Fail {
            xid: XID,
            fault: Fault::TooLong,
            answers: false
        }
    );
    check!(Cause::Continuation(Fault::TooLong).errno() == Errno::EMSGSIZE);
    check!(
        r.on_message(&p(&ZEROS, false))
            == Step::Drop {
                fault: Fault::Discarded,
                answers: true
            }
    );
    check!(r.on_message(&p(&head, false)) == Step::Single);
    // A sequence shorter than an RPC header is not a Reply.
    check!(matches!(
        r.on_message(&p(&[], true)),
        Step::Append { offset: 0, .. }
    ));
    check!(
        r.on_message(&p(&head[..4], false))
            == Step::Fail {
                xid: XID,
                fault: Fault::BadRpcHeader,
                answers: true
            }
    );
    check!(!r.in_sequence());
    Ok(())
}

fn continued_call_pieces() -> TestResult {
    // Settled on v2, inline only, responder limit 2 (with backchannel
    // slots we advertise 34 credits, so no grant of ours is due here).
    let mut t = up(
        Config {
            bc_requests: 16,
            ..Config::default()
        },
        Peer::Absent,
    );
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, 0x0002_0001).bytes());
    check!(t.credits().limit() == 2);
    let room = piece_room(4096);
    check!(room == 4060);
    let p = t.prepare_piece(XID, 10_000, 0);
    check!(matches!(p, Ok(p) if p.span == Span { offset: 0, len: 4060, more: true } && !p.probe));
    if let Ok(p) = p {
        let spec = p.msg_spec(XID);
        check!(spec.flags == Flags::MORE && spec.kind == header::MsgKind::Msg);
        check!(spec.chunks.is_empty() && spec.xid == XID);
    }
    check!(
        matches!(t.prepare_piece(XID, 10_000, 4060), Ok(p) if p.span.offset == 4060 && p.span.more)
    );
    // The budget is exhausted half-way: wait for a grant.
    check!(t.prepare_piece(XID, 10_000, 8120) == Err(CallError::NoCredits));
    let grant = Wire::new(&[0, 2, 0x0002_0001, 1, 0, 0, 0, 0, 0]);
    let o = t.receive(grant.bytes());
    check!(o.wake_senders && o.reply == Reply::Control(Control::CreditGrant));
    let p = t.prepare_piece(XID, 10_000, 8120);
    check!(matches!(p, Ok(p) if p.span == Span { offset: 8120, len: 1880, more: false }));
    if let Ok(p) = p {
        check!(p.msg_spec(XID).flags == Flags::NONE);
    }
    check!(t.prepare_piece(XID, 10_000, 10_000).is_err());
    check!(t.stats().continued_calls == 1 && t.stats().call_pieces == 3);
    check!(pieces(10_000, room) == 3 && pieces(1, room) == 1 && pieces(1, 0) == 0);
    check!(split(10, 0, 0).is_none());

    // Not on version 1, not with chunks.
    t = up(
        Config {
            policy: VersionPolicy::ForceV1,
            ..Config::default()
        },
        Peer::Absent,
    );
    check!(matches!(
        t.prepare_piece(XID, 10_000, 0),
        Err(CallError::TooBig(_))
    ));
    t = up(
        Config {
            max_segs: 8,
            ..Config::default()
        },
        Peer::Absent,
    );
    check!(matches!(
        t.prepare_piece(XID, 10_000, 0),
        Err(CallError::TooBig(_))
    ));

    // The first piece of a connection's first Call is the probe (at
    // most 1024 bytes); the next piece waits for the answer.
    t = up(Config::default(), Peer::Absent);
    let p = t.prepare_piece(XID, 2000, 0);
    check!(matches!(p, Ok(p) if p.probe && p.span.len == 988 && p.span.more));
    check!(t.prepare_piece(XID, 2000, 988) == Err(CallError::NoCredits));
    check!(t.stats().probes == 1);
    Ok(())
}

fn credit_grants_sent() -> TestResult {
    // Window 32, no backchannel: we advertise 32, so a grant is due once
    // 16 messages arrived since our last Send.
    let mut t = v2_with_call();
    check!(t.credits().recv_credits() == 32);
    let m = piece(XID, CRED_0_32, true, &[XID, 1]);
    let o = t.receive(m.bytes());
    check!(!o.grant_due && t.prepare_grant().is_none());
    let mut grant = None;
    for i in 1..16u32 {
        let m = piece(XID, CRED_0_32, true, &[0]);
        if t.receive(m.bytes()).grant_due {
            grant = t.prepare_grant().map(|w| (i, w));
            break;
        }
    }
    check!(
        grant
            == Some((
                15,
                Credits {
                    granted: 16,
                    max: 32
                }
                .to_word()
            ))
    );
    check!(t.stats().grants_sent == 1 && t.credits().consumed() == 0);
    check!(t.prepare_grant().is_none());
    // The grant took one message of the budget.
    check!(t.credits().outstanding() == 2);
    // Never beyond the one message -00 reserves for grants: with the
    // budget used up, one grant may still go, then none.
    let mut t = up(Config::default(), Peer::Absent);
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, 0x0001_0001).bytes());
    check!(t.prepare_call(XID, 100, 100).is_ok());
    check!(t.credits().outstanding() == 1 && t.credits().limit() == 1);
    // Window 1: we advertise 1, so every message makes a grant due.
    let m = piece(XID, CRED_0_1, true, &[XID, 1]);
    let o = t.receive(m.bytes());
    check!(o.grant_due && t.prepare_grant().is_some());
    check!(t.credits().outstanding() == 2);
    let m = piece(XID, CRED_0_1, true, &[0]);
    let o = t.receive(m.bytes());
    check!(!o.grant_due && t.prepare_grant().is_none());
    // Not on version 1.
    let mut v1 = up(
        Config {
            policy: VersionPolicy::ForceV1,
            ..Config::default()
        },
        Peer::Absent,
    );
    let _ = v1.prepare_call(XID, 100, 100);
    check!(!v1.receive(v1_reply(XID, 1).bytes()).grant_due);
    let spec = grant_spec(7);
    check!(spec.xid == 0 && spec.kind == header::MsgKind::NoMsg && spec.chunks.is_empty());
    Ok(())
}

fn malformed_replies() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    check!(t.prepare_call(XID, 100, 100).is_ok());
    // Too short for the common words: dropped.
    let o = t.receive(&[0, 0, 0, 1, 0, 0]);
    check!(matches!(o.reply, Reply::Drop(Cause::Malformed(_))));
    // The probe's XID with a broken v2 header: the RPC fails with EIO and
    // the next Call probes again; the connection does not settle.
    let msg = Wire::new(&[XID, 2, CRED_1_32, 0, 0x80, 0]);
    let o = t.receive(msg.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EIO,
            cause: Cause::Malformed(_)
        }
    ));
    check!(o.credits.is_none());
    check!(t.phase() == Phase::Probing { probe: None });
    check!(t.stats().bad_reply == 2);
    // Received while down: nothing is posted.
    t.disconnected();
    let msg = v2_reply(XID, CRED_1_32);
    let o = t.receive(msg.bytes());
    check!(o.reply == Reply::Drop(Cause::NotConnected) && o.post_receives == 0);
    // Every truncation of valid messages is handled without panicking.
    let mut t = up(Config::default(), Peer::Absent);
    let msgs = [
        v2_reply(XID, CRED_1_32),
        v1_reply(XID, 3),
        svcrdma_err_vers(XID),
    ];
    for m in &msgs {
        let b = m.bytes();
        for n in 0..=b.len() {
            let _ = t.receive(b.get(..n).unwrap_or(&[]));
        }
    }
    Ok(())
}

/// Messages that answer no Call are counted and dropped, never turned into
/// the failure of an RPC that happens to have their XID (issue: an RPC
/// must fail once, and only for its own reply).
fn unsolicited_messages_dropped() -> TestResult {
    let mut t = up(Config::default(), Peer::Absent);
    let _ = t.prepare_call(1, 100, 100);
    let _ = t.receive(v2_reply(1, CRED_1_32).bytes());
    check!(t.protocol() == Some(Protocol::V2));
    // RDMA2_ERROR (RDMA2_ERR_SYSTEM) with XID 0: dropped, counted.
    let m1 = Wire::new(&[0, 2, 0, 4, 0, 10]);
    let o = t.receive(m1.bytes());
    check!(matches!(
        o.reply,
        Reply::Drop(Cause::RdmaError {
            protocol: Protocol::V2,
            body: ErrorBody::System
        })
    ));
    check!(t.stats().rdma_error == 1);
    // A malformed message with XID 0 (a Msg whose flags word is invalid):
    // dropped, counted as a bad reply.
    let bad = t.stats().bad_reply;
    let m2 = Wire::new(&[0, 2, CRED_1_32, 0, 0x80, 0]);
    let o = t.receive(m2.bytes());
    check!(matches!(o.reply, Reply::Drop(Cause::Malformed(_))));
    check!(Some(t.stats().bad_reply) == bad.checked_add(1));
    // A malformed RDMA2_CONNPROP with a non-zero XID: it answers no Call
    // either (its property list claims more entries than it carries).
    let m3 = Wire::new(&[XID, 2, CRED_1_32, 5, 0, 7, 1]);
    let o = t.receive(m3.bytes());
    check!(matches!(o.reply, Reply::Drop(Cause::Malformed(_))));
    check!(Some(t.stats().bad_reply) == bad.checked_add(2));
    // A v2 RPC reply with XID 0 whose RPC header does not match: dropped.
    let mut w = Wire::new(&[0, 2, CRED_1_32, 0, 1, 0, 0, 0, 0]);
    rpc_reply(&mut w, XID);
    check!(matches!(
        t.receive(w.bytes()).reply,
        Reply::Drop(Cause::BadRpcHeader)
    ));
    // The same error with a Call's XID fails that Call.
    let m4 = Wire::new(&[XID, 2, 0, 4, 0, 10]);
    let o = t.receive(m4.bytes());
    check!(matches!(
        o.reply,
        Reply::Fail {
            xid: XID,
            errno: Errno::EIO,
            cause: Cause::RdmaError { .. }
        }
    ));
    // Errors are named by the version that sent them.
    check!(ErrorBody::BadXdr.name(Protocol::V1) == "ERR_CHUNK");
    check!(ErrorBody::BadXdr.name(Protocol::V2) == "RDMA2_ERR_BAD_XDR");
    check!(ErrorBody::System.name(Protocol::V2) == "RDMA2_ERR_SYSTEM");
    Ok(())
}

fn config_and_errno() -> TestResult {
    let c = Config {
        max_requests: 1,
        bc_requests: 1000,
        inline_send: 5000,
        inline_recv: 1_000_000,
        max_segs: 99,
        ..Config::default()
    }
    .validated();
    check!(c.max_requests == 4 && c.bc_requests == 64 && c.max_segs == 16);
    check!(c.inline_send == 4096 && c.inline_recv == 65536);
    check!(Config::default().private_data_bytes() == [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3]);
    let p = Config {
        remote_invalidate: false,
        inline_recv: 65536,
        ..Config::default()
    };
    check!(pvtdata::decode(&p.private_data_bytes()) == Peer::Valid(p.private_data()));
    check!(p.private_data_bytes() == [0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 63]);
    check!(Errno::EIO.to_kernel() == -5 && Errno::EIO.code() == 5);
    check!(Errno::EMSGSIZE.to_kernel() == -90 && Errno::EPROTONOSUPPORT.to_kernel() == -93);
    check!(Errno::ENOTCONN.to_kernel() == -107 && Errno::EAGAIN.to_kernel() == -11);
    check!(Errno::EPROTONOSUPPORT.name() == "EPROTONOSUPPORT");
    Ok(())
}

// ---- chunks ---------------------------------------------------------

/// `frwr_query_device()`'s arithmetic: the depth (and its quirk), the MRs
/// one RPC may need, and the devices refused.
fn frwr_sizing() -> TestResult {
    // A device that registers 1 MiB in one MR: 3 MRs (data, head, tail).
    let c = FrwrSizing::for_depth(512);
    check!(matches!(c, Ok(c) if (c.depth, c.max_segs) == (257, 3)));
    // Depth 16: 17 MRs for the data would exceed 16 segments; 16 * 16 = 256
    // pages cannot carry 260.
    check!(FrwrSizing::for_depth(16) == Err(SizingError::TooShallow { depth: 16 }));
    // Depth 32: ceil(257/32) + 2 = 11 MRs.
    let c = FrwrSizing::for_depth(32);
    check!(matches!(c, Ok(c) if (c.depth, c.max_segs) == (32, 11)));
    check!(FrwrSizing::for_depth(0) == Err(SizingError::NoDepth));
    // rxe (page list 512, max_sge_rd 32): the quirk takes max_sge_rd.
    check!(FrwrSizing::depth_for(512, 32) == 32);
    check!(FrwrSizing::for_device(512, 32) == FrwrSizing::for_depth(32));
    // siw (page list 256, max_sge_rd 1): depth 256, 4 MRs.
    let c = FrwrSizing::for_device(256, 1);
    check!(matches!(c, Ok(c) if (c.depth, c.max_segs) == (256, 4)));
    // max_sge_rd 16 is not above the limit: the page list counts.
    check!(FrwrSizing::depth_for(64, 16) == 64);
    check!(FrwrSizing::depth_for(4096, 17) == 17);
    check!(FrwrSizing::depth_for(4096, 1) == 257 && FrwrSizing::depth_for(0, 1000) == 257);
    check!(FrwrSizing::for_device(0, 0) == Err(SizingError::NoDepth));
    Ok(())
}

/// v1 thresholds without private data (1024 each way) and 16 segments:
/// inline limits 1024 - 436 = 588 (call) and 1024 - 292 = 732 (reply).
fn chunk_th(protocol: Protocol) -> Thresholds {
    let config = Config {
        max_segs: 16,
        ..Config::default()
    };
    Thresholds {
        protocol,
        remote_invalidation: true,
        ..Thresholds::new(&config, &Peer::Absent, Protocol::V1, false)
    }
}

const CHUNK_LIMITS: Limits = Limits {
    page_size: 4096,
    max_mr_pages: 1,
    max_segs: 16,
    write_pad: true,
    cont_reply: 0,
};

/// A buffer's geometry: `head` bytes, `page_len` bytes of pages from
/// offset 0, `tail` bytes.
pub(super) const fn geometry(head: u32, page_len: u32, tail: u32) -> Geometry {
    Geometry {
        head,
        page_base: 0,
        page_len,
        tail,
    }
}

fn chunk_rpc(call: Geometry, call_ddp: bool, reply: Geometry, reply_ddp: bool) -> Rpc {
    Rpc {
        call,
        call_ddp,
        reply,
        reply_buflen: reply.len().unwrap_or(0),
        reply_ddp,
        ddp_allowed: true,
    }
}

fn chunk_plan(rpc: &Rpc) -> Option<ChunkPlan> {
    chunks::plan(rpc, &chunk_th(Protocol::V1), &CHUNK_LIMITS).ok()
}

const SMALL: Geometry = geometry(100, 0, 0);

fn chunk_call_forms() -> TestResult {
    let th = chunk_th(Protocol::V1);
    check!(th.max_inline_call() == 588 && th.max_inline_reply() == 732);
    check!(Limits::segs_for_depth(4096, 256) == 4 && Limits::segs_for_depth(4096, 1) == 16);
    // the inline boundary
    let a = chunk_plan(&chunk_rpc(geometry(100, 488, 0), true, SMALL, false));
    check!(a.is_some_and(|a| a.call() == CallForm::Inline && a.is_inline()));
    let b = chunk_plan(&chunk_rpc(geometry(100, 489, 3), true, SMALL, false));
    let Some(b) = b else {
        check!(false);
        return Ok(());
    };
    check!(b.call() == CallForm::Read { position: 100 });
    check!(b.kind() == header::MsgKind::Msg);
    // no roundup in the chunk; a tail that is only the pad is not sent
    check!(
        b.read_ranges()
            == [Range {
                part: Part::Pages,
                offset: 0,
                len: 489
            }]
    );
    check!(b.send_layout().len() == 100 && b.send_layout().tail == 0);
    // pad + content: the content is sent, aligned
    let c = chunk_plan(&chunk_rpc(geometry(100, 4095, 9), true, SMALL, false));
    check!(c.is_some_and(|c| c.send_layout().tail_offset == 1 && c.send_layout().tail == 8));
    // without XDRBUF_WRITE, or with GSS integrity: Long Call
    let d = chunk_plan(&chunk_rpc(geometry(100, 5000, 8), false, SMALL, false));
    let Some(d) = d else {
        check!(false);
        return Ok(());
    };
    check!(d.call() == CallForm::Long && d.kind() == header::MsgKind::NoMsg);
    check!(d.send_layout().is_empty());
    check!(d.read_ranges().len() == 4); // head, 2 pages (depth 1), tail
    let mut gss = chunk_rpc(geometry(100, 5000, 8), true, SMALL, false);
    gss.ddp_allowed = false;
    check!(chunk_plan(&gss).is_some_and(|p| p.call() == CallForm::Long));
    // too many segments
    let big = chunk_rpc(geometry(100, 17 * 4096, 0), true, SMALL, false);
    check!(matches!(
        chunks::plan(&big, &chunk_th(Protocol::V1), &CHUNK_LIMITS),
        Err(e @ PlanError::TooManySegments { needed: 18, limit: 16, .. })
            if e.errno() == Errno::EMSGSIZE
    ));
    // chunks off: the inline-only decision
    let off = Limits {
        max_segs: 0,
        ..CHUNK_LIMITS
    };
    check!(matches!(
        chunks::plan(&d_rpc(), &chunk_th(Protocol::V1), &off),
        Err(PlanError::TooBig(_))
    ));
    Ok(())
}

fn d_rpc() -> Rpc {
    chunk_rpc(geometry(100, 5000, 8), false, SMALL, false)
}

fn chunk_reply_forms() -> TestResult {
    // inline boundary: buflen 732
    let a = chunk_plan(&chunk_rpc(SMALL, false, geometry(100, 632, 0), true));
    check!(a.is_some_and(|a| a.reply() == ReplyForm::Inline));
    let b = chunk_plan(&chunk_rpc(SMALL, false, geometry(100, 633, 0), true));
    let Some(b) = b else {
        check!(false);
        return Ok(());
    };
    check!(b.reply() == ReplyForm::Write);
    // the write-pad rule: 633 is not a multiple of four
    check!(
        b.write_ranges()
            == [
                Range {
                    part: Part::Pages,
                    offset: 0,
                    len: 633
                },
                Range {
                    part: Part::WritePad,
                    offset: 0,
                    len: WRITE_PAD_LEN
                }
            ]
    );
    let c = chunk_plan(&chunk_rpc(SMALL, false, geometry(100, 636, 0), true));
    check!(c.is_some_and(|c| c.write_ranges().len() == 1));
    // without write_pad (the kernel's setting, -00 §4.4.6) no roundup
    let spec = Limits {
        write_pad: false,
        cont_reply: 0,
        ..CHUNK_LIMITS
    };
    let b2 = chunks::plan(
        &chunk_rpc(SMALL, false, geometry(100, 633, 0), true),
        &chunk_th(Protocol::V2),
        &spec,
    );
    check!(b2.is_ok_and(|b| b.write_ranges()
        == [Range {
            part: Part::Pages,
            offset: 0,
            len: 633
        }]));
    // head + tail must stay below the reply limit
    let d = chunk_plan(&chunk_rpc(SMALL, false, geometry(732, 4096, 0), true));
    check!(d.is_some_and(|d| d.reply() == ReplyForm::Long));
    let e = chunk_plan(&chunk_rpc(SMALL, false, geometry(731, 4096, 0), true));
    check!(e.is_some_and(|e| e.reply() == ReplyForm::Write));
    // no XDRBUF_READ: Reply chunk over head, pages and tail
    let f = chunk_plan(&chunk_rpc(SMALL, false, geometry(100, 4096, 4), false));
    let Some(f) = f else {
        check!(false);
        return Ok(());
    };
    check!(f.reply() == ReplyForm::Long && f.reply_ranges().len() == 3);
    check!(f.write_ranges().is_empty());
    // Read + Reply, Read + Write; never Write + Reply
    let g = chunk_plan(&chunk_rpc(
        geometry(100, 8192, 0),
        true,
        geometry(100, 8192, 0),
        false,
    ));
    check!(g.is_some_and(
        |g| g.call() == CallForm::Read { position: 100 } && g.reply() == ReplyForm::Long
    ));
    let h = chunk_plan(&chunk_rpc(
        geometry(100, 8192, 0),
        true,
        geometry(100, 8192, 0),
        true,
    ));
    check!(h.is_some_and(|h| h.reply() == ReplyForm::Write && h.reply_ranges().is_empty()));
    Ok(())
}

/// Registers a plan's ranges: handle 0x100 + i (the pad: 0xbeef).
fn chunk_segments(plan: &ChunkPlan, out: &mut [Segment; 8]) -> usize {
    let mut n: usize = 0;
    for (r, s) in plan.ranges().iter().zip(out.iter_mut()) {
        let i = u32::try_from(n).unwrap_or(0);
        *s = Segment {
            handle: if r.part == Part::WritePad {
                0xbeef
            } else {
                0x100_u32.saturating_add(i)
            },
            length: r.len,
            offset: u64::from(i.saturating_add(1)) << 28,
        };
        n = n.saturating_add(1);
    }
    n
}

fn chunk_lists_encode() -> TestResult {
    for protocol in [Protocol::V1, Protocol::V2] {
        let rpc = chunk_rpc(geometry(100, 8192, 0), true, geometry(100, 633, 0), true);
        let Ok(plan) = chunks::plan(&rpc, &chunk_th(protocol), &CHUNK_LIMITS) else {
            check!(false);
            return Ok(());
        };
        let mut segs = [Segment::default(); 8];
        let n = chunk_segments(&plan, &mut segs);
        check!(n == 4); // two Read segments, one Write page segment, the pad
        let segs = segs.get(..n).unwrap_or(&[]);
        let Ok(cc) = plan.chunk_lists(segs, true) else {
            check!(false);
            return Ok(());
        };
        let lists = cc.lists();
        check!(lists.reads.len() == 2 && lists.reads.iter().all(|r| r.position == 100));
        check!(lists.writes.len() == 1 && lists.reply.is_none());
        // v2: the Write chunk's first MR (not the pad); v1: none
        let want = if protocol == Protocol::V2 { 0x102 } else { 0 };
        check!(cc.inv_handle() == want);
        let spec = MsgSpec {
            xid: XID,
            credit: 32,
            kind: plan.kind(),
            flags: Flags::NONE,
            inv_handle: cc.inv_handle(),
            chunks: lists,
        };
        let mut buf = [0u8; 256];
        let len = header::encode_msg(&mut buf, protocol, &spec);
        check!(len.ok().and_then(|l| u32::try_from(l).ok()) == Some(plan.header_len()));
        // v1: 28 + 2 * 24 + 8 + 2 * 16
        check!(protocol == Protocol::V2 || plan.header_len() == 116);
        // wrong segments
        check!(
            plan.chunk_lists(segs.get(..3).unwrap_or(&[]), true)
                == Err(PlanError::SegmentMismatch { index: 3 })
        );
    }
    Ok(())
}

/// The Write-chunk fixture: reply head 16, 633 bytes of pages (one page
/// segment + the pad); returns the plan and its segments.
fn write_fixture() -> Option<(ChunkPlan, [Segment; 8])> {
    let plan = chunk_plan(&chunk_rpc(SMALL, false, geometry(16, 4000, 0), true))?;
    let mut segs = [Segment::default(); 8];
    (chunk_segments(&plan, &mut segs) == 1).then_some((plan, segs))
}

/// A v1 `RDMA_MSG` reply with a one-chunk Write list of `segs`
/// (handle, length, offset) and the RPC Reply.
fn write_reply(segs: &[(u32, u32, u64)], chunks: u32) -> Wire {
    let mut w = Wire::new(&[XID, 1, 32, 0, 0]);
    for _ in 0..chunks {
        w.push(1);
        push_chunk(&mut w, segs);
    }
    w.push(0); // end of Write list
    w.push(0); // no Reply chunk
    rpc_reply(&mut w, XID);
    w
}

/// A v1 `RDMA_NOMSG` reply whose Reply chunk is `segs` (handle, length,
/// offset).
fn nomsg_reply(segs: &[(u32, u32, u64)]) -> Wire {
    // no Read list, no Write list, a Reply chunk
    let mut w = Wire::new(&[XID, 1, 32, 1, 0, 0, 1]);
    push_chunk(&mut w, segs);
    w
}

/// Appends a chunk (a counted array of segments) of `segs` (handle,
/// length, offset).
fn push_chunk(w: &mut Wire, segs: &[(u32, u32, u64)]) {
    w.push(u32::try_from(segs.len()).unwrap_or(0));
    for &(h, l, o) in segs {
        w.push(h);
        w.push(l);
        let [hi, lo] = split64(o);
        w.push(hi);
        w.push(lo);
    }
}

/// The two XDR words of a 64-bit value.
fn split64(v: u64) -> [u32; 2] {
    let b = v.to_be_bytes();
    let (hi, lo) = b
        .split_first_chunk::<4>()
        .map_or(([0; 4], [0; 4]), |(h, l)| {
            (*h, l.first_chunk::<4>().copied().unwrap_or([0; 4]))
        });
    [u32::from_be_bytes(hi), u32::from_be_bytes(lo)]
}

fn lo32(v: u64) -> u32 {
    let [_, lo] = split64(v);
    lo
}

fn decode_then<'w, T>(w: &'w Wire, f: impl FnOnce(&Header<'w>) -> T) -> Option<T> {
    header::decode(w.bytes()).ok().map(|h| f(&h))
}

fn chunk_write_reply() -> TestResult {
    let Some((plan, segs)) = write_fixture() else {
        check!(false);
        return Ok(());
    };
    let segs = segs.get(..1).unwrap_or(&[]);
    check!(plan.reply() == ReplyForm::Write);
    let Some(s0) = segs.first().copied() else {
        check!(false);
        return Ok(());
    };
    // 3999 bytes written: head 16 inline, then the payload, pad 1, tail 8
    let w = write_reply(&[(s0.handle, 3999, s0.offset)], 1);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(matches!(
        r,
        Some(Ok(ReplyData::Written {
            head,
            written: 3999,
            pad: 1,
            tail,
            rpc_len: 4024,
        })) if head.len() == 16 && tail.len() == 8
    ));
    // unused Write chunk: an inline reply
    let w = write_reply(&[(s0.handle, 0, s0.offset)], 1);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(matches!(r, Some(Ok(ReplyData::Inline { payload })) if payload.len() == 24));
    Ok(())
}

fn chunk_long_reply() -> TestResult {
    // Reply chunk over head 100 + one page (depth 1)
    let Some(plan) = chunk_plan(&chunk_rpc(SMALL, false, geometry(100, 4096, 0), false)) else {
        check!(false);
        return Ok(());
    };
    let mut segs = [Segment::default(); 8];
    check!(chunk_segments(&plan, &mut segs) == 2);
    let segs = segs.get(..2).unwrap_or(&[]);
    let (Some(a), Some(b)) = (segs.first().copied(), segs.get(1).copied()) else {
        check!(false);
        return Ok(());
    };
    // v1 RDMA_NOMSG, Reply chunk: 100 + 50 bytes
    let w = nomsg_reply(&[(a.handle, 100, a.offset), (b.handle, 50, b.offset)]);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(r == Some(Ok(ReplyData::Long { len: 150 })));
    // one byte more than registered in the second segment
    let w = nomsg_reply(&[(a.handle, 100, a.offset), (b.handle, 4097, b.offset)]);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(
        r == Some(Err(ReplyError::Overrun {
            index: 1,
            written: 4097,
            registered: 4096
        }))
    );
    // a gap: a short first segment, then data
    let w = nomsg_reply(&[(a.handle, 99, a.offset), (b.handle, 1, b.offset)]);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(r == Some(Err(ReplyError::Gap { index: 1 })));
    // RDMA_NOMSG without a Reply chunk
    let w = Wire::new(&[XID, 1, 32, 1, 0, 0, 0]);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(r == Some(Err(ReplyError::NoReplyChunk)));
    // RDMA_MSG with data in the Reply chunk
    let mut w = Wire::new(&[XID, 1, 32, 0, 0, 0, 1, 1, a.handle, 8, 0, lo32(a.offset)]);
    rpc_reply(&mut w, XID);
    let r = decode_then(&w, |h| plan.check_reply(segs, h));
    check!(r == Some(Err(ReplyError::ReplyChunkInMsg)));
    Ok(())
}

fn chunk_reply_rejections() -> TestResult {
    let Some((plan, segs)) = write_fixture() else {
        check!(false);
        return Ok(());
    };
    let segs = segs.get(..1).unwrap_or(&[]);
    let Some(s0) = segs.first().copied() else {
        check!(false);
        return Ok(());
    };
    let run = |w: &Wire| decode_then(w, |h| plan.check_reply(segs, h).map(|_| ()));
    // an overlong write: one byte beyond the registration
    check!(
        run(&write_reply(&[(s0.handle, 4001, s0.offset)], 1))
            == Some(Err(ReplyError::Overrun {
                index: 0,
                written: 4001,
                registered: 4000
            }))
    );
    // another handle, another offset, an extra segment
    check!(
        run(&write_reply(&[(s0.handle ^ 1, 10, s0.offset)], 1))
            == Some(Err(ReplyError::ForeignSegment { index: 0 }))
    );
    check!(
        run(&write_reply(
            &[(s0.handle, 10, s0.offset.wrapping_add(4))],
            1
        )) == Some(Err(ReplyError::ForeignSegment { index: 0 }))
    );
    check!(
        run(&write_reply(
            &[(s0.handle, 4000, s0.offset), (s0.handle, 1, s0.offset)],
            1
        )) == Some(Err(ReplyError::ForeignSegment { index: 1 }))
    );
    // two Write chunks
    check!(
        run(&write_reply(&[(s0.handle, 10, s0.offset)], 2))
            == Some(Err(ReplyError::UnexpectedWriteChunk))
    );
    // a Read list in a reply
    let mut w = Wire::new(&[XID, 1, 32, 0, 1, 0, s0.handle, 4, 0, 0, 0, 0, 0]);
    rpc_reply(&mut w, XID);
    check!(run(&w) == Some(Err(ReplyError::ReadList)));
    // a Reply chunk nobody offered
    let mut w = Wire::new(&[XID, 1, 32, 0, 0, 0, 1, 1, s0.handle, 0, 0, 0]);
    rpc_reply(&mut w, XID);
    check!(run(&w) == Some(Err(ReplyError::UnexpectedReplyChunk)));
    // the inline part is not this RPC's reply
    let mut w = Wire::new(&[XID, 1, 32, 0, 0, 0, 0]);
    rpc_reply(&mut w, XID ^ 1);
    check!(run(&w) == Some(Err(ReplyError::BadRpcHeader)));
    // RDMA_ERROR is not for check_reply
    let w = Wire::new(&[XID, 1, 32, 4, 2]);
    check!(run(&w) == Some(Err(ReplyError::NotAReply)));
    // v2 without F_RESPONSE
    let mut w = Wire::new(&[XID, 2, CRED_1_32, 0, 0, 0, 0, 0, 0]);
    rpc_reply(&mut w, XID);
    check!(run(&w) == Some(Err(ReplyError::BadFlags)));
    check!(ReplyError::BadFlags.errno() == Errno::EIO);
    Ok(())
}

fn chunk_invalidation() -> TestResult {
    let rpc = chunk_rpc(geometry(100, 8192, 0), true, geometry(100, 633, 0), true);
    let Ok(plan) = chunks::plan(&rpc, &chunk_th(Protocol::V2), &CHUNK_LIMITS) else {
        check!(false);
        return Ok(());
    };
    let mut segs = [Segment::default(); 8];
    let n = chunk_segments(&plan, &mut segs);
    let segs = segs.get(..n).unwrap_or(&[]);
    check!(plan.invalidated(segs, 0x100) == Invalidated::Mr { index: 0 });
    check!(plan.invalidated(segs, 0x102) == Invalidated::Mr { index: 2 });
    check!(plan.invalidated(segs, 0xbeef) == Invalidated::WritePad);
    check!(plan.invalidated(segs, 0x4242) == Invalidated::NotOurs);
    // without the R bit: no handle offered
    check!(plan.chunk_lists(segs, false).map(|c| c.inv_handle()) == Ok(0));
    check!(plan.chunk_lists(segs, true).map(|c| c.inv_handle()) == Ok(0x102));
    Ok(())
}

/// RFC 8167: a v1 reverse-direction Call leaves the forward window alone;
/// its reply header is the C client's; a too-large reply is refused.
fn backchannel_v1() -> TestResult {
    use super::backchannel::{self, CallVerdict, ReplyError};
    let mut t = up(
        Config {
            policy: VersionPolicy::ForceV1,
            bc_requests: backchannel::SLOTS,
            ..Config::DEFAULT
        },
        peer(4096, 4096, false),
    );
    check!(t.receive(v1_reply(5, 32).bytes()).credits == Some(CreditUpdate::new(32)));
    let call = Wire::new(&[9, 1, 2, 0, 0, 0, 0, 9, 0, 2, 0x4000_0000, 1, 1]);
    let o = t.receive(call.bytes());
    check!(matches!(o.reply, Reply::ReverseCall { xid: 9, payload } if payload.len() == 24));
    check!(o.credits.is_none() && t.credits().window() == 32);
    check!(t.credits().receives_needed() == 32 + 2 * backchannel::SLOTS);
    let plan = match t.prepare_bc_reply(100, 0) {
        Ok(p) => p,
        Err(_) => {
            return Err(Failure {
                line: line!(),
                what: "prepare_bc_reply",
            })
        }
    };
    check!(plan.credit == backchannel::SLOTS && plan.hdr_len == 28);
    let mut buf = [0u8; 28];
    check!(header::encode_msg(&mut buf, plan.protocol, &plan.msg_spec(9)) == Ok(28));
    check!(buf == *Wire::new(&[9, 1, 16, 0, 0, 0, 0]).bytes());
    let limit = t.thresholds().send.saturating_sub(28);
    check!(
        matches!(t.prepare_bc_reply(limit.saturating_add(1), 0), Err(ReplyError::TooBig(tb)) if tb.limit == limit)
    );
    check!(
        backchannel::check_call(24, 4096, backchannel::MAX_OUTSTANDING, true)
            == CallVerdict::Overflow
    );
    check!(backchannel::max_payload(t.thresholds(), 4096) == 4096 - 36);
    Ok(())
}

// ---- request lifecycle -----------------------------------------------

/// A slot's registration lifecycle (`reqlife`): a reply before the post
/// (for an earlier transmission) that is stale and changes nothing, a
/// reply that starts the invalidation at once, a failed LOCAL_INV that
/// does not complete the RPC, a release that waits only for an
/// invalidation, a release right after the post or before it, refused
/// events.
fn request_lifecycle() -> TestResult {
    let mut l: Life<i32> = Life::new();
    check!(l.step(Event::Activate) == Ok(Action::Nothing));
    check!(l == Life::Mapped);
    check!(l.step(Event::Reply(4)) == Ok(Action::Stale));
    check!(l == Life::Mapped);
    check!(l.step(Event::Posted) == Ok(Action::Nothing));
    let refused = Illegal {
        phase: reqlife::Phase::Registered,
        event: Event::Posted,
    };
    check!(l.step(Event::Posted) == Err(refused));
    check!(l.step(Event::Reply(5)) == Ok(Action::StartInvalidation));
    check!(l.step(Event::Reply(6)) == Ok(Action::Nothing));
    let drained = Action::Drained {
        finish: Some(6),
        wake: false,
    };
    check!(l.step(Event::Drain) == Ok(drained));
    check!(l == Life::Idle);

    check!(l.step(Event::Activate) == Ok(Action::Nothing));
    check!(l.step(Event::Posted) == Ok(Action::Nothing));
    check!(l.step(Event::Reply(-5)) == Ok(Action::StartInvalidation));
    check!(l.step(Event::InvFailed) == Ok(Action::Nothing));
    check!(l.step(Event::Release) == Ok(Action::Wait));
    let failed = Action::Drained {
        finish: None,
        wake: true,
    };
    check!(l.step(Event::Drain) == Ok(failed));
    check!(l.step(Event::Release) == Ok(Action::Nothing));

    // Posted, no reply: taken back at once (a LOCAL_INV runs after the
    // REG_MRs), and a reply from then on is ignored.
    check!(l.step(Event::Activate) == Ok(Action::Nothing));
    check!(l.step(Event::Posted) == Ok(Action::Nothing));
    check!(l.step(Event::Release) == Ok(Action::TakeBack));
    check!(l.step(Event::Reply(1)) == Ok(Action::Nothing));
    check!(l.step(Event::Release) == Ok(Action::TakeBack));
    let refused = Illegal {
        phase: reqlife::Phase::Releasing,
        event: Event::Drain,
    };
    check!(l.step(Event::Drain) == Err(refused));
    check!(l == Life::Releasing);
    l.reset();
    let refused = Illegal {
        phase: reqlife::Phase::Idle,
        event: Event::Drain,
    };
    check!(l.step(Event::Drain) == Err(refused) && l == Life::Idle);

    // The post failed: nothing in the Send queue, taken back at once.
    check!(l.step(Event::Activate) == Ok(Action::Nothing));
    let refused = Illegal {
        phase: reqlife::Phase::Mapped,
        event: Event::InvFailed,
    };
    check!(l.step(Event::InvFailed) == Err(refused) && l == Life::Mapped);
    check!(l.step(Event::Release) == Ok(Action::TakeBack));
    check!(l == Life::Releasing);
    Ok(())
}
