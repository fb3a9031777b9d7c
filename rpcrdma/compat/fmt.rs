// SPDX-License-Identifier: GPL-2.0

//! `{}` in the print macros. On 6.12 they take [`core::fmt::Display`]; on
//! 7.3 they take `kernel::fmt::Display` (the kernel crate's own trait, so
//! that it can format foreign types), which the kernel crate implements
//! only for its own and core's types. The module's types keep
//! implementing [`core::fmt::Display`] (the codec and `proto` are also
//! host crates, without the kernel crate); on 7.3 each gets
//! `kernel::fmt::Display` forwarding to it here. Nothing to do on 6.12.

/// `kernel::fmt::Display` for types that implement `core::fmt::Display`.
#[cfg(rpcrdma2_kernel_7_3)]
macro_rules! display_via_core {
    ($($t:ty),* $(,)?) => {
        $(
            impl kernel::fmt::Display for $t {
                fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
                    core::fmt::Display::fmt(self, f)
                }
            }
        )*
    };
}

#[cfg(rpcrdma2_kernel_7_3)]
display_via_core!(
    crate::ib::cm::SockAddr,
    crate::proto::errno::Errno,
    crate::proto::recovery::Hints,
    crate::proto::recovery::Why,
    crate::xdr::error::Error,
    crate::xdr::error::ErrorKind,
    crate::xdr::error::Item,
    crate::xdr::header::Protocol,
);
