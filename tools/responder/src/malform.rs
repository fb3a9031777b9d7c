// SPDX-License-Identifier: GPL-2.0

//! The catalogue of malformed replies (`--malform-nth N:KIND`): each kind
//! rewrites the planned reply of the Nth RPC into a message a requester
//! must reject (with a clean RPC error or a reconnect, never a crash).

#![forbid(unsafe_code)]

use crate::proto::reply::ReplyPlan;

macro_rules! kinds {
    ($($v:ident = $s:literal: $doc:literal,)*) => {
        /// A malformation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kind { $(#[doc = $doc] $v,)* }

        impl Kind {
            /// Every kind, with its command-line name and description.
            pub const ALL: &'static [(Kind, &'static str, &'static str)] = &[$((Kind::$v, $s, $doc),)*];

            /// True for the kinds that rewrite a reply's chunk lists:
            /// `--malform-nth` applies them to the first reply from the
            /// Nth on that moves data by RDMA Write.
            pub fn needs_chunks(self) -> bool {
                matches!(self, Kind::MoreWithChunks | Kind::WriteLonger)
            }

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
    ContXidChange = "cont-xid-change": "a reply continued (F_MORE) whose second piece has another XID",
    ContHtypeChange = "cont-htype-change": "a reply continued (F_MORE) whose second piece is an RDMA2_NOMSG (another header type)",
    ContClose = "cont-close": "the first piece of a continued reply (F_MORE), then the connection closed",
    ContAbandoned = "cont-abandoned": "the first piece of a continued reply (F_MORE), then nothing",
    ContOverlong = "cont-overlong": "a reply continued over 16 pieces of 1 KiB: longer than its receive buffer",
}

/// Length of a v2 RDMA2_MSG header with three empty chunk lists.
const V2_PLAIN_HDR: usize = 36;

/// Splits `m`, a v2 RDMA2_MSG with empty chunk lists, into its header and
/// its RPC message; `None` for any other message.
fn split_plain_v2(m: &[u8]) -> Option<(&[u8], &[u8])> {
    let plain = get(m, 1) == 2 && get(m, 3) == 0 && (6..9).all(|i| get(m, i) == 0);
    (plain && m.len() >= V2_PLAIN_HDR).then(|| m.split_at(V2_PLAIN_HDR))
}

/// One piece of a continued reply: `hdr` with XID `xid` and F_MORE set
/// as `more` says, followed by `data`.
fn piece(hdr: &[u8], xid: u32, more: bool, data: &[u8]) -> Vec<u8> {
    let mut p = hdr.to_vec();
    set(&mut p, 0, xid);
    let flags = if more {
        get(hdr, 4) | 2
    } else {
        get(hdr, 4) & !2
    };
    set(&mut p, 4, flags);
    p.extend_from_slice(data);
    p
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
        Kind::ContXidChange
        | Kind::ContHtypeChange
        | Kind::ContClose
        | Kind::ContAbandoned
        | Kind::ContOverlong => {}
    }
    if let Some(pieces) = continued(kind, &m) {
        plan.close_after = kind == Kind::ContClose;
        plan.sends.extend(pieces);
        return;
    }
    plan.sends.push(m);
}

/// The continuation kinds: the pieces that replace `m`, or `None` for the
/// other kinds (and for a message these cannot rewrite, which is then
/// sent as it is: the test sees the fault did nothing).
fn continued(kind: Kind, m: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (hdr, rpc) = split_plain_v2(m)?;
    let xid = get(m, 0);
    let half = (rpc.len() / 2) & !3;
    let (a, b) = rpc.split_at(half);
    match kind {
        Kind::ContXidChange => Some(vec![
            piece(hdr, xid, true, a),
            piece(hdr, xid ^ 1, false, b),
        ]),
        Kind::ContHtypeChange => {
            let mut last = piece(hdr, xid, false, b);
            set(&mut last, 3, 1); // RDMA2_NOMSG, same XID
            Some(vec![piece(hdr, xid, true, a), last])
        }
        Kind::ContAbandoned | Kind::ContClose => Some(vec![piece(hdr, xid, true, a)]),
        Kind::ContOverlong => {
            // The Reply's own first bytes (so that its RPC header checks
            // out), then 16 KiB more than it holds.
            let mut out = vec![piece(hdr, xid, true, rpc)];
            out.extend((0..16).map(|_| piece(hdr, xid, true, &[0u8; 1024])));
            out.push(piece(hdr, xid, false, &[0u8; 4]));
            Some(out)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_reply(xid: u32, rpc_words: usize) -> Vec<u8> {
        let mut m = Vec::new();
        for (i, w) in [xid, 2, (32 << 16) | 1, 0, 1, 0, 0, 0, 0]
            .iter()
            .enumerate()
        {
            set(&mut m, i, *w);
        }
        for i in 0..rpc_words {
            set(&mut m, 9 + i, i as u32);
        }
        m
    }

    fn sent(kind: Kind, m: Vec<u8>) -> Vec<Vec<u8>> {
        let mut plan = ReplyPlan {
            sends: vec![m],
            ..ReplyPlan::default()
        };
        apply(kind, &mut plan);
        plan.sends
    }

    #[test]
    fn continuation_kinds() {
        let m = plain_reply(0x77, 10);
        let s = sent(Kind::ContXidChange, m.clone());
        assert_eq!(s.len(), 2);
        assert_eq!(
            (get(&s[0], 0), get(&s[0], 4)),
            (0x77, 3),
            "F_RESPONSE | F_MORE"
        );
        assert_eq!(
            (get(&s[1], 0), get(&s[1], 4)),
            (0x76, 1),
            "another XID, last"
        );
        assert_eq!([&s[0][36..], &s[1][36..]].concat(), m[36..]);
        let s = sent(Kind::ContHtypeChange, m.clone());
        assert_eq!(s.len(), 2);
        assert_eq!((get(&s[0], 3), get(&s[0], 4)), (0, 3), "RDMA2_MSG, F_MORE");
        assert_eq!(
            (get(&s[1], 0), get(&s[1], 3), get(&s[1], 4)),
            (0x77, 1, 1),
            "same XID, RDMA2_NOMSG, last"
        );
        assert_eq!([&s[0][36..], &s[1][36..]].concat(), m[36..]);
        let mut plan = ReplyPlan {
            sends: vec![m.clone()],
            ..ReplyPlan::default()
        };
        apply(Kind::ContClose, &mut plan);
        assert!(plan.close_after);
        assert_eq!(plan.sends.len(), 1);
        assert_eq!(get(&plan.sends[0], 4), 3, "F_MORE, then the close");
        let s = sent(Kind::ContAbandoned, m.clone());
        assert_eq!(s.len(), 1);
        assert_eq!(get(&s[0], 4), 3);
        let s = sent(Kind::ContOverlong, m.clone());
        assert_eq!(s.len(), 18);
        assert_eq!((&s[0][36..], get(&s[0], 4)), (&m[36..], 3));
        assert!(s[1..17]
            .iter()
            .all(|p| p.len() == 36 + 1024 && get(p, 4) == 3));
        assert_eq!((s[17].len(), get(&s[17], 4)), (40, 1));
        // A message they cannot rewrite (here v1) goes out unchanged.
        let mut v1 = m.clone();
        set(&mut v1, 1, 1);
        assert_eq!(sent(Kind::ContOverlong, v1.clone()), vec![v1]);
    }

    #[test]
    fn names_are_unique_and_parse() {
        assert!(Kind::ALL.len() >= 25);
        for (k, name, _) in Kind::ALL {
            assert_eq!(Kind::parse(name), Some(*k));
        }
    }
}
