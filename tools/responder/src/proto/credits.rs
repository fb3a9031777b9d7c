// SPDX-License-Identifier: GPL-2.0

//! The credit accounting of a connection in both directions: the
//! client's credit limit and the messages it holds, the credit word of
//! our messages, and asynchronous credit grants by [`GrantMode`].

use rpcrdma_xdr::chunk::ChunkLists;
use rpcrdma_xdr::header::{self, Credits, Flags, MsgKind, MsgSpec, Protocol};
use rpcrdma_xdr::v2;

use super::{Action, ConnProto, CreditWord, GrantMode, LAZY_GRANT};
use crate::stats::Stats;

impl ConnProto {
    /// Applies the credit word of a v2 message from the client (not an
    /// `RDMA2_ERROR`, whose word means nothing): the high half is its
    /// limit, the low half returns our messages (-00 §4.3.1; a zero limit
    /// is ignored, a zero low half returns nothing).
    pub fn client_credit(&mut self, word: u32) {
        let c = Credits::from_word(word);
        if !c.is_valid() {
            return;
        }
        self.client_limit = u32::from(c.max);
        self.client_returned = self
            .client_sent
            .min(self.client_returned + u64::from(c.granted));
    }

    /// True if `buf`, a message the client just sent, exceeds the credits
    /// we granted it (-00 §4.3.1: "A sender MUST NOT send RDMA messages in
    /// excess of the receiver's granted credit limit"), less one for a
    /// credit grant (`RDMA2_NOMSG`, XID 0), which a receiver must always be
    /// able to take beyond the others. Called before the message is
    /// counted. Our count of the client's messages not returned is never
    /// above what the client holds (a credit is taken off when the message
    /// returning it is built, before the client can see it), so a message
    /// that finds it at the limit was sent beyond it. Version 2 with our
    /// reading of the credit word only: in the other one
    /// (`--credit-word`) nothing is returned and the client counts its
    /// consumed messages from the answers.
    pub fn overruns_our_credits(&self, buf: &[u8]) -> bool {
        if self.version != Some(Protocol::V2) || self.opts.credit_word != CreditWord::Ours {
            return false;
        }
        let grant = matches!(
            v2::decode_prefix(buf),
            Ok((p, _)) if p.xid == 0 && p.htype == v2::RDMA2_NOMSG
        );
        let limit = u32::from(self.opts.credits.max(1)) + u32::from(grant);
        self.unreturned >= limit
    }

    /// The client's credit limit (0 until it has told).
    pub fn client_limit(&self) -> u32 {
        self.client_limit
    }

    /// v2: the client's messages whose credit we owe, and its Calls
    /// admitted and not answered (each answer returns one).
    pub fn owed(&self) -> (u32, u32) {
        (self.unreturned, self.unanswered)
    }

    /// Our messages the client holds (sent, not returned).
    pub fn client_outstanding(&self) -> u64 {
        self.client_sent - self.client_returned
    }

    /// True if one more message may go to the client now: v2 honours its
    /// credit limit ("A sender MUST NOT send RDMA messages in excess of
    /// the receiver's granted credit limit"), plus, for a credit grant,
    /// the one Receive -00 tells every receiver to keep for grants.
    pub fn may_send_client(&self, grant: bool) -> bool {
        if self.version != Some(Protocol::V2) || self.client_limit == 0 {
            return true;
        }
        let limit = u64::from(self.client_limit) + u64::from(grant);
        self.client_outstanding() < limit
    }

    /// One message went to the client.
    pub fn sent_client(&mut self) {
        self.client_sent += 1;
    }

    /// The spare credits to add, when a message built earlier leaves now,
    /// to the `granted` half it already carries (at most `room`): with
    /// `--grant prompt` every message returns all that is owed when it
    /// is sent, not only what was owed when it was built. A message that
    /// waited for the client's credits behind others (the pieces of a
    /// long continued reply) would otherwise leave credits the client
    /// needs unreturned until the next one, and the client, which may
    /// send just one credit grant beyond our limit, can wait for them
    /// for good while we wait for its grant (a stall of continued
    /// Calls and replies in flight at once). With
    /// `--grant prompt` messages are built returning only what they must
    /// (an answer its Call's credit, [`ConnProto::credit_word`]), so
    /// that the spare credits go with whichever message leaves first,
    /// never with one that waits behind others. Returns 0 for version 1
    /// and the other grant patterns (whose returns are the point of them).
    pub fn top_up(&mut self, room: u16) -> u16 {
        if self.version != Some(Protocol::V2)
            || self.opts.grant != GrantMode::Prompt
            || self.opts.credit_word != CreditWord::Ours
        {
            return 0;
        }
        let n = u16::try_from(self.spare()).unwrap_or(u16::MAX).min(room);
        self.unreturned = self.unreturned.saturating_sub(u32::from(n));
        n
    }

    /// Credits owed that no answer will return.
    fn spare(&self) -> u32 {
        self.unreturned.saturating_sub(self.unanswered)
    }

    /// An asynchronous credit grant (`RDMA2_NOMSG`, XID 0, empty chunk
    /// lists) returning `n` spare credits; with `--grant prompt` built
    /// returning none: it returns what is spare when it leaves
    /// ([`ConnProto::top_up`], [`ConnProto::grant_leaving`]).
    fn grant_msg(&mut self, n: u32) -> Vec<u8> {
        let n = if self.opts.grant == GrantMode::Prompt {
            self.grant_queued = true;
            0
        } else {
            n.min(self.spare()).max(1)
        };
        self.unreturned = self.unreturned.saturating_sub(n);
        let spec = MsgSpec {
            xid: 0,
            credit: self.v2_word(u16::try_from(n).unwrap_or(u16::MAX)),
            kind: MsgKind::NoMsg,
            flags: Flags::NONE,
            inv_handle: 0,
            chunks: ChunkLists::EMPTY,
        };
        let mut buf = vec![0u8; 64];
        let len = header::encode_msg(&mut buf, Protocol::V2, &spec).unwrap_or(0);
        buf.truncate(len);
        buf
    }

    /// A credit grant is about to leave (the client's credits allow it):
    /// false if it is not to be sent. With `--grant prompt` it was built
    /// returning nothing and leaves returning what is spare now (its word
    /// topped up, [`ConnProto::top_up`]); when other messages returned
    /// that meanwhile, it would return nothing and is dropped. Counts the
    /// grants sent.
    pub fn grant_leaving(&mut self, stats: &mut Stats) -> bool {
        if self.opts.grant == GrantMode::Prompt {
            self.grant_queued = false;
            if self.spare() == 0 {
                return false;
            }
        }
        stats.grants_sent += 1;
        true
    }

    /// A credit grant for when our messages wait for the client's
    /// credits (the server found the head of its queue blocked and no
    /// grant queued): all spare credits, whatever [`GrantMode`] would
    /// hold back (`lazy` waits for four). The client may be out of our
    /// credits with its one grant beyond our limit spent, and the
    /// credits it needs to send what returns its own would otherwise
    /// wait with our queued messages: both sides stalled for good (a
    /// continued Call and continued replies from eight RPCs in flight,
    /// `rpcrdma2-v2-continuation` through `--grant lazy`). `None` when
    /// nothing is spare (or, with `--grant prompt`, a grant that takes
    /// it when it leaves is queued already).
    pub fn blocked_grant(&mut self) -> Option<Vec<u8>> {
        let spare = self.spare();
        if self.version != Some(Protocol::V2) || spare == 0 {
            return None;
        }
        if self.opts.grant == GrantMode::Prompt && self.grant_queued {
            return None;
        }
        Some(self.grant_msg(spare))
    }

    /// The asynchronous credit grants due after a received message, by
    /// [`GrantMode`].
    pub(super) fn grants_due(&mut self) -> Vec<Action> {
        if self.version != Some(Protocol::V2) {
            return Vec::new();
        }
        let spare = self.spare();
        let credits = u32::from(self.opts.credits.max(1));
        let mut out = Vec::new();
        match self.opts.grant {
            GrantMode::Prompt => {
                // one grant queued at a time: it returns all that is
                // spare when it leaves
                if self.cont.is_some() && !self.grant_queued && spare >= credits.div_ceil(2) {
                    out.push(Action::Send(self.grant_msg(spare)));
                }
            }
            GrantMode::Exact => {
                for _ in 0..spare {
                    out.push(Action::Send(self.grant_msg(1)));
                }
            }
            GrantMode::Lazy => {
                if spare >= LAZY_GRANT.min(credits) {
                    out.push(Action::Send(self.grant_msg(spare)));
                }
            }
        }
        out
    }

    /// The credit word for our next message. `answers`: the message
    /// answers an admitted Call (a reply, or an error for it).
    ///
    /// Version 2 (Documentation/wire-formats.rst): high half the credit
    /// limit; low half the credits returned. Every Receive is reposted
    /// before its message is processed, so each received message is a
    /// credit to return, exactly once: an answer returns its Call's credit
    /// plus those of the messages no answer will return (continuation
    /// pieces, grants, CONNPROP, messages answered by nothing); a message
    /// that answers nothing returns only the latter, which may be none: a
    /// zero low half (§4.3.1 forbids a zero limit, not a zero return;
    /// returning credits ahead of their messages would let a requester
    /// that clamps returns at what it has outstanding starve when the
    /// advance was withheld later).
    ///
    /// With `--grant prompt` (the default) the word is built returning
    /// only the answered Call's credit (an answer) or none: the spare
    /// credits are added when the message leaves the queue to the client
    /// ([`ConnProto::top_up`]). A message waits there for the client's
    /// credits behind the others; built with the spare credits, one that
    /// waited behind pieces of another reply (the first piece of a
    /// continued reply, an asynchronous grant) held them while the
    /// pieces ahead of it, sent as the client's credits came, returned
    /// nothing, and a client out of credits in the middle of a continued
    /// Call waited for them for good (rpcrdma2-v2-continuation's eight
    /// 256 KiB RPCs in flight stalled until rpcrdma2's RPC timeout).
    ///
    /// With `--grant exact` or `lazy` every answer returns exactly its
    /// Call's credit and another message at most one spare credit; the
    /// rest go in asynchronous grants ([`GrantMode`]).
    pub fn credit_word(&mut self, answers: bool) -> u32 {
        match self.version {
            Some(Protocol::V2) => {
                if answers {
                    self.unanswered = self.unanswered.saturating_sub(1);
                }
                let spare = self.unreturned.saturating_sub(self.unanswered);
                let owed = match (self.opts.grant, answers) {
                    // the spare ones when it leaves (`top_up`)
                    (GrantMode::Prompt, true) => 1,
                    (GrantMode::Prompt, false) => 0,
                    (_, true) => 1,
                    (_, false) => spare.min(1),
                };
                let granted = u16::try_from(owed).unwrap_or(u16::MAX);
                self.unreturned = self.unreturned.saturating_sub(u32::from(granted));
                self.v2_word(granted)
            }
            _ => u32::from(self.opts.credits),
        }
    }

    /// The credit word of a version 2 `RDMA2_ERROR`: its receiver ignores
    /// the word and counts the message as returning exactly one credit
    /// (the requester's reading, Documentation/wire-formats.rst), so that
    /// is what it returns here, whatever is owed.
    pub(super) fn error_credit_word(&mut self, answers: bool) -> u32 {
        if answers {
            self.unanswered = self.unanswered.saturating_sub(1);
        }
        self.unreturned = self.unreturned.saturating_sub(1);
        self.v2_word(1)
    }

    /// A version 2 credit word returning `granted` credits, in the reading
    /// `--credit-word` selects: ours (high half the limit, low half the
    /// credits returned), or the other plausible reading of -00 §4.3.1,
    /// where the low half is the grant itself (the limit, never zero) and
    /// the high half the same limit (`total`) or zero (`total-zero-max`).
    /// In that reading nothing is "returned": the client learns its limit
    /// from every word, and tells consumed messages from the answers.
    pub(super) fn v2_word(&self, granted: u16) -> u32 {
        let max = self.opts.credits.max(1);
        let c = match self.opts.credit_word {
            CreditWord::Ours => Credits { granted, max },
            CreditWord::Total => Credits { granted: max, max },
            CreditWord::TotalZeroMax => Credits {
                granted: max,
                max: 0,
            },
        };
        c.to_word()
    }

    /// Forgets an admitted Call that will get no answer (a dropped reply).
    pub fn forget_call(&mut self) {
        self.unanswered = self.unanswered.saturating_sub(1);
    }
}
