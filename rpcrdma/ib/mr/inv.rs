// SPDX-License-Identifier: GPL-2.0

//! The Send-queue context of a LOCAL_INV WR ([`MrWr`], which owns its
//! MR), and the posting of invalidations: asynchronous
//! ([`post_local_inv`], C `frwr_unmap_async()`) or waited for
//! ([`invalidate_sync`], C `frwr_unmap_sync()`).

use super::super::qp::{Qp, QpHandler};
use super::super::wc::Completion;
use super::super::wr::{SendChain, SendCtx, SendWr};
use super::{Mr, MrRef};
use kernel::alloc::flags::GFP_NOWAIT;
use kernel::prelude::*;
use kernel::sync::{Arc, CondVar, Mutex};

/// Collects the MRs of a synchronous invalidation.
#[pin_data]
pub struct InvWait {
    #[pin]
    mrs: Mutex<KVec<Mr>>,
    #[pin]
    cv: CondVar,
}

/// The Send-queue context of a LOCAL_INV WR: owns its MR (a REG_MR's
/// context holds only an [`MrRef`]: the MR stays with its holder).
///
/// The transport's [`QpHandler::SendCtx`] wraps it (e.g. an enum variant)
/// and returns [`MrWr::mr`] from [`SendCtx::mr`]; its `send_done` calls
/// [`MrWr::done`] to take the MR back.
pub struct MrWr {
    mr: Mr,
    wait: Option<Arc<InvWait>>,
    last: bool,
}

impl MrWr {
    /// A context for `mr`.
    pub fn new(mr: Mr) -> MrWr {
        MrWr {
            mr,
            wait: None,
            last: false,
        }
    }

    /// The MR (for [`SendCtx::mr`]).
    pub fn mr(&self) -> &Mr {
        &self.mr
    }

    /// Whether this is the last LOCAL_INV of a chain posted by
    /// [`post_local_inv`]: all earlier ones have come back already (Send
    /// queues complete in order), so the invalidation is complete.
    pub fn is_last(&self) -> bool {
        self.last
    }

    /// Ends the WR: gives the MR back (its state says how the WR went),
    /// or `None` when it belongs to an [`invalidate_sync`] waiter.
    pub fn done(self) -> Option<Mr> {
        match self.wait {
            None => Some(self.mr),
            Some(w) => {
                // Capacity was reserved for the whole chain.
                let _ = w.mrs.lock().push(self.mr, GFP_KERNEL);
                w.cv.notify_all();
                None
            }
        }
    }
}

impl SendCtx for MrWr {
    fn mr(&self) -> Option<&MrRef> {
        Some(self.mr.hw())
    }
}

fn post_inv_chain<Q: QpHandler>(
    qp: &Qp<Q>,
    mrs: KVec<Mr>,
    wait: Option<&Arc<InvWait>>,
    mut wrap: impl FnMut(MrWr) -> Q::SendCtx,
) -> Result {
    let total = mrs.len();
    let mut res = Ok(());
    // On the heap: a chain of MRs is a few KiB. Without memory, the WRs
    // are posted one by one.
    let mut chain = SendChain::new_boxed(GFP_NOWAIT).ok();
    for (i, mr) in mrs.into_iter().enumerate() {
        let last = i + 1 == total;
        let ctx = wrap(MrWr {
            mr,
            wait: wait.cloned(),
            last,
        });
        if res.is_err() {
            // An earlier chain failed: hand the rest back untouched.
            qp.handler().send_done(qp, ctx, Completion::Aborted);
            continue;
        }
        res = qp.post_batched(chain.as_deref_mut(), SendWr::local_inv(ctx), last);
    }
    res
}

/// Posts LOCAL_INV for `mrs` (all `Registered`) in as few posts as
/// possible; only the last WR of each post is signalled. Each MR comes
/// back to the handler's `send_done` in its [`MrWr`] (made into the
/// handler's context by `wrap`); the last one has [`MrWr::is_last`].
/// This is the asynchronous invalidation of `frwr_unmap_async()`.
///
/// On failure every MR not posted still comes back, as
/// [`Completion::Aborted`] (its state unchanged).
pub fn post_local_inv<Q: QpHandler>(
    qp: &Qp<Q>,
    mrs: KVec<Mr>,
    wrap: impl FnMut(MrWr) -> Q::SendCtx,
) -> Result {
    post_inv_chain(qp, mrs, None, wrap)
}

/// Invalidates `mrs` and waits until every WR came back
/// (`frwr_unmap_sync()`, for an RPC that is abandoned); returns the MRs,
/// each `Invalidated` or, if its LOCAL_INV failed, `Broken` (or still
/// `Registered` if it could not be posted). The handler must hand each
/// [`MrWr`] to [`MrWr::done`]. Must not be called from a [`QpHandler`]
/// callback. Fails (with the MRs untouched) only if it cannot allocate.
pub fn invalidate_sync<Q: QpHandler>(
    qp: &Qp<Q>,
    mrs: KVec<Mr>,
    wrap: impl FnMut(MrWr) -> Q::SendCtx,
) -> core::result::Result<KVec<Mr>, (Error, KVec<Mr>)> {
    let n = mrs.len();
    let wait = match KVec::with_capacity(n, GFP_KERNEL)
        .map_err(Error::from)
        .and_then(|v| {
            Arc::pin_init(
                pin_init!(InvWait {
                    mrs <- kernel::new_mutex!(v, "rpcrdma2_inv_wait"),
                    cv <- kernel::new_condvar!("rpcrdma2_inv_wait"),
                }),
                GFP_KERNEL,
            )
        }) {
        Ok(w) => w,
        Err(e) => return Err((e, mrs)),
    };
    let _ = post_inv_chain(qp, mrs, Some(&wait), wrap);
    let mut got = wait.mrs.lock();
    while got.len() < n {
        wait.cv.wait(&mut got);
    }
    Ok(core::mem::take(&mut *got))
}
