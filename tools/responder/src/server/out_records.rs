// SPDX-License-Identifier: GPL-2.0

//! The records waiting to go to nfsd over the TCP connection, written
//! with `writev(2)` from where they lie: owned messages, and Calls
//! spliced from their inline part and the Read chunk data in the
//! registered buffer (no copy into one buffer).

use std::collections::VecDeque;
use std::io;

use crate::proto::call::Part;

/// Records waiting to go to nfsd: each a record mark and its message,
/// the first `sent` bytes of the front one already written.
#[derive(Default)]
pub(super) struct OutRecords {
    recs: VecDeque<([u8; 4], Msg)>,
    sent: usize,
}

/// A message for nfsd: owned, or a Call spliced from its inline part
/// and the Read chunk data its slot's RDMA Reads pulled into the
/// registered buffer (written from there: not copied).
enum Msg {
    Own(Vec<u8>),
    Spliced {
        inline: Vec<u8>,
        /// Pieces of `inline`, of the registered buffer (absolute
        /// ranges), and padding.
        parts: Vec<Part>,
        len: usize,
        slot: usize,
    },
}

impl Msg {
    fn len(&self) -> usize {
        match self {
            Msg::Own(v) => v.len(),
            Msg::Spliced { len, .. } => *len,
        }
    }
}

pub(super) const ZEROS: [u8; 4] = [0; 4];

/// Pieces of Read chunk data at least this large go to nfsd by
/// [`Sink::send_pages`]: two system calls and no copy, against a copy
/// that costs the testbed's TCG guests about 3 µs per KiB.
pub(super) const PAGES_MIN: usize = 16 * 1024;

/// Where the records go: nfsd's socket.
pub(super) trait Sink {
    /// Writes a prefix of the bytes of `iov` (`writev(2)`). `more`: the
    /// next call goes on at once with the bytes that follow them (a large
    /// data piece), so a partial segment is not sent yet (`MSG_MORE`).
    fn write_vectored(&mut self, iov: &[io::IoSlice<'_>], more: bool) -> io::Result<usize>;
    /// Sends a prefix of `data`, a piece of the registered buffer that
    /// stays unchanged until nfsd answered its Call, without copying it
    /// ([`crate::splice::PageSender`]); called again with the rest of
    /// the same piece until all of it is taken. `more`: bytes follow the
    /// piece (`SPLICE_F_MORE`).
    fn send_pages(&mut self, data: &[u8], more: bool) -> io::Result<usize>;
}

impl OutRecords {
    /// Appends `msg` as one record (one last fragment).
    pub(super) fn push(&mut self, msg: Vec<u8>) {
        self.push_msg(Msg::Own(msg));
    }

    /// Appends a Call spliced from `inline` and bytes of the registered
    /// buffer (`parts`, checked by the caller to lie in slot `slot`'s
    /// data area, which stays unchanged while it is queued:
    /// [`OutRecords::holds`]).
    pub(super) fn push_spliced(&mut self, inline: Vec<u8>, parts: Vec<Part>, slot: usize) {
        let len = parts
            .iter()
            .map(|p| match p {
                Part::Inline(r) | Part::Data(r) => r.len(),
                Part::Zeros(n) => *n,
            })
            .sum();
        self.push_msg(Msg::Spliced {
            inline,
            parts,
            len,
            slot,
        });
    }

    fn push_msg(&mut self, msg: Msg) {
        let mark = (0x8000_0000u32 | msg.len() as u32).to_be_bytes();
        self.recs.push_back((mark, msg));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// True while a Call of slot `s` waits here (its Read chunk data in
    /// the slot must stay as it is).
    pub(super) fn holds(&self, s: usize) -> bool {
        self.recs
            .iter()
            .any(|(_, m)| matches!(m, Msg::Spliced { slot, .. } if *slot == s))
    }

    /// Writes as much as `w` takes in one call: a `writev(2)` of up to
    /// 64 records, up to the next piece of Read chunk data of at least
    /// [`PAGES_MIN`] bytes, or that piece on its own by
    /// [`Sink::send_pages`] (not copied). `buf` is the registered buffer
    /// spliced Calls refer to. `Ok(false)` when it would block.
    pub(super) fn write_to(&mut self, w: &mut impl Sink, buf: &[u8]) -> io::Result<bool> {
        let mut iov = Vec::with_capacity(2 * self.recs.len().min(64));
        let mut skip = self.sent;
        let mut pages = None;
        fn add<'a>(part: &'a [u8], iov: &mut Vec<io::IoSlice<'a>>, skip: &mut usize) {
            if *skip >= part.len() {
                *skip -= part.len();
                return;
            }
            iov.push(io::IoSlice::new(&part[*skip..]));
            *skip = 0;
        }
        // whether bytes follow what this call writes (see `Sink`)
        let mut more = self.recs.len() > 64;
        let nrecs = self.recs.len().min(64);
        'recs: for (at, (mark, msg)) in self.recs.iter().take(64).enumerate() {
            add(&mark[..], &mut iov, &mut skip);
            match msg {
                Msg::Own(v) => add(&v[..], &mut iov, &mut skip),
                Msg::Spliced { inline, parts, .. } => {
                    for (i, p) in parts.iter().enumerate() {
                        let b = match p {
                            Part::Inline(r) => inline.get(r.clone()),
                            Part::Data(r) => buf.get(r.clone()),
                            Part::Zeros(n) => ZEROS.get(..*n),
                        };
                        let Some(b) = b else {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidInput,
                                "a spliced Call outside its buffers",
                            ));
                        };
                        // chosen by the piece's whole length, so that
                        // a piece begun this way goes on this way
                        // (`send_pages` may hold part of it already)
                        if matches!(p, Part::Data(_)) && b.len() >= PAGES_MIN && skip < b.len() {
                            if iov.is_empty() {
                                pages = Some(&b[skip..]);
                                more |=
                                    at + 1 < nrecs || parts[i + 1..].iter().any(|q| !q.is_empty());
                            } else {
                                more = true;
                            }
                            break 'recs;
                        }
                        add(b, &mut iov, &mut skip);
                    }
                }
            }
        }
        let r = match pages {
            Some(data) => w.send_pages(data, more),
            None => w.write_vectored(&iov, more),
        };
        let mut n = match r {
            Ok(0) => return Ok(false),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        };
        while let Some((_, msg)) = self.recs.front() {
            let left = 4 + msg.len() - self.sent;
            if n < left {
                self.sent += n;
                break;
            }
            n -= left;
            self.sent = 0;
            self.recs.pop_front();
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::{OutRecords, Sink, PAGES_MIN};
    use crate::proto::call::Part;
    use std::io::{self, IoSlice, Write};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Call {
        Writev,
        Pages,
    }

    /// Takes at most `room` bytes per call, then would block once.
    struct Trickle {
        got: Vec<u8>,
        room: usize,
        block: bool,
        /// `Sink::write_vectored` calls, and the length of the data of
        /// each `Sink::send_pages` call.
        writev: usize,
        pages: Vec<usize>,
        /// Each call that took bytes, with its `more`.
        calls: Vec<(Call, bool)>,
    }

    impl Trickle {
        fn new(room: usize) -> Self {
            Trickle {
                got: Vec::new(),
                room,
                block: false,
                writev: 0,
                pages: Vec::new(),
                calls: Vec::new(),
            }
        }

        /// Has `o` written into this sink until it is empty.
        fn drain(&mut self, o: &mut OutRecords, buf: &[u8]) {
            while !o.is_empty() {
                let _ = o.write_to(self, buf).unwrap();
            }
        }
    }

    impl Write for Trickle {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            Write::write_vectored(self, &[IoSlice::new(b)])
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            if std::mem::take(&mut self.block) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.block = true;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.room - n);
                self.got.extend_from_slice(&b[..take]);
                n += take;
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Sink for Trickle {
        fn write_vectored(&mut self, iov: &[IoSlice<'_>], more: bool) -> io::Result<usize> {
            self.writev += 1;
            let n = Write::write_vectored(self, iov)?;
            self.calls.push((Call::Writev, more));
            Ok(n)
        }
        fn send_pages(&mut self, data: &[u8], more: bool) -> io::Result<usize> {
            let n = Write::write_vectored(self, &[IoSlice::new(data)])?;
            self.pages.push(data.len());
            self.calls.push((Call::Pages, more));
            Ok(n)
        }
    }

    #[test]
    fn out_records_partial_writes() {
        let mut o = OutRecords::default();
        let mut want = Vec::new();
        for i in 0..100u8 {
            let msg = vec![i; usize::from(i) * 3 + 1];
            want.extend_from_slice(&(0x8000_0000u32 | msg.len() as u32).to_be_bytes());
            want.extend_from_slice(&msg);
            o.push(msg);
        }
        let mut w = Trickle::new(7);
        let mut calls = 0;
        while !o.is_empty() {
            let _ = o.write_to(&mut w, &[]).unwrap();
            calls += 1;
            w.room = 7 + calls % 50;
        }
        assert_eq!(w.got, want);
    }

    #[test]
    fn out_records_spliced_from_the_buffer() {
        // a Call of inline bytes, data from the registered buffer and
        // padding, between two owned records, written a few bytes at a time
        let buf: Vec<u8> = (0..=255u8).collect();
        let mut o = OutRecords::default();
        o.push(vec![9; 5]);
        let parts = vec![
            Part::Inline(0..8),
            Part::Data(100..105),
            Part::Zeros(3),
            Part::Inline(8..12),
        ];
        o.push_spliced((1..=12u8).collect(), parts, 7);
        o.push(vec![8; 4]);
        assert!(o.holds(7) && !o.holds(6));
        let mut want = vec![0x80, 0, 0, 5, 9, 9, 9, 9, 9, 0x80, 0, 0, 20];
        want.extend(1..=8u8);
        want.extend(100..105u8);
        want.extend([0, 0, 0, 9, 10, 11, 12]);
        want.extend([0x80, 0, 0, 4, 8, 8, 8, 8]);
        let mut w = Trickle::new(3);
        w.drain(&mut o, &buf);
        assert_eq!(w.got, want);
        assert!(!o.holds(7));
        // a piece outside the buffer is an error, not a panic
        o.push_spliced(Vec::new(), vec![Part::Data(250..300)], 1);
        assert!(o.write_to(&mut w, &buf).is_err());
    }

    #[test]
    fn large_read_chunk_data_goes_by_pages_and_goes_on_from_where_it_stopped() {
        // an owned record, then a Call with a large data piece between
        // inline parts, then one with a piece just below PAGES_MIN
        let buf: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        let big = 1000..1000 + 3 * PAGES_MIN + 5;
        let small = 100_000..100_000 + PAGES_MIN - 1;
        let mut o = OutRecords::default();
        o.push(vec![7; 3]);
        o.push_spliced(
            (1..=12u8).collect(),
            vec![
                Part::Inline(0..8),
                Part::Data(big.clone()),
                Part::Inline(8..12),
            ],
            1,
        );
        o.push_spliced(
            (1..=4u8).collect(),
            vec![Part::Inline(0..4), Part::Data(small.clone())],
            2,
        );
        let mut want = vec![0x80, 0, 0, 3, 7, 7, 7];
        let len = (12 + big.len()) as u32;
        want.extend((0x8000_0000 | len).to_be_bytes());
        want.extend(1..=8u8);
        want.extend(&buf[big.clone()]);
        want.extend(9..=12u8);
        want.extend((0x8000_0000 | (4 + small.len()) as u32).to_be_bytes());
        want.extend(1..=4u8);
        want.extend(&buf[small.clone()]);
        let mut w = Trickle::new(5000);
        w.drain(&mut o, &buf);
        assert_eq!(w.got, want);
        // only the large piece went by pages, each call given the rest
        // of it after what the previous calls took
        assert_eq!(w.pages.len(), big.len().div_ceil(5000));
        for (i, n) in w.pages.iter().enumerate() {
            assert_eq!(*n, big.len() - i * 5000);
        }
        assert!(w.writev > 0);
        // `more` exactly where bytes follow at once: on the write before
        // the data piece and on every piece of it (its record's tail and
        // the next record follow); not on the writes of the rest
        let c = &w.calls;
        assert_eq!(c[0], (Call::Writev, true));
        assert_eq!(c[1], (Call::Pages, true));
        assert!(c[1..=w.pages.len()]
            .iter()
            .all(|x| *x == (Call::Pages, true)));
        assert!(c[w.pages.len() + 1..]
            .iter()
            .all(|x| *x == (Call::Writev, false)));
    }

    #[test]
    fn a_data_piece_that_ends_the_queue_goes_without_more() {
        // the last piece of the last record (a trailing empty part does
        // not count): `MSG_MORE` there would hold back its last segment
        let buf = vec![3u8; 2 * PAGES_MIN];
        let mut o = OutRecords::default();
        o.push_spliced(
            vec![1, 2, 3, 4],
            vec![
                Part::Inline(0..4),
                Part::Data(0..2 * PAGES_MIN),
                Part::Zeros(0),
            ],
            1,
        );
        let mut w = Trickle::new(3 * PAGES_MIN);
        w.drain(&mut o, &buf);
        assert_eq!(w.got.len(), 8 + 2 * PAGES_MIN);
        assert_eq!(w.calls, [(Call::Writev, true), (Call::Pages, false)]);
    }
}
