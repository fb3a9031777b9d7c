// SPDX-License-Identifier: GPL-2.0

//! Self tests of [`super`] (error recovery) that need nothing but `core`:
//! the host runs them from `cargo test` (tests/recovery.rs), the module's
//! KUnit variant as suite `rpcrdma2_recovery` (rpcrdma/tests.rs).

use core::ffi::CStr;

use super::super::chunks::{self, CallForm, Geometry, Limits, PlanError, ReplyForm, Rpc};
use super::super::config::{Config, VersionPolicy};
use super::super::conn::send::CallError;
use super::super::conn::Transport;
use super::super::errno::Errno;
use super::super::inline::Direction;
use super::super::reply::{Cause, Reply};
use super::super::selftest::geometry;
use super::super::xdr::header::{ErrorBody, Protocol};
use super::super::xdr::pvtdata::{Peer, PrivateData};
use super::super::xdr::selftest::{case, check, run_table};
pub use super::super::xdr::selftest::{Failure, SelfTest, TestResult};
use super::{decide, Counters, Hints, Kind, Recovery, Sent, State, Why};

/// Every self test of error recovery.
pub const SELF_TESTS: &[SelfTest] = &[
    case!(recovery_permanent_codes),
    case!(recovery_read_chunks),
    case!(recovery_write_chunks),
    case!(recovery_segments),
    case!(recovery_resources),
    case!(recovery_bounded),
    case!(recovery_plan_hints),
    case!(recovery_transport),
    case!(recovery_v2_wire),
];

/// Runs every self test; returns the number run, or the first failure.
pub fn run_all() -> core::result::Result<usize, (&'static str, Failure)> {
    run_table(SELF_TESTS)
}

const XID: u32 = 0x5eed_0001;

/// A 64 KiB NFS WRITE: 200-byte head, 16 pages of data, a 4-byte tail.
fn write_rpc() -> Rpc {
    Rpc {
        call: geometry(200, 65536, 4),
        call_ddp: true,
        reply: Geometry {
            head: 600,
            ..Geometry::default()
        },
        reply_buflen: 600,
        reply_ddp: false,
        ddp_allowed: true,
    }
}

/// A 64 KiB NFS READ: the data into 16 reply pages.
fn read_rpc() -> Rpc {
    Rpc {
        call: Geometry {
            head: 140,
            ..Geometry::default()
        },
        call_ddp: false,
        reply: geometry(400, 65536, 100),
        reply_buflen: 400 + 65536 + 100,
        reply_ddp: true,
        ddp_allowed: true,
    }
}

/// A READDIR: entries into 8 reply pages, not DDP-eligible.
fn readdir_rpc() -> Rpc {
    Rpc {
        reply: geometry(300, 32768, 200),
        reply_buflen: 300 + 32768 + 200,
        reply_ddp: false,
        ..read_rpc()
    }
}

/// 4 KiB thresholds, 16 segments, 64-page MRs.
fn th(protocol: Protocol) -> super::super::inline::Thresholds {
    let config = Config {
        max_segs: 16,
        ..Config::default()
    };
    super::super::inline::Thresholds {
        protocol,
        ..super::super::inline::Thresholds::new(
            &config,
            &Peer::Valid(PrivateData {
                remote_invalidate: false,
                send_size: 4096,
                recv_size: 4096,
            }),
            Protocol::V1,
            false,
        )
    }
}

const LIMITS: Limits = Limits {
    page_size: 4096,
    max_mr_pages: 64,
    max_segs: 16,
    write_pad: false,
    cont_reply: 0,
};

fn sent(rpc: &Rpc, hints: &Hints) -> Option<Sent> {
    let p = chunks::plan_with(rpc, &th(Protocol::V2), &LIMITS, hints).ok()?;
    Some(Sent::of(
        if p.is_inline() { None } else { Some(&p) },
        rpc,
        true,
    ))
}

fn is_fail(r: &Recovery, errno: Errno, why: Why) -> bool {
    *r == Recovery::Fail { errno, why }
}

fn resend_hints(r: &Recovery, k: Kind) -> Option<Hints> {
    match *r {
        Recovery::Resend { kind, state } if kind == k && state.tried(k) => Some(state.hints()),
        _ => None,
    }
}

fn recovery_permanent_codes() -> TestResult {
    let Some(s) = sent(&write_rpc(), &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    for body in [
        ErrorBody::System,
        ErrorBody::BadXdr,
        ErrorBody::InvalHtype,
        ErrorBody::InvalFlag,
        ErrorBody::Other(11),
        ErrorBody::Other(0xffff_ffff),
        ErrorBody::Vers { low: 2, high: 2 },
    ] {
        let r = decide(Protocol::V2, &body, &s, &State::NEW);
        check!(is_fail(&r, Errno::EIO, Why::Permanent));
    }
    // Version 1 has no recovery: every RDMA_ERROR fails its RPC, even
    // with a body that would be recoverable in version 2.
    for body in [
        ErrorBody::BadXdr,
        ErrorBody::ReadChunks { max_chunks: 0 },
        ErrorBody::ReplyResource { length_needed: 100 },
    ] {
        let r = decide(Protocol::V1, &body, &s, &State::NEW);
        check!(is_fail(&r, Errno::EIO, Why::Permanent));
    }
    check!(Why::Permanent.errno() == Errno::EIO);
    check!(
        Why::TooLarge {
            needed: 1,
            capacity: 0
        }
        .errno()
            == Errno::EMSGSIZE
    );
    Ok(())
}

fn recovery_read_chunks() -> TestResult {
    let rpc = write_rpc();
    let Some(s) = sent(&rpc, &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    check!(matches!(s.call, CallForm::Read { position: 200 }));
    let body = ErrorBody::ReadChunks { max_chunks: 0 };
    let r = decide(Protocol::V2, &body, &s, &State::NEW);
    let Some(h) = resend_hints(&r, Kind::PositionZero) else {
        check!(false);
        return Ok(());
    };
    check!(h.position_zero && !h.reply_chunk && h.max_segs.is_none());
    // The resend is a Long Call: RDMA2_NOMSG with a Position-Zero Read
    // chunk over head, pages and tail.
    let Some(s2) = sent(&rpc, &h) else {
        check!(false);
        return Ok(());
    };
    check!(s2.call == CallForm::Long && s2.max_chunk_segs == 3);
    // -00: "If this was a request using a Position Zero Read chunk, the
    // requester MUST terminate the transaction with an error."
    let Recovery::Resend { state, .. } = r else {
        return Ok(());
    };
    let r2 = decide(Protocol::V2, &body, &s2, &state);
    check!(is_fail(&r2, Errno::EIO, Why::PositionZero));
    // Also for a Call that was a Long Call from the start.
    let r3 = decide(Protocol::V2, &body, &s2, &State::NEW);
    check!(is_fail(&r3, Errno::EIO, Why::PositionZero));
    // An inline Call refused this way is resent as a Long Call too
    // (-00's SHOULD does not depend on what was sent).
    let Some(si) = sent(&readdir_rpc(), &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    check!(si.call == CallForm::Inline);
    check!(resend_hints(
        &decide(Protocol::V2, &body, &si, &State::NEW),
        Kind::PositionZero
    )
    .is_some());
    // Without chunks there is no Position-Zero Read to send.
    let none = Sent {
        chunks: false,
        ..si
    };
    let r4 = decide(Protocol::V2, &body, &none, &State::NEW);
    check!(is_fail(&r4, Errno::EIO, Why::NoChunks));
    Ok(())
}

fn recovery_write_chunks() -> TestResult {
    let rpc = read_rpc();
    let Some(s) = sent(&rpc, &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    check!(s.reply == ReplyForm::Write && s.write_len == 65536);
    let body = ErrorBody::WriteChunks { max_chunks: 0 };
    let r = decide(Protocol::V2, &body, &s, &State::NEW);
    let Some(h) = resend_hints(&r, Kind::ReplyChunk) else {
        check!(false);
        return Ok(());
    };
    check!(h.reply_chunk && !h.position_zero);
    let Some(s2) = sent(&rpc, &h) else {
        check!(false);
        return Ok(());
    };
    // No Write chunk; a Reply chunk over the whole receive buffer.
    check!(s2.reply == ReplyForm::Long && s2.write_len == 0);
    check!(s2.reply_chunk_len == 400 + 65536 + 100);
    // Refused again although there is no Write chunk: inconsistent.
    let Recovery::Resend { state, .. } = r else {
        return Ok(());
    };
    check!(is_fail(
        &decide(Protocol::V2, &body, &s2, &state),
        Errno::EIO,
        Why::Inconsistent
    ));
    Ok(())
}

fn recovery_segments() -> TestResult {
    let rpc = readdir_rpc();
    let Some(s) = sent(&rpc, &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    // head, pages, tail
    check!(s.reply == ReplyForm::Long && s.max_chunk_segs == 3);
    let r = decide(
        Protocol::V2,
        &ErrorBody::Segments { max_segments: 2 },
        &s,
        &State::NEW,
    );
    let Some(h) = resend_hints(&r, Kind::Segments) else {
        check!(false);
        return Ok(());
    };
    check!(h.max_segs == Some(2) && !h.reply_chunk);
    // The Reply chunk is cut to head + pages.
    let p = chunks::plan_with(&rpc, &th(Protocol::V2), &LIMITS, &h);
    check!(matches!(p, Ok(ref p) if p.reply_ranges().len() == 2));
    let Some(s2) = sent(&rpc, &h) else {
        check!(false);
        return Ok(());
    };
    check!(s2.reply_chunk_len == 300 + 32768);
    // A limit the chunks already kept: inconsistent.
    let r2 = decide(
        Protocol::V2,
        &ErrorBody::Segments { max_segments: 3 },
        &s,
        &State::NEW,
    );
    check!(is_fail(&r2, Errno::EIO, Why::Inconsistent));
    // An RPC sent inline had no segments to cut.
    let Some(si) = sent(&readdir_rpc(), &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    let si = Sent {
        reply: ReplyForm::Inline,
        reply_chunk_len: 0,
        max_chunk_segs: 0,
        ..si
    };
    let r3 = decide(
        Protocol::V2,
        &ErrorBody::Segments { max_segments: 0 },
        &si,
        &State::NEW,
    );
    check!(is_fail(&r3, Errno::EIO, Why::Inconsistent));
    // max_segments 0: no chunks at all; what does not fit inline then
    // cannot be planned (-EMSGSIZE when resent).
    let r4 = decide(
        Protocol::V2,
        &ErrorBody::Segments { max_segments: 0 },
        &s,
        &State::NEW,
    );
    let Some(h0) = resend_hints(&r4, Kind::Segments) else {
        check!(false);
        return Ok(());
    };
    check!(matches!(
        chunks::plan_with(&write_rpc(), &th(Protocol::V2), &LIMITS, &h0),
        Err(PlanError::TooBig(_))
    ));
    Ok(())
}

fn recovery_resources() -> TestResult {
    let rpc = read_rpc();
    let Some(s) = sent(&rpc, &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    let cap = 400 + 65536 + 100;
    check!(s.reply_capacity == cap);
    let wr = |chunk_index: u32, length_needed: u32| ErrorBody::WriteResource {
        chunk_index,
        length_needed,
    };
    // A Write chunk too short for the result: a Reply chunk that holds it.
    let r = decide(Protocol::V2, &wr(1, 65540), &s, &State::NEW);
    let Some(h) = resend_hints(&r, Kind::WriteResource) else {
        check!(false);
        return Ok(());
    };
    check!(h.reply_chunk && h.reply_min == 65540);
    check!(sent(&rpc, &h).is_some_and(|s2| s2.reply == ReplyForm::Long && s2.write_len == 0));
    // Index 0 ("could not tell which") is accepted with a length.
    check!(resend_hints(
        &decide(Protocol::V2, &wr(0, 65540), &s, &State::NEW),
        Kind::WriteResource
    )
    .is_some());
    // Zero index and length: -00's example of terminating.
    check!(is_fail(
        &decide(Protocol::V2, &wr(0, 0), &s, &State::NEW),
        Errno::EIO,
        Why::Unspecified
    ));
    // No more than was offered, a second Write chunk, no Write chunk at
    // all: inconsistent.
    check!(is_fail(
        &decide(Protocol::V2, &wr(1, 65536), &s, &State::NEW),
        Errno::EIO,
        Why::Inconsistent
    ));
    check!(is_fail(
        &decide(Protocol::V2, &wr(2, 70000), &s, &State::NEW),
        Errno::EIO,
        Why::Inconsistent
    ));
    let Some(sr) = sent(&readdir_rpc(), &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    check!(is_fail(
        &decide(Protocol::V2, &wr(1, 70000), &sr, &State::NEW),
        Errno::EIO,
        Why::Inconsistent
    ));
    // More than the receive buffer: nothing the transport can do.
    check!(is_fail(
        &decide(Protocol::V2, &wr(1, cap + 1), &s, &State::NEW),
        Errno::EMSGSIZE,
        Why::TooLarge {
            needed: cap + 1,
            capacity: cap
        }
    ));

    let rr = |length_needed: u32| ErrorBody::ReplyResource { length_needed };
    // An inline Reply the responder cannot send inline: a Reply chunk.
    let Some(si) = sent(&write_rpc(), &Hints::NONE) else {
        check!(false);
        return Ok(());
    };
    check!(si.reply == ReplyForm::Inline);
    let r = decide(Protocol::V2, &rr(500), &si, &State::NEW);
    let Some(h) = resend_hints(&r, Kind::ReplyResource) else {
        check!(false);
        return Ok(());
    };
    check!(h.reply_chunk && h.reply_min == 500);
    check!(
        sent(&write_rpc(), &h).is_some_and(|s2| s2.reply == ReplyForm::Long
            && s2.reply_chunk_len == 600
            && matches!(s2.call, CallForm::Read { .. }))
    );
    // A Write chunk the responder does not take (-00: "MUST return ...
    // RDMA2_ERR_REPLY_RESOURCE"): the Reply chunk replaces it.
    let r = decide(Protocol::V2, &rr(65636), &s, &State::NEW);
    check!(resend_hints(&r, Kind::ReplyResource)
        .is_some_and(|h| h.reply_chunk && h.reply_min == 65636));
    // A Reply chunk of the whole buffer that is too short: too large.
    check!(is_fail(
        &decide(Protocol::V2, &rr(cap + 4), &sr, &State::NEW),
        Errno::EMSGSIZE,
        Why::TooLarge {
            needed: cap + 4,
            capacity: 300 + 32768 + 200
        }
    ));
    // No more than the Reply chunk offered: inconsistent.
    check!(is_fail(
        &decide(Protocol::V2, &rr(33000), &sr, &State::NEW),
        Errno::EIO,
        Why::Inconsistent
    ));
    check!(is_fail(
        &decide(Protocol::V2, &rr(0), &si, &State::NEW),
        Errno::EIO,
        Why::Unspecified
    ));
    // No chunks on this connection: no Reply chunk to offer.
    let none = Sent {
        chunks: false,
        ..si
    };
    check!(is_fail(
        &decide(Protocol::V2, &rr(500), &none, &State::NEW),
        Errno::EIO,
        Why::NoChunks
    ));
    Ok(())
}

/// A responder that refuses every transmission with the error that
/// applies to it: each RPC is sent a bounded number of times, and an
/// identical second error fails it.
fn recovery_bounded() -> TestResult {
    let bodies = [
        ErrorBody::ReadChunks { max_chunks: 0 },
        ErrorBody::WriteChunks { max_chunks: 0 },
        ErrorBody::Segments { max_segments: 1 },
        ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed: 65540,
        },
        ErrorBody::ReplyResource {
            length_needed: 1000,
        },
        ErrorBody::System,
    ];
    for rpc in [write_rpc(), read_rpc(), readdir_rpc()] {
        for body in bodies {
            let mut state = State::NEW;
            let mut sends = 0u32;
            loop {
                sends = sends.saturating_add(1);
                check!(sends <= 6 && Kind::ALL.len() == 5);
                let Some(s) = sent(&rpc, &state.hints()) else {
                    // the resend cannot be planned: it fails locally
                    break;
                };
                match decide(Protocol::V2, &body, &s, &state) {
                    Recovery::Resend { kind, state: next } => {
                        check!(!state.tried(kind) && next.tried(kind));
                        check!(next.resends() == state.resends().saturating_add(1));
                        state = next;
                    }
                    Recovery::Fail { .. } => break,
                }
            }
            // The same error never recovers twice.
            check!(sends <= 2);
        }
        // Every error in turn, each once: hints accumulate, at most
        // one resend per kind.
        let mut state = State::NEW;
        let mut resends = 0u32;
        for body in bodies.iter().chain(bodies.iter()) {
            let Some(s) = sent(&rpc, &state.hints()) else {
                break;
            };
            if let Recovery::Resend { state: next, .. } = decide(Protocol::V2, body, &s, &state) {
                resends = resends.saturating_add(1);
                check!(next.hints().position_zero >= state.hints().position_zero);
                check!(next.hints().reply_chunk >= state.hints().reply_chunk);
                state = next;
            }
        }
        check!(resends <= 5);
        check!(resends == state.resends());
    }
    Ok(())
}

fn recovery_plan_hints() -> TestResult {
    let t = th(Protocol::V2);
    // A small RPC forced to a Long Call and a Long Reply.
    let small = readdir_rpc();
    let small = Rpc {
        reply: Geometry {
            head: 1000,
            ..Geometry::default()
        },
        reply_buflen: 1000,
        ..small
    };
    let p = chunks::plan(&small, &t, &LIMITS);
    check!(matches!(p, Ok(ref p) if p.is_inline()));
    let h = Hints {
        position_zero: true,
        reply_chunk: true,
        ..Hints::NONE
    };
    let p = chunks::plan_with(&small, &t, &LIMITS, &h);
    check!(matches!(p, Ok(ref p) if p.call() == CallForm::Long
        && p.reply() == ReplyForm::Long
        && p.read_ranges().len() == 1
        && p.reply_ranges().len() == 1
        && p.send_layout().is_empty()));
    // No hint: exactly plan().
    for rpc in [write_rpc(), read_rpc(), readdir_rpc(), small] {
        check!(
            chunks::plan_with(&rpc, &t, &LIMITS, &Hints::NONE) == chunks::plan(&rpc, &t, &LIMITS)
        );
    }
    // A cut Reply chunk must still cover reply_min.
    let rpc = readdir_rpc();
    let cut = Hints {
        max_segs: Some(1),
        reply_min: 300,
        ..Hints::NONE
    };
    check!(
        matches!(chunks::plan_with(&rpc, &t, &LIMITS, &cut), Ok(ref p) if p.reply_ranges().len() == 1)
    );
    let short = Hints {
        reply_min: 301,
        ..cut
    };
    check!(matches!(
        chunks::plan_with(&rpc, &t, &LIMITS, &short),
        Err(PlanError::TooManySegments {
            direction: Direction::Reply,
            needed: 3,
            limit: 1
        })
    ));
    // A Write chunk or a Read chunk is never cut: the data must all go.
    let unaligned = Rpc {
        reply: Geometry {
            page_base: 100,
            ..read_rpc().reply
        },
        ..read_rpc()
    };
    let one = Hints {
        max_segs: Some(1),
        ..Hints::NONE
    };
    let lim1 = Limits {
        max_mr_pages: 16,
        ..LIMITS
    };
    check!(matches!(
        chunks::plan_with(&unaligned, &t, &lim1, &one),
        Err(PlanError::TooManySegments {
            direction: Direction::Reply,
            ..
        })
    ));
    let w = Rpc {
        call: Geometry {
            page_base: 100,
            ..write_rpc().call
        },
        ..write_rpc()
    };
    check!(matches!(
        chunks::plan_with(&w, &t, &lim1, &one),
        Err(PlanError::TooManySegments {
            direction: Direction::Call,
            ..
        })
    ));
    // The header of the cut plan is that of its segments.
    if let Ok(p) = chunks::plan_with(
        &rpc,
        &t,
        &LIMITS,
        &Hints {
            max_segs: Some(2),
            ..Hints::NONE
        },
    ) {
        check!(p.header_len() == chunks::header_len(Protocol::V2, 0, 0, 2));
    } else {
        check!(false);
    }
    // Hints combine with the connection's limit: the lower wins.
    check!(one.capped(Some(3)).max_segs == Some(1));
    check!(Hints::NONE.capped(Some(3)).max_segs == Some(3));
    check!(Hints::NONE.capped(None).is_none() && !one.is_none());
    Ok(())
}

fn recovery_transport() -> TestResult {
    let config = Config {
        policy: VersionPolicy::ForceV1,
        ..Config::default()
    };
    let mut t = Transport::new(config);
    t.connect();
    t.established(Peer::Valid(PrivateData {
        remote_invalidate: false,
        send_size: 4096,
        recv_size: 4096,
    }));
    t.set_max_segs(16);
    let rpc = readdir_rpc();
    let r = t.prepare_rpc(XID, &rpc, 4096, 64);
    check!(matches!(r, Ok((_, ref p)) if p.reply_ranges().len() == 3));
    let Ok((_, p)) = r else { return Ok(()) };
    let s = Sent::of(Some(&p), &rpc, true);
    let d = decide(
        Protocol::V2,
        &ErrorBody::Segments { max_segments: 2 },
        &s,
        &State::NEW,
    );
    t.recovered(&d);
    check!(t.stats().recovery.segments == 1 && t.stats().recovery.resends() == 1);
    // Later RPCs of this connection keep the limit without hints.
    let r = t.prepare_rpc(XID + 1, &rpc, 4096, 64);
    check!(matches!(r, Ok((_, ref p)) if p.reply_ranges().len() == 2));
    check!(t.plan_hints(&Hints::NONE).max_segs == Some(2));
    // A resend with its hints, within the connection's limit: a Long
    // Call needs head, pages and tail, 3 segments.
    let h = Hints {
        position_zero: true,
        ..Hints::NONE
    };
    let r = t.prepare_rpc_hinted(XID + 2, &write_rpc(), 4096, 64, &h);
    check!(matches!(
        r,
        Err(CallError::Plan(PlanError::TooManySegments {
            direction: Direction::Call,
            needed: 3,
            limit: 2
        }))
    ));
    check!(
        CallError::Plan(PlanError::TooManySegments {
            direction: Direction::Call,
            needed: 3,
            limit: 2
        })
        .errno()
            == Errno::EMSGSIZE
    );
    t.recovered(&Recovery::Fail {
        errno: Errno::EIO,
        why: Why::Permanent,
    });
    check!(t.stats().recovery.failed == 1);
    // A new connection forgets the limit.
    t.disconnected();
    t.connect();
    t.established(Peer::Absent);
    check!(t.plan_hints(&Hints::NONE).is_none());
    let r = t.prepare_rpc_hinted(XID + 3, &write_rpc(), 4096, 64, &h);
    check!(matches!(r, Ok((_, ref p)) if p.call() == CallForm::Long && p.read_ranges().len() == 3));
    let mut c = Counters::default();
    for k in Kind::ALL {
        c.count(&Recovery::Resend {
            kind: k,
            state: State::NEW,
        });
        check!(!k.name().is_empty() && !k.action().is_empty());
    }
    check!(c.resends() == 5 && c.failed == 0);
    Ok(())
}

/// Writes `words` big-endian into `buf`; returns the length.
fn wire(buf: &mut [u8; 64], words: &[u32]) -> usize {
    let mut n = 0usize;
    for (dst, w) in buf.chunks_exact_mut(4).zip(words) {
        if let Some(d) = dst.first_chunk_mut::<4>() {
            *d = w.to_be_bytes();
            n = n.saturating_add(4);
        }
    }
    n
}

/// From the wire: a v2 connection, a WRITE sent with a Read chunk,
/// `RDMA2_ERR_READ_CHUNKS` for it, resent as a Long Call.
fn recovery_v2_wire() -> TestResult {
    let mut t = Transport::new(Config::default());
    t.connect();
    t.established(Peer::Absent);
    t.set_max_segs(16);
    // The probe, answered in version 2 (RDMA2_MSG, F_RESPONSE).
    check!(t.prepare_call(XID, 100, 100).is_ok());
    let mut b = [0u8; 64];
    let n = wire(
        &mut b,
        &[XID, 2, 0x0020_0001, 0, 1, 0, 0, 0, 0, XID, 1, 0, 0, 0, 0],
    );
    let out = t.receive(b.get(..n).unwrap_or(&[]));
    check!(matches!(out.reply, Reply::Deliver { xid: XID, .. }));
    check!(t.protocol() == Some(Protocol::V2));
    let rpc = write_rpc();
    let r = t.prepare_rpc(XID + 1, &rpc, 4096, 64);
    check!(matches!(r, Ok((_, ref p)) if matches!(p.call(), CallForm::Read { .. })));
    let Ok((_, p)) = r else { return Ok(()) };
    // RDMA2_ERROR, F_RESPONSE, RDMA2_ERR_READ_CHUNKS, max 0.
    let n = wire(&mut b, &[XID + 1, 2, 0x0020_0001, 4, 1, 5, 0]);
    let out = t.receive(b.get(..n).unwrap_or(&[]));
    let Reply::Fail {
        xid,
        cause: Cause::RdmaError { protocol, body },
        ..
    } = out.reply
    else {
        check!(false);
        return Ok(());
    };
    check!(xid == XID + 1 && protocol == Protocol::V2);
    let d = decide(
        protocol,
        &body,
        &Sent::of(Some(&p), &rpc, true),
        &State::NEW,
    );
    let Recovery::Resend { state, .. } = d else {
        check!(false);
        return Ok(());
    };
    t.recovered(&d);
    check!(t.stats().recovery.position_zero == 1 && t.stats().rdma_error == 1);
    // The error returned the Call's credit: the resend may go.
    let r = t.prepare_rpc_hinted(XID + 1, &rpc, 4096, 64, &state.hints());
    check!(matches!(r, Ok((_, ref p)) if p.call() == CallForm::Long
        && p.kind() == super::super::xdr::header::MsgKind::NoMsg));
    Ok(())
}
