// SPDX-License-Identifier: GPL-2.0

//! The error messages the responder sends: bodies that describe the
//! refused Call, `RDMA_ERROR` / `RDMA2_ERROR` encoding, and what the
//! requester must do about a refused Call.

use rpcrdma_xdr::header::{ErrorBody, Protocol};
use rpcrdma_xdr::{v1, v2};

use super::call::Call;
use super::{ConnProto, Options};
use crate::stats::{Expect, Stats};

/// The body of error `code` answering `call` (`None`: a message that is
/// no Call), with values that describe the Call: `rdma_max_chunks` 0 for
/// `READ_CHUNKS` (a Position-Zero Read is expected), one Write chunk
/// fewer than offered for `WRITE_CHUNKS`, one segment fewer than the
/// largest chunk for `SEGMENTS`, 4 bytes more than the first Write chunk
/// (index 1; index and length 0 without one) for `WRITE_RESOURCE`, and
/// for `REPLY_RESOURCE` 4 bytes more than the Reply chunk, or without one
/// the largest message the client receives plus 4 (reply-time injection,
/// with the real length, is `Call::refuse_reply`).
pub(super) fn err_body(code: u32, opts: &Options, call: Option<&Call>) -> ErrorBody {
    let writes = call.map_or(0, |c| c.writes.len() as u32);
    let segs = call.map_or(0, |c| c.max_chunk_segs());
    let wlen = call.map_or(0, |c| c.write_chunk_len()) as u32;
    let rlen = call.map_or(0, |c| c.reply_chunk_len()) as u32;
    match code {
        v2::ERR_VERS => ErrorBody::Vers { low: 1, high: 2 },
        v2::ERR_BAD_XDR => ErrorBody::BadXdr,
        v2::ERR_INVAL_HTYPE => ErrorBody::InvalHtype,
        v2::ERR_INVAL_FLAG => ErrorBody::InvalFlag,
        v2::ERR_READ_CHUNKS => ErrorBody::ReadChunks { max_chunks: 0 },
        v2::ERR_WRITE_CHUNKS => ErrorBody::WriteChunks {
            max_chunks: writes.saturating_sub(1),
        },
        v2::ERR_SEGMENTS => ErrorBody::Segments {
            max_segments: match opts.max_segs {
                Some(n) if n < segs => n,
                _ => segs.saturating_sub(1),
            },
        },
        v2::ERR_WRITE_RESOURCE if writes > 0 => ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed: wlen.saturating_add(4),
        },
        v2::ERR_WRITE_RESOURCE => ErrorBody::WriteResource {
            chunk_index: 0,
            length_needed: 0,
        },
        v2::ERR_REPLY_RESOURCE => ErrorBody::ReplyResource {
            length_needed: if rlen > 0 {
                rlen.saturating_add(4)
            } else {
                opts.recv_size.saturating_add(4)
            },
        },
        v2::ERR_SYSTEM => ErrorBody::System,
        c => ErrorBody::Other(c),
    }
}

/// What -00 asks of the requester after `body` answered `call`.
fn expect(body: &ErrorBody, call: &Call) -> Expect {
    match *body {
        ErrorBody::ReadChunks { .. } if call.is_position_zero() => Expect::Fail,
        ErrorBody::ReadChunks { .. } => Expect::PositionZero,
        ErrorBody::WriteChunks { .. } => Expect::NoWriteChunks,
        ErrorBody::Segments { max_segments } => Expect::Segments(max_segments),
        ErrorBody::WriteResource {
            chunk_index: 1,
            length_needed,
        } if length_needed > 0 => Expect::WriteResource(length_needed),
        ErrorBody::ReplyResource { length_needed } if length_needed > 0 => {
            Expect::ReplyResource(length_needed)
        }
        _ => Expect::Fail,
    }
}

impl ConnProto {
    /// An error answering an admitted Call.
    pub fn call_error(&mut self, xid: u32, code: u32, stats: &mut Stats) -> Vec<u8> {
        self.error_inner(xid, code, true, stats)
    }

    /// Encodes an error reply for `xid` in the connection's version.
    pub fn error(&mut self, xid: u32, code: u32, stats: &mut Stats) -> Vec<u8> {
        self.error_inner(xid, code, false, stats)
    }

    /// Encodes an error reply for `xid` framed in version `proto`, the
    /// version of the message it answers (-00 §6.4.3: "the responder
    /// copies the values of the rdma_start.rdma_xid and
    /// rdma_start.rdma_vers fields from the incoming transport header"),
    /// whatever the connection's.
    pub fn error_in(&mut self, proto: Protocol, xid: u32, code: u32, stats: &mut Stats) -> Vec<u8> {
        self.error_framed(Some(proto), xid, code, false, stats)
    }

    fn error_inner(&mut self, xid: u32, code: u32, answers: bool, stats: &mut Stats) -> Vec<u8> {
        self.error_framed(self.version, xid, code, answers, stats)
    }

    fn error_framed(
        &mut self,
        proto: Option<Protocol>,
        xid: u32,
        code: u32,
        answers: bool,
        stats: &mut Stats,
    ) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        let n = match proto {
            Some(Protocol::V2) => {
                // A requester ignores an RDMA2_ERROR's credit word and
                // counts it as returning one credit.
                let credit = self.error_credit_word(answers);
                v2::encode_error(&mut buf, xid, credit, &err_body(code, &self.opts, None))
            }
            _ => {
                let body = match code {
                    v2::ERR_VERS => ErrorBody::Vers {
                        low: 1,
                        high: if self.opts.v1_only { 1 } else { 2 },
                    },
                    _ => ErrorBody::BadXdr,
                };
                let credit = if self.version == Some(Protocol::V2) {
                    // A version 1 error on a version 2 connection: the
                    // plain grant, as svcrdma's ERR_VERS carries.
                    u32::from(self.opts.credits)
                } else {
                    self.credit_word(answers)
                };
                v1::encode_error(&mut buf, xid, credit, &body)
            }
        };
        stats.errors_sent += 1;
        buf.truncate(n.unwrap_or(0));
        buf
    }

    /// Refuses `call` with `body` (version 2; version 1: `ERR_CHUNK`) and
    /// remembers its XID and what the client must do about it.
    /// `answers`: the Call was admitted (the error is its answer).
    pub fn refuse(
        &mut self,
        call: &Call,
        body: ErrorBody,
        answers: bool,
        stats: &mut Stats,
    ) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        let credit = match self.version {
            Some(Protocol::V2) => self.error_credit_word(answers),
            _ => self.credit_word(answers),
        };
        let (n, e) = match self.version {
            Some(Protocol::V2) => (
                v2::encode_error(&mut buf, call.xid, credit, &body),
                expect(&body, call),
            ),
            _ => {
                // Version 1 has ERR_VERS and ERR_CHUNK only.
                let v1_body = match body {
                    ErrorBody::Vers { .. } => ErrorBody::Vers {
                        low: 1,
                        high: if self.opts.v1_only { 1 } else { 2 },
                    },
                    _ => ErrorBody::BadXdr,
                };
                (
                    v1::encode_error(&mut buf, call.xid, credit, &v1_body),
                    Expect::Fail,
                )
            }
        };
        stats.errors_sent += 1;
        stats.refused.insert(call.xid, e);
        buf.truncate(n.unwrap_or(0));
        buf
    }

    /// svcrdma's answer to a version it does not speak: v1 layout, the
    /// Call's version word copied (`svc_rdma_send_error_msg`).
    pub(super) fn svcrdma_err_vers(&self, xid: u32, vers: u32, stats: &mut Stats) -> Vec<u8> {
        stats.errors_sent += 1;
        stats.err_vers += 1;
        let high = if self.opts.v1_only { 1 } else { 2 };
        [
            xid,
            vers,
            u32::from(self.opts.credits),
            v1::RDMA_ERROR,
            v1::ERR_VERS,
            1,
            high,
        ]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect()
    }
}
