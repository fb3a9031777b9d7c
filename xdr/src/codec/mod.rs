// SPDX-License-Identifier: GPL-2.0

//! RPC-over-RDMA wire formats: v1 (RFC 8166), v2 (draft -00), RFC 8797.
//!
//! This module tree is the codec itself. It uses `core` only, allocates
//! nothing, contains no `unsafe`, and refers to its parts with `super::` /
//! `self::` paths only, so that it compiles unchanged as a module of another
//! crate (the `rpcrdma2` kernel module includes this file with
//! `#[path = "../xdr/src/codec/mod.rs"] pub mod xdr;`).
//!
//! Entry points for a requester:
//!
//! * build a Call header for either version from one chunk description:
//!   [`header::encode_msg`] with a [`header::MsgSpec`] holding
//!   [`chunk::ChunkLists`];
//! * decode any received header: [`header::decode`] (dispatches on
//!   `rdma_vers`, including the v1-framed `ERR_VERS` a v1-only server sends
//!   to a v2 Call), then match on [`header::Body`];
//! * CM private data: [`pvtdata::PrivateData::encode`] and
//!   [`pvtdata::decode`].

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

pub mod chunk;
pub mod error;
pub mod header;
pub mod props;
pub mod pvtdata;
// The self-test tables: on the host (no CONFIG_RUST) and in the module's
// KUnit variant (Kbuild's RPCRDMA2_KUNIT), never in the production module.
#[cfg(any(not(CONFIG_RUST), rpcrdma2_kunit))]
pub mod selftest;
pub mod stream;
pub mod v1;
pub mod v2;

pub use self::chunk::{
    ChunkLists, ChunkListsView, ReadChunk, ReadList, ReadSegment, Segment, WriteChunk, WriteList,
};
pub use self::error::{Error, ErrorKind, Item, Result};
pub use self::header::{
    decode, dispatch, encode_msg, peek, Body, Common, Credits, Dispatch, ErrorBody, Flags, Header,
    Msg, MsgKind, MsgSpec, NoMsg, Protocol,
};
pub use self::props::{PropSet, Property, TransportProperties};
pub use self::pvtdata::PrivateData;
pub use self::stream::{XdrReader, XdrWriter};
