// SPDX-License-Identifier: GPL-2.0

//! Which Calls' Sends ask for a completion.
//!
//! A Send's buffer is free again once the Send has completed, but the
//! requester only hears of that if the Send is signalled, and every
//! signalled completion costs a run of the Send CQ's work item. Send
//! queues complete in order, so one signalled Send also proves every
//! unsignalled one posted before it done (the QP layer retires their
//! contexts with it). The C client signals one Send in a batch the same
//! way (its sendctx ring, `re_send_batch`).
//!
//! A Call's REG_MRs, chained before its Send, follow the same rule: their
//! contexts only keep the MRs' hardware objects alive (the request keeps
//! its MRs), so nothing waits for them but the room they take in the
//! Send queue. The decision:
//!
//! - every [`SIGNAL_EVERY`]-th Call's Send is signalled, so completed
//!   buffers come back in bounded batches;
//! - so is every Send that leaves [`LOW_BUFFERS`] or fewer Send buffers
//!   free: while buffers are scarce a completion that returns them is
//!   always on its way, so a sender that finds none free (and waits for
//!   write space) is always woken;
//! - and every Send that leaves the Send queue more than half full
//!   ([`SendSignal::next_in`]): a Call's REG_MRs take room a Send buffer
//!   does not account for, and the queue must never fill with WRs that
//!   only a later completion retires.
//!
//! The count is the sender's: SUNRPC's transport send lock serialises
//! every Call, and the other Sends (backchannel replies, pieces of a
//! continued Call) are signalled regardless.

/// At most this many Sends in a row go unsignalled, less one.
pub const SIGNAL_EVERY: u32 = 16;

/// With this many Send buffers free or fewer, every Send is signalled.
pub const LOW_BUFFERS: usize = 16;

/// The sender's count of inline Sends since the last signalled one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendSignal {
    since: u32,
}

impl SendSignal {
    /// No Send posted yet.
    pub const fn new() -> Self {
        SendSignal { since: 0 }
    }

    /// The count as [`SendSignal::unsignalled`] returned it (kept by the
    /// caller between Sends).
    pub const fn resume(unsignalled: u32) -> Self {
        SendSignal { since: unsignalled }
    }

    /// Whether the Send about to be posted asks for a completion,
    /// given the Send buffers left free once it has taken its own.
    pub fn next(&mut self, free: usize) -> bool {
        let since = self.since.saturating_add(1);
        if since >= SIGNAL_EVERY || free <= LOW_BUFFERS {
            self.since = 0;
            true
        } else {
            self.since = since;
            false
        }
    }

    /// [`SendSignal::next`] for a Send that leaves `outstanding` WRs in a
    /// Send queue of `depth` (itself and the REG_MRs before it
    /// included): signalled, too, once more than half of the queue is
    /// taken, so the WRs a completion has not retired yet never fill it.
    pub fn next_in(&mut self, free: usize, outstanding: usize, depth: usize) -> bool {
        if outstanding > depth / 2 {
            self.since = 0;
            true
        } else {
            self.next(free)
        }
    }

    /// Sends posted unsignalled since the last signalled one.
    pub const fn unsignalled(&self) -> u32 {
        self.since
    }
}
