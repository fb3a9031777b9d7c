// SPDX-License-Identifier: GPL-2.0

//! Credit accounting and Receive replenishment for one connection.
//!
//! # Version 1 (RFC 8166 §3.3.1, the C client)
//!
//! Every Call carries our credit request, `max_requests` (C:
//! `rb_max_requests`, rpc_rdma.c:897). Every reply carries the
//! responder's grant: the number of RPCs we may have outstanding. The
//! grant is clamped to `1..=max_requests` (rpc_rdma.c:1546-1552: zero
//! would deadlock, more than we asked for is not trusted) and becomes the
//! SUNRPC congestion window, `cwnd = credits << RPC_CWNDSHIFT`; the
//! transport hears about it only when it changes (C:
//! `rpcrdma_update_cwnd`). A new connection starts at one credit
//! (`rpcrdma_reset_cwnd`, RFC 8166 §3.3.3). The generic cwnd machinery
//! (`xprt_reserve_xprt_cong`) enforces the window, so with one credit
//! exactly one Call is in flight.
//!
//! # Version 2 (draft -00 §4.3.1): our interpretation
//!
//! -00 §4.3.1 says:
//!
//! > An RPC-over-RDMA version 2 credit is the capability to receive one
//! > RPC-over-RDMA version 2 message. [...] Each Requester has a set of
//! > Receive credits, and each Responder has a set of Receive credits.
//! > These credit values are managed independently of one another. [...]
//! > After the field is XDR decoded, the receiver takes the low-order two
//! > bytes as the number of credits that are newly granted by the sender,
//! > and the high-order two bytes as the maximum number of credits that
//! > can be outstanding at the sender. [...] A sender MUST NOT send RDMA
//! > messages in excess of the receiver's granted credit limit. [...] The
//! > granted value MUST NOT be zero, since such a value would result in
//! > deadlock.
//!
//! and §6.4.3: "The receiver of this header type \[`RDMA2_ERROR`\] MUST
//! ignore the value of the rdma_start.rdma_credit field."
//!
//! The text leaves open whether the low half is a running total (as in
//! v1) or an increment, and how the two halves combine. We read it as the
//! credit-update protocol of the cited \[CBFC\] paper (Kung, Blackwell, Chapman, SIGCOMM 1994):
//!
//! 1. **High half = the credit limit.** `max` is the largest number of
//!    our messages that may be outstanding at the responder (received
//!    into its Receive buffers and not yet given back). The latest valid
//!    value wins. It plays the role of the v1 grant: our RPC window is
//!    `clamp(max, 1, max_requests)` and drives the cwnd exactly as in v1.
//! 2. **Low half = credits returned.** `granted` is the number of our
//!    messages whose Receive buffers the responder has made available
//!    again since its previous message ("newly granted"). We keep
//!    `outstanding = sent - returned` (messages sent on this connection
//!    minus the sum of `granted`, never below zero) and send only while
//!    `outstanding < max`.
//! 3. **A reply returns at least the Call it answers.** A message that
//!    answers one of our Calls (`RDMA2_MSG` / `RDMA2_NOMSG` with a
//!    non-zero XID and no `F_MORE`, and every `RDMA2_ERROR`, whose credit
//!    word must be ignored) returns `max(granted, 1)`. Without this rule
//!    an `RDMA2_ERROR` would leak a credit, and a responder that reads
//!    the low half differently (for example as the increase of its
//!    limit, or zero when nothing changed) would stall us for good.
//! 4. **The high half must be non-zero.** "The granted value MUST NOT be
//!    zero, since such a value would result in deadlock" is about the
//!    limit: only a zero limit deadlocks, and "if the granted value is
//!    exceeded" in the same paragraph is the limit too. A word with a zero
//!    limit is ignored (keep the previous limit, return only what rule 3
//!    returns) and counted. A zero low half returns nothing: we send one
//!    whenever nothing was received since our previous message (every
//!    piece of a continued Call but the first, typically). Read as "at
//!    least one", a long continued Call would return credits that were
//!    never consumed, and the responder would overrun our Receives (an
//!    RNR; Documentation/conformance.rst, `rpcrdma2-v2-continuation`).
//!
//! 5. **The other reading is tolerated.** -00 §4.3.1 can also be read as
//!    "the low half is the granted value" (a running total, as in version
//!    1, which is what "The granted value MUST NOT be zero" would then be
//!    about), with the high half a maximum the sender could ever grant,
//!    or zero. A peer of our reading never returns more than we have
//!    outstanding (plus the credits rule 3 returned early for it), so
//!    words that do ([`OVER_RETURNS`] in a row: one could be a stray or
//!    duplicated message) are proof of the other reading: from then on,
//!    for the rest of the connection, each of its words sets the limit to
//!    its low half (the smaller of the halves if the high one is not
//!    zero).
//!    Until then, a word that returns more than was outstanding, and a
//!    word with a zero limit half and a non-zero low half, are read that
//!    way on their own (a limit of the larger half could overrun such a
//!    peer before the proof is complete; ignoring a zero limit half would
//!    stall us on a peer whose limit half is always zero). The RPC window
//!    follows the limit (and at most [`CALL_RING`]), so we never have
//!    more RPCs outstanding than the peer granted. A word whose low half
//!    is zero is then ignored and counted as rule 4 says.
//!
//!    Such a word says how many messages the peer can take, not which of
//!    ours it has taken: those still on the way to it use its Receives
//!    too. So a word read this way returns only what the peer's messages
//!    show it received, RC delivering our messages in order:
//!    - an answer (the `n`-th of the connection, or an `RDMA2_ERROR` for
//!      a Call), every message of ours up to the last of our `n`-th Call
//!      (of the `n` Calls answered, the latest sent is no earlier);
//!    - any message, the `r`-th we received: the peer honours our limit
//!      (at most one message beyond it, a credit grant), so it sent that
//!      message only after receiving `r - max - 1` credits back from us
//!      (`max` the largest limit half we sent), that is every message of
//!      ours up to the one whose word completed that many;
//!    - an asynchronous credit grant, one more message: a peer grants
//!      when it has freed a Receive. (The bound above lags our messages
//!      by our limit: against a peer that sends little but grants, the
//!      pieces of a continued Call would wait for it for good.)
//!
//!    Reading every word as "everything sent was consumed" would let us
//!    send a limit's worth of messages for each piece of a long continued
//!    reply while the peer had not yet taken the previous ones, and
//!    overrun its Receives. Our credit grants are
//!    answered by nothing, so one that is not yet shown received is held
//!    in the Receive the peer keeps for a grant, outside the limit, and
//!    no other grant is sent until it is: grants filling the limit would
//!    leave no room for the Call whose answer shows them received.
//!
//! The resulting send rule is the stricter of two limits: the RPC window
//! (SUNRPC's cwnd, which is safe even against a responder that, v1-style,
//! repeats `granted = max` in every reply and so "returns" everything)
//! and the message budget of rule 2 (which honours a responder that
//! returns fewer credits than it answered). For the inline data path, one
//! Send per Call and one reply per Call, rule 3 makes the budget never
//! tighter than the window; it matters once Message Continuation sends
//! several messages per RPC.
//!
//! **Our own advertisement** (the credit word of each Call: "requester
//! credits, sent in messages from the requester to the responder") uses
//! the same reading: `max` is the number of responder messages we are
//! prepared to have outstanding, `window + 2 * bc_requests` (every reply
//! to an outstanding Call, every backchannel Call we serve and its
//! companion, as the C client counts them), and `granted` is the number of
//! Receives consumed since our previous Send (0 if none: rule 4). Our
//! safety depends on the responder's reading of it only where it may send
//! several messages per Call (continued replies, grants): we keep
//! at least `window + 2 * bc_requests + 1` Receives posted (the extra one
//! is the §4.3.1 reserve: "receivers MUST always be in a position to
//! receive one such credit grant update message, in addition to
//! payload-bearing messages"), and in the inline data path the responder
//! sends at most one reply per outstanding Call.
//!
//! Asynchronous credit grants (`RDMA2_NOMSG`, three empty chunk lists,
//! XID 0; §6.4.2) go through the same rules: they set the limit and
//! return `granted` credits (rule 3 does not apply: they answer nothing).
//!
//! # Receive replenishment (C: `rpcrdma_post_recvs`, verbs.c:1478-1547)
//!
//! `needed` is `window + 2 * bc_requests` for v1 (rpc_rdma.c:1590), plus
//! one for v2 (the reserve above). If more than `needed` Receives are
//! posted nothing happens; otherwise `needed - posted + RECV_BATCH` are
//! posted in one chained `ib_post_recv`, so replenishing happens about
//! once every seven messages.

use super::config::{clamp_u32, Config, RECV_BATCH};
use super::xdr::header::{Credits, Protocol};

/// `RPC_CWNDSHIFT` (include/linux/sunrpc/xprt.h): one credit is
/// `1 << RPC_CWNDSHIFT` units of `xprt->cwnd`.
pub const RPC_CWNDSHIFT: u32 = 8;

/// Consecutive words returning more than was outstanding that prove the
/// peer reads the low half as its total grant (rule 5): one could be a
/// stray or duplicated message.
pub const OVER_RETURNS: u32 = 2;

/// Calls whose last message we remember, for what an answer shows
/// received in the other reading of the credit word (rule 5); the RPC
/// window of such a peer is at most this.
pub const CALL_RING: u32 = 32;

/// [`CALL_RING`] as an array length.
const CALL_SLOTS: usize = 32;

/// Our messages that returned credits whose position we remember, for
/// what the peer's messages show it received in the other reading.
const RETURN_RING: usize = 32;

/// A changed credit window: the transport stores `credits` (C:
/// `rb_credits`) and sets `xprt->cwnd = cwnd` under `transport_lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CreditUpdate {
    /// RPCs that may be outstanding.
    pub credits: u32,
    /// `credits << RPC_CWNDSHIFT`.
    pub cwnd: u32,
}

impl CreditUpdate {
    /// The update for `credits`.
    #[inline]
    pub const fn new(credits: u32) -> Self {
        Self {
            credits,
            // credits <= MAX_REQUESTS (16384): no saturation in practice.
            cwnd: credits.saturating_mul(1 << RPC_CWNDSHIFT),
        }
    }
}

/// What a received message contributes to the credit state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Grant {
    /// A v1 credit word (the responder's current grant).
    V1(u32),
    /// A v2 credit word from a message that is not `RDMA2_ERROR`.
    V2 {
        /// The two halves.
        credits: Credits,
        /// The message answers one of our Calls (rule 3).
        answers_call: bool,
        /// The message is an asynchronous credit grant (`RDMA2_NOMSG`,
        /// XID 0, empty chunk lists).
        credit_grant: bool,
    },
    /// A message whose credit word must be ignored (v2 `RDMA2_ERROR`,
    /// any `ERR_VERS`), but which answers one of our Calls.
    Ignored,
}

/// The effect of a received message on the credits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GrantEffect {
    /// The window changed: apply it.
    pub update: Option<CreditUpdate>,
    /// The v2 message budget was exhausted and is open again: wake
    /// senders that waited for it (`xprt_write_space`).
    pub wake: bool,
    /// The credit word was invalid (a zero limit) and was ignored.
    pub bad_word: bool,
    /// This word showed that the peer reads the low half as its total
    /// grant ([`CreditState::total_reading`]); from now on its words are
    /// read that way.
    pub total_reading: bool,
}

/// Credit and Receive accounting of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CreditState {
    protocol: Protocol,
    max_requests: u32,
    bc_requests: u32,
    /// RPCs we may have outstanding: 1..=max_requests.
    window: u32,
    /// v2: the responder's limit (high half), at least 1.
    limit: u32,
    /// v2: messages sent on this connection (wrapping).
    sent: u32,
    /// v2: credits returned (wrapping; never ahead of `sent`).
    returned: u32,
    /// v2: Receives consumed since our previous Send.
    consumed: u32,
    /// Receives posted and not yet completed.
    posted: u32,
    /// v2: the peer reads the low half as its total grant (rule 5).
    total_reading: bool,
    /// v2: credits rule 3 returned that the words did not (a reply with a
    /// zero low half): a peer of our reading may still return them.
    floored: u32,
    /// v2: consecutive words that returned more than was outstanding.
    over_returns: u32,
    /// v2: `sent` after the last message of each Call, by the Call's
    /// number modulo [`CALL_RING`].
    call_ends: [u32; CALL_SLOTS],
    /// v2: Calls sent completely (wrapping).
    calls: u32,
    /// v2: answers received (wrapping; never ahead of `calls`).
    answers: u32,
    /// v2: the latest word was read the other way (rule 5).
    other: bool,
    /// v2: `sent` after our latest credit grant, if any.
    grant_end: Option<u32>,
    /// v2: messages received from the peer.
    received: u64,
    /// v2: the largest limit half we have sent.
    adv_max: u32,
    /// v2: the credits our words returned, in all.
    cum_ret: u64,
    /// v2: our latest messages that returned credits, oldest first,
    /// `ret_len` of them from `ret_head`: `sent` after each.
    ret_sent: [u32; RETURN_RING],
    /// v2: the low 32 bits of `cum_ret` after each message of
    /// `ret_sent` (the log spans less than 2^32 credits: see
    /// [`CreditState::logged_cum`]).
    ret_cum: [u32; RETURN_RING],
    ret_head: u8,
    ret_len: u8,
}

impl CreditState {
    /// The state of a new connection that starts with `protocol`: one
    /// credit, nothing sent, no Receives posted.
    pub const fn new(config: &Config, protocol: Protocol) -> Self {
        let c = config.validated();
        Self {
            protocol,
            max_requests: c.max_requests,
            bc_requests: c.bc_requests,
            window: 1,
            limit: 1,
            sent: 0,
            returned: 0,
            consumed: 0,
            posted: 0,
            total_reading: false,
            floored: 0,
            over_returns: 0,
            call_ends: [0; CALL_SLOTS],
            calls: 0,
            answers: 0,
            other: false,
            grant_end: None,
            received: 0,
            adv_max: 0,
            cum_ret: 0,
            ret_sent: [0; RETURN_RING],
            ret_cum: [0; RETURN_RING],
            ret_head: 0,
            ret_len: 0,
        }
    }

    /// Switches the accounting to another protocol (the connection fell
    /// back to v1 during negotiation). The window stays where it is: the
    /// first valid reply in the new protocol grants credits.
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    /// The protocol whose rules apply.
    #[inline]
    pub const fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// RPCs that may be outstanding (C: `rb_credits`).
    #[inline]
    pub const fn window(&self) -> u32 {
        self.window
    }

    /// The window as a [`CreditUpdate`] (for a new connection: one credit,
    /// `cwnd = 256`; the transport also zeroes `xprt->cong`).
    #[inline]
    pub const fn current(&self) -> CreditUpdate {
        CreditUpdate::new(self.window)
    }

    /// v2: the peer reads the low half of the credit word as its total
    /// grant, not as credits returned (rule 5 of the module
    /// documentation).
    #[inline]
    pub const fn total_reading(&self) -> bool {
        self.total_reading
    }

    /// v2: the responder's current credit limit (1 before any grant).
    #[inline]
    pub const fn limit(&self) -> u32 {
        self.limit
    }

    /// v2: our messages not yet returned by the responder.
    #[inline]
    pub const fn outstanding(&self) -> u32 {
        self.sent.wrapping_sub(self.returned)
    }

    /// v2: Receives consumed since our previous message (the credits our
    /// next message returns).
    #[inline]
    pub const fn consumed(&self) -> u32 {
        self.consumed
    }

    /// Receives currently posted.
    #[inline]
    pub const fn posted(&self) -> u32 {
        self.posted
    }

    /// True if one more message may be sent now. Always true for v1,
    /// where only the RPC window (cwnd) limits sending.
    #[inline]
    pub const fn may_send(&self) -> bool {
        match self.protocol {
            Protocol::V1 => true,
            Protocol::V2 => {
                let reserve = if self.reserve_used() { 1 } else { 0 };
                self.outstanding().saturating_sub(reserve) < self.limit
            }
        }
    }

    /// v2, the other reading (rule 5): our latest credit grant is not
    /// yet shown received; it is held in the Receive the peer keeps for
    /// a grant, not counted against the limit, and no other grant goes
    /// until it is shown received.
    #[inline]
    pub const fn reserve_used(&self) -> bool {
        match self.grant_end {
            Some(end) if self.other => self.sent.wrapping_sub(end) < self.outstanding(),
            _ => false,
        }
    }

    /// v2: a credit grant may be sent now (one beyond the limit, -00
    /// §4.3.1; in the other reading, only while the previous one has
    /// been shown received).
    #[inline]
    pub const fn may_send_grant(&self) -> bool {
        !self.reserve_used() && self.outstanding() <= self.limit
    }

    /// Records that the message just counted by [`on_send`](Self::on_send)
    /// is an asynchronous credit grant.
    pub fn on_grant_sent(&mut self) {
        self.grant_end = Some(self.sent);
    }

    /// The number of responder messages we are prepared to have
    /// outstanding: `window + 2 * bc_requests`, as a v2 credit half.
    pub const fn recv_credits(&self) -> u16 {
        let n = self
            .window
            .saturating_add(self.bc_requests.saturating_mul(2));
        let n = clamp_u32(n, 1, 0xffff);
        // In range by the clamp.
        let [_, _, hi, lo] = n.to_be_bytes();
        u16::from_be_bytes([hi, lo])
    }

    /// The credit word for the next message, without sending it: v1, our
    /// request (`max_requests`); v2, our advertisement (see the module
    /// documentation).
    pub fn credit_word(&self) -> u32 {
        self.next_word().0
    }

    /// The credit word of the next message and the Receives it returns.
    fn next_word(&self) -> (u32, u32) {
        match self.protocol {
            Protocol::V1 => (self.max_requests, self.consumed),
            Protocol::V2 => {
                let max = self.recv_credits();
                // Rule 4: 0 when nothing was consumed, never more than
                // the limit.
                let granted = u16::try_from(self.consumed).unwrap_or(u16::MAX).min(max);
                (Credits { granted, max }.to_word(), u32::from(granted))
            }
        }
    }

    /// Records one message sent; returns the credit word it carries. Call
    /// only when [`may_send`](Self::may_send) is true.
    pub fn on_send(&mut self) -> u32 {
        let (word, returned) = self.next_word();
        self.sent = self.sent.wrapping_add(1);
        if self.protocol == Protocol::V2 {
            let c = Credits::from_word(word);
            self.adv_max = self.adv_max.max(u32::from(c.max));
            if returned > 0 {
                self.cum_ret = self.cum_ret.saturating_add(u64::from(returned));
                self.log_return();
            }
        }
        // What the word returned (v1: all; the C client does not count).
        // v2 Receives beyond the limit it could carry are returned by the
        // next message, never dropped (a dropped return is a credit the
        // responder never gets back, and enough of them stall it for
        // good).
        self.consumed = self.consumed.saturating_sub(returned);
        word
    }

    /// Records that the message just counted by [`on_send`](Self::on_send)
    /// completes a Call that expects an answer (a Call, the last piece of
    /// a continued one, our CONNPROP probe).
    pub fn on_call_sent(&mut self) {
        let i = usize::try_from(self.calls % CALL_RING).unwrap_or(0);
        if let Some(e) = self.call_ends.get_mut(i) {
            *e = self.sent;
        }
        self.calls = self.calls.wrapping_add(1);
    }

    /// Remembers that our latest message returned credits (none if the
    /// log is full: what it returned then shows nothing received until
    /// the log has room again, which only holds back credits).
    fn log_return(&mut self) {
        let len = usize::from(self.ret_len);
        if len < RETURN_RING {
            let i = usize::from(self.ret_head).wrapping_add(len) % RETURN_RING;
            let low = u32::try_from(self.cum_ret & u64::from(u32::MAX)).unwrap_or(0);
            if let (Some(s), Some(c)) = (self.ret_sent.get_mut(i), self.ret_cum.get_mut(i)) {
                *s = self.sent;
                *c = low;
                self.ret_len = self.ret_len.saturating_add(1);
            }
        }
    }

    /// `cum_ret` as it was after a logged message whose low 32 bits are
    /// `low`: exact, because `cum_ret` only grows and the log holds at
    /// most [`RETURN_RING`] messages, each returning fewer than 2^16
    /// credits (a credit half), so no entry is 2^32 behind.
    fn logged_cum(&self, low: u32) -> u64 {
        let now = u32::try_from(self.cum_ret & u64::from(u32::MAX)).unwrap_or(0);
        self.cum_ret
            .saturating_sub(u64::from(now.wrapping_sub(low)))
    }

    /// What the peer's latest message shows it received, as `sent` was
    /// then: the peer honours our limit (at most one message beyond it,
    /// a credit grant), so its `received`-th message went only after our
    /// words had returned `received - adv_max - 1` credits to it, and
    /// RC delivered it every message of ours up to the one whose word
    /// completed that.
    fn shown_by_returns(&mut self) -> Option<u32> {
        let need = self
            .received
            .checked_sub(u64::from(self.adv_max).saturating_add(1))
            .filter(|&n| n > 0)?;
        let mut end = None;
        while self.ret_len > 0 {
            let head = usize::from(self.ret_head);
            let seq = *self.ret_sent.get(head)?;
            let cum = self.logged_cum(*self.ret_cum.get(head)?);
            end = Some(seq);
            if cum >= need {
                break;
            }
            // It returned fewer: received, and so is the next one.
            self.ret_head = u8::try_from(head.wrapping_add(1) % RETURN_RING).unwrap_or(0);
            self.ret_len = self.ret_len.saturating_sub(1);
        }
        end
    }

    /// Counts one answer; returns how many of our messages it shows the
    /// peer received, as `sent` was then (`None` if no Call is waiting for
    /// it, or the Call's end is no longer remembered).
    fn answered(&mut self) -> Option<u32> {
        let waiting = self.calls.wrapping_sub(self.answers);
        if waiting == 0 {
            return None;
        }
        let i = usize::try_from(self.answers % CALL_RING).unwrap_or(0);
        self.answers = self.answers.wrapping_add(1);
        if waiting > CALL_RING {
            return None;
        }
        self.call_ends.get(i).copied()
    }

    /// The other reading (rule 5): returns our messages up to `end` (as
    /// `sent` was after the last of them), shown received.
    fn evidence(&mut self, end: Option<u32>) {
        if let Some(end) = end {
            let shown = end.wrapping_sub(self.returned);
            if shown <= self.outstanding() {
                self.give_back(shown);
            }
        }
    }

    /// Applies what a received message says about credits.
    pub fn on_grant(&mut self, grant: Grant) -> GrantEffect {
        let was_blocked = !self.may_send();
        let mut effect = GrantEffect::default();
        match grant {
            Grant::V1(word) => {
                // C: 0 -> 1 ("don't deadlock"), > max_requests -> max.
                self.set_window(word, &mut effect);
            }
            Grant::V2 {
                credits,
                answers_call,
                credit_grant,
            } => {
                let end = if answers_call { self.answered() } else { None };
                let floor = u32::from(answers_call);
                let granted = u32::from(credits.granted);
                let max = u32::from(credits.max);
                // Rule 5: a peer of our reading never returns more than
                // is outstanding (plus what rule 3 returned for it early).
                let over = granted.saturating_sub(self.outstanding());
                let over_return = over > self.floored;
                if over_return {
                    self.over_returns = self.over_returns.saturating_add(1);
                } else {
                    self.over_returns = 0;
                }
                if self.over_returns >= OVER_RETURNS && !self.total_reading {
                    self.total_reading = true;
                    effect.total_reading = true;
                }
                self.floored = self.floored.saturating_sub(over);
                self.other = self.total_reading || over_return || (max == 0 && granted > 0);
                if self.other {
                    // The low half is the grant (a zero limit half: the
                    // only limit the word has).
                    let limit = if max == 0 { granted } else { granted.min(max) };
                    self.evidence(end);
                    let shown = self.shown_by_returns();
                    self.evidence(shown);
                    if credit_grant {
                        // A peer grants when it has freed a Receive.
                        self.give_back(1);
                    }
                    if limit == 0 {
                        effect.bad_word = true;
                    } else {
                        self.limit = limit;
                        self.set_window(limit.min(CALL_RING), &mut effect);
                    }
                } else if credits.is_valid() {
                    if floor > granted {
                        // Rule 3 returned a credit the word did not: the
                        // peer may return it later.
                        self.floored = self.floored.saturating_add(1);
                    }
                    self.give_back(u32::from(credits.granted).max(floor));
                    self.limit = u32::from(credits.max);
                    self.set_window(u32::from(credits.max), &mut effect);
                } else {
                    effect.bad_word = true;
                    self.give_back(floor);
                }
            }
            Grant::Ignored => {
                let end = self.answered();
                if self.other {
                    self.evidence(end);
                    let shown = self.shown_by_returns();
                    self.evidence(shown);
                } else {
                    self.give_back(1);
                }
            }
        }
        effect.wake = was_blocked && self.may_send();
        effect
    }

    fn give_back(&mut self, n: u32) {
        let n = n.min(self.outstanding());
        self.returned = self.returned.wrapping_add(n);
    }

    fn set_window(&mut self, credits: u32, effect: &mut GrantEffect) {
        let w = clamp_u32(credits, 1, self.max_requests);
        if w != self.window {
            self.window = w;
            effect.update = Some(CreditUpdate::new(w));
        }
    }

    /// Receives that must be posted so that the peer's credits are backed.
    pub const fn receives_needed(&self) -> u32 {
        let n = self
            .window
            .saturating_add(self.bc_requests.saturating_mul(2));
        match self.protocol {
            Protocol::V1 => n,
            Protocol::V2 => n.saturating_add(1),
        }
    }

    /// Records one completed Receive (successful or flushed).
    pub fn on_receive(&mut self) {
        self.received = self.received.saturating_add(1);
        self.posted = self.posted.saturating_sub(1);
        self.consumed = self.consumed.saturating_add(1);
    }

    /// Decides how many Receives to post now and counts them as posted:
    /// none while more than [`receives_needed`](Self::receives_needed)
    /// are posted, else enough to exceed it by a batch.
    pub fn replenish(&mut self) -> u32 {
        let needed = self.receives_needed();
        if self.posted > needed {
            return 0;
        }
        let n = needed
            .saturating_sub(self.posted)
            .saturating_add(RECV_BATCH);
        self.posted = self.posted.saturating_add(n);
        n
    }

    /// Takes back `n` Receives that [`replenish`](Self::replenish) asked
    /// for but the transport could not post (no buffer, post failed).
    pub fn unposted(&mut self, n: u32) {
        self.posted = self.posted.saturating_sub(n);
    }
}
