// SPDX-License-Identifier: GPL-2.0

//! Bytes of user memory sent to a socket without a copy: `vmsplice(2)`
//! maps their pages into a pipe and `splice(2)` moves them from the pipe
//! into the socket, whose buffers then refer to the pages themselves (as
//! the kernel's own TCP senders refer to the page cache). A thin layer
//! over rustix that names no user of it.
//!
//! The pages are referred to, not copied: what the receiver gets is what
//! the memory holds when the socket hands the bytes over (on loopback,
//! when the receiver reads them). So the caller leaves the memory as it
//! is until the receiver has read the bytes. The kernel holds its own
//! references to the pages: memory changed, freed or reused too early
//! changes the bytes sent, never the safety of either side.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::pipe::{self, IoSliceRaw, PipeFlags, SpliceFlags};

/// A pipe that carries pages of user memory to a socket.
///
/// # Invariants
///
/// The pipe holds the first `in_pipe` bytes of the data the latest
/// [`PageSender::send`] was given, and nothing else.
pub struct PageSender {
    rd: OwnedFd,
    wr: OwnedFd,
    in_pipe: usize,
}

impl PageSender {
    /// A non-blocking pipe of `size` bytes if the kernel allows it (the
    /// most one [`PageSender::send`] moves at once), else of the
    /// default size (64 KiB).
    pub fn new(size: usize) -> io::Result<Self> {
        let (rd, wr) = pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        // Refused above /proc/sys/fs/pipe-max-size without
        // CAP_SYS_RESOURCE: the default size only means more calls.
        let _ = pipe::fcntl_setpipe_size(&wr, size);
        Ok(Self { rd, wr, in_pipe: 0 })
    }

    /// Bytes mapped into the pipe that the socket has not taken yet.
    pub fn pending(&self) -> usize {
        self.in_pipe
    }

    /// Sends a prefix of `data` to the socket `sock` without copying it;
    /// how many bytes the socket took (`WouldBlock` if none).
    ///
    /// The bytes the socket did not take may already be in the pipe
    /// ([`PageSender::pending`]), so the next call must be given the
    /// rest of the same data: `&data[n..]`, `n` what this call returned.
    /// `InvalidInput` if it is shorter than what the pipe holds.
    ///
    /// `more`: the caller goes on at once with bytes that follow `data`,
    /// so the socket may hold back a partial last segment for them
    /// (`SPLICE_F_MORE`, as `MSG_MORE`); false for the last bytes of a
    /// burst, which must go out at once.
    pub fn send(&mut self, sock: impl AsFd, data: &[u8], more: bool) -> io::Result<usize> {
        let rest = data.get(self.in_pipe..).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "fewer bytes than the pipe holds already",
            )
        })?;
        if !rest.is_empty() {
            let iov = [IoSliceRaw::from_slice(rest)];
            // SAFETY: `wr` is the pipe's write end, so vmsplice maps the
            // pages into the pipe and reads them; it never writes `data`.
            match unsafe { pipe::vmsplice(&self.wr, &iov, SpliceFlags::NONBLOCK) } {
                Ok(n) => self.in_pipe += n,
                // the pipe is full: what it holds goes first
                Err(rustix::io::Errno::AGAIN) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if self.in_pipe == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let flags = if more {
            SpliceFlags::NONBLOCK | SpliceFlags::MORE
        } else {
            SpliceFlags::NONBLOCK
        };
        let n = pipe::splice(&self.rd, None, sock, None, self.in_pipe, flags)?;
        self.in_pipe -= n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::PageSender;
    use std::io::{self, Read};
    use std::os::unix::net::UnixStream;

    #[test]
    fn sends_every_byte_in_order_through_partial_takes() {
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut p = PageSender::new(256 * 1024).unwrap();
        let mut sent = 0;
        let mut got = Vec::new();
        let mut buf = vec![0u8; 10_000];
        let mut blocked = 0;
        while got.len() < data.len() {
            if sent < data.len() {
                match p.send(&a, &data[sent..], sent % 2 == 0) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked += 1,
                    Err(e) => panic!("{e}"),
                }
                assert!(p.pending() <= data.len() - sent);
            }
            // the reader takes a little at a time: the socket fills up
            match b.read(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(sent, data.len());
        assert_eq!(p.pending(), 0);
        assert!(got == data, "bytes differ");
        // the socket's buffer was full at times: the partial takes ran
        assert!(blocked > 0);
    }

    #[test]
    fn data_shorter_than_the_pipe_holds_is_refused() {
        let (a, _b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut p = PageSender::new(64 * 1024).unwrap();
        // fill the socket so that some bytes stay in the pipe
        let data = vec![1u8; 4 << 20];
        let mut sent = 0;
        while p.pending() == 0 {
            match p.send(&a, &data[sent..], sent % 2 == 0) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(p.pending() > 0);
        let e = p.send(&a, &data[..p.pending() - 1], false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
