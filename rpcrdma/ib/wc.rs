// SPDX-License-Identifier: GPL-2.0

//! Work completions: the `struct ib_wc` a completion callback borrows
//! ([`WorkCompletion`], [`WcOpcode`]) and how a posted context comes back
//! to its [`QpHandler`](super::qp::QpHandler) ([`Completion`]).

use crate::bindings;
use kernel::prelude::*;

/// A work completion (`struct ib_wc`), borrowed for a completion callback.
///
/// Only [`WorkCompletion::status`] (and the WR identity) is defined for a
/// failed completion; the other fields are meaningful on success.
#[repr(transparent)]
pub struct WorkCompletion(bindings::ib_wc);

/// The opcode of a successful work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    /// `IB_WC_SEND`.
    Send,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite,
    /// `IB_WC_RDMA_READ`.
    RdmaRead,
    /// `IB_WC_LOCAL_INV`.
    LocalInv,
    /// `IB_WC_REG_MR`.
    RegMr,
    /// `IB_WC_RECV`.
    Recv,
    /// `IB_WC_RECV_RDMA_WITH_IMM`.
    RecvRdmaWithImm,
    /// Anything else (raw `enum ib_wc_opcode`).
    Other(u32),
}

impl WorkCompletion {
    /// The raw `enum ib_wc_status` (0 is `IB_WC_SUCCESS`).
    pub fn status(&self) -> u32 {
        self.0.status
    }

    /// Whether the WR succeeded.
    pub fn is_success(&self) -> bool {
        self.0.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// Whether the WR was flushed because the QP entered the error state
    /// (disconnect, drain or an earlier error): `IB_WC_WR_FLUSH_ERR`.
    pub fn is_flushed(&self) -> bool {
        self.0.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }

    /// ib_core's name for the status ("success", "WR flushed", ...).
    pub fn status_msg(&self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg()` returns a static string for every value.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self.0.status)) }
    }

    /// The vendor error code of a failed completion.
    pub fn vendor_err(&self) -> u32 {
        self.0.vendor_err
    }

    /// The operation that completed.
    pub fn opcode(&self) -> WcOpcode {
        match self.0.opcode {
            bindings::ib_wc_opcode_IB_WC_SEND => WcOpcode::Send,
            bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
            bindings::ib_wc_opcode_IB_WC_RDMA_READ => WcOpcode::RdmaRead,
            bindings::ib_wc_opcode_IB_WC_LOCAL_INV => WcOpcode::LocalInv,
            bindings::ib_wc_opcode_IB_WC_REG_MR => WcOpcode::RegMr,
            bindings::ib_wc_opcode_IB_WC_RECV => WcOpcode::Recv,
            bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
            o => WcOpcode::Other(o),
        }
    }

    /// Bytes received (Receives).
    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }

    /// The raw `IB_WC_*` flags.
    pub fn wc_flags(&self) -> u32 {
        self.0.wc_flags as u32
    }

    /// The rkey the peer invalidated with Send With Invalidate
    /// (`IB_WC_WITH_INVALIDATE` set), if any.
    pub fn invalidated_rkey(&self) -> Option<u32> {
        if self.wc_flags() & bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE != 0 {
            // SAFETY: with `IB_WC_WITH_INVALIDATE` the union holds the rkey.
            Some(unsafe { self.0.ex.invalidate_rkey })
        } else {
            None
        }
    }

    /// The `ib_cqe` the WR carried.
    pub(super) fn cqe(&self) -> *mut bindings::ib_cqe {
        // SAFETY: kernel ULPs (us) always post with `wr_cqe`, never `wr_id`.
        unsafe { self.0.__bindgen_anon_1.wr_cqe }
    }
}

/// How a posted context comes back (see the module documentation).
pub enum Completion<'a> {
    /// The WR's own work completion.
    Done(&'a WorkCompletion),
    /// An unsignalled Send-queue WR that completed successfully, known
    /// because a later WR on the queue completed (or the queue drained).
    Retired,
    /// Never posted, or the QP was destroyed before the WR completed.
    Aborted,
}

impl Completion<'_> {
    /// Whether the WR is known to have executed successfully.
    pub fn is_success(&self) -> bool {
        match self {
            Completion::Done(wc) => wc.is_success(),
            Completion::Retired => true,
            Completion::Aborted => false,
        }
    }
}
