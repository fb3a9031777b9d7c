// SPDX-License-Identifier: GPL-2.0

//! Error codes the 6.12 `kernel::error::code` list lacks.

use crate::bindings;
use kernel::error::Error;

/// Turns a positive `E*` constant from the bindings into an [`Error`].
fn from(errno: u32) -> Error {
    // The constants are small positive values, so the negation is in range.
    Error::from_errno(-(errno as i32))
}

/// `EPROTONOSUPPORT`: protocol not supported.
pub fn eprotonosupport() -> Error {
    from(bindings::EPROTONOSUPPORT)
}
