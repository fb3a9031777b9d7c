// SPDX-License-Identifier: GPL-2.0

//! Version 2 (draft -00) rules on the receive side, one test per rule:
//! the F_RESPONSE flag choosing the XID space (§6.3.2.1), properties that
//! do not change (§6.4.4), continued messages split anywhere and ending
//! with chunk lists (§4.5.2, §4.5.3), the credit word read both ways
//! (§4.3.1). Documentation/conformance.rst names them.

use rpcrdma_proto::xdr::pvtdata::{Peer, PrivateData};
use rpcrdma_proto::{Config, Control, Reply, Transport};

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
