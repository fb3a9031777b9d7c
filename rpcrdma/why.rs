// SPDX-License-Identifier: GPL-2.0

//! Why a connection ends: the reason of the `rpcrdma2_disconnect` and
//! `rpcrdma2_reconnect` tracepoints.
//!
//! Most failures end a connection in two steps: whoever sees it (a
//! completion handler, the reply handler, the CM event handler, the RPC
//! timer) asks SUNRPC to close the transport (`xprt_force_disconnect`),
//! and SUNRPC's `close` tears the connection down later. [`CloseWhy`]
//! carries the first step's cause to the second, so that the connection's
//! one `rpcrdma2_disconnect` event names it instead of "close".

use core::ffi::CStr;
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Why a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Why {
    /// SUNRPC closed the transport (no cause noted before).
    Close = 1,
    /// The connect worker replaces a connection left from before.
    Reconnect,
    /// The transport is destroyed (unmount).
    Destroy,
    /// A disconnect injected through fail_sunrpc.
    Injected,
    /// The peer disconnected (RDMA_CM_EVENT_DISCONNECTED).
    PeerDisconnected,
    /// The device went away.
    DeviceRemoval,
    /// The local address changed.
    AddrChange,
    /// A Send, REG_MR or LOCAL_INV completed with an error.
    SendError,
    /// A Receive completed with an error.
    RecvError,
    /// The keepalive probe failed: the peer's adapter did not acknowledge
    /// it (its QP is gone, or the path was down for all the retries).
    Unresponsive,
    /// A received message broke the protocol (the reply handler's
    /// `Reply::Disconnect`).
    ProtocolError,
    /// The server sent more callbacks than the slots offered.
    BackchannelOverflow,
    /// An RPC timed out while connected (RDMA has no keepalive).
    Timeout,
    /// The server answered neither our version 2 CONNPROP probe nor with
    /// ERR_VERS (the transport connects again and probes with an RPC).
    ProbeTimeout,
    /// A completion was flushed before any cause was known: the QP left
    /// RTS under us (on iWARP the peer's close does that before the CM
    /// reports it). A weak cause: one noted later replaces it.
    Flushed,
}

impl Why {
    const ALL: [Why; 15] = [
        Why::Close,
        Why::Reconnect,
        Why::Destroy,
        Why::Injected,
        Why::PeerDisconnected,
        Why::DeviceRemoval,
        Why::AddrChange,
        Why::SendError,
        Why::RecvError,
        Why::Unresponsive,
        Why::ProtocolError,
        Why::BackchannelOverflow,
        Why::Timeout,
        Why::ProbeTimeout,
        Why::Flushed,
    ];

    /// The reason as the tracepoints print it.
    pub fn name(self) -> &'static CStr {
        match self {
            Why::Close => c"close",
            Why::Reconnect => c"reconnect",
            Why::Destroy => c"destroy",
            Why::Injected => c"injected",
            Why::PeerDisconnected => c"peer disconnected",
            Why::DeviceRemoval => c"device removal",
            Why::AddrChange => c"address change",
            Why::SendError => c"send completion error",
            Why::RecvError => c"receive completion error",
            Why::Unresponsive => c"keepalive probe unanswered",
            Why::ProtocolError => c"protocol error",
            Why::BackchannelOverflow => c"backchannel overflow",
            Why::Timeout => c"RPC timeout",
            Why::ProbeTimeout => c"CONNPROP probe unanswered",
            Why::Flushed => c"flushed",
        }
    }

    /// The reason stored as `why as u8`.
    pub fn from_u8(v: u8) -> Option<Why> {
        Why::ALL.iter().copied().find(|w| *w as u8 == v)
    }
}

/// Marks the reason as already reported.
const DONE: u8 = 0xff;

/// The reason a connection ends: empty, then the first cause noted, then
/// reported (once).
#[derive(Default)]
pub struct CloseWhy(AtomicU8);

impl CloseWhy {
    /// Notes `why` unless a cause was noted or reported already; a
    /// noted [`Why::Flushed`] gives way to any other cause.
    pub fn note(&self, why: Why) {
        let _ = self.0.fetch_update(Relaxed, Relaxed, |cur| {
            (cur == 0 || (cur == Why::Flushed as u8 && why != Why::Flushed)).then_some(why as u8)
        });
    }

    /// The reason to report for the teardown: the cause noted, else
    /// `default`; `None` if it was reported already.
    pub fn report(&self, default: Why) -> Option<Why> {
        match self.0.swap(DONE, Relaxed) {
            DONE => None,
            v => Some(Why::from_u8(v).unwrap_or(default)),
        }
    }
}
