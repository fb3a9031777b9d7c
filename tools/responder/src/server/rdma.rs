// SPDX-License-Identifier: GPL-2.0

//! The RDMA side of a connection: completions, Receives handed to the
//! protocol state and its actions carried out, and the queue of messages
//! to the client, sent in order while its credits allow (a credit grant
//! may go ahead of messages waiting for them).

use std::collections::VecDeque;

use super::{wr, Out, Server, CTRL_SIZE, K_CTRL, K_READ, K_RECV, K_SLOT};
use crate::nfs;
use crate::proto::{log, Action, ConnProto};
use crate::stats::Stats;
use crate::verbs::{SendOp, Wc};

/// Adds the spare credits owed now ([`ConnProto::top_up`]) to the
/// `granted` half of the credit word of message `m` (a Send about to
/// leave). Not for `RDMA2_ERROR`, whose word the client ignores.
fn top_up(proto: &mut ConnProto, m: &mut [u8]) {
    let (Some(word), Some(htype)) = (nfs::word_at(m, 8), nfs::word_at(m, 12)) else {
        return;
    };
    if nfs::word_at(m, 4) != Some(2) || htype == rpcrdma_xdr::v2::RDMA2_ERROR {
        return;
    }
    let granted = (word & 0xffff) as u16;
    let extra = proto.top_up(u16::MAX - granted);
    if extra > 0 {
        let w = (word & 0xffff_0000) | u32::from(granted + extra);
        m[8..12].copy_from_slice(&w.to_be_bytes());
    }
}

/// True for an asynchronous credit grant (v2 `RDMA2_NOMSG`, XID 0).
fn is_grant(b: &[u8]) -> bool {
    nfs::word_at(b, 0) == Some(0) && nfs::word_at(b, 4) == Some(2) && nfs::word_at(b, 12) == Some(1)
}

/// True for a queued asynchronous credit grant.
fn is_grant_out(o: &Out) -> bool {
    matches!(o, Out::Ctrl(b) if is_grant(b))
}

/// Moves the first credit grant queued in `q` to its head, the rest in
/// order; false if no grant is queued.
fn grant_to_front(q: &mut VecDeque<Out>) -> bool {
    match q.iter().position(is_grant_out).and_then(|i| q.remove(i)) {
        Some(g) => {
            q.push_front(g);
            true
        }
        None => false,
    }
}

impl Server {
    pub(super) fn completions(&mut self, k: usize) {
        let mut wcs: Vec<Wc> = Vec::new();
        if let Some(c) = self.conns.get(&k) {
            c.qp.poll(&mut wcs);
        }
        for w in wcs {
            self.dirty = true;
            let kind = w.wr_id >> 48;
            let idx = (w.wr_id & 0xffff_ffff) as usize;
            if w.status != 0 {
                let closing = self.conns.get(&k).is_some_and(|c| c.closing);
                if !closing {
                    self.close(
                        k,
                        &format!("completion error status {} (wr kind {kind})", w.status),
                    );
                }
                if kind == K_CTRL {
                    if let Some(c) = self.conns.get_mut(&k) {
                        c.ctrl_free.push(idx);
                    }
                }
                continue;
            }
            if kind != K_RECV {
                // In order on the Send queue: every unsignaled reply sent
                // before this work request is complete too.
                let done = match self.conns.get_mut(&k) {
                    Some(c) => match c.signaled_seq(w.wr_id) {
                        Some(seq) => c.retire_before(seq),
                        None => Vec::new(),
                    },
                    None => Vec::new(),
                };
                for s in done {
                    self.free_slot(k, s);
                }
            }
            match kind {
                K_RECV => self.on_recv(k, idx, w.byte_len as usize),
                K_CTRL => {
                    if let Some(c) = self.conns.get_mut(&k) {
                        c.ctrl_free.push(idx);
                    }
                    self.flush_out(k);
                }
                K_SLOT => {
                    let close = match self.conns.get_mut(&k) {
                        Some(c) if c.close_on_slot == Some(idx) => {
                            c.close_on_slot = None;
                            true
                        }
                        _ => false,
                    };
                    self.free_slot(k, idx);
                    if close {
                        self.close(k, "fault injection: closed mid-sequence");
                    }
                }
                K_READ => self.read_done(k, idx),
                _ => {}
            }
        }
    }

    fn on_recv(&mut self, k: usize, idx: usize, len: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        if c.closing {
            return;
        }
        let off = self.layout.recv_off(idx);
        let data = c.qp.buf()[off..off + len.min(self.layout.recv_size)].to_vec();
        if let Err(e) = c.qp.post_recv(wr(K_RECV, idx), off, self.layout.recv_size) {
            self.close(k, &format!("post_recv: {e}"));
            return;
        }
        c.received += 1;
        if self.cfg.verbose {
            let w: Vec<String> = data
                .chunks(4)
                .take(12)
                .map(|x| format!("{:08x}", nfs::word_at(x, 0).unwrap_or(0)))
                .collect();
            log::info(format_args!(
                "{} recv {} bytes: {}",
                c.peer,
                data.len(),
                w.join(" ")
            ));
        }
        let actions = c.proto.on_receive(&data, &mut self.stats);
        if self.cfg.disconnect_after == Some(c.received) {
            self.stats.disconnects_injected += 1;
            self.close(k, "fault injection: disconnect after N messages");
            return;
        }
        for a in actions {
            match a {
                Action::Send(b) => self.send_ctrl(k, b),
                Action::Call(call) => self.start_call(k, call),
                Action::Nothing => {}
                Action::ToNfsd(reply) => {
                    // written at the end of the turn (`end_turn`)
                    if let Some(c) = self.conns.get_mut(&k) {
                        c.tcp_out.push(reply);
                    }
                }
                Action::Disconnect(why) => self.close(k, why),
            }
        }
        // The message may have returned credits something waits for.
        self.flush_out(k);
    }

    pub(super) fn send_ctrl(&mut self, k: usize, b: Vec<u8>) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        c.outq.push_back(Out::Ctrl(b));
        self.flush_out(k);
    }

    /// Sends what waits, in order, while the client has credits (and a
    /// control buffer is free for a control message).
    pub(super) fn flush_out(&mut self, k: usize) {
        let Some(c) = self.conns.get_mut(&k) else {
            return;
        };
        self.stats.client_credit_limit = u64::from(c.proto.client_limit());
        let (unreturned, unanswered) = c.proto.owed();
        self.stats.client_unreturned = u64::from(unreturned);
        self.stats.client_unanswered = u64::from(unanswered);
        while let Some(front) = c.outq.front() {
            let grant = is_grant_out(front);
            self.stats.client_outstanding = c.proto.client_outstanding();
            self.stats.outq_waiting = c.outq.len() as u64;
            if !c.proto.may_send_client(grant) {
                // The head waits for the client's credits: a credit
                // grant goes first (on the Receive -00 keeps for
                // grants), one queued behind or else one returning
                // what is spare now. The client may need those credits
                // to send what returns its own (a continued Call, its
                // grant beyond our limit spent), so holding them back
                // behind the pieces of a continued reply, or until a
                // grant pattern would send them, can stall both sides.
                if !grant && c.proto.may_send_client(true) {
                    let ahead = grant_to_front(&mut c.outq)
                        || c.proto.blocked_grant().is_some_and(|g| {
                            c.outq.push_front(Out::Ctrl(g));
                            true
                        });
                    if ahead {
                        self.stats.grants_ahead += 1;
                        continue;
                    }
                }
                self.stats.credit_waits += 1;
                break;
            }
            let op = match front {
                Out::Ctrl(b) => {
                    if c.ctrl_free.is_empty() {
                        break;
                    }
                    if grant && !c.proto.grant_leaving(&mut self.stats) {
                        // nothing left for it to return
                        c.outq.pop_front();
                        continue;
                    }
                    let Some(i) = c.ctrl_free.pop() else {
                        break;
                    };
                    let n = b.len().min(CTRL_SIZE);
                    let off = self.layout.ctrl_off(i);
                    c.qp.buf_mut()[off..off + n].copy_from_slice(&b[..n]);
                    top_up(&mut c.proto, &mut c.qp.buf_mut()[off..off + n]);
                    count_sent(&mut self.stats, b);
                    SendOp::Send {
                        off,
                        len: n,
                        inv: None,
                        signal: Some(wr(K_CTRL, i)),
                    }
                }
                Out::Slot(op, may_top_up) => {
                    if let (SendOp::Send { off, len, .. }, true) = (op, may_top_up) {
                        top_up(&mut c.proto, &mut c.qp.buf_mut()[*off..*off + *len]);
                    }
                    *op
                }
            };
            c.outq.pop_front();
            c.proto.sent_client();
            // posted at the end of the turn (`end_turn`)
            match op.signal() {
                Some(id) if id >> 48 == K_SLOT => {
                    c.queue_last_send(op, (id & 0xffff_ffff) as usize);
                }
                _ => c.queue(&[op]),
            }
        }
    }
}

pub(super) fn count_sent(st: &mut Stats, b: &[u8]) {
    st.msgs_sent += 1;
    match nfs::word_at(b, 12) {
        Some(0) => st.msg_sent += 1,
        Some(1) => st.nomsg_sent += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::{grant_to_front, Out};
    use crate::verbs::SendOp;

    fn piece(off: usize) -> Out {
        Out::Slot(
            SendOp::Send {
                off,
                len: 28,
                inv: None,
                signal: None,
            },
            true,
        )
    }

    /// An asynchronous grant: XID 0, version 2, RDMA2_NOMSG.
    fn grant() -> Out {
        let mut b = vec![0u8; 28];
        b[4..8].copy_from_slice(&2u32.to_be_bytes());
        b[12..16].copy_from_slice(&1u32.to_be_bytes());
        Out::Ctrl(b)
    }

    fn offs(q: &VecDeque<Out>) -> Vec<Option<usize>> {
        q.iter()
            .map(|o| match o {
                Out::Slot(SendOp::Send { off, .. }, _) => Some(*off),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_grant_behind_waiting_pieces_goes_first_the_pieces_keep_their_order() {
        let mut q: VecDeque<Out> = [piece(0), piece(100), grant(), piece(200), grant()].into();
        assert!(grant_to_front(&mut q));
        assert_eq!(offs(&q), [None, Some(0), Some(100), Some(200), None]);
        // an error or other control message is not a grant
        let mut q: VecDeque<Out> = [piece(0), Out::Ctrl(vec![0u8; 28]), piece(100)].into();
        assert!(!grant_to_front(&mut q));
        assert_eq!(offs(&q), [Some(0), None, Some(100)]);
    }
}
