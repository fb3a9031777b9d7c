// SPDX-License-Identifier: GPL-2.0

//! Error codes the 6.12 `kernel::error::code` list lacks (it stops at the
//! generic ones and a few kernel-internal codes). Replaced by the same
//! names in `kernel::error::code` once listed there.

use crate::bindings;
use kernel::error::Error;

/// Turns a positive `E*` constant from the module's bindings into an
/// [`Error`].
pub fn code(errno: u32) -> Error {
    // The constants are small positive values, so the negation is in range.
    Error::from_errno(-(errno as i32))
}

macro_rules! errnos {
    ($($(#[$m:meta])* $name:ident => $e:ident,)*) => {
        $(
            $(#[$m])*
            pub fn $name() -> Error {
                code(bindings::$e)
            }
        )*
    };
}

errnos! {
    /// `EPROTONOSUPPORT`: protocol not supported.
    eprotonosupport => EPROTONOSUPPORT,
    /// `EMSGSIZE`: message too long.
    emsgsize => EMSGSIZE,
    /// `EAFNOSUPPORT`: address family not supported.
    eafnosupport => EAFNOSUPPORT,
    /// `ENOTCONN`: transport endpoint is not connected.
    enotconn => ENOTCONN,
    /// `ECONNREFUSED`: connection refused.
    econnrefused => ECONNREFUSED,
    /// `ECONNABORTED`: connection aborted.
    econnaborted => ECONNABORTED,
    /// `ENETUNREACH`: network is unreachable.
    enetunreach => ENETUNREACH,
    /// `EBADSLT`: no congestion window slot (SUNRPC's send retry code).
    ebadslt => EBADSLT,
    /// `ENOBUFS`: no buffer space available.
    enobufs => ENOBUFS,
    /// `ETIMEDOUT`: connection timed out.
    etimedout => ETIMEDOUT,
    /// `EPROTO`: protocol error.
    eproto => EPROTO,
}

// `proto` defines the errno values it hands out without the kernel crate:
// check every one against the kernel's own at compile time.
const _: () = {
    use crate::bindings as b;
    use crate::proto::errno as e;
    assert!(e::EIO.unsigned_abs() == b::EIO);
    assert!(e::EAGAIN.unsigned_abs() == b::EAGAIN);
    assert!(e::EPROTO.unsigned_abs() == b::EPROTO);
    assert!(e::EMSGSIZE.unsigned_abs() == b::EMSGSIZE);
    assert!(e::EPROTONOSUPPORT.unsigned_abs() == b::EPROTONOSUPPORT);
    assert!(e::ENOBUFS.unsigned_abs() == b::ENOBUFS);
    assert!(e::ENOTCONN.unsigned_abs() == b::ENOTCONN);
};
