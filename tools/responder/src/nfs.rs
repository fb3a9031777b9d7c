// SPDX-License-Identifier: GPL-2.0

//! Just enough ONC RPC and NFS to forward Calls and to find the
//! DDP-eligible data item of a reply (RFC 8166 §6, RFC 8267): the
//! `data` of an NFSv3 READ or READLINK result, and the data of a READ or
//! READLINK that ends an NFSv4 COMPOUND reply (the Linux client always
//! puts READ/READLINK last: SEQUENCE, PUTFH, READ).

#![forbid(unsafe_code)]

use std::ops::Range;

/// ONC RPC program number of NFS.
pub const NFS_PROGRAM: u32 = 100_003;
/// NFSv3 READLINK procedure.
pub const NFS3_READLINK: u32 = 5;
/// NFSv3 READ procedure.
pub const NFS3_READ: u32 = 6;
/// NFSv4 COMPOUND procedure.
pub const NFS4_COMPOUND: u32 = 1;
/// NFSv4 operation READ.
pub const OP_READ: u32 = 25;
/// NFSv4 operation READLINK.
pub const OP_READLINK: u32 = 27;
/// NFSv4.1 operation BIND_CONN_TO_SESSION.
pub const OP_BIND_CONN_TO_SESSION: u32 = 41;
/// NFSv4.1 operation CREATE_SESSION.
pub const OP_CREATE_SESSION: u32 = 43;
/// The callback program the Linux client names in CREATE_SESSION
/// (`NFS4_CALLBACK`).
pub const NFS4_CALLBACK: u32 = 0x4000_0000;
/// CREATE_SESSION flag: use this connection for the backchannel too.
const CREATE_SESSION4_FLAG_CONN_BACK_CHAN: u32 = 0x2;
/// BIND_CONN_TO_SESSION direction bit: the backchannel.
const CDFC4_BACK: u32 = 0x2;
/// RPC message type CALL.
pub const RPC_CALL: u32 = 0;
/// RPC message type REPLY.
pub const RPC_REPLY: u32 = 1;

/// Reads big-endian word at byte offset `at`.
pub fn word_at(b: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    let w = b.get(at..end)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// Rounds `n` up to a multiple of four.
pub fn pad4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// The identifying words of an RPC Call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallHdr {
    /// XID.
    pub xid: u32,
    /// Program.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure.
    pub proc_: u32,
}

/// Parses the start of an RPC Call message (RFC 5531 §9).
pub fn parse_call(call: &[u8]) -> Option<CallHdr> {
    if word_at(call, 4)? != RPC_CALL || word_at(call, 8)? != 2 {
        return None;
    }
    Some(CallHdr {
        xid: word_at(call, 0)?,
        prog: word_at(call, 12)?,
        vers: word_at(call, 16)?,
        proc_: word_at(call, 20)?,
    })
}

/// Byte offset of the procedure results in an accepted, successful RPC
/// reply, or `None`.
pub fn results_offset(reply: &[u8]) -> Option<usize> {
    if word_at(reply, 4)? != RPC_REPLY || word_at(reply, 8)? != 0 {
        return None;
    }
    // verifier: flavor, opaque<400>
    let vlen = usize::try_from(word_at(reply, 16)?).ok()?;
    if vlen > 400 {
        return None;
    }
    let at = 20usize.checked_add(pad4(vlen))?;
    if word_at(reply, at)? != 0 {
        return None; // accept_stat != SUCCESS
    }
    at.checked_add(4)
}

/// The data item of the reply that belongs in the Call's Write chunk, as a
/// byte range of `reply` (without its XDR padding), or `None` if the reply
/// has none. `max` bounds the search (the Write chunk's size).
pub fn ddp_range(call: &CallHdr, reply: &[u8], max: usize) -> Option<Range<usize>> {
    if call.prog != NFS_PROGRAM {
        return None;
    }
    let r = results_offset(reply)?;
    match (call.vers, call.proc_) {
        (3, NFS3_READ) | (3, NFS3_READLINK) => {
            if word_at(reply, r)? != 0 {
                return None;
            }
            let mut at = r.checked_add(4)?;
            // post_op_attr: bool, fattr3 (84 bytes)
            if word_at(reply, at)? != 0 {
                at = at.checked_add(84)?;
            }
            at = at.checked_add(4)?;
            if call.proc_ == NFS3_READ {
                at = at.checked_add(8)?; // count, eof
            }
            let len = usize::try_from(word_at(reply, at)?).ok()?;
            let start = at.checked_add(4)?;
            let end = start.checked_add(len)?;
            (end <= reply.len() && len <= max).then_some(start..end)
        }
        (4, NFS4_COMPOUND) => v4_tail(reply, r, max),
        _ => None,
    }
}

/// Finds a READ or READLINK result that ends a COMPOUND reply: a length
/// word whose opaque ends the message exactly and whose preceding words
/// are `OP_READ, NFS4_OK, eof` or `OP_READLINK, NFS4_OK`. First where a
/// READ that returned all `max` bytes (the Write chunk's size: what the
/// client asked for) has it, then the candidates from the end (bounded by
/// `max`): a scan costs a look per word of data (a 1 MiB READ that came
/// back short: 262144), the first look one.
fn v4_tail(reply: &[u8], results: usize, max: usize) -> Option<Range<usize>> {
    let n = reply.len();
    if !n.is_multiple_of(4) || n < results.checked_add(16)? {
        return None;
    }
    let low = results.checked_add(8)?;
    if let Some(p) = n.checked_sub(pad4(max)).and_then(|x| x.checked_sub(4)) {
        if p >= low {
            if let Some(r) = v4_tail_at(reply, p, max) {
                return Some(r);
            }
        }
    }
    let mut p = n.checked_sub(4)?;
    loop {
        let room = n - 4 - p; // bytes after the length word
        if room > pad4(max) || p < low {
            return None;
        }
        if let Some(r) = v4_tail_at(reply, p, max) {
            return Some(r);
        }
        p = p.checked_sub(4)?;
    }
}

/// The READ or READLINK result data of `v4_tail` if its length word is at
/// `p` (at least 12 bytes into `reply`).
fn v4_tail_at(reply: &[u8], p: usize, max: usize) -> Option<Range<usize>> {
    let room = reply.len().checked_sub(p)?.checked_sub(4)?;
    let len = usize::try_from(word_at(reply, p)?).ok()?;
    if pad4(len) != room || len > max {
        return None;
    }
    let w = |back: usize| p.checked_sub(back).and_then(|a| word_at(reply, a));
    let read = w(12) == Some(OP_READ) && w(8) == Some(0) && matches!(w(4), Some(0 | 1));
    let link = w(8) == Some(OP_READLINK) && w(4) == Some(0);
    (read || link).then(|| p + 4..p + 4 + len)
}

/// Byte offset of the procedure arguments of RPC Call `call` (after the
/// credential and the verifier).
fn args_offset(call: &[u8]) -> Option<usize> {
    let mut at = 24usize; // xid, mtype, rpcvers, prog, vers, proc
    for _ in 0..2 {
        let len = usize::try_from(word_at(call, at.checked_add(4)?)?).ok()?;
        if len > 400 {
            return None;
        }
        at = at.checked_add(8)?.checked_add(pad4(len))?;
    }
    Some(at)
}

/// If `call` is an NFSv4.1+ COMPOUND whose first operation gives the
/// connection it arrives on a session's backchannel (CREATE_SESSION with
/// `CONN_BACK_CHAN`, or BIND_CONN_TO_SESSION with the backchannel
/// direction), the callback program to probe: CREATE_SESSION's
/// `csa_cb_program`, or [`NFS4_CALLBACK`] for BIND_CONN_TO_SESSION.
pub fn backchannel_request(call: &[u8]) -> Option<u32> {
    let h = parse_call(call)?;
    if h.prog != NFS_PROGRAM || h.vers != 4 || h.proc_ != NFS4_COMPOUND {
        return None;
    }
    let mut at = args_offset(call)?;
    let tag = usize::try_from(word_at(call, at)?).ok()?;
    at = at.checked_add(4)?.checked_add(pad4(tag))?;
    if word_at(call, at)? == 0 || word_at(call, at.checked_add(4)?)? == 0 {
        return None; // minor version 0, or no operation
    }
    at = at.checked_add(8)?;
    match word_at(call, at)? {
        OP_BIND_CONN_TO_SESSION => {
            // sessionid (16 bytes), dir, use_rdma
            let dir = word_at(call, at.checked_add(20)?)?;
            (dir & CDFC4_BACK != 0).then_some(NFS4_CALLBACK)
        }
        OP_CREATE_SESSION => {
            // clientid (8 bytes), sequence, flags
            let flags = word_at(call, at.checked_add(16)?)?;
            if flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN == 0 {
                return None;
            }
            // fore and back channel_attrs4: six words and rdma_ird<1>
            let mut p = at.checked_add(20)?;
            for _ in 0..2 {
                let n = usize::try_from(word_at(call, p.checked_add(24)?)?).ok()?;
                if n > 1 {
                    return None;
                }
                p = p.checked_add(28)?.checked_add(4 * n)?;
            }
            word_at(call, p)
        }
        _ => None,
    }
}

/// True if `reply` is an accepted, successful RPC reply whose results
/// start with status 0 (an NFSv4 COMPOUND that succeeded, or a NULL
/// procedure's empty result counts too when `status` is false).
pub fn reply_ok(reply: &[u8], status: bool) -> bool {
    match results_offset(reply) {
        Some(r) if status => word_at(reply, r) == Some(0),
        Some(_) => true,
        None => false,
    }
}

/// The RPC Call of a NULL procedure (AUTH_NONE) of `prog`, version
/// `vers`: a CB_NULL probe when `prog` is a callback program.
pub fn null_call(xid: u32, prog: u32, vers: u32) -> Vec<u8> {
    [xid, RPC_CALL, 2, prog, vers, 0, 0, 0, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect()
}

/// Splits a TCP byte stream into RPC records (RFC 5531 §11 record
/// marking). Returns complete records and leaves the rest in `buf`.
/// `Err` when a record is larger than `max`.
pub fn take_records(buf: &mut Vec<u8>, max: usize) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut rec: Vec<u8> = Vec::new();
    let mut at = 0usize;
    let mut consumed = 0usize;
    while let Some(mark) = word_at(buf, at) {
        let len = (mark & 0x7fff_ffff) as usize;
        if rec.len().saturating_add(len) > max {
            return Err(rec.len().saturating_add(len));
        }
        let start = at + 4;
        let Some(end) = start.checked_add(len) else {
            break;
        };
        if end > buf.len() {
            break;
        }
        rec.extend_from_slice(&buf[start..end]);
        at = end;
        if mark & 0x8000_0000 != 0 {
            out.push(std::mem::take(&mut rec));
            consumed = at;
        }
    }
    buf.drain(..consumed);
    Ok(out)
}

/// The whole single-fragment records at the start of `buf`: their byte
/// ranges (without the record marks) and how many bytes they take. Stops
/// at an incomplete record or at one of several fragments (for
/// [`take_records`] to reassemble); `Err(len)` for a record longer than
/// `max`.
pub fn whole_records(buf: &[u8], max: usize) -> Result<(Vec<Range<usize>>, usize), usize> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(mark) = word_at(buf, at) {
        let len = (mark & 0x7fff_ffff) as usize;
        if len > max {
            return Err(len);
        }
        if mark & 0x8000_0000 == 0 {
            break;
        }
        let start = at + 4;
        let Some(end) = start.checked_add(len) else {
            break;
        };
        if end > buf.len() {
            break;
        }
        out.push(start..end);
        at = end;
    }
    Ok((out, at))
}

/// Prepends the RPC record mark (one last fragment) to `msg`.
pub fn record(msg: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(msg.len() + 4);
    v.extend_from_slice(&(0x8000_0000u32 | msg.len() as u32).to_be_bytes());
    v.extend_from_slice(msg);
    v
}

/// CB_COMPOUND, procedure 1 of the callback program (RFC 8881 §20).
pub const CB_COMPOUND: u32 = 1;
/// CB_NOTIFY_LOCK (RFC 8881 §20.11).
pub const OP_CB_NOTIFY_LOCK: u32 = 13;
/// One CB_NOTIFY_LOCK with an empty file handle and an empty lock owner:
/// the Linux client decodes it, finds no lock waiter to wake and answers
/// NFS4_OK (`nfs4_callback_notify_lock`).
const PAD_OP: [u32; 5] = [OP_CB_NOTIFY_LOCK, 0, 0, 0, 0];
/// Bytes of one padding operation's result: `resop`, `status`.
pub const PAD_RESULT_LEN: usize = 8;

/// Offset of the `argarray` count of CB_COMPOUND Call `call`, or `None`
/// if it is not one (callback program [`NFS4_CALLBACK`], version 1).
fn cb_nops_offset(call: &[u8]) -> Option<usize> {
    let h = parse_call(call)?;
    if h.prog != NFS4_CALLBACK || h.vers != 1 || h.proc_ != CB_COMPOUND {
        return None;
    }
    let at = args_offset(call)?;
    let tag = usize::try_from(word_at(call, at)?).ok()?;
    // tag, minorversion, callback_ident
    let at = at.checked_add(4)?.checked_add(pad4(tag))?.checked_add(8)?;
    word_at(call, at).map(|_| at)
}

/// `call` with `n` `PAD_OP`s (CB_NOTIFY_LOCK, empty owner) appended to its operations (they are the
/// last item of a CB_COMPOUND), and the number of operations it had; or
/// `None` if it is not a CB_COMPOUND. The reply grows by
/// [`PAD_RESULT_LEN`] bytes an operation, which
/// [`strip_cb_padding`] takes off again.
pub fn pad_cb_compound(call: &[u8], n: u32) -> Option<(Vec<u8>, u32)> {
    let at = cb_nops_offset(call)?;
    let nops = word_at(call, at)?;
    let mut out = call.to_vec();
    out[at..at + 4].copy_from_slice(&nops.checked_add(n)?.to_be_bytes());
    for _ in 0..n {
        out.extend(PAD_OP.iter().flat_map(|w| w.to_be_bytes()));
    }
    Some((out, nops))
}

/// What [`strip_cb_padding`] found in a padded CB_COMPOUND's reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stripped {
    /// Every padding operation answered NFS4_OK: the reply as it would
    /// have been without them.
    Clean(Vec<u8>),
    /// An operation of the original Call failed, so none of the padding
    /// ran: the reply as it came.
    NotReached(Vec<u8>),
    /// A padding operation's result is missing, malformed or not
    /// NFS4_OK: the reply with whatever results of them there are taken
    /// off, the status set to NFS4_OK (the original operations all
    /// succeeded, or the padding would not have run).
    Failed(Vec<u8>),
}

/// Takes the results of the padding operations off `reply`, the reply to
/// a CB_COMPOUND [`pad_cb_compound`] padded from `nops` operations:
/// they are the last [`PAD_RESULT_LEN`]-byte results, after the
/// original operations'. `None` if `reply` is not an accepted reply with
/// a CB_COMPOUND4res.
pub fn strip_cb_padding(reply: &[u8], nops: u32) -> Option<Stripped> {
    let res = results_offset(reply)?;
    let tag = usize::try_from(word_at(reply, res.checked_add(4)?)?).ok()?;
    let count_at = res.checked_add(8)?.checked_add(pad4(tag))?;
    let count = word_at(reply, count_at)?;
    if count <= nops {
        return Some(Stripped::NotReached(reply.to_vec()));
    }
    let extra = usize::try_from(count - nops).ok()?;
    let tail = extra.checked_mul(PAD_RESULT_LEN)?;
    let cut = reply.len().checked_sub(tail).filter(|&c| c > count_at)?;
    let clean = reply[cut..]
        .chunks(PAD_RESULT_LEN)
        .all(|r| word_at(r, 0) == Some(OP_CB_NOTIFY_LOCK) && word_at(r, 4) == Some(0));
    let mut out = reply[..cut].to_vec();
    out[count_at..count_at + 4].copy_from_slice(&nops.to_be_bytes());
    out[res..res + 4].copy_from_slice(&0u32.to_be_bytes());
    Some(if clean {
        Stripped::Clean(out)
    } else {
        Stripped::Failed(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    fn reply_hdr(xid: u32) -> Vec<u8> {
        words(&[xid, 1, 0, 0, 0, 0])
    }

    #[test]
    fn v3_read_payload() {
        let call = CallHdr {
            xid: 7,
            prog: NFS_PROGRAM,
            vers: 3,
            proc_: NFS3_READ,
        };
        let mut r = reply_hdr(7);
        r.extend(words(&[0, 1]));
        r.extend(vec![0u8; 84]);
        r.extend(words(&[5, 1, 5]));
        let start = r.len();
        r.extend(b"hello\0\0\0");
        assert_eq!(ddp_range(&call, &r, 8192), Some(start..start + 5));
        assert_eq!(ddp_range(&call, &r, 4), None);
    }

    #[test]
    fn v4_read_and_readlink_tail() {
        let call = CallHdr {
            xid: 9,
            prog: NFS_PROGRAM,
            vers: 4,
            proc_: NFS4_COMPOUND,
        };
        let mut r = reply_hdr(9);
        // status, tag<>, 3 results: SEQUENCE(53) ok + body, PUTFH(22) ok, READ
        r.extend(words(&[0, 0, 3, 53, 0]));
        r.extend(vec![0u8; 36]);
        r.extend(words(&[22, 0, OP_READ, 0, 1, 6]));
        let start = r.len();
        r.extend(b"abcdef\0\0");
        assert_eq!(ddp_range(&call, &r, 1 << 20), Some(start..start + 6));
        // the Write chunk's size exactly (the first look), and its padded
        // size (6 bytes padded to 8: the same first place)
        assert_eq!(ddp_range(&call, &r, 6), Some(start..start + 6));
        assert_eq!(ddp_range(&call, &r, 7), Some(start..start + 6));
        assert_eq!(ddp_range(&call, &r, 5), None);
        // a full-size READ whose data looks like a READ result ending the
        // message (OP_READ, OK, eof, 4, "wxyz"): the outer one is found
        let mut f = reply_hdr(9);
        f.extend(words(&[0, 0, 3, 53, 0]));
        f.extend(vec![0u8; 36]);
        f.extend(words(&[22, 0, OP_READ, 0, 1, 20]));
        let fs = f.len();
        f.extend(words(&[OP_READ, 0, 1, 4]));
        f.extend(b"wxyz");
        assert_eq!(ddp_range(&call, &f, 20), Some(fs..fs + 20));
        let mut l = reply_hdr(9);
        l.extend(words(&[0, 0, 3, 53, 0]));
        l.extend(vec![0u8; 36]);
        l.extend(words(&[22, 0, OP_READLINK, 0, 4]));
        let s2 = l.len();
        l.extend(b"link");
        assert_eq!(ddp_range(&call, &l, 1 << 20), Some(s2..s2 + 4));
        // a GETATTR-ending reply has none
        let mut g = reply_hdr(9);
        g.extend(words(&[0, 0, 1, 9, 0, 1, 0, 0]));
        assert_eq!(ddp_range(&call, &g, 1 << 20), None);
    }

    #[test]
    fn records() {
        let mut b = Vec::new();
        b.extend(words(&[0x0000_0004, 1, 0x8000_0004, 2, 0x8000_0008]));
        b.extend(words(&[3]));
        let recs = take_records(&mut b, 1 << 20).unwrap();
        assert_eq!(recs, vec![words(&[1, 2])]);
        assert_eq!(b, words(&[0x8000_0008, 3]));
        b.extend(words(&[4]));
        assert_eq!(take_records(&mut b, 1 << 20).unwrap(), vec![words(&[3, 4])]);
        assert!(b.is_empty());
        let mut big = words(&[0x8100_0000]);
        assert!(take_records(&mut big, 1 << 20).is_err());
    }

    #[test]
    fn whole_records_in_place() {
        // two whole records, then a first fragment and a partial record
        let mut b = words(&[0x8000_0004, 1, 0x8000_0008, 2, 3, 0x0000_0004, 4]);
        let (r, used) = whole_records(&b, 1 << 20).unwrap();
        assert_eq!(r, vec![4..8, 12..20]);
        assert_eq!(used, 20);
        b.truncate(b.len() - 8);
        b.extend_from_slice(&words(&[0x8000_0008, 5]));
        let (r, used) = whole_records(&b, 1 << 20).unwrap();
        assert_eq!((r.len(), used), (2, 20));
        assert_eq!(whole_records(&words(&[0x8000_0100]), 16), Err(256));
        assert_eq!(whole_records(&[0, 0], 16), Ok((vec![], 0)));
    }

    fn compound(minor: u32, ops: &[u32]) -> Vec<u8> {
        // AUTH_UNIX credential of 8 bytes, AUTH_NONE verifier, tag "ab"
        let mut c = words(&[
            0x55,
            RPC_CALL,
            2,
            NFS_PROGRAM,
            4,
            NFS4_COMPOUND,
            1,
            8,
            7,
            0,
            0,
            0,
        ]);
        c.extend(words(&[2]));
        c.extend(b"ab\0\0");
        c.extend(words(&[minor, 1]));
        c.extend(words(ops));
        c
    }

    #[test]
    fn backchannel_requests() {
        let attrs = |ird: &[u32]| {
            let mut v = vec![0, 1, 2, 3, 4, 5, ird.len() as u32];
            v.extend_from_slice(ird);
            v
        };
        let mut cs = vec![OP_CREATE_SESSION, 1, 2, 1, 3];
        cs.extend(attrs(&[]));
        cs.extend(attrs(&[4]));
        cs.push(0x4000_0007);
        assert_eq!(backchannel_request(&compound(1, &cs)), Some(0x4000_0007));
        // without CONN_BACK_CHAN, or in NFSv4.0: none
        cs[4] = 1;
        assert_eq!(backchannel_request(&compound(1, &cs)), None);
        cs[4] = 3;
        assert_eq!(backchannel_request(&compound(0, &cs)), None);
        // truncated: none
        let c = compound(1, &cs);
        assert_eq!(backchannel_request(&c[..c.len() - 4]), None);
        let bind = |dir| {
            let mut b = vec![OP_BIND_CONN_TO_SESSION, 1, 2, 3, 4, dir, 0];
            b.truncate(7);
            compound(1, &b)
        };
        assert_eq!(backchannel_request(&bind(3)), Some(NFS4_CALLBACK));
        assert_eq!(backchannel_request(&bind(1)), None);
        assert_eq!(backchannel_request(&compound(1, &[53, 0, 0])), None);
    }

    #[test]
    fn null_call_and_reply_status() {
        let c = null_call(9, NFS4_CALLBACK, 1);
        let h = parse_call(&c).unwrap();
        assert_eq!((h.xid, h.prog, h.vers, h.proc_), (9, NFS4_CALLBACK, 1, 0));
        assert_eq!(args_offset(&c), Some(c.len()));
        let ok = words(&[9, RPC_REPLY, 0, 0, 0, 0]);
        assert!(reply_ok(&ok, false));
        assert!(!reply_ok(&ok, true));
        let mut good = ok.clone();
        good.extend(words(&[0]));
        assert!(reply_ok(&good, true));
        // accept_stat PROG_UNAVAIL, and a denied reply
        assert!(!reply_ok(&words(&[9, RPC_REPLY, 0, 0, 0, 1]), false));
        assert!(!reply_ok(&words(&[9, RPC_REPLY, 1, 0, 2, 2]), false));
    }

    /// A CB_COMPOUND as nfsd sends a CB_RECALL: AUTH_SYS-like credential,
    /// empty tag, minor version 1, CB_SEQUENCE and CB_RECALL (shortened).
    fn cb_compound(xid: u32) -> Vec<u8> {
        words(&[
            xid,
            RPC_CALL,
            2,
            NFS4_CALLBACK,
            1,
            CB_COMPOUND, // header
            1,
            8,
            0xaaaa,
            0xbbbb, // credential
            0,
            0, // verifier
            0,
            1,
            0, // tag, minorversion, callback_ident
            2, // argarray count
            11,
            7, // CB_SEQUENCE (shortened)
            4,
            9, // CB_RECALL (shortened)
        ])
    }

    fn cb_reply(xid: u32, status: u32, results: &[u32]) -> Vec<u8> {
        let mut r = reply_hdr(xid);
        r.extend(words(&[status, 0, (results.len() / 2) as u32]));
        r.extend(words(results));
        r
    }

    #[test]
    fn cb_compound_is_padded_and_its_reply_stripped() {
        let call = cb_compound(5);
        let (padded, nops) = pad_cb_compound(&call, 3).unwrap();
        assert_eq!(nops, 2);
        assert_eq!(padded.len(), call.len() + 3 * 20);
        assert_eq!(word_at(&padded, 60), Some(5)); // argarray count
        assert_eq!(&padded[..60], &call[..60]);
        assert_eq!(&padded[call.len()..call.len() + 20], &words(&PAD_OP)[..]);
        // Not a CB_COMPOUND: a CB_NULL, an NFS COMPOUND.
        assert_eq!(pad_cb_compound(&null_call(5, NFS4_CALLBACK, 1), 3), None);
        let mut nfs = call.clone();
        nfs[12..16].copy_from_slice(&NFS_PROGRAM.to_be_bytes());
        assert_eq!(pad_cb_compound(&nfs, 3), None);

        let orig = cb_reply(5, 0, &[11, 0, 4, 0]);
        let padded = cb_reply(5, 0, &[11, 0, 4, 0, 13, 0, 13, 0, 13, 0]);
        assert_eq!(
            strip_cb_padding(&padded, 2),
            Some(Stripped::Clean(orig.clone()))
        );
        // CB_RECALL failed: the padding never ran.
        let failed = cb_reply(5, 10008, &[11, 0, 4, 10008]);
        assert_eq!(
            strip_cb_padding(&failed, 2),
            Some(Stripped::NotReached(failed.clone()))
        );
        // The second padding operation failed: the third never ran.
        let bad = cb_reply(5, 10001, &[11, 0, 4, 0, 13, 0, 13, 10001]);
        assert_eq!(strip_cb_padding(&bad, 2), Some(Stripped::Failed(orig)));
        // Not a reply, or cut short.
        assert_eq!(strip_cb_padding(&call, 2), None);
        assert_eq!(strip_cb_padding(&padded[..40], 2), None);
    }
}
