// SPDX-License-Identifier: GPL-2.0

//! Reverse-direction Calls (RFC 8167, draft -00 v2): classification,
//! credits and Receives, the reply header and its size limit.

use rpcrdma_proto::backchannel::{self, CallVerdict, ReplyError};
use rpcrdma_proto::xdr::header::{self, Body, Protocol};
use rpcrdma_proto::xdr::pvtdata::{Peer, PrivateData};
use rpcrdma_proto::{Config, CreditUpdate, Reply, Transport, VersionPolicy};

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

fn peer(send: u32, recv: u32) -> Peer {
    Peer::Valid(PrivateData {
        remote_invalidate: false,
        send_size: send,
        recv_size: recv,
    })
}

fn v1_up(bc: u32) -> Transport {
    let mut t = Transport::new(Config {
        policy: VersionPolicy::ForceV1,
        bc_requests: bc,
        ..Config::DEFAULT
    });
    t.connect();
    t.established(peer(4096, 4096));
    t
}

/// An svcrdma-style v1 reverse-direction Call: RDMA_MSG, credit `credit`,
/// RPC CALL for the NFSv4 callback program.
fn v1_cb_call(xid: u32, credit: u32) -> Vec<u8> {
    bytes(&[
        xid,
        1,
        credit,
        0,
        0,
        0,
        0, // transport header
        xid,
        0,
        2,
        0x4000_0000,
        1,
        1, // RPC CALL, rpcvers, prog, vers, proc
    ])
}

fn v1_reply(xid: u32, credit: u32) -> Vec<u8> {
    bytes(&[xid, 1, credit, 0, 0, 0, 0, xid, 1, 0, 0, 0, 0])
}

#[test]
fn v1_reverse_call_is_classified_and_does_not_touch_the_window() {
    let mut t = v1_up(backchannel::SLOTS);
    // The first reply grants 32 credits.
    let r = v1_reply(5, 32);
    let o = t.receive(&r);
    assert_eq!(o.credits, Some(CreditUpdate::new(32)));
    // svcrdma's Call carries its own backchannel credit (2): ignored.
    let call = v1_cb_call(0x1234, 2);
    let o = t.receive(&call);
    match o.reply {
        Reply::ReverseCall { xid, payload } => {
            assert_eq!(xid, 0x1234);
            assert_eq!(payload, &call[28..]);
        }
        r => panic!("not a reverse call: {r:?}"),
    }
    assert_eq!(o.credits, None);
    assert_eq!(t.credits().window(), 32);
    assert_eq!(t.stats().reverse_calls, 1);
}

#[test]
fn receives_cover_the_backchannel() {
    // window + 2 * bc_requests stay posted (C: rb_bc_srv_max_requests << 1).
    let mut t = v1_up(backchannel::SLOTS);
    assert_eq!(t.credits().receives_needed(), 1 + 2 * backchannel::SLOTS);
    let before = t.credits().posted();
    assert!(before > 2 * backchannel::SLOTS);
    // A reverse Call consumes a Receive like any message; replenishment
    // tops the count back up.
    // Consume Receives with reverse Calls until replenishment kicks in:
    // the posted count never drops to the needed count.
    let call = v1_cb_call(7, 2);
    for _ in 0..3 * backchannel::SLOTS {
        let o = t.receive(&call);
        assert!(matches!(o.reply, Reply::ReverseCall { xid: 7, .. }));
        assert!(t.credits().posted() > t.credits().receives_needed());
    }
}

#[test]
fn v1_reply_header() {
    let mut t = v1_up(backchannel::SLOTS);
    let plan = t.prepare_bc_reply(100, 0).expect("fits");
    assert_eq!(plan.protocol, Protocol::V1);
    assert_eq!(plan.credit, backchannel::SLOTS);
    assert_eq!(plan.hdr_len, 28);
    let mut buf = [0u8; 64];
    let n = header::encode_msg(&mut buf, plan.protocol, &plan.msg_spec(0x1234)).unwrap();
    assert_eq!(n, 28);
    // Exactly what the C client's rpcrdma_bc_marshal_reply writes.
    assert_eq!(&buf[..28], &bytes(&[0x1234, 1, 16, 0, 0, 0, 0])[..]);
    assert_eq!(t.stats().bc_replies, 1);
}

#[test]
fn reply_beyond_the_inline_threshold_is_refused() {
    let mut t = v1_up(backchannel::SLOTS);
    let limit = t.thresholds().send - 28;
    assert!(t.prepare_bc_reply(limit, 0).is_ok());
    match t.prepare_bc_reply(limit + 1, 0) {
        Err(ReplyError::TooBig(tb)) => {
            assert_eq!(tb.len, limit + 1);
            assert_eq!(tb.limit, limit);
        }
        r => panic!("{r:?}"),
    }
    // Not connected.
    t.disconnected();
    assert_eq!(t.prepare_bc_reply(10, 0), Err(ReplyError::NotConnected));
}

#[test]
fn max_payload_leaves_room_for_the_v2_header() {
    // Version 1: 8 bytes less than the C client's 4096 - 28, so that the
    // value stays true if a reconnection settles on version 2.
    let t = v1_up(backchannel::SLOTS);
    assert_eq!(backchannel::max_payload(t.thresholds(), 4096), 4096 - 36);
    let mut t2 = Transport::new(Config {
        policy: VersionPolicy::ForceV1,
        ..Config::DEFAULT
    });
    t2.connect();
    t2.established(peer(1024, 1024));
    assert_eq!(backchannel::max_payload(t2.thresholds(), 4096), 1024 - 36);
    // Version 2: a reply of max_payload bytes fits inline with the
    // 36-byte RDMA2_MSG header (with 28 subtracted it did not).
    for t in [t.thresholds(), t2.thresholds()] {
        let n = backchannel::max_payload(t, 4096);
        assert_eq!(backchannel::fit_reply(t, Protocol::V2, n), Ok(()));
    }
}

#[test]
fn call_verdicts() {
    use CallVerdict::*;
    assert_eq!(backchannel::check_call(100, 4096, 0, true), Serve);
    assert_eq!(backchannel::check_call(100, 4096, 0, false), NoService);
    assert_eq!(
        backchannel::check_call(5000, 4096, 0, true),
        TooBig {
            len: 5000,
            limit: 4096
        }
    );
    assert_eq!(
        backchannel::check_call(100, 4096, backchannel::MAX_OUTSTANDING - 1, true),
        Serve
    );
    assert_eq!(
        backchannel::check_call(100, 4096, backchannel::MAX_OUTSTANDING, true),
        Overflow
    );
    assert_eq!(
        backchannel::check_call(usize::MAX, 4096, 0, true),
        TooBig {
            len: u32::MAX,
            limit: 4096
        }
    );
}

#[test]
fn v2_reverse_call_and_reply() {
    let mut t = Transport::new(Config {
        bc_requests: backchannel::SLOTS,
        ..Config::DEFAULT
    });
    t.connect();
    t.established(peer(4096, 4096));
    // Settle on v2: a Call (the probe), then its reply.
    let call = t.prepare_call(9, 100, 100).unwrap();
    assert!(call.probe);
    let reply = bytes(&[9, 2, 0x0001_0020, 0, 1, 0, 0, 0, 0, 9, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&reply).reply,
        Reply::Deliver { xid: 9, .. }
    ));
    // A v2 reverse-direction Call: F_RESPONSE clear, msg_type CALL.
    let cb = bytes(&[
        0x77,
        2,
        0x0001_0020,
        0,
        0,
        0,
        0,
        0,
        0,
        0x77,
        0,
        2,
        0x4000_0000,
        1,
        1,
    ]);
    assert!(matches!(
        t.receive(&cb).reply,
        Reply::ReverseCall { xid: 0x77, .. }
    ));
    // The reply: RDMA2_MSG with F_RESPONSE, one message of the budget.
    let sent = t.credits().outstanding();
    let plan = t.prepare_bc_reply(40, 0).unwrap();
    assert_eq!(plan.protocol, Protocol::V2);
    assert_eq!(plan.hdr_len, 36);
    assert_eq!(t.credits().outstanding(), sent + 1);
    let mut buf = [0u8; 64];
    let n = header::encode_msg(&mut buf, plan.protocol, &plan.msg_spec(0x77)).unwrap();
    assert_eq!(n, 36);
    // Followed by an RPC Reply.
    buf[n..n + 24].copy_from_slice(&bytes(&[0x77, 1, 0, 0, 0, 0]));
    let h = header::decode(&buf[..n + 24]).unwrap();
    assert_eq!(h.xid, 0x77);
    assert!(h.flags.is_response());
    assert!(matches!(h.body, Body::Msg(_)));
}

#[test]
fn reverse_call_with_bad_rpc_header_is_not_served() {
    let mut t = v1_up(backchannel::SLOTS);
    // RPC XID differs from the transport XID.
    let w = bytes(&[5, 1, 2, 0, 0, 0, 0, 6, 0, 2, 0x4000_0000, 1, 1]);
    assert!(!matches!(t.receive(&w).reply, Reply::ReverseCall { .. }));
    // Truncated RPC header.
    let w = bytes(&[5, 1, 2, 0, 0, 0, 0, 5]);
    assert!(!matches!(t.receive(&w).reply, Reply::ReverseCall { .. }));
}

/// A transport settled on version 2 with one Call of ours outstanding
/// (XID 9 answered, XID 10 sent).
fn v2_up() -> Transport {
    let mut t = Transport::new(Config {
        bc_requests: backchannel::SLOTS,
        ..Config::DEFAULT
    });
    t.connect();
    t.established(peer(4096, 4096));
    t.prepare_call(9, 100, 100).unwrap();
    let reply = bytes(&[9, 2, 0x0001_0020, 0, 1, 0, 0, 0, 0, 9, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&reply).reply,
        Reply::Deliver { xid: 9, .. }
    ));
    t.prepare_call(10, 100, 100).unwrap();
    t
}

/// A piece of reverse-direction Call `xid`: `RDMA2_MSG`, `F_RESPONSE`
/// clear, `F_MORE` if `more`, empty chunk lists, then `words`.
fn rpiece(xid: u32, more: bool, words: &[u32]) -> Vec<u8> {
    let mut w = vec![xid, 2, 0x0001_0020, 0, if more { 2 } else { 0 }, 0, 0, 0, 0];
    w.extend_from_slice(words);
    bytes(&w)
}

#[test]
fn v2_continued_reverse_call_is_reassembled() {
    let mut t = v2_up();
    let out = t.credits().outstanding();
    // The RPC header in the first piece, the rest in the next two.
    let p1 = rpiece(0x77, true, &[0x77, 0, 2, 0x4000_0000]);
    let p2 = rpiece(0x77, true, &[1, 1]);
    let p3 = rpiece(0x77, false, &[0, 0, 0, 0]);
    let mut call = [0u8; 64];
    let mut end = 0;
    for (p, at, last) in [(&p1, 0, None), (&p2, 16, None), (&p3, 24, Some(40))] {
        let o = t.receive(p);
        match o.reply {
            Reply::ReverseCallPiece {
                xid: 0x77,
                offset,
                payload,
                last: l,
            } => {
                assert_eq!((offset, l), (at, last));
                let o = offset as usize;
                call[o..o + payload.len()].copy_from_slice(payload);
                end = o + payload.len();
            }
            r => panic!("not a piece of the reverse Call: {r:?}"),
        }
    }
    assert_eq!(
        &call[..end],
        &bytes(&[0x77, 0, 2, 0x4000_0000, 1, 1, 0, 0, 0, 0])[..]
    );
    // It answered none of our Calls; one Call received, three pieces.
    assert_eq!(t.credits().outstanding(), out);
    assert_eq!(t.stats().reverse_calls, 1);
    assert_eq!(t.stats().reverse_call_pieces, 3);
    assert_eq!(t.stats().unsupported, 0);
    // Our own reply still arrives as usual.
    let reply = bytes(&[10, 2, 0x0001_0020, 0, 1, 0, 0, 0, 0, 10, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&reply).reply,
        Reply::Deliver { xid: 10, .. }
    ));
}

#[test]
fn v2_continued_reverse_call_interrupted_by_a_reply() {
    let mut t = v2_up();
    let p1 = rpiece(0x77, true, &[0x77, 0, 2, 0x4000_0000]);
    assert!(matches!(
        t.receive(&p1).reply,
        Reply::ReverseCallPiece { last: None, .. }
    ));
    // Our reply interrupts the sequence: delivered, the Call dropped.
    let reply = bytes(&[10, 2, 0x0001_0020, 0, 1, 0, 0, 0, 0, 10, 1, 0, 0, 0, 0]);
    assert!(matches!(
        t.receive(&reply).reply,
        Reply::Deliver { xid: 10, .. }
    ));
    assert_eq!(t.stats().reverse_calls_interrupted, 1);
    // The rest of the dropped Call no longer belongs to a sequence: a
    // last piece on its own is classified as a Call in one message
    // (and its bytes are not an RPC Call).
    let p2 = rpiece(0x77, false, &[1, 1]);
    assert!(!matches!(
        t.receive(&p2).reply,
        Reply::ReverseCallPiece { .. } | Reply::ReverseCall { .. }
    ));
    assert_eq!(t.stats().reverse_calls, 0);
}

#[test]
fn v2_continued_reverse_call_refusals() {
    use rpcrdma_proto::xdr::header::ErrorBody;
    use rpcrdma_proto::Cause;
    // Another XID in the middle: RDMA2_ERR_INVAL_FLAG for that message
    // (-00 §6.3.2), the sequence dropped.
    let mut t = v2_up();
    t.receive(&rpiece(0x77, true, &[0x77, 0]));
    let m = rpiece(0x78, true, &[0x78, 0]);
    let o = t.receive(&m);
    assert_eq!(
        o.reply,
        Reply::Drop(Cause::ReverseError {
            xid: 0x78,
            body: ErrorBody::InvalFlag
        })
    );
    // Longer than a backchannel buffer: RDMA2_ERR_SYSTEM once, the rest
    // of the sequence dropped without another answer.
    let mut t = v2_up();
    let big = vec![0u32; (backchannel::MAX_CALL / 4) as usize];
    assert!(matches!(
        t.receive(&rpiece(0x79, true, &[0x79, 0])).reply,
        Reply::ReverseCallPiece { .. }
    ));
    let m = rpiece(0x79, true, &big);
    let o = t.receive(&m);
    assert_eq!(
        o.reply,
        Reply::Drop(Cause::ReverseError {
            xid: 0x79,
            body: ErrorBody::System
        })
    );
    let m = rpiece(0x79, false, &[1]);
    let o = t.receive(&m);
    assert!(matches!(o.reply, Reply::Drop(Cause::Continuation(_))));
    assert_eq!(t.stats().reverse_calls, 0);
    // A last piece with a Read list: RDMA2_ERR_READ_CHUNKS.
    let mut t = v2_up();
    t.receive(&rpiece(0x7a, true, &[0x7a, 0]));
    let last = bytes(&[0x7a, 2, 0x0001_0020, 0, 0, 0, 1, 0, 1, 16, 0, 0, 0, 0, 0, 1]);
    let o = t.receive(&last);
    assert!(
        matches!(
            o.reply,
            Reply::Drop(Cause::ReverseError {
                xid: 0x7a,
                body: ErrorBody::ReadChunks { .. }
            })
        ),
        "{:?}",
        o.reply
    );
}
