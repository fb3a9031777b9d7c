// SPDX-License-Identifier: GPL-2.0

//! Kernel error numbers, without the kernel crate.
//!
//! `proto` must build on the host, so it cannot use `kernel::error::code`.
//! The constants are the Linux values from `include/uapi/asm-generic/errno-base.h`
//! and `errno.h` (x86, arm64 and every other architecture that uses the
//! generic table); the module's KUnit build checks each one against the
//! kernel's own `E*` constants at compile time (`rpcrdma/tests.rs`).
//!
//! [`Errno`] holds the kernel-style *negative* value a SUNRPC transport
//! returns (`-EIO`); the bare constants in this module are positive, as in
//! the C headers.

use core::fmt;

/// `EIO`: I/O error. What the C client returns for every `RDMA_ERROR`
/// reply and every malformed reply it can match to a request.
pub const EIO: i32 = 5;
/// `EAGAIN`: try again.
pub const EAGAIN: i32 = 11;
/// `EPROTO`: protocol error.
pub const EPROTO: i32 = 71;
/// `EMSGSIZE`: message too long.
pub const EMSGSIZE: i32 = 90;
/// `EPROTONOSUPPORT`: protocol not supported.
pub const EPROTONOSUPPORT: i32 = 93;
/// `ENOBUFS`: no buffer space available.
pub const ENOBUFS: i32 = 105;
/// `ENOTCONN`: transport endpoint is not connected.
pub const ENOTCONN: i32 = 107;

/// A kernel-style error: the negative errno a transport op returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
    /// `-EIO`.
    pub const EIO: Errno = Errno(-EIO);
    /// `-EAGAIN`.
    pub const EAGAIN: Errno = Errno(-EAGAIN);
    /// `-EPROTO`.
    pub const EPROTO: Errno = Errno(-EPROTO);
    /// `-EMSGSIZE`.
    pub const EMSGSIZE: Errno = Errno(-EMSGSIZE);
    /// `-EPROTONOSUPPORT`.
    pub const EPROTONOSUPPORT: Errno = Errno(-EPROTONOSUPPORT);
    /// `-ENOBUFS`.
    pub const ENOBUFS: Errno = Errno(-ENOBUFS);
    /// `-ENOTCONN`.
    pub const ENOTCONN: Errno = Errno(-ENOTCONN);

    /// The negative value, as returned from a kernel function (`-5`).
    #[inline]
    pub const fn to_kernel(self) -> i32 {
        self.0
    }

    /// The positive error number (`5`).
    #[inline]
    pub const fn code(self) -> u32 {
        self.0.unsigned_abs()
    }

    /// The symbolic name, for log messages.
    pub const fn name(self) -> &'static str {
        match self.0.unsigned_abs() {
            5 => "EIO",
            11 => "EAGAIN",
            71 => "EPROTO",
            90 => "EMSGSIZE",
            93 => "EPROTONOSUPPORT",
            105 => "ENOBUFS",
            107 => "ENOTCONN",
            _ => "E?",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "-{} ({})", self.name(), self.0)
    }
}
