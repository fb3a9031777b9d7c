// SPDX-License-Identifier: GPL-2.0

//! Version 2 (draft -00) rules on the receive side, one test per rule:
//! the F_RESPONSE flag choosing the XID space (§6.3.2.1), properties that
//! do not change (§6.4.4), continued messages split anywhere and ending
//! with chunk lists (§4.5.2, §4.5.3), the credit word read both ways
//! (§4.3.1). Documentation/conformance.rst names them.

use rpcrdma_proto::backchannel::{self, CallAssembly, CallStep};
use rpcrdma_proto::continuation::{piece_room, split, Piece, Reassembly, Step};
use rpcrdma_proto::credits::{CreditState, Grant, GrantEffect};
use rpcrdma_proto::recovery::{self, Recovery, Sent};
use rpcrdma_proto::xdr::header::{Credits, ErrorBody, Protocol};
use rpcrdma_proto::xdr::pvtdata::{Peer, PrivateData};
use rpcrdma_proto::{CallForm, Cause, Config, Control, Errno, Reply, ReplyForm, Transport};

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn peer() -> Peer {
    Peer::Valid(PrivateData {
        remote_invalidate: false,
        send_size: 16384,
        recv_size: 16384,
    })
}

/// v2 credit word: limit `max`, `granted` returned.
fn cred(max: u32, granted: u32) -> u32 {
    (max << 16) | granted
}

/// A responder-style RDMA2_CONNPROP: XID 0, Maximum Send Size and
/// Receive Buffer Size.
fn connprop(credit: u32, send: u32, recv: u32) -> Vec<u8> {
    bytes(&[0, 2, credit, 5, 0, 2, 1, 4, send, 2, 4, recv])
}

/// A transport settled on version 2 by its CONNPROP probe, answered by
/// the responder's CONNPROP (thresholds 8192 both ways).
fn v2_up(config: Config) -> Transport {
    let mut t = Transport::new(config);
    t.connect();
    t.established(peer());
    let _ = t.connprop_probe().expect("probe");
    let m = connprop(cred(32, 1), 8192, 8192);
    let out = t.receive(&m);
    assert!(matches!(out.reply, Reply::Control(Control::Properties(_))));
    t
}

fn big() -> Config {
    Config {
        inline_send: 16384,
        inline_recv: 16384,
        ..Config::DEFAULT
    }
}

/// -00 §6.4.4: properties "are not allowed to change subsequently". A
/// second CONNPROP does not replace the first set.
#[test]
fn second_connprop_changes_nothing() {
    let mut t = v2_up(big());
    assert_eq!((t.thresholds().send, t.thresholds().recv), (8192, 8192));
    let m = connprop(cred(32, 0), 2048, 2048);
    let out = t.receive(&m);
    assert_eq!(out.reply, Reply::Control(Control::PropertiesPart));
    assert_eq!((t.thresholds().send, t.thresholds().recv), (8192, 8192));
    assert_eq!(t.stats().connprop_applied, 1);
    assert_eq!(t.stats().connprop_repeated, 1);
}

/// A v2 reverse-direction Call header (F_RESPONSE clear) with the given
/// chunk-list words, followed by an RPC CALL of `xid`.
fn reverse_call(xid: u32, lists: &[u32]) -> Vec<u8> {
    let mut w = vec![xid, 2, cred(32, 0), 0, 0, 0];
    w.extend_from_slice(lists);
    w.extend_from_slice(&[xid, 0, 2, 0x4000_0000, 1, 1]);
    bytes(&w)
}

/// -00 §6.3.2.1: F_RESPONSE clear means the XID is the peer's. A
/// reverse-direction Call carrying chunks is not looked up among our
/// Calls (as a `Reply::Chunked` would be, which the glue looks up as a
/// forward reply); it is answered with the RDMA2_ERROR -00
/// §6.4.3 gives a responder that handles no chunks.
#[test]
fn reverse_call_with_chunks_is_in_the_peers_xid_space() {
    let mut t = v2_up(Config {
        max_segs: 8,
        ..big()
    });
    // A Call of ours with the same XID is outstanding: it must not be
    // touched by the peer's Call.
    assert!(t.prepare_call(0x77, 100, 100).is_ok());
    let read = [1, 0, 0x1234, 512, 0, 0x1000, 0, 0, 0];
    let m = reverse_call(0x77, &read);
    let out = t.receive(&m);
    assert_eq!(
        out.reply,
        Reply::Drop(Cause::ReverseError {
            xid: 0x77,
            body: ErrorBody::ReadChunks { max_chunks: 0 }
        })
    );
    assert!(!out.reply.answers_call());
    // A Write chunk: REPLY_RESOURCE (-00 §6.4.3: a responder that handles
    // no Write chunks).
    let write = [0, 1, 1, 0x1234, 512, 0, 0x1000, 0, 0];
    let m = reverse_call(0x78, &write);
    assert_eq!(
        t.receive(&m).reply,
        Reply::Drop(Cause::ReverseError {
            xid: 0x78,
            body: ErrorBody::ReplyResource { length_needed: 0 }
        })
    );
    // Only a Reply chunk: served (we may answer by other means, §6.5).
    let reply_chunk = [0, 0, 1, 1, 0x1234, 512, 0, 0x1000];
    let m = reverse_call(0x79, &reply_chunk);
    assert!(matches!(
        t.receive(&m).reply,
        Reply::ReverseCall { xid: 0x79, .. }
    ));
    // A Long Call (RDMA2_NOMSG, Position-Zero Read, F_RESPONSE clear).
    let m = bytes(&[
        0x7a,
        2,
        cred(32, 0),
        1,
        0,
        0,
        1,
        0,
        0x1234,
        512,
        0,
        0x1000,
        0,
        0,
        0,
    ]);
    assert_eq!(
        t.receive(&m).reply,
        Reply::Drop(Cause::ReverseError {
            xid: 0x7a,
            body: ErrorBody::ReadChunks { max_chunks: 0 }
        })
    );
    // Our Call 0x77 is still waiting: its reply is delivered.
    let m = bytes(&[0x77, 2, cred(32, 1), 0, 1, 0, 0, 0, 0, 0x77, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&m).reply,
        Reply::Deliver { xid: 0x77, .. }
    ));
}

/// -00 §6.3.2.1 and §6.4.3: a v2 message that does not decode, with
/// F_RESPONSE clear, is a reverse-direction Call we cannot parse. It
/// fails none of our Calls (not even the one with its XID) and
/// is answered with the error §6.4.3 names for what is wrong.
#[test]
fn malformed_reverse_call_fails_no_call_of_ours() {
    let mut t = v2_up(big());
    assert!(t.prepare_call(0x55, 100, 100).is_ok());
    let cases: [(&[u32], ErrorBody); 4] = [
        // Unknown header type 7.
        (&[0x55, 2, cred(32, 0), 7, 0, 0], ErrorBody::InvalHtype),
        // A reserved flag on RDMA2_MSG.
        (
            &[0x55, 2, cred(32, 0), 0, 0x10, 0, 0, 0, 0, 0x55, 0],
            ErrorBody::InvalHtype,
        ),
        // F_MORE on RDMA2_NOMSG.
        (
            &[0x55, 2, cred(32, 0), 1, 2, 0, 0, 0, 0],
            ErrorBody::InvalFlag,
        ),
        // Chunk lists that do not decode (discriminant 2).
        (
            &[0x55, 2, cred(32, 0), 0, 0, 0, 2, 0, 0, 0x55, 0],
            ErrorBody::BadXdr,
        ),
    ];
    for (words, body) in cases {
        let m = bytes(words);
        let out = t.receive(&m);
        assert_eq!(
            out.reply,
            Reply::Drop(Cause::ReverseError { xid: 0x55, body }),
            "{words:x?}"
        );
    }
    // With F_RESPONSE set the same XID names our Call: it fails.
    let m = bytes(&[0x55, 2, cred(32, 0), 7, 1, 0]);
    assert!(matches!(t.receive(&m).reply, Reply::Fail { xid: 0x55, .. }));
}

/// One RDMA2_MSG piece of a continued reply: F_RESPONSE, F_MORE if
/// `more`, no chunks, then `payload` (any length).
fn reply_piece(xid: u32, more: bool, payload: &[u8]) -> Vec<u8> {
    let flags = if more { 3 } else { 1 };
    let mut m = bytes(&[xid, 2, cred(32, 0), 0, flags, 0, 0, 0, 0]);
    m.extend_from_slice(payload);
    m
}

/// -00 §4.5.2: a sender "MAY split the RPC message payload on any
/// convenient boundary". Pieces of 1, 2 and 3 bytes, the last one
/// included, are reassembled (the codec does not require the XDR's
/// `rdma_rpc_first_word` in every RDMA2_MSG).
#[test]
fn continued_reply_split_on_any_boundary() {
    let mut t = v2_up(big());
    assert!(t.prepare_call(0x31, 100, 4096).is_ok());
    let rpc: Vec<u8> = bytes(&[0x31, 1, 0, 0, 0, 0])
        .into_iter()
        .chain((0..11u8).map(|i| i + 1))
        .collect();
    let mut placed = vec![0u8; rpc.len()];
    let mut at = 0;
    let mut done = None;
    for n in [1usize, 2, 3, 7, 1, 2, 3, 10, 3, 2].into_iter().cycle() {
        let end = (at + n).min(rpc.len());
        let m = reply_piece(0x31, end < rpc.len(), &rpc[at..end]);
        let out = t.receive(&m);
        match out.reply {
            Reply::Piece {
                xid: 0x31,
                offset,
                payload,
                last,
            } => {
                assert_eq!(offset as usize, at);
                placed[at..end].copy_from_slice(payload);
                done = last;
            }
            r => panic!("piece {at}..{end}: {r:?}"),
        }
        at = end;
        if at == rpc.len() {
            break;
        }
    }
    assert_eq!(done, Some(rpc.len() as u32));
    assert_eq!(placed, rpc);
    assert_eq!(t.stats().bad_reply, 0);
    // A whole RDMA2_MSG with fewer than 4 bytes is no RPC message: the
    // Call it names fails (as before, now from the RPC header check).
    assert!(t.prepare_call(0x32, 100, 4096).is_ok());
    let m = reply_piece(0x32, false, &[0, 0]);
    assert!(matches!(
        t.receive(&m).reply,
        Reply::Fail {
            xid: 0x32,
            cause: Cause::BadRpcHeader,
            ..
        }
    ));
}

/// -00 §4.5.3 ("Chunks for a chained message may be conveyed in the final
/// message in the sequence"): the reassembly ends the sequence normally
/// on a last piece with chunk lists and says that the Reply is reduced
/// (it does not refuse it).
#[test]
fn continued_reply_may_end_with_chunk_lists() {
    let mut r = Reassembly::new();
    let head = bytes(&[0x41, 1, 0, 0]);
    let piece = |more, chunks, payload| Piece {
        xid: 0x41,
        htype: 0,
        more,
        response: true,
        chunks,
        valid: true,
        payload,
    };
    assert!(matches!(
        r.on_message(&piece(true, false, &head)),
        Step::Append { offset: 0, .. }
    ));
    let tail = [0u8; 6];
    assert_eq!(
        r.on_message(&piece(false, true, &tail)),
        Step::Last {
            xid: 0x41,
            offset: 16,
            payload: &tail,
            len: 22,
            chunks: true,
        }
    );
    assert!(!r.in_sequence());
}

/// A word that answers a Call (`answers_call`), or else an asynchronous
/// credit grant.
fn v2_word(s: &mut CreditState, granted: u16, max: u16, answers_call: bool) -> GrantEffect {
    s.on_grant(Grant::V2 {
        credits: Credits { granted, max },
        answers_call,
        credit_grant: !answers_call,
    })
}

/// A word on a piece of a continued reply (neither an answer nor a
/// grant).
fn piece_word(s: &mut CreditState, granted: u16, max: u16) -> GrantEffect {
    s.on_grant(Grant::V2 {
        credits: Credits { granted, max },
        answers_call: false,
        credit_grant: false,
    })
}

/// One Call of one message.
fn call(s: &mut CreditState) {
    s.on_send();
    s.on_call_sent();
}

/// -00 §4.3.1 read the other way: the low half is the grant (never zero)
/// and the high half zero. Such a word is not ignored as a zero limit
/// (the budget would stay at one message, and the pieces of a continued
/// Call, which no reply answers, would stall for good after the first):
/// its grant is the limit and it reopens the budget.
#[test]
fn zero_limit_half_with_a_grant_does_not_stall() {
    let mut s = CreditState::new(&Config::DEFAULT, Protocol::V2);
    // Piece 1 of a continued Call: the budget (1) is used up.
    s.on_send();
    assert!(!s.may_send());
    // The peer's asynchronous grant: 8 granted, limit half 0.
    let e = v2_word(&mut s, 8, 0, false);
    assert!(!e.bad_word && e.wake);
    assert_eq!(s.limit(), 8);
    // A grant shows one message received: piece 1.
    assert_eq!(s.outstanding(), 0);
    for _ in 0..8 {
        assert!(s.may_send());
        s.on_send();
    }
    // ... and never more than it granted.
    assert!(!s.may_send());
    // A word without any limit is still invalid.
    let e = v2_word(&mut s, 0, 0, false);
    assert!(e.bad_word && !e.wake);
}

/// The same reading with a maximum in the high half larger than the
/// grant: two words in a row that return more than was outstanding prove
/// it, and from then on the low half is the limit (the high half taken
/// as the limit would send 32 messages to a peer that granted 4).
#[test]
fn grant_in_the_low_half_is_detected_and_honoured() {
    let mut s = CreditState::new(&Config::DEFAULT, Protocol::V2);
    call(&mut s);
    let e = v2_word(&mut s, 4, 32, true);
    assert!(!e.total_reading);
    assert_eq!((s.limit(), s.outstanding()), (4, 0));
    call(&mut s);
    let e = v2_word(&mut s, 4, 32, true);
    assert!(e.total_reading && s.total_reading());
    assert_eq!((s.limit(), s.window(), s.outstanding()), (4, 4, 0));
    // At load (4 outstanding), an answer shows the peer received the
    // earliest of the four Calls, and no more.
    for _ in 0..4 {
        call(&mut s);
    }
    assert!(!s.may_send());
    v2_word(&mut s, 4, 32, true);
    assert_eq!((s.limit(), s.outstanding()), (4, 3));
    // Three more answers: all four.
    for _ in 0..3 {
        v2_word(&mut s, 4, 32, true);
    }
    assert_eq!(s.outstanding(), 0);
}

/// In the other reading a word says how many messages the peer can
/// take, not which of ours it took: ours still on the way use its
/// Receives too. Every word used to declare everything sent consumed,
/// so each piece of a long continued reply let us send a limit's worth
/// of pieces of a continued Call more while the peer had received none
/// of them (soft-iWARP: a message found no Receive posted). Now only
/// what the peer's messages show it received is returned: an answer, up
/// to the end of the Call it answers; any message, up to ours whose
/// word returned what the peer needed to send it within our limit.
#[test]
fn other_reading_returns_only_what_was_received() {
    for max in [0, 8] {
        let mut s = CreditState::new(&Config::DEFAULT, Protocol::V2);
        // Two Calls answered: the other reading (proven for max 8).
        for _ in 0..2 {
            call(&mut s);
            s.on_receive();
            v2_word(&mut s, 8, max, true);
        }
        assert_eq!((s.limit(), s.outstanding()), (8, 0));
        // A READ (its word returns the two answers), then the pieces of
        // a continued WRITE up to the limit.
        call(&mut s);
        for _ in 0..7 {
            assert!(s.may_send());
            s.on_send();
        }
        assert!(!s.may_send());
        // Pieces of the reply to the READ, as many as our limit (8, and
        // one beyond it) lets the peer send: the first eight show none
        // of ours received, the ninth the READ.
        for i in 0..9 {
            s.on_receive();
            let e = piece_word(&mut s, 8, max);
            assert_eq!(s.outstanding(), if i < 8 { 8 } else { 7 }, "max {max}");
            assert_eq!(e.wake, i == 8);
        }
        // Our credit grant returns the nine: it goes in the Receive the
        // peer keeps for one, and no second one goes until it is shown
        // received.
        assert!(s.may_send_grant());
        s.on_send();
        s.on_grant_sent();
        assert!(s.reserve_used() && !s.may_send_grant());
        // The peer's next message shows it received everything up to
        // that grant.
        s.on_receive();
        piece_word(&mut s, 8, max);
        assert_eq!(s.outstanding(), 0, "max {max}");
        assert!(s.may_send_grant());
    }
}

/// In the other reading, credit grants the peer never answers take no
/// room from the Calls whose answers show them received: one at a time,
/// in the Receive kept for one.
#[test]
fn other_reading_grants_use_the_reserve() {
    let mut s = CreditState::new(&Config::DEFAULT, Protocol::V2);
    call(&mut s);
    s.on_receive();
    v2_word(&mut s, 2, 0, true);
    assert_eq!((s.limit(), s.outstanding()), (2, 0));
    s.on_send();
    s.on_grant_sent();
    assert!(s.reserve_used());
    // The grant does not count against the limit: two Calls may go.
    for _ in 0..2 {
        assert!(s.may_send());
        call(&mut s);
    }
    assert!(!s.may_send() && !s.may_send_grant());
    // The answer to the first shows the grant before it received.
    s.on_receive();
    v2_word(&mut s, 2, 0, true);
    assert!(!s.reserve_used());
    assert_eq!(s.outstanding(), 1);
}

/// One stray word (a duplicate reply) that returns more than was
/// outstanding limits that word only; a peer of our reading keeps its
/// limit afterwards.
#[test]
fn one_stray_over_return_is_not_proof() {
    let mut s = CreditState::new(&Config::DEFAULT, Protocol::V2);
    call(&mut s);
    v2_word(&mut s, 1, 32, true);
    assert_eq!(s.limit(), 32);
    // A duplicate: returns 1, nothing outstanding.
    v2_word(&mut s, 1, 32, true);
    assert!(!s.total_reading());
    call(&mut s);
    v2_word(&mut s, 1, 32, true);
    assert_eq!(s.limit(), 32);
    assert!(!s.total_reading());
}

/// The client as responder of the reverse direction answers a
/// reverse-direction Call it cannot serve with RDMA2_ERROR (it does not
/// stay silent): the error carries the Call's XID, version 2,
/// F_RESPONSE, and takes one of the peer's credits.
#[test]
fn reverse_error_is_encoded_and_counted() {
    let mut t = v2_up(big());
    let m = reverse_call(0x66, &[1, 0, 0x1234, 512, 0, 0x1000, 0, 0, 0]);
    let out = t.receive(&m);
    let Some(cause) = out.reply.cause() else {
        panic!("{:?}", out.reply)
    };
    let before = t.credits().outstanding();
    let (e, credit) = t.prepare_reverse_error(&cause).expect("an error to send");
    assert_eq!(t.credits().outstanding(), before + 1);
    assert_eq!(t.stats().reverse_errors, 1);
    let mut buf = [0u8; 64];
    let n = e.encode(&mut buf, credit).unwrap();
    // xid, vers 2, credit, RDMA2_ERROR, F_RESPONSE, READ_CHUNKS, max 0
    assert_eq!(&buf[..n], &bytes(&[0x66, 2, credit, 4, 1, 5, 0])[..],);
    // Nothing to answer for other causes.
    assert!(t.prepare_reverse_error(&Cause::BadRpcHeader).is_none());
}

/// -00 §4.5.2 / §6.3.2 for reverse-direction Calls (we advertise Reverse
/// Request Support INLINE, and continued messages are inline): the
/// pieces are placed at their offsets; a change of XID is
/// RDMA2_ERR_INVAL_FLAG; a Call longer than the backchannel buffer is
/// RDMA2_ERR_SYSTEM once, the rest of its sequence dropped silently.
#[test]
fn continued_reverse_call_is_reassembled() {
    let mut a = CallAssembly::new();
    assert_eq!(
        a.piece(9, true, 10, 4096),
        CallStep::Append { xid: 9, offset: 0 }
    );
    assert_eq!(
        a.piece(9, true, 3, 4096),
        CallStep::Append { xid: 9, offset: 10 }
    );
    assert_eq!(
        a.piece(9, false, 7, 4096),
        CallStep::Last {
            xid: 9,
            offset: 13,
            len: 20
        }
    );
    assert!(!a.in_sequence());
    // Another XID in the middle.
    a.piece(9, true, 10, 4096);
    assert_eq!(
        a.piece(10, false, 10, 4096),
        CallStep::Refuse {
            xid: 10,
            body: ErrorBody::InvalFlag,
            answer: true
        }
    );
    assert!(!a.in_sequence());
    // Too long for the buffer: one error, the rest dropped.
    a.piece(11, true, 4000, 4096);
    assert_eq!(
        a.piece(11, true, 200, 4096),
        CallStep::Refuse {
            xid: 11,
            body: ErrorBody::System,
            answer: true
        }
    );
    assert_eq!(
        a.piece(11, false, 10, 4096),
        CallStep::Refuse {
            xid: 11,
            body: ErrorBody::System,
            answer: false
        }
    );
    assert!(!a.in_sequence());
}

/// -00 §6.5: a reply that does not fit inline SHOULD be continued; a
/// reverse-direction Call offers no chunks, so on version 2 a callback
/// reply too large for the call threshold is sent in pieces (not dropped
/// with -EMSGSIZE). Version 1 cannot continue: the reply is not
/// sent.
#[test]
fn large_callback_reply_is_continued() {
    let t = v2_up(big());
    let th = *t.thresholds();
    assert_eq!(backchannel::reply_pieces(&th, Protocol::V2, 100), Some(1));
    let big_reply = th.send * 3;
    let room = piece_room(th.send);
    let n = backchannel::reply_pieces(&th, Protocol::V2, big_reply).unwrap();
    assert_eq!(n, big_reply.div_ceil(room));
    assert!(n > 1);
    // The spans cover the reply once, F_MORE on all but the last.
    let mut at = 0;
    let mut count = 0;
    while let Some(s) = split(big_reply, at, room) {
        assert_eq!(s.offset, at);
        assert!(s.len + 36 <= th.send);
        at += s.len;
        count += 1;
        assert_eq!(s.more, at < big_reply);
    }
    assert_eq!((at, count), (big_reply, n));
    assert_eq!(
        backchannel::reply_pieces(&th, Protocol::V1, big_reply),
        None
    );
}

/// -00 §6.5 on the wire side: a reverse-direction reply above the
/// threshold goes as that many `RDMA2_MSG` pieces, each with `F_RESPONSE`,
/// `F_MORE` on all but the last, one credit each; counted as one reply.
#[test]
fn large_callback_reply_pieces_are_planned() {
    let mut t = v2_up(big());
    let th = *t.thresholds();
    let big_reply = th.send * 2 + 100;
    let n = backchannel::reply_pieces(&th, Protocol::V2, big_reply).unwrap();
    let (mut at, mut count) = (0, 0);
    let sent0 = t.credits().outstanding();
    loop {
        let plan = t.prepare_bc_reply(big_reply, at).expect("a piece");
        assert_eq!(plan.span.offset, at);
        assert!(plan.hdr_len + plan.span.len <= th.send);
        let spec = plan.msg_spec(0x77);
        assert!(spec.flags.is_response());
        assert_eq!(spec.flags.has_more(), plan.span.more);
        at += plan.span.len;
        count += 1;
        if !plan.span.more {
            break;
        }
    }
    assert_eq!((at, count), (big_reply, n));
    assert_eq!(t.credits().outstanding(), sent0 + n);
    assert_eq!(t.stats().bc_replies, 1);
    // Past the end: nothing to send.
    assert!(matches!(
        t.prepare_bc_reply(big_reply, big_reply),
        Err(rpcrdma_proto::backchannel::ReplyError::TooBig(_))
    ));
    // A reply that fits is one message, no piece.
    let plan = t.prepare_bc_reply(100, 0).unwrap();
    assert_eq!((plan.span.len, plan.span.more), (100, false));
    assert_eq!(t.stats().bc_replies, 2);
}

/// Version 1 without FRWR (`frwr=0`, `Config::max_segs` 0): no Reply
/// chunk can be offered (RFC 8166 §3.5 needs one for a Reply larger than
/// the inline threshold, and version 1 has no continuation). The Call is
/// sent anyway, with a receive buffer larger than the threshold: most
/// replies are far smaller than their buffer (READLINK, READDIR,
/// GETACL). A reply that really does not fit is answered by the server
/// with ERR_CHUNK (svcrdma), which fails that RPC alone with -EIO; the
/// recovery does not resend it (nothing larger can be offered).
#[test]
fn v1_inline_only_reply_that_does_not_fit() {
    let mut t = Transport::new(Config {
        policy: rpcrdma_proto::VersionPolicy::ForceV1,
        max_segs: 0,
        ..Config::DEFAULT
    });
    t.connect();
    t.established(peer());
    // A READDIR with a 64 KiB receive buffer: sent inline.
    let plan = t
        .prepare_call(0x99, 200, 65536)
        .expect("sent without a Reply chunk");
    assert_eq!(plan.protocol, Protocol::V1);
    // svcrdma's answer: RDMA_ERROR, ERR_CHUNK.
    let m = bytes(&[0x99, 1, 32, 4, 2]);
    let out = t.receive(&m);
    let Reply::Fail { xid, errno, cause } = out.reply else {
        panic!("{:?}", out.reply)
    };
    assert_eq!((xid, errno), (0x99, Errno::EIO));
    let Cause::RdmaError { protocol, body } = cause else {
        panic!("{cause:?}")
    };
    assert_eq!((protocol, body), (Protocol::V1, ErrorBody::BadXdr));
    let sent = Sent {
        call: CallForm::Inline,
        reply: ReplyForm::Inline,
        write_len: 0,
        reply_chunk_len: 0,
        max_chunk_segs: 0,
        reply_capacity: 65536,
        chunks: false,
    };
    assert!(matches!(
        recovery::decide(protocol, &body, &sent, &recovery::State::NEW),
        Recovery::Fail {
            errno: Errno::EIO,
            ..
        }
    ));
    // The connection goes on: the next RPC is sent and answered.
    assert!(t.prepare_call(0x9a, 200, 1000).is_ok());
    let m = bytes(&[0x9a, 1, 32, 0, 0, 0, 0, 0x9a, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&m).reply,
        Reply::Deliver { xid: 0x9a, .. }
    ));
}

/// -00 §4.3.1: "The granted value MUST NOT be zero". A credit word that is
/// zero in both halves is not applied and is counted (`bad_credit`), on
/// an asynchronous grant and on a reply alike; a word with a zero limit
/// half and a grant in its low half is the other reading, not counted.
#[test]
fn zero_credit_word_is_ignored_and_counted() {
    let mut t = v2_up(big());
    let limit = t.credits().limit();
    // An asynchronous credit grant (RDMA2_NOMSG, empty lists, XID 0).
    let grant = |credit| bytes(&[0, 2, credit, 1, 0, 0, 0, 0, 0]);
    t.receive(&grant(0));
    assert_eq!(t.stats().bad_credit, 1);
    assert_eq!(t.credits().limit(), limit);
    // A reply of ours with a zero word.
    assert!(t.prepare_call(0x21, 100, 100).is_ok());
    let m = bytes(&[0x21, 2, 0, 0, 1, 0, 0, 0, 0, 0x21, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&m).reply,
        Reply::Deliver { xid: 0x21, .. }
    ));
    assert_eq!(t.stats().bad_credit, 2);
    assert_eq!(t.credits().limit(), limit);
    // Zero limit half, 8 granted: read the other way, not counted.
    t.receive(&grant(8));
    assert_eq!(t.stats().bad_credit, 2);
}
