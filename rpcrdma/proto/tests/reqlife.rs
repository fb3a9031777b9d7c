// SPDX-License-Identifier: GPL-2.0

//! The registration lifecycle of a request slot (`reqlife`): every
//! transition by hand, then random event sequences driven like the glue
//! drives them, against a reference model (the booleans `conn/frwr.rs`
//! kept before: `active`, `in_flight`, `invalidating`, `releasing`,
//! `inv_failed`, `finish`; plus `posted`, the fix of the race where a
//! reply for an earlier transmission of the XID arrived between
//! `activate` and the post) and against the invariants: invalidation
//! starts exactly once, only once this transmission is posted, no REG_MR
//! is in flight and a reply to it arrived; a reply before the post is
//! stale and changes nothing; a failed invalidation never completes the
//! RPC; the release waiters are woken exactly when one waits, nothing is
//! in flight and no invalidation runs. Last, any event in any state: a
//! refused event changes nothing, and the reference did not start an
//! invalidation with it (nor end the RPC, but for its drain of a slot
//! that was not invalidating, which the glue never asks for).

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

// ---- the reference model: six booleans and `posted` -----------------

/// `Regs` before `reqlife`, with the transition code of `end_rpc`,
/// `reg_done`, `inv_done`, `drain_slot`, `Conn::release_slot` and
/// `post_with_regs` as it was, and `posted`: this transmission's REG_MRs
/// are posted (before, a reply between `activate` and the post started
/// an invalidation of MRs whose REG_MRs were not even posted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Old {
    active: bool,
    posted: bool,
    in_flight: u32,
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

    /// `post_with_regs`: `r.in_flight = n`.
    fn posted(&mut self, n: u32) -> Action<F> {
        self.in_flight = n;
        self.posted = true;
        Action::Nothing
    }

    /// `reg_done`.
    fn reg_retired(&mut self) -> Action<F> {
        self.in_flight = self.in_flight.saturating_sub(1);
        let go =
            self.in_flight == 0 && self.finish.is_some() && !self.invalidating && !self.releasing;
        self.invalidating |= go;
        let idle = self.releasing && self.in_flight == 0 && !self.invalidating;
        match (go, idle) {
            (true, _) => Action::StartInvalidation,
            (false, true) => Action::WakeRelease,
            (false, false) => Action::Nothing,
        }
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
        let go = self.in_flight == 0 && !self.invalidating && !self.releasing;
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
    /// once for an inactive slot).
    fn release(&mut self) -> Action<F> {
        if !self.active {
            return Action::Nothing;
        }
        self.releasing = true;
        if self.in_flight > 0 || self.invalidating {
            Action::Wait
        } else {
            Action::TakeBack
        }
    }

    fn step(&mut self, e: Event<F>) -> Action<F> {
        match e {
            Event::Activate => self.activate(),
            Event::Posted(n) => self.posted(n),
            Event::RegRetired => self.reg_retired(),
            Event::Reply(f) => self.reply(f),
            Event::InvFailed => self.inv_failed(),
            Event::Drain => self.drain(),
            Event::Release => self.release(),
        }
    }

    /// The booleans a state stands for. `finish` is compared only where
    /// the model could still use it: a released RPC's parked reply
    /// is never used (invalidation cannot start once `releasing`); nor
    /// is `posted` of a released slot (a reply is ignored either way).
    fn of(l: &Life<F>) -> Old {
        match *l {
            Life::Idle => Old::default(),
            Life::Mapped => Old {
                active: true,
                ..Old::default()
            },
            Life::Registered { in_flight, finish } => Old {
                active: true,
                posted: true,
                in_flight,
                finish,
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
                ..Old::default()
            },
            Life::Releasing { in_flight } => Old {
                active: true,
                in_flight,
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

// ---- each transition ------------------------------------------------

fn step(l: &mut Life<F>, e: Event<F>) -> Action<F> {
    match l.step(e) {
        Ok(a) => a,
        Err(i) => panic!("{e:?} refused in {l:?}: {i:?}"),
    }
}

#[test]
fn reply_after_registrations_are_back() {
    let mut l = Life::new();
    assert_eq!(step(&mut l, Event::Activate), Action::Nothing);
    assert_eq!(step(&mut l, Event::Posted(2)), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(l.in_flight(), 1);
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(step(&mut l, Event::Reply(7)), Action::StartInvalidation);
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
fn reply_parked_until_last_registration() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted(3));
    assert_eq!(step(&mut l, Event::Reply(1)), Action::Nothing);
    assert_eq!(step(&mut l, Event::Reply(2)), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::StartInvalidation);
    // The later reply's way wins, as it did.
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(2),
            wake: false
        }
    );
}

#[test]
fn failed_invalidation_does_not_complete() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted(1));
    step(&mut l, Event::RegRetired);
    step(&mut l, Event::Reply(5));
    assert_eq!(step(&mut l, Event::InvFailed), Action::Nothing);
    assert_eq!(step(&mut l, Event::InvFailed), Action::Nothing);
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: None,
            wake: false
        }
    );
}

#[test]
fn release_waits_for_registrations() {
    let mut l = Life::new();
    assert_eq!(step(&mut l, Event::Release), Action::Nothing);
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted(2));
    assert_eq!(step(&mut l, Event::Release), Action::Wait);
    assert_eq!(l, Life::Releasing { in_flight: 2 });
    // A reply no longer starts an invalidation.
    assert_eq!(step(&mut l, Event::Reply(3)), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(step(&mut l, Event::Release), Action::Wait);
    assert_eq!(step(&mut l, Event::RegRetired), Action::WakeRelease);
    assert_eq!(step(&mut l, Event::Release), Action::TakeBack);
    assert_eq!(l, Life::Releasing { in_flight: 0 });
    l.reset();
    assert_eq!(l, Life::Idle);
}

#[test]
fn release_waits_for_invalidation() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    step(&mut l, Event::Posted(0));
    assert_eq!(step(&mut l, Event::Reply(9)), Action::StartInvalidation);
    assert_eq!(step(&mut l, Event::Release), Action::Wait);
    // The RPC still ends, and the waiter is woken.
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(9),
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
    assert_eq!(l.in_flight(), 0);
    // A late reply to an earlier transmission of the XID: no
    // invalidation of MRs whose REG_MRs are not posted, nothing parked.
    assert_eq!(step(&mut l, Event::Reply(4)), Action::Stale);
    assert_eq!(step(&mut l, Event::Reply(5)), Action::Stale);
    assert_eq!(l, Life::Mapped);
    // The post goes on; the reply to this transmission ends the RPC.
    assert_eq!(step(&mut l, Event::Posted(2)), Action::Nothing);
    assert_eq!(
        l,
        Life::Registered {
            in_flight: 2,
            finish: None
        }
    );
    assert_eq!(step(&mut l, Event::Reply(6)), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(step(&mut l, Event::RegRetired), Action::StartInvalidation);
    assert_eq!(
        step(&mut l, Event::Drain),
        Action::Drained {
            finish: Some(6),
            wake: false
        }
    );
    // The same with a post of no REG_MR: the reply after it is the one.
    step(&mut l, Event::Activate);
    assert_eq!(step(&mut l, Event::Reply(7)), Action::Stale);
    step(&mut l, Event::Posted(0));
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
    assert_eq!(l, Life::Releasing { in_flight: 0 });
    assert_eq!(step(&mut l, Event::Reply(2)), Action::Nothing);
    // Too late to post.
    assert_eq!(
        l.step(Event::Posted(1)),
        Err(Illegal {
            phase: Phase::Releasing,
            event: Event::Posted(1)
        })
    );
    l.reset();
    assert_eq!(l, Life::Idle);
}

#[test]
fn release_without_registrations_in_flight() {
    let mut l = Life::new();
    step(&mut l, Event::Activate);
    assert_eq!(step(&mut l, Event::Release), Action::TakeBack);
    assert_eq!(step(&mut l, Event::Reply(1)), Action::Nothing);
    assert_eq!(l, Life::Releasing { in_flight: 0 });
}

#[test]
fn illegal_events_change_nothing() {
    let cases: [(Life<F>, Event<F>); 18] = [
        (Life::Idle, Event::Posted(1)),
        (Life::Idle, Event::RegRetired),
        (Life::Idle, Event::Reply(1)),
        (Life::Idle, Event::InvFailed),
        (Life::Idle, Event::Drain),
        (Life::Mapped, Event::Activate),
        (Life::Mapped, Event::RegRetired),
        (Life::Mapped, Event::InvFailed),
        (Life::Mapped, Event::Drain),
        (
            Life::Registered {
                in_flight: 0,
                finish: None,
            },
            Event::RegRetired,
        ),
        // Posted twice: only a mapped slot is posted.
        (
            Life::Registered {
                in_flight: 0,
                finish: None,
            },
            Event::Posted(1),
        ),
        (
            Life::Registered {
                in_flight: 0,
                finish: Some(3),
            },
            Event::Posted(1),
        ),
        (
            Life::Registered {
                in_flight: 2,
                finish: None,
            },
            Event::Posted(1),
        ),
        (
            Life::Registered {
                in_flight: 1,
                finish: Some(4),
            },
            Event::Drain,
        ),
        (
            Life::Invalidating {
                finish: 1,
                failed: false,
                releasing: false,
            },
            Event::RegRetired,
        ),
        (
            Life::Invalidating {
                finish: 1,
                failed: true,
                releasing: true,
            },
            Event::Activate,
        ),
        (Life::Releasing { in_flight: 0 }, Event::RegRetired),
        (Life::Releasing { in_flight: 1 }, Event::InvFailed),
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
    }
    // Overflow-free at the extremes.
    let mut l = Life::Registered {
        in_flight: u32::MAX,
        finish: None,
    };
    assert_eq!(step(&mut l, Event::RegRetired), Action::Nothing);
    assert_eq!(l.in_flight(), u32::MAX - 1);
}

// ---- random sequences driven like the glue ---------------------------

/// The glue and the hardware around one slot: what is in the Send
/// queue, who waits, what the invariants need to know.
#[derive(Default)]
struct Sim {
    /// Activated, REG_MRs not posted yet.
    mapped: bool,
    /// This activation's REG_MRs were posted.
    posted: bool,
    /// REG_MR contexts in the Send queue.
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
    /// Totals over the sequence: activations, RPCs finished, drains
    /// that did not finish (a LOCAL_INV failed), release wake-ups, waits
    /// for an invalidation, stale replies (before the post), releases
    /// before the post.
    activations: u64,
    finishes: u64,
    unfinished: u64,
    wakes: u64,
    inv_waits: u64,
    stales: u64,
    unposted_releases: u64,
}

impl Sim {
    /// A new activation's simulation, with the totals so far.
    fn totals(s: &Sim) -> Sim {
        Sim {
            activations: s.activations,
            finishes: s.finishes,
            unfinished: s.unfinished,
            wakes: s.wakes,
            inv_waits: s.inv_waits,
            stales: s.stales,
            unposted_releases: s.unposted_releases,
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

/// Checks the invariants after action `a` and updates the simulation.
fn observe(sim: &mut Sim, p: &Pair, e: Event<F>, a: Action<F>) {
    let l = &p.new;
    let busy = l.in_flight() > 0 || l.phase() == Phase::Invalidating;
    let wake = matches!(a, Action::WakeRelease | Action::Drained { wake: true, .. });
    // Woken exactly when one waits and nothing is in flight or invalidating.
    let due = sim.waiting && !busy && e != Event::Release;
    assert_eq!(wake, due, "{e:?} -> {a:?} in {l:?}: wake");
    if wake {
        sim.waiting = false;
        sim.woken = true;
        sim.wakes += 1;
    }
    match a {
        Action::StartInvalidation => {
            assert!(sim.posted, "invalidation before the REG_MRs were posted");
            assert!(!sim.inv_started, "invalidation started twice");
            assert_eq!(sim.regs_queued, 0, "invalidation with REG_MR in flight");
            assert!(sim.reply.is_some(), "invalidation without a reply");
            assert!(!sim.released, "invalidation after a release started");
            sim.inv_started = true;
        }
        Action::Drained { finish, .. } => {
            assert!(sim.inv_started && sim.invs_queued == 0);
            assert!(!sim.finished);
            if sim.inv_failed {
                assert_eq!(finish, None, "a failed invalidation completed the RPC");
                sim.unfinished += 1;
            } else {
                assert_eq!(finish, sim.reply);
                assert!(finish.is_some());
                sim.finished = true;
                sim.finishes += 1;
            }
        }
        Action::Wait => {
            assert!(busy);
            if l.phase() == Phase::Invalidating {
                sim.inv_waits += 1;
            }
            sim.waiting = true;
        }
        Action::TakeBack => {
            assert!(!busy && l.phase() == Phase::Releasing);
            if !sim.posted {
                sim.unposted_releases += 1;
            }
            sim.taking_back = true;
        }
        Action::Stale => {
            assert!(matches!(e, Event::Reply(_)), "{e:?} -> stale");
            assert!(!sim.posted && sim.mapped, "stale reply after the post");
            assert_eq!(*l, Life::Mapped);
            sim.stales += 1;
        }
        Action::WakeRelease | Action::Nothing => {}
    }
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
            _ if sim.taking_back => {
                // Conn::release invalidates synchronously (a reply may
                // arrive meanwhile), then forgets the slot.
                if rng.chance(30) {
                    Event::Reply(0)
                } else {
                    p.reset();
                    sim = Sim {
                        ..Sim::totals(&sim)
                    };
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
                    sim = Sim {
                        activations: sim.activations + 1,
                        ..Sim::totals(&sim)
                    };
                    let a = p.step(Event::Activate);
                    assert_eq!(a, Action::Nothing);
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
                        let n = rng.below(17) as u32;
                        sim.regs_queued = n;
                        Event::Posted(n)
                    }
                }
            }
            0 | 1 if sim.regs_queued > 0 => {
                sim.regs_queued -= 1;
                Event::RegRetired
            }
            2 if sim.reply.is_none() || rng.chance(10) => {
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
                    let a = p.step(Event::InvFailed);
                    observe(&mut sim, &p, Event::InvFailed, a);
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
        let a = p.step(e);
        if a == Action::StartInvalidation {
            // The MRs the responder did not invalidate: 0 drains at once.
            sim.invs_queued = rng.below(5) as u32;
        }
        observe(&mut sim, &p, e, a);
        if a == Action::StartInvalidation && sim.invs_queued == 0 {
            let a = p.step(Event::Drain);
            observe(&mut sim, &p, Event::Drain, a);
        }
    }
    sim
}

#[test]
fn random_sequences_match_the_booleans() {
    let mut rng = Rng(0x7265_716c_6966_6531);
    let mut total = Sim::default();
    for _ in 0..20_000 {
        let steps = 1 + rng.below(120) as usize;
        let s = run(&mut rng, steps);
        total.activations += s.activations;
        total.finishes += s.finishes;
        total.unfinished += s.unfinished;
        total.wakes += s.wakes;
        total.inv_waits += s.inv_waits;
        total.stales += s.stales;
        total.unposted_releases += s.unposted_releases;
    }
    // The sequences reach every outcome many times.
    let t = [
        total.activations,
        total.finishes,
        total.unfinished,
        total.wakes,
        total.inv_waits,
        total.stales,
        total.unposted_releases,
    ];
    eprintln!(
        "activations, finishes, unfinished, wakes, inv_waits, stales, unposted_releases: {t:?}"
    );
    assert!(t.iter().all(|&n| n > 500), "{t:?}");
}

// ---- any event in any state -------------------------------------------

fn any_event(rng: &mut Rng) -> Event<F> {
    match rng.below(7) {
        0 => Event::Activate,
        1 => Event::Posted(rng.below(4) as u32),
        2 => Event::RegRetired,
        3 => Event::Reply(rng.below(4) as u32),
        4 => Event::InvFailed,
        5 => Event::Drain,
        _ => Event::Release,
    }
}

#[test]
fn any_event_refused_or_as_before() {
    let mut rng = Rng(0x616e_7965_7665_6e74);
    let mut refused = [0u64; 7];
    for _ in 0..2_000 {
        let mut l: Life<F> = Life::new();
        let mut old = Old::default();
        for _ in 0..200 {
            let e = any_event(&mut rng);
            let before = l;
            match l.step(e) {
                Ok(a) => {
                    assert_eq!(a, old.step(e), "{e:?} in {before:?}");
                    assert_eq!(
                        Old::of(&l).relevant(),
                        old.relevant(),
                        "{e:?} in {before:?}"
                    );
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
                    let k = match e {
                        Event::Activate => 0,
                        Event::Posted(_) => 1,
                        Event::RegRetired => 2,
                        Event::Reply(_) => 3,
                        Event::InvFailed => 4,
                        Event::Drain => 5,
                        Event::Release => 6,
                    };
                    refused[k] += 1;
                    // Resynchronise as the glue would: a refused event
                    // leaves the slot alone.
                }
            }
        }
    }
    // Release is never refused; the others are, in some state.
    assert_eq!(refused[6], 0);
    for (k, n) in refused.iter().enumerate().take(6) {
        assert!(*n > 0, "event {k} never refused");
    }
}
