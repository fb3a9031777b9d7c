// SPDX-License-Identifier: GPL-2.0

//! Work requests as the transport builds them before posting: the SGE
//! list a context describes its buffers with ([`SgeList`]), the context
//! traits ([`SendCtx`], [`RecvCtx`]), Send-queue WRs ([`SendOp`],
//! [`SendWr`]) and what one post takes ([`SendChain`], [`RecvBatch`]).
//!
//! SGEs can only be built from [`DmaBuf`]s borrowed from the context
//! itself ([`SendCtx::sges`], [`RecvCtx::sges`]), so the memory a WR
//! names stays alive until its context is handed back.

use super::dma::DmaBuf;
use super::mr::MrRef;
use super::verbs::Pd;
use crate::bindings;
use crate::compat::init::init_array_from_fn;
use core::convert::Infallible;
use core::marker::PhantomData;
use kernel::alloc::Flags;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The most WRs one [`SendChain`] holds.
pub const MAX_SEND_CHAIN: usize = 16;
/// The most Receives one [`RecvBatch`] holds.
pub const MAX_RECV_BATCH: usize = 16;

/// The SGE list of one WR, built by a context from buffers it owns.
///
/// `'a` is the borrow of the context: only buffers that live as long as
/// the context (its own, or `'static` ones) can be added, so a posted WR
/// never names freed memory.
pub struct SgeList<'s, 'a> {
    sges: &'s mut [bindings::ib_sge],
    pub(super) len: usize,
    pd: *const Pd,
    _bufs: PhantomData<&'a DmaBuf>,
}

impl<'s, 'a> SgeList<'s, 'a> {
    pub(super) fn new(sges: &'s mut [bindings::ib_sge], pd: &Arc<Pd>) -> Self {
        SgeList {
            sges,
            len: 0,
            pd: &**pd,
            _bufs: PhantomData,
        }
    }

    /// Adds `len` bytes of `buf` from `offset`.
    ///
    /// Fails with `EINVAL` when the range is outside the buffer or the
    /// buffer belongs to another PD, `E2BIG` when the WR has no SGE left.
    pub fn push(&mut self, buf: &'a DmaBuf, offset: usize, len: usize) -> Result {
        if offset.checked_add(len).is_none_or(|end| end > buf.len()) {
            pr_err!(
                "SGE [{}, +{}) is outside a {}-byte buffer (-EINVAL)\n",
                offset,
                len,
                buf.len()
            );
            return Err(EINVAL);
        }
        if !core::ptr::eq(&**buf.pd(), self.pd) {
            pr_err!("SGE buffer is mapped for another PD (-EINVAL)\n");
            return Err(EINVAL);
        }
        let Some(sge) = self.sges.get_mut(self.len) else {
            pr_err!("more than {} SGEs in one WR (-E2BIG)\n", self.sges.len());
            return Err(E2BIG);
        };
        *sge = bindings::ib_sge {
            addr: buf.dma_addr() + offset as u64,
            // `len <= buf.len() <= u32::MAX` (DmaBuf invariant).
            length: len as u32,
            lkey: buf.lkey(),
        };
        self.len += 1;
        Ok(())
    }

    /// Adds the whole of `buf`.
    pub fn push_all(&mut self, buf: &'a DmaBuf) -> Result {
        self.push(buf, 0, buf.len())
    }

    /// The number of SGEs so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no SGE was added.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A context posted with a Receive: owns the buffer(s) it receives into.
pub trait RecvCtx: Send + 'static {
    /// Describes the Receive's buffers.
    fn sges<'a>(&'a self, sges: &mut SgeList<'_, 'a>) -> Result;
}

/// A context posted with a Send-queue WR: owns what the WR reads.
pub trait SendCtx: Send + 'static {
    /// Describes the Send's buffers (none by default: an empty Send).
    fn sges<'a>(&'a self, _sges: &mut SgeList<'_, 'a>) -> Result {
        Ok(())
    }

    /// The memory region a [`SendOp::RegMr`] registers or a
    /// [`SendOp::LocalInv`] invalidates (none by default). The context
    /// holds a reference to it ([`MrRef`]; a LOCAL_INV's the whole MR), so
    /// its hardware object stays allocated until the WR came back; the
    /// completion path moves it through its state machine (see
    /// [`super::mr`]) before
    /// [`QpHandler::send_done`](super::qp::QpHandler::send_done) sees the
    /// context.
    fn mr(&self) -> Option<&MrRef> {
        None
    }
}

/// What a Send-queue WR does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// `IB_WR_SEND`.
    Send,
    /// `IB_WR_SEND_WITH_INV`: Send and invalidate the peer's `rkey`.
    SendWithInv {
        /// The rkey to invalidate at the peer.
        rkey: u32,
    },
    /// `IB_WR_REG_MR` (FRWR) of the context's [`SendCtx::mr`], which must
    /// be mapped ([`super::mr::MrState::Mapped`]).
    RegMr,
    /// `IB_WR_LOCAL_INV` of the context's [`SendCtx::mr`], which must be
    /// registered ([`super::mr::MrState::Registered`]).
    LocalInv,
    /// `IB_WR_RDMA_WRITE` of the context's SGEs to the peer's memory.
    RdmaWrite {
        /// The peer's address (an MR's iova-based offset).
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
    /// A zero-length `IB_WR_RDMA_WRITE`: no SGEs (the context's are not
    /// used), no remote address or rkey. It touches no memory on either
    /// side, and the peer's adapter checks no rkey for it (InfiniBand
    /// C9-88; RFC 5040 allows it on iWARP) but acknowledges it as any
    /// other WR: a liveness probe of a reliable connection, which
    /// completes with an error when the peer's QP is gone.
    ZeroLengthWrite,
    /// `IB_WR_RDMA_READ` of the peer's memory into the context's SGEs
    /// (needs `initiator_depth` > 0 in the [`super::cm::ConnParam`] and
    /// buffers mapped [`super::dma::DmaDir::FromDevice`]).
    RdmaRead {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
}

/// One Send-queue WR: an operation, its flags and its context.
///
/// A [`SendChain`] posts FRWR REG_MRs and the Send behind them in one
/// `ib_post_send()`, or a chain of LOCAL_INVs.
pub struct SendWr<C> {
    pub(super) ctx: C,
    pub(super) op: SendOp,
    pub(super) flags: i32,
}

impl<C: SendCtx> SendWr<C> {
    /// An unsignalled Send of the context's SGEs.
    pub fn send(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::Send,
            flags: 0,
        }
    }

    /// An unsignalled Send With Invalidate of `rkey`.
    pub fn send_with_inv(ctx: C, rkey: u32) -> Self {
        SendWr {
            ctx,
            op: SendOp::SendWithInv { rkey },
            flags: 0,
        }
    }

    /// An unsignalled FRWR `IB_WR_REG_MR` of `ctx.mr()` (see
    /// [`super::mr`]); chain it in front of the Send that carries the
    /// rkey.
    pub fn reg_mr(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::RegMr,
            flags: 0,
        }
    }

    /// An unsignalled `IB_WR_LOCAL_INV` of `ctx.mr()`.
    pub fn local_inv(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::LocalInv,
            flags: 0,
        }
    }

    /// An unsignalled RDMA Write of the context's SGEs to `remote_addr`
    /// under the peer's `rkey`.
    pub fn rdma_write(ctx: C, remote_addr: u64, rkey: u32) -> Self {
        SendWr {
            ctx,
            op: SendOp::RdmaWrite { remote_addr, rkey },
            flags: 0,
        }
    }

    /// An unsignalled zero-length RDMA Write ([`SendOp::ZeroLengthWrite`]).
    pub fn zero_length_write(ctx: C) -> Self {
        SendWr {
            ctx,
            op: SendOp::ZeroLengthWrite,
            flags: 0,
        }
    }

    /// An unsignalled RDMA Read from the peer's `remote_addr`/`rkey` into
    /// the context's SGEs.
    pub fn rdma_read(ctx: C, remote_addr: u64, rkey: u32) -> Self {
        SendWr {
            ctx,
            op: SendOp::RdmaRead { remote_addr, rkey },
            flags: 0,
        }
    }

    /// Requests a completion (`IB_SEND_SIGNALED`). Unsignalled WRs come
    /// back as [`Completion::Retired`](super::wc::Completion::Retired)
    /// when a later one completes; signal at least every so often, or the
    /// ring fills up.
    pub fn signaled(mut self) -> Self {
        self.flags |= bindings::ib_send_flags_IB_SEND_SIGNALED;
        self
    }

    /// Sets `IB_SEND_SOLICITED`.
    pub fn solicited(mut self) -> Self {
        self.flags |= bindings::ib_send_flags_IB_SEND_SOLICITED;
        self
    }

    /// Sets `IB_SEND_FENCE`: wait for earlier RDMA Reads to finish.
    pub fn fenced(mut self) -> Self {
        self.flags |= bindings::ib_send_flags_IB_SEND_FENCE;
        self
    }

    /// The operation.
    pub fn op(&self) -> SendOp {
        self.op
    }
}

/// Up to [`MAX_SEND_CHAIN`] Send-queue WRs posted as one linked list, in
/// order, by one `ib_post_send()`.
pub struct SendChain<C> {
    pub(super) wrs: [Option<SendWr<C>>; MAX_SEND_CHAIN],
    pub(super) len: usize,
}

impl<C: SendCtx> SendChain<C> {
    /// An empty chain.
    pub fn new() -> Self {
        SendChain {
            wrs: core::array::from_fn(|_| None),
            len: 0,
        }
    }

    /// An empty chain on the heap, initialised in place: with large
    /// contexts a chain takes a few KiB, which [`SendChain::new`] followed
    /// by a move into a box would put on the stack first. Post it with
    /// [`Qp::post_send_chain`](super::qp::Qp::post_send_chain).
    pub fn new_boxed(flags: Flags) -> Result<KBox<Self>> {
        let wrs = init_array_from_fn::<_, MAX_SEND_CHAIN, _, Infallible>(|_| None);
        KBox::init(init!(SendChain { wrs <- wrs, len: 0 }), flags)
    }

    /// Appends a WR; gives it back when the chain is full.
    pub fn push(&mut self, wr: SendWr<C>) -> core::result::Result<(), SendWr<C>> {
        match self.wrs.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(wr);
                self.len += 1;
                Ok(())
            }
            None => Err(wr),
        }
    }

    /// The number of WRs.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the chain is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<C: SendCtx> Default for SendChain<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// Up to [`MAX_RECV_BATCH`] Receives posted by one `ib_post_recv()`.
pub struct RecvBatch<C> {
    pub(super) ctxs: [Option<C>; MAX_RECV_BATCH],
    pub(super) len: usize,
}

impl<C: RecvCtx> RecvBatch<C> {
    /// An empty batch.
    pub fn new() -> Self {
        RecvBatch {
            ctxs: core::array::from_fn(|_| None),
            len: 0,
        }
    }

    /// Appends a Receive; gives the context back when the batch is full.
    pub fn push(&mut self, ctx: C) -> core::result::Result<(), C> {
        match self.ctxs.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(ctx);
                self.len += 1;
                Ok(())
            }
            None => Err(ctx),
        }
    }

    /// The number of Receives.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<C: RecvCtx> Default for RecvBatch<C> {
    fn default() -> Self {
        Self::new()
    }
}
