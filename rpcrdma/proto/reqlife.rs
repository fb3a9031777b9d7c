// SPDX-License-Identifier: GPL-2.0

//! The registration lifecycle of one request slot: when an RPC's chunk
//! MRs may be invalidated, when the RPC ends, when `Conn::release` may
//! take the MRs back.
//!
//! An RPC that uses chunks registers MRs (REG_MR chained before its
//! Send). The request's slot holds its MRs from the mapping to the end
//! of their invalidation; a REG_MR's Send-queue context only keeps the
//! MR's hardware object alive (design-ib), so nothing waits for it to
//! come back: a LOCAL_INV posted later on the same Send queue runs after
//! the REG_MR, and a peer that invalidates remotely does so after the
//! Send that followed the REG_MR. Two things race on the slot: the reply
//! and `Conn::release` (an abandoned RPC, or one sent again). The MRs are
//! invalidated once the reply has arrived; the RPC ends only when the
//! last LOCAL_INV has come back, and not at all if one failed (the
//! connection is going away; SUNRPC sends it again after the reconnect);
//! a release waits only while an invalidation runs, and keeps a reply
//! from starting one.
//!
//! A reply counts only once the transmission it could answer is posted:
//! between `RegTable::activate` and the post ([`Life::Mapped`]) a reply
//! with the RPC's XID answers an earlier transmission of it (the RPC is
//! sent again on the same connection: a resend after a transport error,
//! a retransmission). It is [`Action::Stale`]: it neither ends the RPC
//! nor invalidates MRs whose REG_MRs are not even posted, and the RPC
//! waits for the reply to this transmission.
//!
//! [`Life`] is that state machine. The glue (`conn/frwr.rs`,
//! `conn/send.rs`) feeds it the [`Event`]s under the lock of the slot
//! table and carries out the [`Action`] each step returns. It is generic
//! over how an RPC ends (`F`, the glue's `Finish`), so nothing here names
//! the kernel. An event that makes no sense in the current state is
//! refused with [`Illegal`] and changes nothing.

/// Where a slot is in its lifecycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Life<F> {
    /// No RPC with chunk registrations holds the slot.
    #[default]
    Idle,
    /// An RPC's MRs are mapped and its REG_MRs not posted yet: nothing of
    /// the slot is in the Send queue, and no reply can be for this
    /// transmission (one that arrives is [`Action::Stale`]).
    Mapped,
    /// The RPC's REG_MRs are posted (the MRs are registered once they
    /// run, before anything posted after them), and no reply arrived.
    Registered,
    /// LOCAL_INVs are outstanding (the reply arrived).
    Invalidating {
        /// How the RPC ends once the last one is back.
        finish: F,
        /// One failed: the RPC is not completed.
        failed: bool,
        /// `Conn::release` waits for the end.
        releasing: bool,
    },
    /// `Conn::release` is taking the MRs back to invalidate them itself.
    /// A reply is ignored from now on (the RPC is abandoned or sent
    /// again).
    Releasing,
}

/// [`Life`] without its data, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// [`Life::Idle`].
    Idle,
    /// [`Life::Mapped`].
    Mapped,
    /// [`Life::Registered`].
    Registered,
    /// [`Life::Invalidating`].
    Invalidating,
    /// [`Life::Releasing`].
    Releasing,
}

/// What happened to a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<F> {
    /// An RPC takes the (idle) slot and maps its MRs.
    Activate,
    /// Its REG_MRs are about to be posted, with the Send after them
    /// (before the post: the reply may arrive before it returns). Only
    /// from [`Life::Mapped`].
    Posted,
    /// A reply with the RPC's XID arrived: end the RPC this way once its
    /// MRs are invalidated. A later reply before the invalidation ends
    /// replaces it. Before [`Event::Posted`] it answers an earlier
    /// transmission ([`Action::Stale`]).
    Reply(F),
    /// A LOCAL_INV failed (or was never posted).
    InvFailed,
    /// The invalidation is over: the last LOCAL_INV came back, or none
    /// was needed. The glue has taken the MRs out and forgets the slot.
    Drain,
    /// `Conn::release` wants the MRs back (again after each wake-up).
    Release,
}

/// What the glue does after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<F> {
    /// Nothing.
    Nothing,
    /// The reply answers an earlier transmission of the XID: this one's
    /// REG_MRs (and its Send) are not posted yet ([`Life::Mapped`],
    /// unchanged). The glue drops it: it does not end the RPC, does not
    /// invalidate, and ignores a remote invalidation it carries (an rkey
    /// of the earlier transmission's MRs: this one's are re-keyed when
    /// mapped, and their REG_MRs, posted after, register them again).
    Stale,
    /// Post LOCAL_INVs for the slot's registered MRs now; [`Event::Drain`]
    /// follows once the last is back (at once if none is needed).
    StartInvalidation,
    /// `Conn::release` must wait for [`Action::Drained`] with `wake`,
    /// then send [`Event::Release`] again.
    Wait,
    /// `Conn::release` may take the MRs back and invalidate them; the
    /// slot stays [`Life::Releasing`] until the glue forgets it
    /// ([`Life::reset`]).
    TakeBack,
    /// The slot is idle again.
    Drained {
        /// End the RPC this way (`None`: do not complete it).
        finish: Option<F>,
        /// Wake the `Conn::release` waiters.
        wake: bool,
    },
}

/// An event that makes no sense in the slot's state; the state is
/// unchanged and the event is handed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Illegal<F> {
    /// The state the slot was (and is) in.
    pub phase: Phase,
    /// The event refused.
    pub event: Event<F>,
}

impl<F> Life<F> {
    /// An idle slot.
    pub const fn new() -> Self {
        Life::Idle
    }

    /// The state without its data.
    pub const fn phase(&self) -> Phase {
        match self {
            Life::Idle => Phase::Idle,
            Life::Mapped => Phase::Mapped,
            Life::Registered => Phase::Registered,
            Life::Invalidating { .. } => Phase::Invalidating,
            Life::Releasing => Phase::Releasing,
        }
    }

    /// An RPC with registrations holds the slot.
    pub const fn is_active(&self) -> bool {
        !matches!(self, Life::Idle)
    }

    /// The glue forgets the slot (a new RPC takes it, or `Conn::release`
    /// has taken the MRs back): idle, whatever it was.
    pub fn reset(&mut self) {
        *self = Life::Idle;
    }

    /// Applies `event`; returns what the glue must do, or refuses it
    /// (and nothing changes).
    pub fn step(&mut self, event: Event<F>) -> Result<Action<F>, Illegal<F>> {
        let old = core::mem::replace(self, Life::Idle);
        let (new, out) = transition(old, event);
        *self = new;
        out
    }
}

/// The transition function: the next state and the action, or the old
/// state and the refusal.
fn transition<F>(s: Life<F>, e: Event<F>) -> (Life<F>, Result<Action<F>, Illegal<F>>) {
    use Action as A;
    use Event as E;
    use Life as L;
    match (s, e) {
        (L::Idle, E::Activate) => (L::Mapped, Ok(A::Nothing)),
        (L::Mapped, E::Posted) => (L::Registered, Ok(A::Nothing)),
        // Nothing of this transmission is posted: the reply is for an
        // earlier one.
        (L::Mapped, E::Reply(_)) => (L::Mapped, Ok(A::Stale)),
        (L::Registered, E::Reply(f)) => (
            L::Invalidating {
                finish: f,
                failed: false,
                releasing: false,
            },
            Ok(A::StartInvalidation),
        ),
        (
            L::Invalidating {
                failed, releasing, ..
            },
            E::Reply(f),
        ) => (
            L::Invalidating {
                finish: f,
                failed,
                releasing,
            },
            Ok(A::Nothing),
        ),
        (L::Releasing, E::Reply(_)) => (L::Releasing, Ok(A::Nothing)),
        (
            L::Invalidating {
                finish, releasing, ..
            },
            E::InvFailed,
        ) => (
            L::Invalidating {
                finish,
                failed: true,
                releasing,
            },
            Ok(A::Nothing),
        ),
        (
            L::Invalidating {
                finish,
                failed,
                releasing,
            },
            E::Drain,
        ) => (
            L::Idle,
            Ok(A::Drained {
                finish: if failed { None } else { Some(finish) },
                wake: releasing,
            }),
        ),
        (L::Idle, E::Release) => (L::Idle, Ok(A::Nothing)),
        // Nothing waits in the Send queue: the MRs can be taken back at
        // once (a LOCAL_INV posted now runs after any REG_MR posted).
        (L::Mapped | L::Registered | L::Releasing, E::Release) => (L::Releasing, Ok(A::TakeBack)),
        (L::Invalidating { finish, failed, .. }, E::Release) => (
            L::Invalidating {
                finish,
                failed,
                releasing: true,
            },
            Ok(A::Wait),
        ),
        (s, e) => refuse(s, e),
    }
}

/// Refuses `e` in state `s` (which stays).
fn refuse<F>(s: Life<F>, e: Event<F>) -> (Life<F>, Result<Action<F>, Illegal<F>>) {
    let phase = s.phase();
    (s, Err(Illegal { phase, event: e }))
}
