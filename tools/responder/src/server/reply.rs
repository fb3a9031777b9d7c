// SPDX-License-Identifier: GPL-2.0

//! A reply on its way to the client: planned by the protocol state,
//! laid out in the Call's slot, RDMA Writes posted and Sends queued; the
//! slot freed once the last Send completed; delayed replies sent when
//! due.

use std::time::Instant;

use super::rdma::count_sent;
use super::{wr, Delayed, Out, Server, K_SLOT, K_WRITE};
use crate::nfs;
use crate::proto::log;
use crate::proto::reply::ReplyPlan;
use crate::verbs::SendOp;

impl Server {
    pub(super) fn run_timers(&mut self) {
        let now = Instant::now();
        let (due, rest): (Vec<Delayed>, Vec<Delayed>) = std::mem::take(&mut self.delayed)
            .into_iter()
            .partition(|d| d.due <= now);
        self.delayed = rest;
        for d in due {
            self.reply(d.conn, d.slot, &d.rec, None);
        }
    }

    /// Sends the reply `rec` to slot `s`'s Call; `at`: its offset in the
    /// read area if it lies there, so that its RDMA Writes may go from
    /// there (pinned until the slot is freed) instead of from a copy in
    /// the slot.
    pub(super) fn reply(&mut self, k: usize, s: usize, rec: &[u8], at: Option<usize>) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let Some(slot) = c.slots[s].as_ref() else {
            return;
        };
        let cap: usize = slot
            .call
            .writes
            .first()
            .map_or(0, |w| w.iter().map(|x| x.length as usize).sum());
        let ddp = match slot.hdr {
            Some(h) if cap > 0 => nfs::ddp_range(&h, rec, cap),
            _ => None,
        };
        let mut plan: ReplyPlan = c
            .proto
            .plan_reply(&slot.call, rec, ddp.clone(), &mut self.stats);
        let mut malformed = false;
        if let Some((nth, kind)) = self.cfg.malform_nth {
            // The Nth reply, or for a kind that rewrites chunk lists the
            // first reply from the Nth on that moves data by RDMA Write.
            let due = c.replies >= nth
                && !c.malformed
                && (!kind.needs_chunks() || !plan.writes.is_empty());
            if due {
                c.malformed = true;
                malformed = true;
                self.stats.malformed_sent += 1;
                log::info(format_args!(
                    "fault injection: malformed reply {} (xid {:#010x}): {kind:?}",
                    c.replies, slot.call.xid
                ));
                crate::malform::apply(kind, &mut plan);
                if plan.close_after {
                    c.close_on_slot = Some(s);
                }
            }
        }
        if self.cfg.verbose {
            log::info(format_args!(
                "{} reply xid {:#x}: {} bytes, ddp {:?}, path {:?}, {} writes, {} sends ({:?} bytes), invalidate {:?}",
                c.peer,
                slot.call.xid,
                rec.len(),
                ddp,
                plan.path,
                plan.writes.len(),
                plan.sends.len(),
                plan.sends.iter().map(|b| b.len()).collect::<Vec<_>>(),
                plan.invalidate
            ));
        }
        let base = self.layout.data_off(s);
        let sbase = self.layout.slot_off(s);
        let total_send: usize = plan.sends.iter().map(|b| b.len()).sum();
        if rec.len() > self.layout.data_size() || total_send > self.layout.send_area {
            let xid = slot.call.xid;
            self.fail_call(k, s, xid, rpcrdma_xdr::v2::ERR_SYSTEM);
            return;
        }
        let n = plan.sends.len();
        // RDMA Writes straight from the read area where the record lies,
        // pinned until the slot is freed (after the reply's last Send,
        // queued behind them, completed); from a copy in the slot when
        // the record is not there, when no Send follows to tell their
        // completion, or for a malformed reply (whose Writes may leave the
        // record).
        let in_place = at.filter(|_| {
            n > 0
                && !malformed
                && !plan.writes.is_empty()
                && plan.writes.iter().all(|w| w.src.end <= rec.len())
        });
        let src = match in_place {
            Some(a) => {
                c.pins[s] = Some(a..a.saturating_add(rec.len()));
                self.stats.writes_in_place += 1;
                c.qp.area_base().saturating_add(a)
            }
            None => {
                if !plan.writes.is_empty() {
                    c.qp.buf_mut()[base..base + rec.len()].copy_from_slice(rec);
                    self.stats.writes_copied += 1;
                }
                base
            }
        };
        // iWARP (siw): an unsignaled Write is sent from our pages after
        // its completion too (`Qp::iwarp`), and the read area is written
        // again at once when its pin is released: signaled there, so that
        // siw copies the data when it sends it.
        let signal = (in_place.is_some() && c.qp.iwarp()).then_some(wr(K_WRITE, s));
        let mut ops = Vec::new();
        for w in &plan.writes {
            ops.push(SendOp::Write {
                off: src + w.src.start,
                len: w.src.len(),
                rkey: w.rkey,
                addr: w.addr,
                signal,
            });
        }
        let mut at = sbase;
        for (i, b) in plan.sends.iter().enumerate() {
            c.qp.buf_mut()[at..at + b.len()].copy_from_slice(b);
            let last = i + 1 == n;
            // After the RDMA Writes (posted first, in order on the QP),
            // when the client's credits allow.
            c.outq.push_back(Out::Slot(
                SendOp::Send {
                    off: at,
                    len: b.len(),
                    inv: if last { plan.invalidate } else { None },
                    signal: last.then_some(wr(K_SLOT, s)),
                },
                !malformed,
            ));
            at += b.len();
            count_sent(&mut self.stats, b);
        }
        if plan.invalidate.is_some() {
            self.stats.invalidations += 1;
        }
        if let Some(p) = plan.path {
            let inline = total_send;
            self.stats.count_reply(p, inline, plan.written);
        }
        // posted at the end of the turn (`end_turn`), before the Sends
        c.queue(&ops);
        if n == 0 {
            self.free_slot(k, s);
            return;
        }
        self.flush_out(k);
    }

    /// Answers the Call `xid` of slot `s` on connection `k` with an
    /// RDMA2_ERROR of `code` instead of forwarding or replying, and frees
    /// the slot.
    pub(super) fn fail_call(&mut self, k: usize, s: usize, xid: u32, code: u32) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        let e = c.proto.call_error(xid, code, &mut self.stats);
        self.send_ctrl(k, e);
        self.free_slot(k, s);
    }

    pub(super) fn free_slot(&mut self, k: usize, s: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        if c.slots[s].take().is_none() {
            return;
        }
        if c.pins[s].take().is_some() {
            c.tcp_stalled = false;
        }
        c.free.push(s);
        if let Some(call) = c.waiting.pop_front() {
            self.start_call(k, call);
        }
    }
}
