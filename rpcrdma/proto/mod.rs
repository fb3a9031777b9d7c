// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA protocol logic for the requester, without I/O.
//!
//! State machines that take the events a transport sees (connect,
//! established, a Call to send, a Receive completed, disconnect) and
//! return decisions: which version and credit word to send, whether an
//! RPC fits inline, what a received message means, how the credit window
//! changes, how many Receives to post. The transport glue (RDMA verbs,
//! SUNRPC `rpc_xprt` ops) carries them out.
//!
//! * [`negotiate`]: v2 probe and fallback to v1 (draft -00 §4.3.3);
//! * [`connprop`]: our `RDMA2_CONNPROP` (the v2 probe), reassembly of a
//!   continued one from the peer (-00 §5, §6.4.4);
//! * [`credits`]: v1 and v2 credit accounting, Receive replenishment
//!   (-00 §4.3.1, RFC 8166 §3.3.1);
//! * [`inline`]: inline thresholds from our settings and the peer's RFC
//!   8797 private data, header sizes, inline call sizing;
//! * [`reply`]: validation and classification of received messages;
//! * [`chunks`]: chunk planning (inline / Read / Position-Zero Read;
//!   inline / Write / Reply chunk), chunk lists from registered
//!   segments, validation of replies that use chunks, remote
//!   invalidation;
//! * [`recovery`]: what to do with an RPC a responder refused with a
//!   transport error (resend with which planning hints, or fail);
//! * [`continuation`]: Message Continuation: reassembly of continued
//!   replies, pieces of continued Calls (-00 §4.5.2, §6.3.2);
//! * [`backchannel`]: reverse-direction Calls (RFC 8167): what to do
//!   with one, the header and size of its reply;
//! * [`conn`]: [`Transport`], which ties them together and is what the
//!   glue calls (its send side in [`conn::send`], its receive side in
//!   [`conn::receive`], its counters in [`conn::stats`]);
//! * [`reqlife`]: the registration lifecycle of a request slot (when
//!   its MRs are invalidated, when the RPC ends, when a release may take
//!   the MRs back);
//! * [`signal`]: which inline Sends ask for a completion;
//! * [`config`], [`errno`]; [`selftest`] for KUnit.
//!
//! Like the codec, this tree uses `core` only, allocates nothing,
//! contains no `unsafe` and cannot panic on any input; it takes the codec
//! from its parent once (`use super::xdr;` below, so every file of the
//! tree names it `super::xdr`, a file one level down `super::super::xdr`)
//! and refers to its own parts with `super::` / `self::`, so the kernel
//! module compiles it with `pub mod proto;` next to `pub mod xdr;` and the
//! host crate (`host.rs`) with a `#[path]`.
//! Documentation/design-proto.rst describes the design.

#![forbid(unsafe_code)]
// No input may make this code panic: in the kernel a panic is a BUG(). These
// hold wherever the tree is compiled: the host crate and the module's clippy
// run (`make clippy`); the rest of the lint policy is the workspace's
// (Cargo.toml) on the host and the kernel's flags in the module.
#![deny(
    unreachable_pub,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::as_conversions
)]

/// The wire codec: the one path by which this tree reaches it.
use super::xdr;

pub mod backchannel;
pub mod chunks;
pub mod config;
pub mod conn;
pub mod connprop;
pub mod continuation;
pub mod credits;
pub mod errno;
pub mod inline;
pub mod keepalive;
pub mod negotiate;
pub mod recovery;
pub mod reply;
pub mod reqlife;
pub mod signal;
// The self-test tables: on the host (no CONFIG_RUST) and in the module's
// KUnit variant (Kbuild's RPCRDMA2_KUNIT), never in the production module.
#[cfg(any(not(CONFIG_RUST), rpcrdma2_kunit))]
pub mod selftest;

pub use self::chunks::lists::CallChunks;
pub use self::chunks::reply::{Invalidated, ReplyData, ReplyError};
pub use self::chunks::{
    CallForm, ChunkPlan, Geometry, Limits, Part, PlanError, Range, ReplyForm, Rpc, SendLayout,
};
pub use self::config::{Config, VersionPolicy};
pub use self::conn::receive::Outcome;
pub use self::conn::send::{CallError, CallPlan, PiecePlan};
pub use self::conn::stats::Stats;
pub use self::conn::{ConnectPlan, Transport};
pub use self::credits::{CreditState, CreditUpdate};
pub use self::errno::Errno;
pub use self::inline::{Direction, Thresholds, TooBig};
pub use self::negotiate::{Phase, ProbeLoss, ServerMemory};
pub use self::recovery::{Hints, Recovery};
pub use self::reply::{Cause, ChunkUse, Control, Reply};
