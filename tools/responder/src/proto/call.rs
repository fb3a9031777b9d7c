// SPDX-License-Identifier: GPL-2.0

//! A Call as received ([`Call`]: its chunks and inline part, what
//! -00 §6.4.3 asks of a Call sent again, splicing its Read chunks) and the
//! classes of Calls fault injection counts ([`CallKind`]).

use rpcrdma_xdr::chunk::{ReadSegment, Segment};

use crate::stats::Expect;

/// A class of Calls, for fault injection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallKind {
    /// Every Call.
    #[default]
    Any,
    /// Calls with Read chunks (any position).
    Read,
    /// Calls with Write chunks.
    Write,
    /// Calls with a Reply chunk.
    Reply,
    /// Calls without chunks.
    Inline,
}

impl CallKind {
    /// Parses `any`, `read`, `write`, `reply` or `inline`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "any" => Self::Any,
            "read" => Self::Read,
            "write" => Self::Write,
            "reply" => Self::Reply,
            "inline" => Self::Inline,
            _ => return None,
        })
    }

    /// True if `call` is of this class.
    pub fn matches(self, call: &Call) -> bool {
        match self {
            Self::Any => true,
            Self::Read => !call.reads.is_empty(),
            Self::Write => !call.writes.is_empty(),
            Self::Reply => call.reply.is_some(),
            Self::Inline => call.reads.is_empty() && call.writes.is_empty() && call.reply.is_none(),
        }
    }
}

/// A Call that has been decoded and is ready to be completed (Read chunks
/// pulled) and forwarded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    /// RPC XID (the transport header's).
    pub xid: u32,
    /// Version it arrived in.
    pub v2: bool,
    /// The Call's `rdma_inv_handle` (v2), 0 if none.
    pub inv_handle: u32,
    /// Read segments (flat list, in order).
    pub reads: Vec<ReadSegment>,
    /// Write chunks offered.
    pub writes: Vec<Vec<Segment>>,
    /// Reply chunk offered.
    pub reply: Option<Vec<Segment>>,
    /// The (possibly reduced) RPC message that arrived inline.
    pub inline: Vec<u8>,
    /// Decoded RPC words of the complete Call, once known.
    pub rpc: Option<crate::nfs::CallHdr>,
    /// Answer it, once nfsd has, with `RDMA2_ERR_REPLY_RESOURCE` for the
    /// length of nfsd's reply (`--err-nth N:9`, `--no-write-chunks`).
    pub refuse_reply: bool,
}

impl Call {
    /// A Long Call: Read chunks, all at position zero.
    pub fn is_position_zero(&self) -> bool {
        !self.reads.is_empty() && self.reads.iter().all(|r| r.position == 0)
    }

    /// Segments of the Call's largest chunk (a Read chunk is the Read
    /// segments that share a position).
    pub fn max_chunk_segs(&self) -> u32 {
        let mut most = 0usize;
        let mut i = 0usize;
        while i < self.reads.len() {
            let pos = self.reads[i].position;
            let n = self.reads[i..]
                .iter()
                .take_while(|r| r.position == pos)
                .count();
            most = most.max(n);
            i += n;
        }
        for w in &self.writes {
            most = most.max(w.len());
        }
        if let Some(r) = &self.reply {
            most = most.max(r.len());
        }
        most as u32
    }

    /// Bytes of the Reply chunk offered (0: none).
    pub fn reply_chunk_len(&self) -> u64 {
        self.reply
            .iter()
            .flatten()
            .map(|s| u64::from(s.length))
            .sum()
    }

    /// Bytes of the first Write chunk offered (0: none).
    pub fn write_chunk_len(&self) -> u64 {
        self.writes
            .first()
            .map_or(0, |w| w.iter().map(|s| u64::from(s.length)).sum())
    }

    /// True if this Call, sent again after a refusal that asked for
    /// `e`, does what -00 §6.4.3 asks of the requester.
    pub fn complies(&self, e: Expect) -> bool {
        let reply_chunk = |n: u32| self.writes.is_empty() && self.reply_chunk_len() >= u64::from(n);
        match e {
            Expect::Fail => false,
            Expect::PositionZero => self.is_position_zero(),
            Expect::NoWriteChunks => reply_chunk(1),
            Expect::Segments(n) => self.max_chunk_segs() <= n,
            Expect::WriteResource(n) | Expect::ReplyResource(n) => reply_chunk(n),
        }
    }

    /// Total bytes to pull with RDMA Read.
    pub fn read_len(&self) -> u64 {
        self.reads.iter().map(|r| u64::from(r.target.length)).sum()
    }

    /// Builds the complete RPC Call from the inline part and the Read
    /// chunk data (`data`: the bytes of every Read segment, concatenated in
    /// list order). Returns `None` if the positions are inconsistent.
    pub fn splice(&self, data: &[u8]) -> Option<Vec<u8>> {
        let parts = self.splice_parts(data.len())?;
        let mut out = Vec::with_capacity(self.inline.len() + data.len() + 8);
        for p in parts {
            match p {
                Part::Inline(r) => out.extend_from_slice(self.inline.get(r)?),
                Part::Data(r) => out.extend_from_slice(data.get(r)?),
                Part::Zeros(n) => out.resize(out.len() + n, 0),
            }
        }
        Some(out)
    }

    /// The complete RPC Call as the pieces [`Call::splice`] joins, in
    /// order, without joining them: `data_len` bytes of Read chunk data
    /// (every Read segment, concatenated in list order). Every range lies
    /// within `inline` or `0..data_len`. `None` if the positions are
    /// inconsistent.
    pub fn splice_parts(&self, data_len: usize) -> Option<Vec<Part>> {
        let mut out = Vec::with_capacity(2 * self.reads.len() + 1);
        let mut msg = 0usize; // length of the message so far
        let mut cursor = 0usize; // in `inline`
        let mut at = 0usize; // in the data
        let mut i = 0usize;
        while i < self.reads.len() {
            let pos = self.reads[i].position as usize;
            let mut len = 0usize;
            let mut j = i;
            while j < self.reads.len() && self.reads[j].position as usize == pos {
                len = len.checked_add(self.reads[j].target.length as usize)?;
                j += 1;
            }
            // the inline bytes in front of this chunk
            let need = pos.checked_sub(msg)?;
            let end = cursor.checked_add(need)?;
            if end > self.inline.len() {
                return None;
            }
            if need > 0 {
                out.push(Part::Inline(cursor..end));
            }
            cursor = end;
            msg += need;
            let dend = at.checked_add(len)?;
            if dend > data_len {
                return None;
            }
            if len > 0 {
                out.push(Part::Data(at..dend));
            }
            at = dend;
            msg = msg.checked_add(len)?;
            if pos != 0 {
                let pad = crate::nfs::pad4(msg).saturating_sub(msg);
                if pad > 0 {
                    out.push(Part::Zeros(pad));
                }
                msg += pad;
            }
            i = j;
        }
        if cursor < self.inline.len() {
            out.push(Part::Inline(cursor..self.inline.len()));
        }
        Some(out)
    }
}

/// A piece of a Call's RPC message ([`Call::splice_parts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Bytes of the Call's inline part.
    Inline(std::ops::Range<usize>),
    /// Bytes of the Read chunk data.
    Data(std::ops::Range<usize>),
    /// XDR padding after a Read chunk (zeros).
    Zeros(usize),
}

impl Part {
    /// The number of bytes of the piece.
    pub fn len(&self) -> usize {
        match self {
            Part::Inline(r) | Part::Data(r) => r.len(),
            Part::Zeros(n) => *n,
        }
    }

    /// Whether the piece has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
