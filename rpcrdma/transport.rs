// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA transport built on the safe wrappers.

use crate::bindings;
use crate::sunrpc::XprtCreate;
use kernel::prelude::*;

/// Creates a transport instance for `args`.
///
/// The data path does not exist yet: every setup fails with
/// `EPROTONOSUPPORT` and says so in the kernel log.
pub fn setup(args: &XprtCreate<'_>) -> Result<*mut bindings::rpc_xprt> {
    pr_err!(
        "transport setup (ident {}): the RPC-over-RDMA data path is not implemented yet (-EPROTONOSUPPORT)\n",
        args.ident()
    );
    Err(crate::errno::eprotonosupport())
}
