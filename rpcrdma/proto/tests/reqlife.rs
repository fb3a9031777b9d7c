// SPDX-License-Identifier: GPL-2.0

//! The registration lifecycle of a request slot (`reqlife`): every
//! transition by hand (each state with each event, and what it does),
//! then random event sequences driven like the glue drives them, against
//! a reference model (the slot's booleans: `active`, `posted`,
//! `invalidating`, `releasing`, `inv_failed`, `finish`) and against the
//! invariants: invalidation starts exactly once per transmission, only
//! once this transmission is posted and a reply to it arrived, whether or
//! not its REG_MRs are still in the Send queue (a LOCAL_INV posted later
//! on the same Send queue runs after them); a reply before the post is
//! stale and changes nothing; a failed invalidation never completes the
//! RPC; the release waiters are woken exactly when one waits and the
//! invalidation ends; a release waits only while an invalidation runs,
//! never for REG_MR contexts (nothing tells the machine about them, so
//! `Conn::release` cannot wait uninterruptibly for them). Last, any event
//! in any state: a refused event changes nothing, and the model did not
//! start an invalidation with it (nor end the RPC, but for its drain of a
//! slot that was not invalidating, which the glue never asks for).

mod common;
use common::Rng;
use rpcrdma_proto::reqlife::{Action, Event, Illegal, Life, Phase};

type F = u32;

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.u64() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

// ---- the reference model: the slot's booleans -----------------------

/// The slot's booleans, with the transitions of the reply (`end_rpc`),
/// the LOCAL_INV completions (`inv_done`), the drain (`drain_slot`),
/// `Conn::release` (`release_slot`) and the post (`post_with_regs`).
/// There is no count of REG_MRs in the Send queue: nothing waits for
/// them. `posted`: this transmission's REG_MRs are posted (a reply
/// before that answers an earlier transmission of the XID).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Old {
    active: bool,
    posted: bool,
    invalidating: bool,
    releasing: bool,
    inv_failed: bool,
    finish: Option<F>,
}

impl Old {
    fn reset(&mut self) {
        *self = Old::default();
    }

    /// `RegTable::activate`: deactivate, then active.
    fn activate(&mut self) -> Action<F> {
        self.reset();
        self.active = true;
        Action::Nothing
    }

    /// `post_with_regs`, just before the post.
    fn posted(&mut self) -> Action<F> {
        self.posted = true;
        Action::Nothing
    }

    /// `end_rpc` once the slot is found (`r.active && r.xid == xid`).
    fn reply(&mut self, f: F) -> Action<F> {
        if !self.active {
            return Action::Nothing;
        }
        if !self.posted && !self.releasing {
            // For an earlier transmission: nothing changes.
            return Action::Stale;
        }
        self.finish = Some(f);
        let go = !self.invalidating && !self.releasing;
        self.invalidating |= go;
        if go {
            Action::StartInvalidation
        } else {
            Action::Nothing
        }
    }

    /// `inv_done` of an MR that is not `Invalidated`.
    fn inv_failed(&mut self) -> Action<F> {
        self.inv_failed = true;
        Action::Nothing
    }

    /// `drain_slot`.
    fn drain(&mut self) -> Action<F> {
        let finish = if self.inv_failed { None } else { self.finish };
        let wake = self.releasing;
        self.reset();
        Action::Drained { finish, wake }
    }

    /// One pass of `release_slot`'s loop (`Conn::release` returns at
    /// once for an inactive slot): it waits only for an invalidation.
    fn release(&mut self) -> Action<F> {
        if !self.active {
            return Action::Nothing;
        }
        self.releasing = true;
        if self.invalidating {
            Action::Wait
        } else {
            Action::TakeBack
        }
    }

    fn step(&mut self, e: Event<F>) -> Action<F> {
        match e {
            Event::Activate => self.activate(),
            Event::Posted => self.posted(),
            Event::Reply(f) => self.reply(f),
            Event::InvFailed => self.inv_failed(),
            Event::Drain => self.drain(),
            Event::Release => self.release(),
        }
    }

    /// The booleans a state stands for. `finish` is compared only where
    /// the model could still use it: a released RPC's reply is never used
    /// (invalidation cannot start once `releasing`); nor is `posted` of a
    /// released slot (a reply is ignored either way).
    fn of(l: &Life<F>) -> Old {
        match *l {
            Life::Idle => Old::default(),
            Life::Mapped => Old {
                active: true,
                ..Old::default()
            },
            Life::Registered => Old {
                active: true,
                posted: true,
                ..Old::default()
            },
            Life::Invalidating {
                finish,
                failed,
                releasing,
            } => Old {
                active: true,
                posted: true,
                invalidating: true,
                releasing,
                inv_failed: failed,
                finish: Some(finish),
            },
            Life::Releasing => Old {
                active: true,
                releasing: true,
                ..Old::default()
            },
        }
    }

    /// `self` with what the model keeps but never uses again cleared.
    fn relevant(mut self) -> Old {
        if self.releasing && !self.invalidating {
            self.finish = None;
            self.posted = false;
        }
        self
    }
}

#[test]
fn model_of_each_state() {
    // The model's view of each state, and the states it tells apart.
    let states: [Life<F>; 7] = [
        Life::Idle,
        Life::Mapped,
        Life::Registered,
        Life::Invalidating {
            finish: 1,
            failed: false,
            releasing: false,
        },
        Life::Invalidating {
            finish: 1,
            failed: true,
            releasing: false,
        },
        Life::Invalidating {
            finish: 1,
            failed: false,
            releasing: true,
        },
        Life::Releasing,
    ];
    for (i, a) in states.iter().enumerate() {
        let o = Old::of(a);
        assert_eq!(o.active, a.is_active(), "{a:?}");
        assert_eq!(o.invalidating, a.phase() == Phase::Invalidating, "{a:?}");
        assert_eq!(
            o.posted,
            matches!(a.phase(), Phase::Registered | Phase::Invalidating)
        );
        for b in &states[i + 1..] {
            assert_ne!(Old::of(a), Old::of(b), "{a:?} and {b:?}");
        }
    }
    // A reply the model keeps for a released slot is not relevant.
    let mut o = Old::of(&Life::Registered);
    assert_eq!(o.release(), Action::TakeBack);
    assert_eq!(o.reply(3), Action::Nothing);
    assert_eq!(o.finish, Some(3));
    assert_eq!(o.relevant(), Old::of(&Life::Releasing));
}

// ---- each transition ------------------------------------------------

fn step(l: &mut Life<F>, e: Event<F>) -> Action<F> {
    match l.step(e) {
        Ok(a) => a,
        Err(i) => panic!("{e:?} refused in {l:?}: {i:?}"),
    }
}

#[test]
fn reply_after_post_starts_invalidation_at_once() {
    let mut l = Life::new();
    assert_eq!(l, Life::default());
    assert_eq!(l, Life::Idle);
    assert_eq!(step(&mut l, Event::Activate), Action::Nothing);
    assert_eq!(step(&mut l, Event::Posted), Action::Nothing);
    assert_eq!(l, Life::Registered);
    assert_eq!(l.phase(), Phase::Registered);
    assert!(l.is_active());
    // The REG_MRs may still be in the Send queue: the LOCAL_INVs posted
    // now run after them.
    assert_eq!(step(&mut l, Event::Reply(7)), Action::StartInvalidation);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 7,
            failed: false,
            releasing: false
        }
    );
    assert_eq!(l.phase(), Phase::Invalidating);
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(7),
            wake: false
        }
    );
    assert_eq!(l, Life::Idle);
    assert!(!l.is_active());
}

#[test]
fn later_reply_replaces_the_way_the_rpc_ends() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted);
    assert_eq!(step(&mut l, Event::Reply(1)), Action::StartInvalidation);
    // Once only: a later reply neither starts another invalidation nor
    // ends the RPC by itself; its way wins.
    assert_eq!(step(&mut l, Event::Reply(2)), Action::Nothing);
    assert_eq!(step(&mut l, Event::Reply(3)), Action::Nothing);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 3,
            failed: false,
            releasing: false
        }
    );
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(3),
            wake: false
        }
    );
    // It keeps a failure and a waiting release.
    let mut l = Life::Invalidating {
        finish: 1,
        failed: true,
        releasing: true,
    };
    assert_eq!(step(&mut l, Event::Reply(4)), Action::Nothing);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 4,
            failed: true,
            releasing: true
        }
    );
}

#[test]
fn failed_invalidation_does_not_complete() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted);
    step(&mut l, Event::Reply(5));
    assert_eq!(step(&mut l, Event::InvFailed), Action::Nothing);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 5,
            failed: true,
            releasing: false
        }
    );
    assert_eq!(step(&mut l, Event::InvFailed), Action::Nothing);
    // Nor does a reply after the failure.
    assert_eq!(step(&mut l, Event::Reply(6)), Action::Nothing);
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: None,
            wake: false
        }
    );
    assert_eq!(l, Life::Idle);
}

/// The hazard "`Conn::release` waits uninterruptibly for REG_MR
/// contexts" cannot happen: once the REG_MRs are posted, and before any
/// reply, a release takes the MRs back at once (its LOCAL_INVs run after
/// the REG_MRs on the same Send queue); no event about a REG_MR context
/// exists for it to wait for.
#[test]
fn release_never_waits_for_reg_mr_contexts() {
    let mut l = Life::new();
    assert_eq!(step(&mut l, Event::Release), Action::Nothing);
    assert_eq!(l, Life::Idle);
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted);
    assert_eq!(step(&mut l, Event::Release), Action::TakeBack);
    assert_eq!(l, Life::Releasing);
    assert_eq!(l.phase(), Phase::Releasing);
    assert!(l.is_active());
    // A reply no longer starts an invalidation.
    assert_eq!(step(&mut l, Event::Reply(3)), Action::Nothing);
    assert_eq!(l, Life::Releasing);
    // Another look (a second release) takes back again, and never waits.
    assert_eq!(step(&mut l, Event::Release), Action::TakeBack);
    assert_eq!(l, Life::Releasing);
    // Too late to post again; nothing to drain.
    for e in [Event::Posted, Event::Drain, Event::InvFailed] {
        assert_eq!(
            l.step(e),
            Err(Illegal {
                phase: Phase::Releasing,
                event: e
            })
        );
        assert_eq!(l, Life::Releasing);
    }
    l.reset();
    assert_eq!(l, Life::Idle);
}

#[test]
fn release_waits_for_invalidation() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted);
    assert_eq!(step(&mut l, Event::Reply(9)), Action::StartInvalidation);
    assert_eq!(step(&mut l, Event::Release), Action::Wait);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 9,
            failed: false,
            releasing: true
        }
    );
    // A spurious wake-up: it waits again, nothing else changes.
    assert_eq!(step(&mut l, Event::Release), Action::Wait);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 9,
            failed: false,
            releasing: true
        }
    );
    // The RPC still ends, and the waiter is woken.
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(9),
            wake: true
        }
    );
    assert_eq!(l, Life::Idle);
    // Woken, it looks again and finds the slot idle.
    assert_eq!(step(&mut l, Event::Release), Action::Nothing);
    assert_eq!(l, Life::Idle);
}

#[test]
fn release_waits_for_failed_invalidation() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted);
    step(&mut l, Event::Reply(2));
    assert_eq!(step(&mut l, Event::Release), Action::Wait);
    assert_eq!(step(&mut l, Event::InvFailed), Action::Nothing);
    assert_eq!(
        l,
        Life::Invalidating {
            finish: 2,
            failed: true,
            releasing: true
        }
    );
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: None,
            wake: true
        }
    );
    assert_eq!(step(&mut l, Event::Release), Action::Nothing);
}

#[test]
fn reply_before_posted_is_stale() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    assert_eq!(l, Life::Mapped);
    assert_eq!(l.phase(), Phase::Mapped);
    assert!(l.is_active());
    // A late reply to an earlier transmission of the XID: no
    // invalidation of MRs whose REG_MRs are not posted, nothing kept.
    assert_eq!(step(&mut l, Event::Reply(4)), Action::Stale);
    assert_eq!(step(&mut l, Event::Reply(5)), Action::Stale);
    assert_eq!(l, Life::Mapped);
    // The post goes on; the reply to this transmission ends the RPC.
    assert_eq!(step(&mut l, Event::Posted), Action::Nothing);
    assert_eq!(l, Life::Registered);
    assert_eq!(step(&mut l, Event::Reply(6)), Action::StartInvalidation);
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(6),
            wake: false
        }
    );
    // The next RPC in the slot: a stale reply, then its own.
    step(&mut l, Event::Activate);
    assert_eq!(step(&mut l, Event::Reply(7)), Action::Stale);
    step(&mut l, Event::Posted);
    assert_eq!(step(&mut l, Event::Reply(8)), Action::StartInvalidation);
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(8),
            wake: false
        }
    );
}

#[test]
fn release_before_posted_takes_back_at_once() {
    // The post failed (or never happened): nothing is in the Send queue.
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    assert_eq!(step(&mut l, Event::Reply(1)), Action::Stale);
    assert_eq!(step(&mut l, Event::Release), Action::TakeBack);
    assert_eq!(l, Life::Releasing);
    // A released slot ignores replies instead of calling them stale.
    assert_eq!(step(&mut l, Event::Reply(2)), Action::Nothing);
    assert_eq!(l, Life::Releasing);
    // Too late to post.
    assert_eq!(
        l.step(Event::Posted),
        Err(Illegal {
            phase: Phase::Releasing,
            event: Event::Posted
        })
    );
    assert_eq!(l, Life::Releasing);
    l.reset();
    assert_eq!(l, Life::Idle);
    // The glue forgets a slot in any state.
    let mut l = Life::Invalidating {
        finish: 1,
        failed: true,
        releasing: true,
    };
    l.reset();
    assert_eq!(l, Life::Idle);
}

/// What a step must do: go to the state and return the action, or
/// refuse (and stay).
#[derive(Clone, Copy, Debug)]
enum Want {
    Go(Life<F>, Action<F>),
    Refused,
}

fn kind(e: &Event<F>) -> usize {
    match e {
        Event::Activate => 0,
        Event::Posted => 1,
        Event::Reply(_) => 2,
        Event::InvFailed => 3,
        Event::Drain => 4,
        Event::Release => 5,
    }
}

fn phase_index(p: Phase) -> usize {
    match p {
        Phase::Idle => 0,
        Phase::Mapped => 1,
        Phase::Registered => 2,
        Phase::Invalidating => 3,
        Phase::Releasing => 4,
    }
}

#[test]
fn every_state_and_event() {
    use Action as A;
    use Event as E;
    use Life as L;
    use Want::{Go, Refused};
    let inv = |finish, failed, releasing| L::Invalidating {
        finish,
        failed,
        releasing,
    };
    let mut table: Vec<(Life<F>, Event<F>, Want)> = vec![
        (L::Idle, E::Activate, Go(L::Mapped, A::Nothing)),
        (L::Idle, E::Posted, Refused),
        (L::Idle, E::Reply(1), Refused),
        (L::Idle, E::InvFailed, Refused),
        (L::Idle, E::Drain, Refused),
        (L::Idle, E::Release, Go(L::Idle, A::Nothing)),
        (L::Mapped, E::Activate, Refused),
        (L::Mapped, E::Posted, Go(L::Registered, A::Nothing)),
        (L::Mapped, E::Reply(1), Go(L::Mapped, A::Stale)),
        (L::Mapped, E::InvFailed, Refused),
        (L::Mapped, E::Drain, Refused),
        (L::Mapped, E::Release, Go(L::Releasing, A::TakeBack)),
        (L::Registered, E::Activate, Refused),
        (L::Registered, E::Posted, Refused),
        (
            L::Registered,
            E::Reply(1),
            Go(inv(1, false, false), A::StartInvalidation),
        ),
        (L::Registered, E::InvFailed, Refused),
        (L::Registered, E::Drain, Refused),
        (L::Registered, E::Release, Go(L::Releasing, A::TakeBack)),
        (L::Releasing, E::Activate, Refused),
        (L::Releasing, E::Posted, Refused),
        (L::Releasing, E::Reply(1), Go(L::Releasing, A::Nothing)),
        (L::Releasing, E::InvFailed, Refused),
        (L::Releasing, E::Drain, Refused),
        (L::Releasing, E::Release, Go(L::Releasing, A::TakeBack)),
    ];
    for (failed, releasing) in [(false, false), (true, false), (false, true), (true, true)] {
        let s = inv(5, failed, releasing);
        let finish = if failed { None } else { Some(5) };
        table.extend([
            (s, E::Activate, Refused),
            (s, E::Posted, Refused),
            (s, E::Reply(6), Go(inv(6, failed, releasing), A::Nothing)),
            (s, E::InvFailed, Go(inv(5, true, releasing), A::Nothing)),
            (
                s,
                E::Drain,
                Go(
                    L::Idle,
                    A::Drained {
                        finish,
                        wake: releasing,
                    },
                ),
            ),
            (s, E::Release, Go(inv(5, failed, true), A::Wait)),
        ]);
    }
    let mut seen = [[0u32; 6]; 5];
    for (s, e, want) in table {
        let mut l = s;
        let got = l.step(e);
        match want {
            Go(next, a) => {
                assert_eq!(got, Ok(a), "{e:?} in {s:?}");
                assert_eq!(l, next, "{e:?} in {s:?}");
            }
            Refused => {
                assert_eq!(
                    got,
                    Err(Illegal {
                        phase: s.phase(),
                        event: e
                    }),
                    "{e:?} in {s:?}"
                );
                assert_eq!(l, s, "{e:?} in {s:?}");
            }
        }
        seen[phase_index(s.phase())][kind(&e)] += 1;
    }
    // Every state with every event: once, and four times for the four
    // kinds of invalidation.
    for (p, row) in seen.iter().enumerate() {
        let n = if p == phase_index(Phase::Invalidating) {
            4
        } else {
            1
        };
        assert!(row.iter().all(|&k| k == n), "phase {p}: {row:?}");
    }
}

#[test]
fn illegal_events_change_nothing() {
    let cases: [(Life<F>, Event<F>); 18] = [
        (Life::Idle, Event::Posted),
        (Life::Idle, Event::Reply(1)),
        (Life::Idle, Event::InvFailed),
        (Life::Idle, Event::Drain),
        (Life::Mapped, Event::Activate),
        (Life::Mapped, Event::InvFailed),
        (Life::Mapped, Event::Drain),
        (Life::Registered, Event::Activate),
        // Posted twice: only a mapped slot is posted.
        (Life::Registered, Event::Posted),
        // Nothing to fail or drain before a reply started the
        // invalidation.
        (Life::Registered, Event::InvFailed),
        (Life::Registered, Event::Drain),
        (
            Life::Invalidating {
                finish: 1,
                failed: false,
                releasing: false,
            },
            Event::Posted,
        ),
        (
            Life::Invalidating {
                finish: 1,
                failed: true,
                releasing: true,
            },
            Event::Activate,
        ),
        (Life::Releasing, Event::Activate),
        (Life::Releasing, Event::Posted),
        // `Conn::release` invalidates the MRs itself: no LOCAL_INV of
        // the glue's comes back, nothing drains.
        (Life::Releasing, Event::InvFailed),
        (Life::Releasing, Event::Drain),
        (Life::Idle, Event::Reply(u32::MAX)),
    ];
    for (s, e) in cases {
        let mut l = s;
        assert_eq!(
            l.step(e),
            Err(Illegal {
                phase: s.phase(),
                event: e
            }),
            "{s:?} {e:?}"
        );
        assert_eq!(l, s);
        // Refused again, the same way: the refusal left nothing behind.
        assert_eq!(l.step(e).map_err(|i| i.phase), Err(s.phase()));
        assert_eq!(l, s);
    }
}

// ---- random sequences driven like the glue ---------------------------

/// Totals over a run: activations, RPCs finished, drains that did not
/// finish (a LOCAL_INV failed), release wake-ups, waits for an
/// invalidation, stale replies (before the post), releases before the
/// post, releases that took the MRs back at once with REG_MR contexts
/// still in the Send queue, invalidations started with them still there.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    activations: u64,
    finishes: u64,
    unfinished: u64,
    wakes: u64,
    inv_waits: u64,
    stales: u64,
    unposted_releases: u64,
    takebacks_regs_queued: u64,
    invalidations_regs_queued: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.activations += o.activations;
        self.finishes += o.finishes;
        self.unfinished += o.unfinished;
        self.wakes += o.wakes;
        self.inv_waits += o.inv_waits;
        self.stales += o.stales;
        self.unposted_releases += o.unposted_releases;
        self.takebacks_regs_queued += o.takebacks_regs_queued;
        self.invalidations_regs_queued += o.invalidations_regs_queued;
    }

    fn all(&self) -> [u64; 9] {
        [
            self.activations,
            self.finishes,
            self.unfinished,
            self.wakes,
            self.inv_waits,
            self.stales,
            self.unposted_releases,
            self.takebacks_regs_queued,
            self.invalidations_regs_queued,
        ]
    }
}

/// The glue and the hardware around one slot: what is in the Send
/// queue, who waits, what the invariants need to know.
#[derive(Default)]
struct Sim {
    /// Activated, REG_MRs not posted yet.
    mapped: bool,
    /// This activation's REG_MRs were posted.
    posted: bool,
    /// REG_MR contexts in the Send queue. The machine is never told
    /// about them: they keep only the MRs' hardware objects alive.
    regs_queued: u32,
    /// LOCAL_INVs posted and not back.
    invs_queued: u32,
    /// An invalidation started in this activation.
    inv_started: bool,
    /// A LOCAL_INV failed in this activation.
    inv_failed: bool,
    /// The last reply delivered in this activation.
    reply: Option<F>,
    /// `Conn::release` waits (got `Wait`, not woken yet).
    waiting: bool,
    /// `Conn::release` was woken and looks again.
    woken: bool,
    /// `Conn::release` started in this activation (it ignores replies).
    released: bool,
    /// `Conn::release` may take the MRs back (got `TakeBack`).
    taking_back: bool,
    /// The RPC was finished in this activation.
    finished: bool,
    /// Over the whole sequence.
    totals: Totals,
}

impl Sim {
    /// A new activation's simulation, with the totals so far.
    fn next(s: &Sim) -> Sim {
        Sim {
            totals: s.totals,
            ..Sim::default()
        }
    }
}

struct Pair {
    new: Life<F>,
    old: Old,
}

impl Pair {
    /// Steps both; they must agree on the action and the booleans.
    fn step(&mut self, e: Event<F>) -> Action<F> {
        let before = self.new;
        let a = match self.new.step(e) {
            Ok(a) => a,
            Err(i) => panic!("glue event {e:?} refused in {before:?}: {i:?}"),
        };
        let b = self.old.step(e);
        assert_eq!(a, b, "{e:?} in {before:?}: action");
        assert_eq!(
            Old::of(&self.new).relevant(),
            self.old.relevant(),
            "{e:?} in {before:?}: state"
        );
        a
    }

    fn reset(&mut self) {
        self.new.reset();
        self.old.reset();
    }
}

/// Checks the invariants after event `e` (in state `before`) returned
/// action `a`, and updates the simulation.
fn observe(sim: &mut Sim, p: &Pair, before: Life<F>, e: Event<F>, a: Action<F>) {
    let l = &p.new;
    let drained = matches!(a, Action::Drained { .. });
    assert_eq!(drained, e == Event::Drain, "{e:?} -> {a:?}: drained");
    // Woken exactly when one waits and the invalidation ends.
    let wake = matches!(a, Action::Drained { wake: true, .. });
    assert_eq!(
        wake,
        sim.waiting && drained,
        "{e:?} -> {a:?} in {l:?}: wake"
    );
    if wake {
        sim.waiting = false;
        sim.woken = true;
        sim.totals.wakes += 1;
    }
    if let Event::Reply(_) = e {
        if sim.mapped {
            // Before the post (and before any release): stale, always.
            assert_eq!(a, Action::Stale, "reply before the post");
        } else if sim.posted && !sim.released && !sim.inv_started {
            // The first reply to this transmission starts the
            // invalidation, REG_MRs in the Send queue or not.
            assert_eq!(a, Action::StartInvalidation, "reply after the post");
        } else {
            assert_eq!(a, Action::Nothing, "reply in {before:?}");
        }
    }
    match a {
        Action::StartInvalidation => {
            assert!(sim.posted, "invalidation before the REG_MRs were posted");
            assert!(!sim.inv_started, "invalidation started twice");
            assert!(sim.reply.is_some(), "invalidation without a reply");
            assert!(!sim.released, "invalidation after a release started");
            assert_eq!(before, Life::Registered);
            if sim.regs_queued > 0 {
                sim.totals.invalidations_regs_queued += 1;
            }
            sim.inv_started = true;
        }
        Action::Drained { finish, .. } => {
            assert!(sim.inv_started && sim.invs_queued == 0);
            assert!(!sim.finished);
            assert_eq!(*l, Life::Idle);
            if sim.inv_failed {
                assert_eq!(finish, None, "a failed invalidation completed the RPC");
                sim.totals.unfinished += 1;
            } else {
                assert_eq!(finish, sim.reply);
                assert!(finish.is_some());
                sim.finished = true;
                sim.totals.finishes += 1;
            }
        }
        Action::Wait => {
            // Only an invalidation makes a release wait, and its
            // LOCAL_INVs are in the Send queue: the drain will come.
            assert_eq!(e, Event::Release);
            assert_eq!(l.phase(), Phase::Invalidating, "wait without invalidation");
            assert!(sim.inv_started && sim.invs_queued > 0);
            if !sim.waiting {
                sim.totals.inv_waits += 1;
            }
            sim.waiting = true;
        }
        Action::TakeBack => {
            assert_eq!(e, Event::Release);
            assert_eq!(*l, Life::Releasing);
            assert!(!sim.inv_started, "taken back while invalidating");
            if !sim.posted {
                sim.totals.unposted_releases += 1;
            }
            if sim.regs_queued > 0 {
                sim.totals.takebacks_regs_queued += 1;
            }
            sim.taking_back = true;
        }
        Action::Stale => {
            assert!(matches!(e, Event::Reply(_)), "{e:?} -> stale");
            assert!(!sim.posted && sim.mapped, "stale reply after the post");
            assert_eq!(*l, Life::Mapped);
            assert_eq!(before, Life::Mapped);
            sim.totals.stales += 1;
        }
        Action::Nothing => {}
    }
}

/// Steps the pair and checks the invariants.
fn drive(sim: &mut Sim, p: &mut Pair, e: Event<F>) -> Action<F> {
    let before = p.new;
    let a = p.step(e);
    observe(sim, p, before, e, a);
    a
}

/// One random sequence of `steps` events on a slot.
fn run(rng: &mut Rng, steps: usize) -> Sim {
    let mut sim = Sim::default();
    let mut p = Pair {
        new: Life::new(),
        old: Old::default(),
    };
    let mut next_f: F = 1;
    for _ in 0..steps {
        let l = p.new;
        // What can happen now, as the glue and the hardware allow.
        let e = match rng.below(8) {
            // A REG_MR context comes back, whatever the slot does: the
            // glue tells the machine nothing.
            7 if sim.regs_queued > 0 => {
                sim.regs_queued -= 1;
                continue;
            }
            _ if sim.taking_back => {
                // Conn::release invalidates synchronously (a reply may
                // arrive meanwhile), then forgets the slot.
                if rng.chance(30) {
                    Event::Reply(0)
                } else {
                    p.reset();
                    sim = Sim::next(&sim);
                    continue;
                }
            }
            _ if sim.woken => {
                // Conn::release, woken, looks again.
                sim.woken = false;
                Event::Release
            }
            _ if !l.is_active() => {
                if rng.chance(10) {
                    Event::Release
                } else {
                    sim = Sim::next(&sim);
                    sim.totals.activations += 1;
                    let a = drive(&mut sim, &mut p, Event::Activate);
                    assert_eq!(a, Action::Nothing);
                    assert_eq!(p.new, Life::Mapped);
                    sim.mapped = true;
                    continue;
                }
            }
            _ if sim.mapped => {
                // Between activate and the post: a late reply to an
                // earlier transmission of the XID, a failed post
                // (`Conn::release` takes the MRs back), or the post.
                match rng.below(10) {
                    0 | 1 => {
                        next_f += 1;
                        Event::Reply(next_f)
                    }
                    2 => {
                        sim.mapped = false;
                        sim.released = true;
                        Event::Release
                    }
                    _ => {
                        sim.mapped = false;
                        sim.posted = true;
                        sim.regs_queued = rng.below(17) as u32;
                        Event::Posted
                    }
                }
            }
            0..=2 if sim.reply.is_none() || rng.chance(10) => {
                next_f += 1;
                // Ignored once a release started, unless the
                // invalidation runs already (the release waits for it).
                if !sim.released || sim.inv_started {
                    sim.reply = Some(next_f);
                }
                Event::Reply(next_f)
            }
            3 | 4 if sim.inv_started && sim.invs_queued > 0 => {
                // One LOCAL_INV comes back (`inv_done`): flushed or
                // failed now and then; the last one drains the slot.
                sim.invs_queued -= 1;
                if rng.chance(15) {
                    sim.inv_failed = true;
                    let a = drive(&mut sim, &mut p, Event::InvFailed);
                    assert_eq!(a, Action::Nothing);
                }
                if sim.invs_queued == 0 {
                    Event::Drain
                } else {
                    continue;
                }
            }
            5 if !sim.waiting && !sim.released && rng.chance(30) => {
                sim.released = true;
                if !sim.inv_started {
                    sim.reply = None;
                }
                Event::Release
            }
            6 if sim.waiting && rng.chance(20) => {
                // A spurious wake-up: Conn::release looks again.
                Event::Release
            }
            _ => continue,
        };
        let a = drive(&mut sim, &mut p, e);
        if a == Action::StartInvalidation {
            // The MRs the responder did not invalidate: 0 drains at once.
            sim.invs_queued = rng.below(5) as u32;
            if sim.invs_queued == 0 {
                drive(&mut sim, &mut p, Event::Drain);
            }
        }
    }
    sim
}

#[test]
fn random_sequences_match_the_booleans() {
    let mut rng = Rng(0x7265_716c_6966_6531);
    let mut total = Totals::default();
    for _ in 0..20_000 {
        let steps = 1 + rng.below(120) as usize;
        let s = run(&mut rng, steps);
        total.add(&s.totals);
    }
    // The sequences reach every outcome many times.
    let t = total.all();
    eprintln!("{total:?}");
    assert!(t.iter().all(|&n| n > 500), "{total:?}");
}

// ---- any event in any state -------------------------------------------

fn any_event(rng: &mut Rng) -> Event<F> {
    match rng.below(6) {
        0 => Event::Activate,
        1 => Event::Posted,
        2 => Event::Reply(rng.below(4) as u32),
        3 => Event::InvFailed,
        4 => Event::Drain,
        _ => Event::Release,
    }
}

#[test]
fn any_event_refused_or_as_the_booleans() {
    let mut rng = Rng(0x616e_7965_7665_6e74);
    let mut refused = [0u64; 6];
    let mut seen = [[0u64; 6]; 5];
    for _ in 0..2_000 {
        let mut l: Life<F> = Life::new();
        let mut old = Old::default();
        for _ in 0..200 {
            let e = any_event(&mut rng);
            let before = l;
            seen[phase_index(before.phase())][kind(&e)] += 1;
            match l.step(e) {
                Ok(a) => {
                    assert_eq!(a, old.step(e), "{e:?} in {before:?}");
                    assert_eq!(
                        Old::of(&l).relevant(),
                        old.relevant(),
                        "{e:?} in {before:?}"
                    );
                    // Waiting needs a running invalidation.
                    if a == Action::Wait {
                        assert_eq!(before.phase(), Phase::Invalidating);
                    }
                }
                Err(i) => {
                    assert_eq!(l, before, "refused {e:?} changed the state");
                    assert_eq!(i.phase, before.phase());
                    assert_eq!(i.event, e);
                    // What the model does with it: never starts an
                    // invalidation; ends the RPC only by draining a slot
                    // that is not invalidating (the glue never does).
                    let mut o = old;
                    let a = o.step(e);
                    assert_ne!(a, Action::StartInvalidation, "{e:?} in {before:?}");
                    if e != Event::Drain {
                        assert!(
                            !matches!(a, Action::Drained { .. }),
                            "{e:?} in {before:?}: old did {a:?}"
                        );
                    }
                    refused[kind(&e)] += 1;
                    // Resynchronise as the glue would: a refused event
                    // leaves the slot alone.
                }
            }
        }
    }
    // Every state met every event.
    for (p, row) in seen.iter().enumerate() {
        assert!(row.iter().all(|&n| n > 0), "phase {p}: {row:?}");
    }
    // Release is never refused; the others are, in some state.
    assert_eq!(refused[kind(&Event::Release)], 0);
    for (k, n) in refused.iter().enumerate().take(5) {
        assert!(*n > 0, "event {k} never refused");
    }
}
