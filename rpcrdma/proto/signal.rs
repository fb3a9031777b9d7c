// SPDX-License-Identifier: GPL-2.0

//! Which inline Sends ask for a completion.
//!
//! A Send's buffer is free again once the Send has completed, but the
//! requester only hears of that if the Send is signalled, and every
//! signalled completion costs a run of the Send CQ's work item. Send
//! queues complete in order, so one signalled Send also proves every
//! unsignalled one posted before it done (the QP layer retires their
//! contexts with it). The C client signals one Send in a batch the same
//! way (its sendctx ring, `re_send_batch`).
//!
//! Only Sends without registrations are left unsignalled: an RPC whose
//! REG_MRs precede its Send gets its MRs back by that Send's completion
//! (`reqlife`), so its Send stays signalled. The decision:
//!
//! - every [`SIGNAL_EVERY`]-th inline Send is signalled, so completed
//!   buffers come back in bounded batches;
//! - so is every inline Send that leaves [`LOW_BUFFERS`] or fewer Send
//!   buffers free: while buffers are scarce a completion that returns
//!   them is always on its way, so a sender that finds none free (and
//!   waits for write space) is always woken.
//!
//! The count is the sender's: SUNRPC's transport send lock serialises
//! every Call, and the other Sends (backchannel replies, pieces of a
//! continued Call, Sends with registrations) are signalled regardless.

/// At most this many inline Sends in a row go unsignalled, less one.
pub const SIGNAL_EVERY: u32 = 16;

/// With this many Send buffers free or fewer, every inline Send is
/// signalled.
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

    /// Whether the inline Send about to be posted asks for a completion,
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

    /// Inline Sends posted unsignalled since the last signalled one.
    pub const fn unsignalled(&self) -> u32 {
        self.since
    }
}
