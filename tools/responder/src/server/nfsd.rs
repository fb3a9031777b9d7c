// SPDX-License-Identifier: GPL-2.0

//! Calls on their way to nfsd: a request slot, the Read chunks pulled by
//! RDMA Read and spliced, the Call forwarded over TCP; and the records
//! nfsd sends back (replies, and callback Calls to relay), with the reply
//! fault switches (drop, delay).

use std::io::{self, IoSlice, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rustix::net;

use super::out_records::Sink;
use super::{wr, Delayed, Server, Slot, K_READ, TCP_READ, ZEROS};
use crate::nfs::{self, CallHdr};
use crate::proto::call::{Call, Part};
use crate::proto::log;
use crate::splice::PageSender;
use crate::verbs::SendOp;

impl Server {
    pub(super) fn start_call(&mut self, k: usize, mut call: Call) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(s) = c.free.pop() else {
            c.waiting.push_back(call);
            return;
        };
        if call.reads.is_empty() {
            // forwarded as it is: not copied (only Read chunks are
            // spliced into `inline`, and this Call has none)
            let inline = std::mem::take(&mut call.inline);
            c.slots[s] = Some(Slot {
                call,
                hdr: None,
                bc_prog: None,
            });
            self.forward(k, s, inline);
            return;
        }
        self.stats.read_chunk_calls += 1;
        if call.reads.first().is_some_and(|r| r.position == 0) {
            self.stats.position_zero_calls += 1;
        }
        let base = self.layout.data_off(s);
        let mut ops = Vec::new();
        let mut at = 0usize;
        let n = call.reads.len();
        for (i, r) in call.reads.iter().enumerate() {
            let len = r.target.length as usize;
            ops.push(SendOp::Read {
                off: base + at,
                len,
                rkey: r.target.handle,
                addr: r.target.offset,
                signal: (i + 1 == n).then_some(wr(K_READ, s)),
            });
            at += len;
        }
        self.stats.bytes_read_chunk += at as u64;
        let xid = call.xid;
        c.slots[s] = Some(Slot {
            call,
            hdr: None,
            bc_prog: None,
        });
        if at > self.layout.data_size() {
            self.fail_call(k, s, xid, rpcrdma_xdr::v2::ERR_SYSTEM);
            return;
        }
        c.queue(&ops);
    }

    pub(super) fn read_done(&mut self, k: usize, s: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_ref() else {
            return;
        };
        let base = self.layout.data_off(s);
        let total = slot.call.read_len() as usize;
        // Written to nfsd from where the RDMA Reads put the data (the
        // slot's data area, unchanged while the Call is queued for nfsd:
        // `OutRecords::holds`), with the inline parts around it: no copy.
        // Joined into one message only for --probe-callbacks, which reads
        // the whole Call.
        let parts = slot.call.splice_parts(total);
        let joined = if c.proto.opts.probe_callbacks || c.proto.opts.continued_reverse_call {
            slot.call.splice(&c.qp.buf()[base..base + total])
        } else {
            None
        };
        match (parts, joined) {
            (Some(_), Some(full)) => self.forward(k, s, full),
            (Some(parts), None) => self.forward_spliced(k, s, base, parts),
            (None, _) => {
                let xid = slot.call.xid;
                log::warn(format_args!(
                    "Read chunk positions do not fit the Call (xid {xid:#x})"
                ));
                self.stats.malformed += 1;
                self.fail_call(k, s, xid, rpcrdma_xdr::v2::ERR_BAD_XDR);
            }
        }
    }

    /// Forwards the Call of slot `s` as `parts` ([`Call::splice_parts`]),
    /// its Read chunk data at `base` of the registered buffer.
    fn forward_spliced(&mut self, k: usize, s: usize, base: usize, parts: Vec<Part>) {
        let Some(c) = self.conns.get(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_ref() else {
            return;
        };
        let inline = slot.call.inline.clone();
        let parts: Vec<Part> = parts
            .into_iter()
            .map(|p| match p {
                Part::Data(r) => Part::Data(base + r.start..base + r.end),
                p => p,
            })
            .collect();
        // the RPC header (the first 24 bytes, `nfs::parse_call`)
        let mut head = Vec::with_capacity(24);
        for p in &parts {
            let b = match p {
                Part::Inline(r) => inline.get(r.clone()),
                Part::Data(r) => c.qp.buf().get(r.clone()),
                Part::Zeros(n) => ZEROS.get(..*n),
            };
            let b = b.unwrap_or_default();
            head.extend_from_slice(&b[..b.len().min(24 - head.len())]);
            if head.len() == 24 {
                break;
            }
        }
        let hdr = nfs::parse_call(&head);
        if self.admit(k, s, hdr, None) {
            if let Some(c) = self.conns.get_mut(&k) {
                c.tcp_out.push_spliced(inline, parts, s);
                self.stats.calls_forwarded += 1;
                self.stats.calls_spliced += 1;
            }
        }
    }

    fn forward(&mut self, k: usize, s: usize, rpc: Vec<u8>) {
        let Some(c) = self.conns.get(&k) else {
            return;
        };
        let hdr = nfs::parse_call(&rpc);
        let bc_prog = if c.proto.opts.probe_callbacks || c.proto.opts.continued_reverse_call {
            nfs::backchannel_request(&rpc)
        } else {
            None
        };
        if self.admit(k, s, hdr, bc_prog) {
            if let Some(c) = self.conns.get_mut(&k) {
                // written at the end of the turn with the others (`end_turn`)
                c.tcp_out.push(rpc);
                self.stats.calls_forwarded += 1;
            }
        }
    }

    /// Admits slot `s`'s Call, whose RPC header is `hdr`, to be
    /// forwarded: false (the Call answered with ERR_BAD_XDR and the slot
    /// freed) if it is not an RPC Call or its XID is in use.
    fn admit(&mut self, k: usize, s: usize, hdr: Option<CallHdr>, bc_prog: Option<u32>) -> bool {
        let Some(c) = self.conns.get_mut(&k) else {
            return false;
        };
        let Some(slot) = c.slots[s].as_mut() else {
            return false;
        };
        let xid = slot.call.xid;
        if hdr.map(|h| h.xid) != Some(xid) || c.by_xid.contains_key(&xid) {
            log::warn(format_args!(
                "not an RPC Call, or its XID is in use (xid {xid:#x})"
            ));
            self.stats.malformed += 1;
            self.fail_call(k, s, xid, rpcrdma_xdr::v2::ERR_BAD_XDR);
            return false;
        }
        slot.hdr = hdr;
        slot.bc_prog = bc_prog;
        c.by_xid.insert(xid, s);
        true
    }

    pub(super) fn tcp_flush(&mut self, k: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let mut to = ToNfsd {
            tcp: &c.tcp,
            pages: &mut c.pages,
            spliced: &mut self.stats.bytes_spliced_to_nfsd,
        };
        while !c.tcp_out.is_empty() {
            self.stats.tcp_writes += 1;
            match c.tcp_out.write_to(&mut to, c.qp.buf()) {
                Ok(true) => {}
                Ok(false) => {
                    self.stats.tcp_write_blocked += 1;
                    break;
                }
                Err(e) => {
                    let m = format!("nfsd connection: {e}");
                    self.close(k, &m);
                    return;
                }
            }
        }
    }

    pub(super) fn tcp_io(&mut self, k: usize) {
        self.tcp_flush(k);
        let max = self.layout.data_size();
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        // The read area, lent for this turn (given back below): records
        // are handled where they lie and a reply's RDMA Writes read from
        // there, so it is registered memory and regions that posted
        // Writes use are pinned (`Conn::pins`) until they completed.
        let Some(mut rbuf) = c.qp.take_area() else {
            return;
        };
        // Room for this read: after what is pending, or at the area's
        // start (after moving the pending bytes there: the tail of the
        // last read, a part of a record) when the record does not fit
        // before the end or the next pin; for all of a record whose mark
        // says it is larger than the room left.
        let (lo, hi) = (c.tcp_lo, c.tcp_hi);
        let need = nfs::word_at(&rbuf[lo..hi], 0).map_or(0, |m| {
            ((m & 0x7fff_ffff) as usize).saturating_add(4).min(max + 4)
        });
        let limit = match place(rbuf.len(), &c.pins, lo, hi, need, TCP_READ / 2) {
            Place::Here(limit) => limit,
            Place::Start(limit) => {
                rbuf.copy_within(lo..hi, 0);
                c.tcp_lo = 0;
                c.tcp_hi = hi - lo;
                limit
            }
            Place::Stall => {
                self.stats.tcp_read_stalls += 1;
                c.tcp_stalled = true;
                c.qp.put_area(rbuf);
                return;
            }
        };
        // One read(2) per wakeup: the socket is polled level-triggered,
        // so what is left makes it ready again at once (no second read
        // only to see EAGAIN).
        let mut eof = false;
        let hi = c.tcp_hi;
        if limit > hi {
            match c.tcp.read(&mut rbuf[hi..limit]) {
                Ok(0) => eof = true,
                Ok(m) => c.tcp_hi += m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => eof = true,
            }
        }
        // Whole single-fragment records handled where they lie (no copy,
        // no allocation per record); records of several fragments (rare)
        // joined by take_records.
        let (lo, hi) = (c.tcp_lo, c.tcp_hi);
        let whole = nfs::whole_records(&rbuf[lo..hi], max);
        let mut used = whole.as_ref().map_or(0, |(_, used)| *used);
        let mut frag = None;
        if let Ok((_, u)) = &whole {
            if nfs::word_at(&rbuf[lo + u..hi], 0).is_some_and(|m| m & 0x8000_0000 == 0) {
                let mut rest = rbuf[lo + u..hi].to_vec();
                frag = Some(nfs::take_records(&mut rest, max).map(|r| (r, rest)));
            }
        }
        match whole {
            Ok((recs, _)) => {
                for r in recs {
                    let rec = &rbuf[lo + r.start..lo + r.end];
                    self.nfsd_record(k, rec, Some(lo + r.start));
                }
            }
            Err(len) => {
                let m = format!("nfsd sent a {len}-byte record");
                self.close(k, &m);
            }
        }
        match frag {
            Some(Ok((recs, rest))) => {
                for rec in recs {
                    self.nfsd_record(k, &rec, None);
                }
                // what take_records left (at most a part of a record)
                // goes back in place of what it consumed
                let at = hi - rest.len();
                rbuf[at..hi].copy_from_slice(&rest);
                used = at - lo;
            }
            Some(Err(n)) => {
                let m = format!("nfsd sent a {n}-byte record");
                self.close(k, &m);
            }
            None => {}
        }
        if let Some(c) = self.conns.get_mut(&k) {
            c.qp.put_area(rbuf);
            c.tcp_lo = lo + used;
        }
        if eof {
            self.close(k, "nfsd closed the TCP connection");
        }
    }

    /// Handles record `rec` from nfsd; `at`: its offset in the read area,
    /// if it lies there.
    fn nfsd_record(&mut self, k: usize, rec: &[u8], at: Option<usize>) {
        self.dirty = true;
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let xid = nfs::word_at(rec, 0).unwrap_or(0);
        if nfs::word_at(rec, 4) == Some(nfs::RPC_CALL) {
            let padded0 = c.proto.padded_sent();
            match c.proto.reverse_call(rec) {
                Some(m) => {
                    self.stats.reverse_calls_sent += 1;
                    let padded = c.proto.padded_sent() != padded0;
                    if padded {
                        self.stats.padded_callbacks += 1;
                    }
                    log::info(format_args!(
                        "{}: callback Call from nfsd (xid {xid:#x}, {} bytes{}) relayed",
                        c.peer,
                        rec.len(),
                        if padded { ", padded" } else { "" }
                    ));
                    self.send_ctrl(k, m);
                }
                None => {
                    self.stats.reverse_calls_dropped += 1;
                    if c.proto.refuses_reverse_calls() {
                        self.stats.reverse_calls_refused += 1;
                    }
                    log::info(format_args!(
                        "callback Call from nfsd (xid {xid:#x}) not relayed"
                    ));
                }
            }
            return;
        }
        let Some(s) = c.by_xid.remove(&xid) else {
            log::warn(format_args!("reply from nfsd for unknown xid {xid:#x}"));
            return;
        };
        if c.tcp_out.holds(s) {
            // its Read chunk data must stay while the Call is written
            self.close(k, "nfsd answered a Call not yet written to it whole");
            return;
        }
        c.replies += 1;
        let n = c.replies;
        // nfsd gave the session its backchannel here: probe it after the
        // reply (as nfsd did for NFSv4.0 and early NFSv4.1).
        let probe = c.slots[s]
            .as_ref()
            .and_then(|sl| sl.bc_prog)
            .filter(|_| nfs::reply_ok(rec, true));
        if self.cfg.drop_nth == Some(n) {
            self.stats.replies_dropped += 1;
            c.proto.forget_call();
            log::info(format_args!(
                "fault injection: dropping reply {n} (xid {xid:#x})"
            ));
            self.free_slot(k, s);
            return;
        }
        if let Some((nth, ms)) = self.cfg.delay_nth {
            if nth == n {
                self.stats.replies_delayed += 1;
                log::info(format_args!(
                    "fault injection: delaying reply {n} by {ms} ms"
                ));
                self.delayed.push(Delayed {
                    due: Instant::now() + Duration::from_millis(ms),
                    conn: k,
                    slot: s,
                    rec: rec.to_vec(),
                });
                return;
            }
        }
        self.reply(k, s, rec, at);
        if let Some(prog) = probe {
            if self
                .conns
                .get(&k)
                .is_some_and(|c| c.proto.opts.probe_callbacks)
            {
                self.probe_callbacks(k, prog);
            }
            self.send_continued_reverse_call(k, prog);
        }
        self.send_bad_reverse_call(k);
    }

    /// `--continued-reverse-call`: when nfsd gave a session on a version
    /// 2 connection its backchannel (callback program `prog`), a CB_NULL
    /// reverse-direction Call in two pieces.
    fn send_continued_reverse_call(&mut self, k: usize, prog: u32) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        if let Some(pieces) = c.proto.continued_reverse_call(prog) {
            self.stats.continued_reverse_call_sent += 1;
            log::info(format_args!(
                "{}: reverse-direction Call continued over {} pieces (xid {:#x}) sent",
                c.peer,
                pieces.len(),
                crate::proto::reverse::CONT_CALL_XID
            ));
            for m in pieces {
                self.send_ctrl(k, m);
            }
        }
    }

    /// `--bad-reverse-call`: after the first reply on a version 2
    /// connection, a reverse-direction Call the client cannot serve.
    fn send_bad_reverse_call(&mut self, k: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        if let Some(m) = c.proto.bad_reverse_call() {
            self.stats.bad_reverse_call_sent += 1;
            log::info(format_args!(
                "{}: reverse-direction Call with a Write chunk (xid {:#x}) sent",
                c.peer,
                crate::proto::reverse::BAD_CALL_XID
            ));
            self.send_ctrl(k, m);
        }
    }

    /// Sends the client a CB_NULL of callback program `prog`.
    fn probe_callbacks(&mut self, k: usize, prog: u32) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        match c.proto.cb_null(prog) {
            Some(m) => {
                self.stats.cb_null_sent += 1;
                log::info(format_args!(
                    "{}: CB_NULL probe of program {prog:#x} sent",
                    c.peer
                ));
                self.send_ctrl(k, m);
            }
            None => log::info(format_args!(
                "{}: CB_NULL probe of program {prog:#x} does not fit the client's receive size",
                c.peer
            )),
        }
    }
}

/// nfsd's socket as the [`Sink`] of a connection's records.
struct ToNfsd<'a> {
    tcp: &'a TcpStream,
    pages: &'a mut PageSender,
    /// Bytes sent by `send_pages` (a counter of the stats).
    spliced: &'a mut u64,
}

impl Sink for ToNfsd<'_> {
    fn write_vectored(&mut self, iov: &[IoSlice<'_>], more: bool) -> io::Result<usize> {
        // with `more`, the piece that follows fills the segment these
        // bytes begin; without, this is `writev(2)`
        let flags = if more {
            net::SendFlags::MORE
        } else {
            net::SendFlags::empty()
        };
        let n = net::sendmsg(self.tcp, iov, &mut Default::default(), flags)?;
        Ok(n)
    }
    fn send_pages(&mut self, data: &[u8], more: bool) -> io::Result<usize> {
        let n = self.pages.send(self.tcp, data, more)?;
        *self.spliced += n as u64;
        Ok(n)
    }
}

/// Where the next `read(2)` from nfsd goes in a read area of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    /// After the pending bytes, up to this offset.
    Here(usize),
    /// The pending bytes moved to the area's start, then after them up
    /// to this offset.
    Start(usize),
    /// Nowhere until a pin is released.
    Stall,
}

/// Chooses where to read with bytes `[lo, hi)` pending (a part of a
/// record of `need` bytes, record mark included; 0 if its mark is not
/// read yet), `pins` the ranges posted RDMA Writes still read from (none
/// within `[lo, hi)`): never into a pin. After the pending bytes while
/// the record and `slack` more fit there before the end or the next pin;
/// else at the start if they fit there (or when nothing is pending and
/// the start has room); else after the pending bytes if the record fits
/// without the slack; else nowhere.
fn place(
    len: usize,
    pins: &[Option<std::ops::Range<usize>>],
    lo: usize,
    hi: usize,
    need: usize,
    slack: usize,
) -> Place {
    let next_pin = |from: usize| {
        pins.iter()
            .flatten()
            .filter(|r| r.end > from && !r.is_empty())
            .map(|r| r.start.max(from))
            .min()
            .unwrap_or(len)
    };
    let want = need.max(hi - lo);
    let here = next_pin(hi);
    let start = next_pin(0);
    let fits = |at: usize, limit: usize, extra: usize| {
        at.checked_add(want)
            .and_then(|x| x.checked_add(extra))
            .is_some_and(|end| end <= limit)
    };
    if (lo == hi || !fits(lo, here, slack)) && fits(0, start, slack) {
        Place::Start(start)
    } else if fits(lo, here, slack) || (fits(lo, here, 0) && here > hi) {
        Place::Here(here)
    } else if fits(lo, here, 0) {
        // the record is whole already: nothing to read, handle it
        Place::Here(hi)
    } else {
        Place::Stall
    }
}

#[cfg(test)]
mod tests {
    use super::{place, Place, ToNfsd};
    use crate::server::out_records::Sink;
    use crate::splice::PageSender;
    use std::io::{ErrorKind, IoSlice, Read};
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    /// Whether `peer` has nothing to read after a pause longer than
    /// loopback needs to deliver what was sent and shorter than TCP's
    /// least retransmission timeout (200 ms), which would send bytes
    /// held back.
    fn nothing_arrives(peer: &mut TcpStream) -> bool {
        std::thread::sleep(Duration::from_millis(50));
        peer.set_nonblocking(true).unwrap();
        let r = peer.read(&mut [0u8; 1]);
        peer.set_nonblocking(false).unwrap();
        matches!(r, Err(e) if e.kind() == ErrorKind::WouldBlock)
    }

    fn read_exactly(peer: &mut TcpStream, n: usize) -> Vec<u8> {
        peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut v = vec![0u8; n];
        peer.read_exact(&mut v).expect("bytes sent did not arrive");
        v
    }

    /// `more` reaches nfsd's socket on both paths: bytes written with it
    /// wait for those that follow, even with `TCP_NODELAY` (which the
    /// server sets); the write without it sends everything. Were the
    /// flag dropped (`MSG_MORE` or `SPLICE_F_MORE`), the bytes would
    /// reach the peer at once.
    #[test]
    fn nfsd_socket_holds_bytes_written_with_more_and_sends_them_without() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut peer, _) = l.accept().unwrap();
        tcp.set_nodelay(true).unwrap();
        let mut pages = PageSender::new(64 * 1024).unwrap();
        let mut spliced = 0u64;
        let mut to = ToNfsd {
            tcp: &tcp,
            pages: &mut pages,
            spliced: &mut spliced,
        };
        let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let head = [1u8; 40];
        assert_eq!(to.write_vectored(&[IoSlice::new(&head)], true).unwrap(), 40);
        assert!(nothing_arrives(&mut peer), "the head went without MSG_MORE");
        assert_eq!(to.send_pages(&data, true).unwrap(), 3000);
        assert!(
            nothing_arrives(&mut peer),
            "the piece went without SPLICE_F_MORE"
        );
        assert_eq!(
            to.write_vectored(&[IoSlice::new(&[2; 8])], false).unwrap(),
            8
        );
        let got = read_exactly(&mut peer, 3048);
        assert_eq!(got[..40], head);
        assert_eq!(got[40..3040], data[..]);
        assert_eq!(got[3040..], [2; 8]);
        // a piece that ends the burst goes at once
        assert_eq!(
            to.write_vectored(&[IoSlice::new(&[3; 4])], true).unwrap(),
            4
        );
        assert_eq!(to.send_pages(&data, false).unwrap(), 3000);
        let got = read_exactly(&mut peer, 3004);
        assert_eq!(got[4..], data[..]);
        assert_eq!(spliced, 6000);
    }

    #[test]
    fn place_reads_after_pending_or_at_start_never_into_a_pin() {
        let none: Vec<Option<std::ops::Range<usize>>> = vec![None; 4];
        // nothing pending, nothing pinned: at the start
        assert_eq!(place(100, &none, 40, 40, 0, 10), Place::Start(100));
        // a record that fits after what is pending
        assert_eq!(place(100, &none, 10, 20, 30, 10), Place::Here(100));
        // one that does not: moved to the start
        assert_eq!(place(100, &none, 70, 80, 30, 10), Place::Start(100));
        let pins = vec![Some(0..30), None, Some(60..70), None];
        // the start is pinned: after the pending bytes, up to the pin
        assert_eq!(place(100, &pins, 35, 40, 20, 5), Place::Here(60));
        // nothing pending, start pinned: read after the last position
        assert_eq!(place(100, &pins, 75, 75, 0, 10), Place::Here(100));
        // too large for the room before the pin, and the start pinned
        assert_eq!(place(100, &pins, 35, 40, 40, 5), Place::Stall);
        // fits only without the slack: still read there
        assert_eq!(place(100, &pins, 35, 40, 25, 5), Place::Here(60));
        // whole already, no room left: nothing read
        assert_eq!(place(100, &pins, 35, 60, 25, 5), Place::Here(60));
        // a pin at the end and one at the start: a record in between
        let p2 = vec![Some(0..10), Some(90..100)];
        assert_eq!(place(100, &p2, 50, 50, 0, 10), Place::Here(90));
        assert_eq!(place(100, &p2, 85, 88, 20, 0), Place::Stall);
        // a mark larger than the whole area (bounded by the caller): stall,
        // never a read past the end
        assert_eq!(place(100, &none, 0, 4, 1000, 0), Place::Stall);
    }
}
