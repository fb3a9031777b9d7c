// SPDX-License-Identifier: GPL-2.0

//! Which Sends are signalled: one in SIGNAL_EVERY while buffers are
//! plentiful, every one while they are scarce or while the Send queue is
//! more than half full.

use rpcrdma_proto::signal::{SendSignal, LOW_BUFFERS, SIGNAL_EVERY};

#[test]
fn one_in_signal_every_with_plenty_of_buffers() {
    let mut s = SendSignal::new();
    let free = LOW_BUFFERS + 100;
    let mut signalled = Vec::new();
    for i in 1..=3 * SIGNAL_EVERY {
        if s.next(free) {
            signalled.push(i);
        }
    }
    assert_eq!(
        signalled,
        vec![SIGNAL_EVERY, 2 * SIGNAL_EVERY, 3 * SIGNAL_EVERY]
    );
    assert_eq!(s.unsignalled(), 0);
}

#[test]
fn never_more_than_signal_every_minus_one_unsignalled_in_a_row() {
    let mut s = SendSignal::new();
    let mut run = 0u32;
    for i in 0..1000usize {
        // Free buffers wander above and below the low mark.
        let free = LOW_BUFFERS - 3 + (i * 7) % 40;
        if s.next(free) {
            run = 0;
        } else {
            run += 1;
            assert!(run < SIGNAL_EVERY, "{run} unsignalled in a row");
            assert!(free > LOW_BUFFERS);
        }
        assert_eq!(s.unsignalled(), run);
    }
}

#[test]
fn every_send_is_signalled_while_buffers_are_scarce() {
    let mut s = SendSignal::new();
    // The last free buffer taken, and every count down to it.
    for free in (0..=LOW_BUFFERS).rev() {
        assert!(s.next(free), "free {free}");
        assert_eq!(s.unsignalled(), 0);
    }
    // Plenty again: unsignalled until the batch is full.
    assert!(!s.next(LOW_BUFFERS + 1));
    assert_eq!(s.unsignalled(), 1);
}

#[test]
fn a_scarce_buffer_restarts_the_batch() {
    let mut s = SendSignal::new();
    for _ in 0..5 {
        assert!(!s.next(LOW_BUFFERS + 10));
    }
    assert!(s.next(LOW_BUFFERS));
    for _ in 1..SIGNAL_EVERY {
        assert!(!s.next(LOW_BUFFERS + 10));
    }
    assert!(s.next(LOW_BUFFERS + 10));
}

#[test]
fn the_count_survives_being_kept_outside() {
    // The transport keeps the count in an atomic between Sends.
    let mut kept = 0u32;
    let mut signalled = 0;
    for _ in 0..(4 * SIGNAL_EVERY) {
        let mut s = SendSignal::resume(kept);
        if s.next(LOW_BUFFERS + 1) {
            signalled += 1;
        }
        kept = s.unsignalled();
    }
    assert_eq!(signalled, 4);
    // A count beyond the batch (it cannot be kept so) signals at once.
    assert!(SendSignal::resume(SIGNAL_EVERY + 5).next(LOW_BUFFERS + 1));
}

#[test]
fn a_send_queue_more_than_half_full_is_signalled_and_restarts_the_batch() {
    let mut s = SendSignal::new();
    let free = LOW_BUFFERS + 100;
    // Half full: the batch rule alone.
    for _ in 0..3 {
        assert!(!s.next_in(free, 64, 128));
    }
    assert_eq!(s.unsignalled(), 3);
    // One more WR than half: signalled, and the count starts again.
    assert!(s.next_in(free, 65, 128));
    assert_eq!(s.unsignalled(), 0);
    // An odd depth rounds down: 3 of 7 is not more than half, 4 is.
    assert!(!s.next_in(free, 3, 7));
    assert!(s.next_in(free, 4, 7));
}

#[test]
fn a_send_queue_over_half_full_always_has_a_completion_coming() {
    // A sender posts Calls of `per_call` WRs each (REG_MRs, then the
    // Send, which alone may be signalled) into a queue of `depth`; a
    // signalled Send's completion retires it and every WR before it, but
    // arrives late, after a pseudo-random number of later Calls, or only
    // when the sender has to wait for room. The property that keeps the
    // sender from stalling: whenever more than half of the queue is
    // taken, a signalled WR is among the outstanding ones, so a sender
    // that finds the queue full is always woken by a completion.
    let depth = 100usize;
    let mut seed = 0x2545_f491_u32;
    let mut rand = move || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (seed >> 16) as usize
    };
    for per_call in 1..=9usize {
        let mut s = SendSignal::new();
        // The outstanding WRs, oldest first: whether each is signalled.
        let mut queue: std::collections::VecDeque<bool> = Default::default();
        let mut signalled_posts = 0usize;
        for _ in 0..5000 {
            // Completions that have arrived: each retires up to the
            // oldest outstanding signalled WR.
            let arrived = if rand() % 4 == 0 { 1 } else { 0 };
            for _ in 0..arrived {
                if let Some(k) = queue.iter().position(|&sig| sig) {
                    queue.drain(..=k);
                }
            }
            // No room: the sender waits, which needs a completion coming.
            while queue.len() + per_call > depth {
                let k = queue.iter().position(|&sig| sig).unwrap_or_else(|| {
                    panic!("{per_call}: queue full of {} unsignalled WRs", queue.len())
                });
                queue.drain(..=k);
            }
            queue.extend(std::iter::repeat_n(false, per_call - 1));
            let sig = s.next_in(LOW_BUFFERS + 1, queue.len() + 1, depth);
            queue.push_back(sig);
            signalled_posts += usize::from(sig);
            if queue.len() > depth / 2 {
                assert!(
                    queue.iter().any(|&sig| sig),
                    "{per_call}: {} of {depth} WRs outstanding, none signalled",
                    queue.len()
                );
            }
        }
        // Signalled at least once per half queue of WRs (a bound, not
        // the batching rule, which the tests above check).
        assert!(
            signalled_posts * (depth / 2) >= 5000 * per_call - depth,
            "{per_call}"
        );
    }
}
