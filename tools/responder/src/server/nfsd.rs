// SPDX-License-Identifier: GPL-2.0

//! Calls on their way to nfsd: a request slot, the Read chunks pulled by
//! RDMA Read and spliced, the Call forwarded over TCP; and the records
//! nfsd sends back (replies, and callback Calls to relay), with the reply
//! fault switches (drop, delay).

use std::io::{self, Read};
use std::time::{Duration, Instant};

use super::{wr, Delayed, Server, Slot, K_READ, TCP_READ};
use crate::nfs;
use crate::proto::call::Call;
use crate::proto::log;
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
            let e = c
                .proto
                .call_error(xid, rpcrdma_xdr::v2::ERR_SYSTEM, &mut self.stats);
            self.send_ctrl(k, e);
            self.free_slot(k, s);
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
        let data = &c.qp.buf()[base..base + total];
        match slot.call.splice(data) {
            Some(full) => self.forward(k, s, full),
            None => {
                let xid = slot.call.xid;
                log::warn(format_args!(
                    "Read chunk positions do not fit the Call (xid {xid:#x})"
                ));
                self.stats.malformed += 1;
                let e = c
                    .proto
                    .call_error(xid, rpcrdma_xdr::v2::ERR_BAD_XDR, &mut self.stats);
                self.send_ctrl(k, e);
                self.free_slot(k, s);
            }
        }
    }

    fn forward(&mut self, k: usize, s: usize, rpc: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_mut() else {
            return;
        };
        let hdr = nfs::parse_call(&rpc);
        let xid = slot.call.xid;
        if hdr.map(|h| h.xid) != Some(xid) || c.by_xid.contains_key(&xid) {
            log::warn(format_args!(
                "not an RPC Call, or its XID is in use (xid {xid:#x})"
            ));
            self.stats.malformed += 1;
            let e = c
                .proto
                .call_error(xid, rpcrdma_xdr::v2::ERR_BAD_XDR, &mut self.stats);
            self.send_ctrl(k, e);
            self.free_slot(k, s);
            return;
        }
        slot.hdr = hdr;
        if c.proto.opts.probe_callbacks {
            slot.bc_prog = nfs::backchannel_request(&rpc);
        }
        c.by_xid.insert(xid, s);
        // written at the end of the turn with the others (`end_turn`)
        c.tcp_out.push(rpc);
        self.stats.calls_forwarded += 1;
    }

    pub(super) fn tcp_flush(&mut self, k: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        while !c.tcp_out.is_empty() {
            match c.tcp_out.write_to(&mut c.tcp) {
                Ok(true) => {}
                Ok(false) => break,
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
        // Room for this read after what is pending: at the buffer's
        // start when nothing is (or after moving the pending bytes there:
        // the tail of the last read, a part of a record), and for all of
        // a record whose mark says it is larger than the room left.
        let pending = c.tcp_hi - c.tcp_lo;
        let need = nfs::word_at(&c.tcp_rbuf[c.tcp_lo..c.tcp_hi], 0).map_or(0, |m| {
            ((m & 0x7fff_ffff) as usize).saturating_add(4).min(max + 4)
        });
        if pending == 0 {
            c.tcp_lo = 0;
            c.tcp_hi = 0;
        } else if c.tcp_rbuf.len() - c.tcp_hi < TCP_READ / 2 || c.tcp_lo + need > c.tcp_rbuf.len() {
            c.tcp_rbuf.copy_within(c.tcp_lo..c.tcp_hi, 0);
            c.tcp_lo = 0;
            c.tcp_hi = pending;
        }
        let want = c.tcp_lo + need.max(pending) + TCP_READ / 2;
        if c.tcp_rbuf.len() < want {
            c.tcp_rbuf.resize(want.max(TCP_READ), 0);
        }
        // One read(2) per wakeup: the socket is polled level-triggered,
        // so what is left makes it ready again at once (no second read
        // only to see EAGAIN).
        let mut eof = false;
        let hi = c.tcp_hi;
        match c.tcp.read(&mut c.tcp_rbuf[hi..]) {
            Ok(0) => eof = true,
            Ok(m) => c.tcp_hi += m,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => eof = true,
        }
        // Whole single-fragment records handled where they lie (no copy,
        // no allocation per record); records of several fragments (rare)
        // joined by take_records.
        let rbuf = std::mem::take(&mut c.tcp_rbuf);
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
                    self.nfsd_record(k, &rbuf[lo + r.start..lo + r.end]);
                }
            }
            Err(len) => {
                let m = format!("nfsd sent a {len}-byte record");
                self.close(k, &m);
            }
        }
        let mut rbuf = rbuf;
        match frag {
            Some(Ok((recs, rest))) => {
                for rec in recs {
                    self.nfsd_record(k, &rec);
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
            c.tcp_rbuf = rbuf;
            c.tcp_lo = lo + used;
        }
        if eof {
            self.close(k, "nfsd closed the TCP connection");
        }
    }

    fn nfsd_record(&mut self, k: usize, rec: &[u8]) {
        self.dirty = true;
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let xid = nfs::word_at(rec, 0).unwrap_or(0);
        if nfs::word_at(rec, 4) == Some(nfs::RPC_CALL) {
            match c.proto.reverse_call(rec) {
                Some(m) => {
                    self.stats.reverse_calls_sent += 1;
                    log::info(format_args!(
                        "{}: callback Call from nfsd (xid {xid:#x}, {} bytes) relayed",
                        c.peer,
                        rec.len()
                    ));
                    self.send_ctrl(k, m);
                }
                None => {
                    self.stats.reverse_calls_dropped += 1;
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
        self.reply(k, s, rec);
        if let Some(prog) = probe {
            self.probe_callbacks(k, prog);
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
