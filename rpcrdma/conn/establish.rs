// SPDX-License-Identifier: GPL-2.0

//! Setting a connection up ([`Conn::establish`], the transport's connect
//! worker): address and route resolution, the sizing of the QP, the MR
//! pool and the Send and Receive buffers (all allocated and DMA-mapped
//! here, so the data path never allocates), the CM handshake, and the
//! version 2 probe with our `RDMA2_CONNPROP`.

use super::*;

/// Most MRs in one connection's pool.
const MR_POOL_MAX: usize = 256;

/// What `dev` offers for fast registration and how FRWR is sized for it
/// ([`FrwrSizing::for_device`], as the C client's `frwr_query_device()`);
/// `None`, logged, when the device cannot register chunks: no FRWR, or
/// MRs too shallow to carry a full NFS I/O in one RPC.
pub(crate) fn frwr_sizing(dev: &Device) -> Option<(FastRegCaps, FrwrSizing)> {
    let Some(caps) = FastRegCaps::query(dev) else {
        pr_err!("FRWR is not supported by device {} (-EINVAL)\n", dev.name());
        return None;
    };
    match FrwrSizing::for_device(caps.max_page_list_len, caps.max_sge_rd) {
        Ok(sizing) => Some((caps, sizing)),
        Err(SizingError::NoDepth) => {
            pr_err!("FRWR is not supported by device {} (-EINVAL)\n", dev.name());
            None
        }
        Err(SizingError::TooShallow { depth }) => {
            pr_err!(
                "device {}: FRWR depth {} cannot register {} pages per RPC (-ENOMEM)\n",
                dev.name(),
                depth,
                MAX_SEGS
            );
            None
        }
    }
}

impl Conn {
    /// Connects to `dst` and returns the established connection
    /// (process context; sleeps). `proto` gives the plan: the version of
    /// the first message, the Receives to post, our private data.
    pub fn establish(
        net: &Net,
        dst: &SockAddr,
        xprt: &dyn Fn() -> XprtRef,
        proto_state: &Arc<ProtoState>,
        stats: &Arc<ConnStats>,
        bc: &Arc<Backchannel>,
        owners: &Arc<SlotOwners>,
    ) -> Result<Conn> {
        let id = trace::next_conn_id();
        let mut step = c"setup";
        let r = Self::establish_as(
            id,
            &mut step,
            net,
            dst,
            xprt,
            proto_state,
            stats,
            bc,
            owners,
        );
        if let Err(e) = &r {
            trace::connect_error(dst, step, e.to_errno());
        }
        r
    }

    /// [`Conn::establish`] of connection `id`; `step` names the step in
    /// progress, for the tracepoint of a failure.
    #[allow(clippy::too_many_arguments)]
    fn establish_as(
        id: u32,
        step: &mut &'static CStr,
        net: &Net,
        dst: &SockAddr,
        xprt: &dyn Fn() -> XprtRef,
        proto_state: &Arc<ProtoState>,
        stats: &Arc<ConnStats>,
        bc: &Arc<Backchannel>,
        owners: &Arc<SlotOwners>,
    ) -> Result<Conn> {
        let (config, plan) = {
            let mut p = proto_state.lock();
            (*p.config(), p.connect())
        };
        xprt().set_cwnd(plan.credits.credits, true);

        let why = Arc::new(CloseWhy::default(), GFP_KERNEL)?;
        let cm = ConnCm::new(xprt(), why.clone())?;
        let conn_id = id;
        let id = CmId::new(net, cm.clone())?;
        *step = c"address resolution";
        id.resolve_addr(None, dst, RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::AddrResolved, "address resolution")?;
        *step = c"route resolution";
        id.resolve_route(RESOLVE_TIMEOUT_MS)?;
        cm.wait_for(Step::RouteResolved, "route resolution")?;
        *step = c"resources";

        // FRWR for chunks; without it (or with frwr=N) the connection is
        // inline only.
        let frwr = id
            .device()
            .filter(|_| crate::compat::params::frwr())
            .and_then(frwr_sizing);
        let max_wr = id
            .device()
            .map_or(0, |d| d.max_qp_wr().min(d.max_cqe()).max(0) as u32);
        let segs = frwr.map_or(0, |(_, s)| {
            proto::Limits::segs_for_depth(mr::page_size() as u32, s.depth).min(s.max_segs)
        });
        // A pool smaller than the default (`max_mrs`): an RPC's chunks
        // take at most half of it (one Read and one Reply chunk), so
        // every RPC can be sent once enough MRs are back.
        let max_mrs = crate::compat::params::max_mrs() as usize;
        let segs = if max_mrs > 0 {
            segs.min(u32::try_from(max_mrs / 2).unwrap_or(u32::MAX).max(1))
        } else {
            segs
        };
        proto_state.lock().set_max_segs(segs);
        // One Read chunk and one Reply chunk per RPC at most.
        let mrs_per_rpc = 2 * segs as usize;

        let nrecv = config.recv_queue_depth();
        let nsend = config.max_requests as usize + 2;
        // Each RPC: its Send, and a REG_MR and a LOCAL_INV per MR; and
        // the keepalive probe.
        let send_wr = (nsend * (1 + 2 * mrs_per_rpc) + 1)
            .min(max_wr.saturating_sub(1) as usize)
            .max(nsend + 1);
        let caps = QpCaps {
            max_send_wr: send_wr as u32,
            max_recv_wr: nrecv,
            max_send_sge: 1,
            max_recv_sge: 1,
        };
        let qp = ConnQp::new(
            xprt(),
            conn_id,
            nsend,
            nrecv as usize,
            proto_state.clone(),
            stats.clone(),
            bc.clone(),
            why,
            cm.clone(),
            RegSizing {
                slots: config.max_requests as usize,
                mrs_per_rpc,
                depth: frwr.map_or(0, |(_, s)| s.depth as usize),
            },
            owners.clone(),
        )?;
        let ep = Endpoint::new(id, &caps, PollContext::Workqueue, qp)?;
        let mut chunking = None;
        if let Some((caps, sizing)) = frwr.filter(|_| segs > 0) {
            // The C client registers at most a few hundred MRs per
            // connection up front; a Send that finds none waits.
            let size = match max_mrs {
                0 => (config.max_requests as usize * segs as usize).clamp(1, MR_POOL_MAX),
                n => n.clamp(2 * segs as usize, MR_POOL_MAX.max(2 * segs as usize)),
            };
            let pool = MrPool::new(ep.pd(), caps.shape(sizing.depth), size)?;
            stats.mrs_allocated.fetch_add(size as u64, Relaxed);
            let c = Arc::new(Chunking::new(sizing, pool), GFP_KERNEL)?;
            // Set once: the connection's QP handler is new.
            let _ = ep.qp().handler().0.chunking.populate(c.clone());
            chunking = Some(c);
        }

        // Buffers: every Receive buffer and Send buffer of the connection
        // is allocated and DMA-mapped now; the data path never allocates.
        let state = &ep.qp().handler().0;
        for _ in 0..nrecv {
            let buf = DmaBuf::new(
                ep.pd(),
                config.recv_buffer_size() as usize,
                DmaDir::FromDevice,
                GFP_KERNEL,
            )?;
            if state.recvs.give(RecvBuf(buf)).is_err() {
                break;
            }
        }
        for _ in 0..nsend {
            let buf = DmaBuf::new(
                ep.pd(),
                config.inline_send as usize,
                DmaDir::ToDevice,
                GFP_KERNEL,
            )?;
            if state.sends.give(SendBuf { buf, len: 0 }).is_err() {
                break;
            }
        }
        // The peer's first message needs somewhere to land.
        state.post_receives(ep.qp(), plan.post_receives);

        let pd = config.private_data_bytes();
        *step = c"connection";
        ep.connect(&ConnParam::rpcrdma_client(ep.device(), &pd))?;
        cm.wait_for(Step::Established, "connection")?;

        // RFC 8797: the peer's sizes cap ours; absent or invalid private
        // data means the defaults of the version in use.
        let peer = cm.peer();
        trace::pvtdata(conn_id, &peer);
        let limits = proto_state.lock().established(peer);
        trace::connect(
            conn_id,
            dst,
            plan.protocol,
            limits.send,
            limits.recv,
            config.max_requests,
        );
        match plan.protocol {
            Protocol::V2 => pr_info!(
                "connected to {} (conn {}): probing RPC-over-RDMA version 2 (inline send {} recv {}, {} credits max)\n",
                dst, conn_id, limits.send, limits.recv, config.max_requests
            ),
            Protocol::V1 => {
                trace::version(conn_id, Protocol::V1, c"version 1 from the start");
                pr_info!(
                    "connected to {} (conn {}): RPC-over-RDMA version 1 (inline send {} recv {}, {} credits max)\n",
                    dst, conn_id, limits.send, limits.recv, config.max_requests
                )
            }
        }
        let conn = Conn {
            ep,
            chunking,
            limits,
            id: conn_id,
            unsignalled: AtomicU32::new(0),
            closed: AtomicBool::new(false),
        };
        if plan.protocol == Protocol::V2 {
            *step = c"version 2 probe";
            conn.probe(proto_state, &cm)?;
            // The peer's segment properties may leave room for less than
            // a full payload: lower the transport's, before the upper
            // layer sizes its I/O (NFS reads it at mount).
            let depth = frwr.map_or(1, |(_, s)| s.depth);
            let max = proto_state
                .lock()
                .max_payload(mr::page_size() as u32, depth);
            if let Some(bytes) = max {
                if xprt().lower_max_payload(bytes as usize) {
                    pr_info!(
                        "conn {}: the server's segment limits allow RPC payloads of {} bytes at most\n",
                        conn_id,
                        bytes
                    );
                }
            }
        }
        Ok(conn)
    }

    /// Sends our `RDMA2_CONNPROP` as the version 2 probe and waits for
    /// the server's answer (see `proto::connprop`), unless this transport
    /// probes with its first RPC. `EAGAIN` when the probe is not answered
    /// in time (the server is remembered as not answering CONNPROP: the
    /// next connection probes with an RPC) or the connection fails
    /// meanwhile: SUNRPC then connects again.
    fn probe(&self, proto_state: &Arc<ProtoState>, cm: &ConnCm) -> Result {
        let Some(plan) = proto_state.lock().connprop_probe() else {
            return Ok(());
        };
        if trace::connprop_enabled() {
            let mut sent = crate::xdr::props::TransportProperties::DEFAULTS;
            for p in &plan.props {
                sent.apply(p);
            }
            trace::connprop(self.id, c"sent", &sent);
        }
        if let Err(e) = self.post_send(|buf| plan.encode(buf).map_err(|_| EINVAL)) {
            pr_err!(
                "conn {}: posting the RDMA2_CONNPROP probe failed ({:?})\n",
                self.id,
                e
            );
            return Err(EAGAIN);
        }
        match cm.wait_probe_answer(proto::connprop::PROBE_TIMEOUT_MS) {
            Ok(true) => Ok(()),
            Ok(false) => {
                if !proto_state.lock().probe_timed_out() {
                    // Answered just now.
                    return Ok(());
                }
                pr_warn!(
                    "conn {}: no answer to the RPC-over-RDMA version 2 probe (RDMA2_CONNPROP) in {} ms: reconnecting; this server's connections will probe with their first RPC\n",
                    self.id,
                    proto::connprop::PROBE_TIMEOUT_MS
                );
                self.disconnect(Why::ProbeTimeout);
                Err(EAGAIN)
            }
            Err(e) => {
                pr_warn!(
                    "conn {}: the connection failed while probing for version 2 ({:?})\n",
                    self.id,
                    e
                );
                Err(EAGAIN)
            }
        }
    }
}
