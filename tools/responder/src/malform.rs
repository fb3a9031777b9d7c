// SPDX-License-Identifier: GPL-2.0

//! The catalogue of malformed replies (`--malform-nth N:KIND`): each kind
//! rewrites the planned reply of the Nth RPC into a message a requester
//! must reject (with a clean RPC error or a reconnect, never a crash).

#![forbid(unsafe_code)]

use crate::proto::ReplyPlan;

macro_rules! kinds {
    ($($v:ident = $s:literal: $doc:literal,)*) => {
        /// A malformation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kind { $(#[doc = $doc] $v,)* }

        impl Kind {
            /// Every kind, with its command-line name and description.
            pub const ALL: &'static [(Kind, &'static str, &'static str)] = &[$((Kind::$v, $s, $doc),)*];

            /// Looks a kind up by name.
            pub fn parse(s: &str) -> Option<Kind> {
                Self::ALL.iter().find(|k| k.1 == s).map(|k| k.0)
            }
        }
    };
}

kinds! {
    BadVers = "bad-vers": "rdma_vers 3",
    OtherVers = "other-vers": "the other protocol version's number in rdma_vers",
    ReservedFlag = "reserved-flag": "a reserved rdma_flags bit (0x100) set",
    NoResponseFlag = "no-response-flag": "F_RESPONSE cleared on a reply",
    MoreOnNomsg = "more-on-nomsg": "RDMA2_NOMSG with F_MORE",
    MoreWithChunks = "more-with-chunks": "F_MORE on the final message (with its chunk lists)",
    UnknownHtype = "unknown-htype": "header type 7",
    ObsoleteHtype = "obsolete-htype": "header type 2 (v1 RDMA_MSGP)",
    TruncPrefix = "trunc-prefix": "message cut to 12 bytes",
    TruncHeader = "trunc-header": "message cut inside the chunk lists (24 bytes)",
    BadDiscriminant = "bad-discriminant": "read-list discriminant 2",
    ReadListInReply = "read-list-in-reply": "a Read list in a reply",
    WriteCountOverrun = "write-count-overrun": "a Write chunk whose segment count runs past the message",
    CreditZero = "credit-zero": "credit word 0",
    CreditMaxZero = "credit-max-zero": "credit limit (high half) 0",
    XidMismatch = "xid-mismatch": "rdma_xid that matches no Call",
    RpcXidMismatch = "rpc-xid-mismatch": "RPC XID differs from rdma_xid",
    EmptyNomsg = "empty-nomsg": "RDMA_NOMSG with no chunks and a non-zero XID",
    MsgNoPayload = "msg-no-payload": "RDMA_MSG with no RPC message",
    ErrUnknownCode = "err-unknown-code": "RDMA2_ERROR with code 99",
    ErrTrailing = "err-trailing": "RDMA2_ERROR / ERR_CHUNK with trailing bytes",
    ErrVersSettled = "err-vers-settled": "ERR_VERS on a settled connection",
    ConnpropBad = "connprop-bad": "RDMA2_CONNPROP with a property length overrun",
    WriteLonger = "write-longer": "a returned Write/Reply segment longer than offered",
    ForeignInv = "foreign-inv": "Send With Invalidate of an rkey the Call did not name",
    Duplicate = "duplicate": "the reply sent twice",
    ExtraGrantZero = "extra-grant-zero": "an extra credit grant (NOMSG, XID 0) with credit 0",
    ReverseGarbage = "reverse-garbage": "a reverse-direction RDMA_MSG with a garbage RPC",
}

fn set(b: &mut Vec<u8>, i: usize, v: u32) {
    let at = i * 4;
    if b.len() < at + 4 {
        b.resize(at + 4, 0);
    }
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn get(b: &[u8], i: usize) -> u32 {
    crate::nfs::word_at(b, i * 4).unwrap_or(0)
}

/// Rewrites `plan` (its last Send: the reply itself) as `kind` says.
pub fn apply(kind: Kind, plan: &mut ReplyPlan) {
    let Some(mut m) = plan.sends.pop() else {
        return;
    };
    let v2 = get(&m, 1) == 2;
    let flags_at = 4usize; // v2 flags word index
    let lists_at = if v2 { 6 } else { 4 }; // first read-list discriminant
    let xid = get(&m, 0);
    match kind {
        Kind::BadVers => set(&mut m, 1, 3),
        Kind::OtherVers => set(&mut m, 1, if v2 { 1 } else { 2 }),
        Kind::ReservedFlag => {
            let v = get(&m, flags_at) | 0x100;
            set(&mut m, flags_at, v)
        }
        Kind::NoResponseFlag => {
            let v = get(&m, flags_at) & !1;
            set(&mut m, flags_at, v)
        }
        Kind::MoreOnNomsg => {
            set(&mut m, 3, 1);
            {
                let v = get(&m, flags_at) | 2;
                set(&mut m, flags_at, v)
            };
        }
        Kind::MoreWithChunks => {
            let v = get(&m, flags_at) | 2;
            set(&mut m, flags_at, v)
        }
        Kind::UnknownHtype => set(&mut m, 3, 7),
        Kind::ObsoleteHtype => set(&mut m, 3, 2),
        Kind::TruncPrefix => m.truncate(12),
        Kind::TruncHeader => m.truncate(24),
        Kind::BadDiscriminant => set(&mut m, lists_at, 2),
        Kind::ReadListInReply => {
            let at = lists_at * 4;
            let entry: Vec<u8> = [1u32, 0, 0x1234, 4096, 0, 0]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            if m.len() >= at {
                m.splice(at..at, entry);
            }
        }
        Kind::WriteCountOverrun => {
            let at = (lists_at + 1) * 4;
            let w: Vec<u8> = [1u32, 0x0fff_ffff]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            if m.len() >= at {
                m.splice(at..at, w);
            }
        }
        Kind::CreditZero => set(&mut m, 2, 0),
        Kind::CreditMaxZero => {
            let v = get(&m, 2) & 0xffff;
            set(&mut m, 2, v)
        }
        Kind::XidMismatch => set(&mut m, 0, xid ^ 0x8000_0000),
        Kind::RpcXidMismatch => {
            let hl = m.len().saturating_sub(4);
            // first payload word follows the chunk lists: find it by the
            // RPC XID value
            if let Some(i) = (0..hl / 4).skip(1).find(|&i| get(&m, i) == xid) {
                set(&mut m, i, xid ^ 1);
            }
        }
        Kind::EmptyNomsg => {
            m.truncate((lists_at + 3) * 4);
            set(&mut m, 3, 1);
            for i in lists_at..lists_at + 3 {
                set(&mut m, i, 0);
            }
        }
        Kind::MsgNoPayload => {
            m.truncate((lists_at + 3) * 4);
            set(&mut m, 3, 0);
            for i in lists_at..lists_at + 3 {
                set(&mut m, i, 0);
            }
        }
        Kind::ErrUnknownCode => {
            m.truncate(lists_at * 4 - if v2 { 4 } else { 0 });
            set(&mut m, 3, 4);
            let at = m.len() / 4;
            set(&mut m, at, 99);
        }
        Kind::ErrTrailing => {
            m.truncate(lists_at * 4 - if v2 { 4 } else { 0 });
            set(&mut m, 3, 4);
            let at = m.len() / 4;
            set(&mut m, at, 2);
            set(&mut m, at + 1, 0xdead_beef);
        }
        Kind::ErrVersSettled => {
            m.truncate(lists_at * 4 - if v2 { 4 } else { 0 });
            set(&mut m, 3, 4);
            let at = m.len() / 4;
            set(&mut m, at, 1);
            set(&mut m, at + 1, 1);
            set(&mut m, at + 2, 2);
        }
        Kind::ConnpropBad => {
            m.truncate(20);
            set(&mut m, 0, 0);
            set(&mut m, 1, 2);
            set(&mut m, 3, 5);
            set(&mut m, 4, 0);
            set(&mut m, 5, 1);
            set(&mut m, 6, 1);
            set(&mut m, 7, 0x7fff_ffff);
        }
        Kind::WriteLonger => {
            // bump the first returned segment length found in a list
            let n = m.len() / 4;
            if let Some(i) = (lists_at..n.saturating_sub(1))
                .find(|&i| get(&m, i) == 1 && get(&m, i + 1) > 0 && get(&m, i + 1) < 64)
            {
                // segment: handle at i+2, length at i+3
                {
                    let v = get(&m, i + 3).saturating_add(65536);
                    set(&mut m, i + 3, v)
                };
            }
        }
        Kind::ForeignInv => plan.invalidate = Some(plan.invalidate.unwrap_or(0x1234_5678) ^ 0x100),
        Kind::Duplicate => plan.sends.push(m.clone()),
        Kind::ExtraGrantZero => {
            let g: Vec<u8> = [0u32, 2, 0, 1, 1, 0, 0, 0, 0]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            plan.sends.push(g);
        }
        Kind::ReverseGarbage => {
            let g: Vec<u8> = [
                0x5555_0001u32,
                get(&m, 1),
                get(&m, 2),
                0,
                0,
                0,
                0,
                0,
                0,
                0x5555_0001,
                0,
                0xffff_ffff,
            ]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
            plan.sends.push(g);
        }
    }
    plan.sends.push(m);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse() {
        assert!(Kind::ALL.len() >= 25);
        for (k, name, _) in Kind::ALL {
            assert_eq!(Kind::parse(name), Some(*k));
        }
    }
}
