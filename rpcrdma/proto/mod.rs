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
//! * [`credits`]: v1 and v2 credit accounting, Receive replenishment
//!   (-00 §4.3.1, RFC 8166 §3.3.1);
//! * [`inline`]: inline thresholds from our settings and the peer's RFC
//!   8797 private data, header sizes, inline call sizing;
//! * [`reply`]: validation and classification of received messages;
//! * [`chunks`]: chunk planning (inline / Read / Position-Zero Read;
//!   inline / Write / Reply chunk), chunk lists from registered
//!   segments, validation of replies that use chunks, remote
//!   invalidation;
//! * [`backchannel`]: reverse-direction Calls (RFC 8167): what to do
//!   with one, the header and size of its reply;
//! * [`conn`]: [`Transport`], which ties them together and is what the
//!   glue calls;
//! * [`config`], [`errno`]; [`selftest`] for KUnit.
//!
//! Like the codec, this tree uses `core` only, allocates nothing,
//! contains no `unsafe` and cannot panic on any input; it refers to the
//! codec as `super::xdr` and to its own parts with `super::` / `self::`,
//! so the kernel module compiles it with `pub mod proto;` next to
//! `pub mod xdr;` and the host crate (`host.rs`) with a `#[path]`.
//! Documentation/design-proto.rst describes the design.

pub mod backchannel;
pub mod chunks;
pub mod config;
pub mod conn;
pub mod credits;
pub mod errno;
pub mod inline;
pub mod negotiate;
pub mod reply;
pub mod selftest;

pub use self::chunks::{
    CallChunks, CallForm, ChunkPlan, Geometry, Invalidated, Limits, Part, PlanError, Range,
    ReplyData, ReplyError, ReplyForm, Rpc, SendLayout,
};
pub use self::config::{Config, VersionPolicy};
pub use self::conn::{CallError, CallPlan, ConnectPlan, Outcome, Stats, Transport};
pub use self::credits::{CreditState, CreditUpdate};
pub use self::errno::Errno;
pub use self::inline::{Direction, Thresholds, TooBig};
pub use self::negotiate::{Phase, ProbeLoss, ServerMemory};
pub use self::reply::{Cause, ChunkUse, Control, Reply};
