// SPDX-License-Identifier: GPL-2.0

//! The keepalive decision: a probe only after a whole period with replies
//! awaited and nothing received, one at a time, none while idle.

use rpcrdma_proto::keepalive::{Keepalive, Tick};

#[test]
fn nothing_awaited_is_idle_whatever_was_received() {
    let mut k = Keepalive::new();
    assert_eq!(k.tick(0, false), Tick::Idle);
    assert_eq!(k.tick(5, false), Tick::Idle);
    assert!(!k.probing());
}

#[test]
fn a_quiet_period_with_replies_awaited_probes_once() {
    let mut k = Keepalive::new();
    // Something arrived in the first period: the peer is alive.
    assert_eq!(k.tick(3, true), Tick::Wait);
    // Nothing in the second: probe.
    assert_eq!(k.tick(3, true), Tick::Probe);
    assert!(k.probing());
    // Still quiet, probe outstanding: no second probe.
    assert_eq!(k.tick(3, true), Tick::Wait);
    assert_eq!(k.tick(3, true), Tick::Wait);
    // The probe came back: the next quiet period probes again.
    k.probe_done();
    assert!(!k.probing());
    assert_eq!(k.tick(3, true), Tick::Probe);
}

#[test]
fn any_receive_in_the_period_defers_the_probe() {
    let mut k = Keepalive::new();
    for n in 1..10 {
        assert_eq!(k.tick(n, true), Tick::Wait);
    }
    assert_eq!(k.tick(9, true), Tick::Probe);
}

#[test]
fn looking_again_after_idle_counts_from_the_last_look() {
    let mut k = Keepalive::new();
    assert_eq!(k.tick(7, false), Tick::Idle);
    // The transport starts looking again when a Call is sent; a reply
    // received meanwhile shows life.
    assert_eq!(k.tick(8, true), Tick::Wait);
    // Nothing since the idle look: a period with the Call outstanding
    // and nothing received.
    let mut k = Keepalive::new();
    assert_eq!(k.tick(7, false), Tick::Idle);
    assert_eq!(k.tick(7, true), Tick::Probe);
}

#[test]
fn a_wrapped_counter_is_still_a_change() {
    let mut k = Keepalive::new();
    assert_eq!(k.tick(u64::MAX, true), Tick::Wait);
    assert_eq!(k.tick(0, true), Tick::Wait);
    assert_eq!(k.tick(0, true), Tick::Probe);
}
