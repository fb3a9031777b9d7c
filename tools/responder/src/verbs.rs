// SPDX-License-Identifier: GPL-2.0

//! The thin layer over librdmacm and libibverbs (rdma-mummy-sys): the only
//! module with `unsafe`. Everything it hands out owns its verbs objects and
//! frees them on drop; buffers are registered once per connection and all
//! work requests address them by offset, checked against their length.

use std::io;
use std::ptr;

use rdma_mummy_sys as sys;

/// Errno of the last failed library call.
fn last_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// An rdma_cm event channel.
pub struct EventChannel {
    ch: *mut sys::rdma_event_channel,
}

/// One rdma_cm event, copied out (the event itself is acknowledged).
#[derive(Debug)]
pub struct CmEvent {
    /// `RDMA_CM_EVENT_*`.
    pub kind: u32,
    /// The id the event concerns (an opaque key).
    pub id: usize,
    /// Event status.
    pub status: i32,
    /// Private data of a connect request.
    pub private_data: Vec<u8>,
    /// The initiator's responder_resources (our RDMA Read depth limit).
    pub responder_resources: u8,
    /// The initiator's initiator_depth.
    pub initiator_depth: u8,
}

/// Event kinds.
pub use sys::rdma_cm_event_type as cm_event;

impl EventChannel {
    /// Creates a non-blocking event channel.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain constructor; null is checked.
        let ch = unsafe { sys::rdma_create_event_channel() };
        if ch.is_null() {
            return Err(last_err("rdma_create_event_channel"));
        }
        let me = Self { ch };
        set_nonblock(me.fd())?;
        Ok(me)
    }

    /// The channel's file descriptor.
    pub fn fd(&self) -> i32 {
        // SAFETY: `ch` is valid for our lifetime.
        unsafe { (*self.ch).fd }
    }

    /// The next event, if one is pending.
    pub fn get(&self) -> Option<CmEvent> {
        let mut ev: *mut sys::rdma_cm_event = ptr::null_mut();
        // SAFETY: `ch` is valid; `ev` receives an event we ack below.
        if unsafe { sys::rdma_get_cm_event(self.ch, &mut ev) } != 0 || ev.is_null() {
            return None;
        }
        // SAFETY: `ev` is a valid event until acked; the conn param union
        // member is the one librdmacm fills for RC connection events.
        let out = unsafe {
            let e = &*ev;
            let conn = e.param.conn;
            let pd = if conn.private_data.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(
                    conn.private_data.cast::<u8>(),
                    conn.private_data_len.into(),
                )
                .to_vec()
            };
            CmEvent {
                kind: e.event,
                id: e.id as usize,
                status: e.status,
                private_data: pd,
                responder_resources: conn.responder_resources,
                initiator_depth: conn.initiator_depth,
            }
        };
        // SAFETY: acknowledges the event obtained above exactly once.
        unsafe { sys::rdma_ack_cm_event(ev) };
        Some(out)
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: all ids on the channel are destroyed before (the server
        // drops connections and the listener first).
        unsafe { sys::rdma_destroy_event_channel(self.ch) };
    }
}

fn set_nonblock(fd: i32) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own; no memory is passed.
    let r = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK)
    };
    if r < 0 {
        return Err(last_err("fcntl"));
    }
    Ok(())
}

/// A listening rdma_cm id.
pub struct Listener {
    id: *mut sys::rdma_cm_id,
}

impl Listener {
    /// Binds to 0.0.0.0:`port` and listens.
    pub fn new(ch: &EventChannel, port: u16) -> io::Result<Self> {
        let mut id: *mut sys::rdma_cm_id = ptr::null_mut();
        // SAFETY: `ch.ch` is valid; `id` receives the new id.
        if unsafe {
            sys::rdma_create_id(
                ch.ch,
                &mut id,
                ptr::null_mut(),
                sys::rdma_port_space::RDMA_PS_TCP,
            )
        } != 0
        {
            return Err(last_err("rdma_create_id"));
        }
        let me = Self { id };
        // SAFETY: sockaddr_in is plain data; all-zero is a valid value.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as libc::sa_family_t;
        sin.sin_port = port.to_be();
        // SAFETY: `id` is valid; the address outlives the call.
        if unsafe { sys::rdma_bind_addr(me.id, (&mut sin as *mut libc::sockaddr_in).cast()) } != 0 {
            return Err(last_err("rdma_bind_addr"));
        }
        // SAFETY: `id` is valid and bound.
        if unsafe { sys::rdma_listen(me.id, 64) } != 0 {
            return Err(last_err("rdma_listen"));
        }
        Ok(me)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: the id is ours and not used after this.
        unsafe { sys::rdma_destroy_id(self.id) };
    }
}

/// Rejects connect request `id` and destroys it (only for an id no `Qp`
/// owns: `Qp::new` failing leaves the id to the caller).
pub fn reject(id: usize) {
    let id = id as *mut sys::rdma_cm_id;
    // SAFETY: `id` came from a CONNECT_REQUEST event and is not yet owned
    // by a `Qp`.
    unsafe {
        sys::rdma_reject(id, ptr::null(), 0);
        sys::rdma_destroy_id(id);
    }
}

/// A completion.
#[derive(Clone, Copy, Debug)]
pub struct Wc {
    /// Work request id.
    pub wr_id: u64,
    /// `IBV_WC_*` status (0 = success).
    pub status: u32,
    /// Bytes received (Receives).
    pub byte_len: u32,
}

/// One work request of a Send-queue chain.
#[derive(Clone, Copy, Debug)]
pub enum SendOp {
    /// RDMA Write `len` bytes at `off` to (`rkey`, `addr`).
    Write {
        /// Offset in the registered buffer.
        off: usize,
        /// Length.
        len: usize,
        /// Remote key.
        rkey: u32,
        /// Remote address.
        addr: u64,
        /// Signaled with this wr_id.
        signal: Option<u64>,
    },
    /// RDMA Read `len` bytes from (`rkey`, `addr`) to `off`.
    Read {
        /// Offset in the registered buffer.
        off: usize,
        /// Length.
        len: usize,
        /// Remote key.
        rkey: u32,
        /// Remote address.
        addr: u64,
        /// Signaled with this wr_id.
        signal: Option<u64>,
    },
    /// Send `len` bytes at `off`; with invalidate of `inv` if given.
    Send {
        /// Offset in the registered buffer.
        off: usize,
        /// Length.
        len: usize,
        /// rkey to invalidate remotely.
        inv: Option<u32>,
        /// Signaled with this wr_id.
        signal: Option<u64>,
    },
}

impl SendOp {
    /// The wr_id of a signaled work request (`None`: unsignaled).
    pub fn signal(&self) -> Option<u64> {
        match *self {
            SendOp::Write { signal, .. }
            | SendOp::Read { signal, .. }
            | SendOp::Send { signal, .. } => signal,
        }
    }
}

/// A connection's verbs resources: its cm id, PD, completion channel, CQ,
/// QP, one registered buffer and one registered read area.
///
/// Work requests name memory by offset in one space: `[0, buf.len())` is
/// the buffer, `[buf.len(), buf.len() + area length)` the read area
/// ([`Qp::area_base`]). The read area is the buffer `read(2)` from nfsd's
/// socket fills; it is lent to the caller ([`Qp::take_area`]) and given
/// back ([`Qp::put_area`]) around that work, its memory never moving (a
/// boxed slice moved is the same allocation), so RDMA Writes go straight
/// from where a record was read.
pub struct Qp {
    id: *mut sys::rdma_cm_id,
    pd: *mut sys::ibv_pd,
    chan: *mut sys::ibv_comp_channel,
    cq: *mut sys::ibv_cq,
    mr: *mut sys::ibv_mr,
    /// iWARP only: the buffer registered again, with remote write, as the
    /// sink of our RDMA Reads (null on InfiniBand and RoCE; see `new`).
    read_sink_mr: *mut sys::ibv_mr,
    buf: Box<[u8]>,
    /// The read area's registration, address and length (fixed at
    /// `new`), and the area itself while not lent out.
    area_mr: *mut sys::ibv_mr,
    area_ptr: *const u8,
    area_len: usize,
    area: Option<Box<[u8]>>,
    qp_ready: bool,
    owns_id: bool,
}

impl Qp {
    /// Builds the resources for connect request `id`: a `buf_len`-byte
    /// buffer registered for local access only (the client never gets an
    /// rkey of ours; on iWARP see below), `sq` Send and `rq` Receive work
    /// requests; and an `area_len`-byte read area, registered for local
    /// access only as well.
    ///
    /// iWARP: an RDMA Read Request carries the STag of its sink and the
    /// Read Response is a tagged write into it (RFC 5040), so the sink
    /// must be registered with remote write access (the kernel's rw API
    /// does the same for svcrdma: `rdma_rw_init_one_mr()` adds
    /// `IB_ACCESS_REMOTE_WRITE` when `rdma_protocol_iwarp()`). On an
    /// iWARP device the buffer is registered a second time with
    /// `IBV_ACCESS_REMOTE_WRITE` and that registration is used only as the
    /// sink of RDMA Reads; Sends, Receives and RDMA Write sources keep the
    /// local-only one. The client sees that STag in our Read Requests and
    /// could write into the buffer with it while the connection lasts:
    /// acceptable for this test responder, whose client is the
    /// implementation under test. InfiniBand and RoCE sinks need only
    /// local write and get no second registration.
    pub fn new(id: usize, buf_len: usize, area_len: usize, sq: u32, rq: u32) -> io::Result<Self> {
        let id = id as *mut sys::rdma_cm_id;
        let area = vec![0u8; area_len].into_boxed_slice();
        let mut me = Self {
            id,
            pd: ptr::null_mut(),
            chan: ptr::null_mut(),
            cq: ptr::null_mut(),
            mr: ptr::null_mut(),
            read_sink_mr: ptr::null_mut(),
            buf: vec![0u8; buf_len].into_boxed_slice(),
            area_mr: ptr::null_mut(),
            area_ptr: area.as_ptr(),
            area_len,
            area: Some(area),
            qp_ready: false,
            owns_id: false,
        };
        // SAFETY: `id` is a live connect-request id; every object created
        // is stored in `me` and destroyed by Drop in reverse order.
        unsafe {
            let verbs = (*id).verbs;
            me.pd = sys::ibv_alloc_pd(verbs);
            if me.pd.is_null() {
                return Err(last_err("ibv_alloc_pd"));
            }
            me.chan = sys::ibv_create_comp_channel(verbs);
            if me.chan.is_null() {
                return Err(last_err("ibv_create_comp_channel"));
            }
            set_nonblock((*me.chan).fd)?;
            me.cq = sys::ibv_create_cq(verbs, (sq + rq) as i32, ptr::null_mut(), me.chan, 0);
            if me.cq.is_null() {
                return Err(last_err("ibv_create_cq"));
            }
            if sys::ibv_req_notify_cq(me.cq, 0) != 0 {
                return Err(last_err("ibv_req_notify_cq"));
            }
            let mut attr: sys::ibv_qp_init_attr = std::mem::zeroed();
            attr.send_cq = me.cq;
            attr.recv_cq = me.cq;
            attr.qp_type = sys::ibv_qp_type::IBV_QPT_RC;
            attr.cap.max_send_wr = sq;
            attr.cap.max_recv_wr = rq;
            attr.cap.max_send_sge = 1;
            attr.cap.max_recv_sge = 1;
            if sys::rdma_create_qp(id, me.pd, &mut attr) != 0 {
                return Err(last_err("rdma_create_qp"));
            }
            me.qp_ready = true;
            me.mr = sys::ibv_reg_mr(
                me.pd,
                me.buf.as_mut_ptr().cast(),
                me.buf.len(),
                sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0 as i32,
            );
            if me.mr.is_null() {
                return Err(last_err("ibv_reg_mr"));
            }
            if area_len > 0 {
                me.area_mr = sys::ibv_reg_mr(
                    me.pd,
                    me.area_ptr.cast_mut().cast(),
                    area_len,
                    sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0 as i32,
                );
                if me.area_mr.is_null() {
                    return Err(last_err("ibv_reg_mr (read area)"));
                }
            }
            if (*(*verbs).device).transport_type == sys::ibv_transport_type::IBV_TRANSPORT_IWARP {
                me.read_sink_mr = sys::ibv_reg_mr(
                    me.pd,
                    me.buf.as_mut_ptr().cast(),
                    me.buf.len(),
                    (sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0
                        | sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0)
                        as i32,
                );
                if me.read_sink_mr.is_null() {
                    return Err(last_err("ibv_reg_mr (iWARP RDMA Read sink)"));
                }
            }
        }
        me.owns_id = true;
        Ok(me)
    }

    /// Whether RDMA Reads land in a registration with remote write access
    /// (iWARP; see `new`).
    pub fn read_sink_remote_write(&self) -> bool {
        !self.read_sink_mr.is_null()
    }

    /// Whether the device is iWARP, whose work completion means only
    /// the data's delivery to TCP: the Linux siw driver sends an
    /// *unsignaled* Send or RDMA Write of a page or more straight from
    /// the user's pages (`MSG_SPLICE_PAGES`, siw_qp_tx.c: "TCP may reuse
    /// the buffer for retransmission"), so memory written soon after
    /// such a work request completed can reach the wire changed. A
    /// signaled one is copied into TCP's buffers when sent.
    pub fn iwarp(&self) -> bool {
        !self.read_sink_mr.is_null()
    }

    /// The cm id key.
    pub fn id(&self) -> usize {
        self.id as usize
    }

    /// The completion channel's descriptor.
    pub fn comp_fd(&self) -> i32 {
        // SAFETY: `chan` is valid for our lifetime.
        unsafe { (*self.chan).fd }
    }

    /// The registered buffer.
    pub fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// The registered buffer, mutable (only regions no posted work request
    /// uses may be written: the caller's slot bookkeeping ensures it).
    pub fn buf_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Where the read area begins in the offset space of work requests.
    pub fn area_base(&self) -> usize {
        self.buf.len()
    }

    /// Lends out the read area (`None` if it is lent already). Its memory
    /// stays registered: what posted RDMA Writes read from it must not be
    /// written until they completed (the caller's pins ensure it). Give it
    /// back with [`Qp::put_area`] before posting work requests that use
    /// it; if never given back, it is freed by whoever holds it, after
    /// this `Qp` deregistered it or while no work request uses it.
    pub fn take_area(&mut self) -> Option<Box<[u8]>> {
        self.area.take()
    }

    /// Gives back the read area lent by [`Qp::take_area`] (anything else
    /// is dropped).
    pub fn put_area(&mut self, area: Box<[u8]>) {
        if self.area.is_none() && area.as_ptr() == self.area_ptr && area.len() == self.area_len {
            self.area = Some(area);
        }
    }

    /// Accepts the connection with `pvt` as private data.
    pub fn accept(
        &self,
        pvt: &[u8],
        initiator_depth: u8,
        responder_resources: u8,
    ) -> io::Result<()> {
        // SAFETY: rdma_conn_param is plain data.
        let mut p: sys::rdma_conn_param = unsafe { std::mem::zeroed() };
        p.private_data = if pvt.is_empty() {
            ptr::null()
        } else {
            pvt.as_ptr().cast()
        };
        p.private_data_len = pvt.len() as u8;
        p.initiator_depth = initiator_depth;
        p.responder_resources = responder_resources;
        // The client's RNR retries: none. A client message that finds no
        // Receive posted overran our credits; retried, it would pass
        // unseen over soft-RoCE (soft-iWARP has no RNR retry at all).
        p.rnr_retry_count = 0;
        p.retry_count = 7;
        // SAFETY: `id` is live; `p` and `pvt` outlive the call.
        if unsafe { sys::rdma_accept(self.id, &mut p) } != 0 {
            return Err(last_err("rdma_accept"));
        }
        Ok(())
    }

    /// Rejects the connect request (the id is destroyed on drop).
    pub fn reject(&self) {
        // SAFETY: `id` is a live connect-request id.
        unsafe { sys::rdma_reject(self.id, ptr::null(), 0) };
    }

    /// Initiates a disconnect.
    pub fn disconnect(&self) {
        // SAFETY: `id` is live.
        unsafe { sys::rdma_disconnect(self.id) };
    }

    /// True if `len` bytes at `off` lie within the buffer (and `len`
    /// fits an SGE).
    fn in_buf(&self, off: usize, len: usize) -> bool {
        off.checked_add(len)
            .is_some_and(|end| end <= self.buf.len() && u32::try_from(len).is_ok())
    }

    fn check(&self, off: usize, len: usize) -> io::Result<()> {
        if self.in_buf(off, len) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "work request outside the buffer",
            ))
        }
    }

    /// The address and lkey of `len` bytes at `off` of the offset space
    /// (buffer, then read area), for a Send or an RDMA Write source.
    fn source(&self, off: usize, len: usize) -> io::Result<(u64, u32)> {
        // (not `check`: an RDMA Write from the read area would build and
        // drop an `io::Error`, an allocation, per work request)
        if self.in_buf(off, len) {
            // SAFETY: within `buf` (checked); `mr` is valid.
            return Ok((unsafe { self.buf.as_ptr().add(off) } as u64, unsafe {
                (*self.mr).lkey
            }));
        }
        let a = off.checked_sub(self.buf.len());
        match a.and_then(|a| Some((a, a.checked_add(len)?))) {
            Some((a, end))
                if end <= self.area_len
                    && u32::try_from(len).is_ok()
                    && !self.area_mr.is_null() =>
            {
                // SAFETY: within the read area's allocation (checked),
                // which lives as long as its registration `area_mr`.
                Ok((self.area_ptr.wrapping_add(a) as u64, unsafe {
                    (*self.area_mr).lkey
                }))
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "work request outside the buffer and the read area",
            )),
        }
    }

    /// Posts a Receive of `len` bytes at `off`.
    pub fn post_recv(&self, wr_id: u64, off: usize, len: usize) -> io::Result<()> {
        self.check(off, len)?;
        let mut sge = sys::ibv_sge {
            // SAFETY: `off + len` is within `buf` (checked above).
            addr: unsafe { self.buf.as_ptr().add(off) } as u64,
            length: len as u32,
            // SAFETY: `mr` is valid.
            lkey: unsafe { (*self.mr).lkey },
        };
        let mut wr = sys::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad: *mut sys::ibv_recv_wr = ptr::null_mut();
        // SAFETY: the QP exists; `wr` and `sge` live through the call; the
        // target memory is registered and stays allocated while posted.
        let r = unsafe { sys::ibv_post_recv((*self.id).qp, &mut wr, &mut bad) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(())
    }

    /// Posts `ops` as one chained Send-queue post.
    pub fn post(&self, ops: &[SendOp]) -> io::Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        // SAFETY: `mr` is valid.
        let lkey = unsafe { (*self.mr).lkey };
        // RDMA Read sinks: the remote-write registration on iWARP (`new`).
        let sink_lkey = if self.read_sink_mr.is_null() {
            lkey
        } else {
            // SAFETY: non-null, so registered in `new` and valid until drop.
            unsafe { (*self.read_sink_mr).lkey }
        };
        let mut sges = Vec::with_capacity(ops.len());
        for op in ops {
            let (addr, len, lkey) = match *op {
                // RDMA Read sinks: in the buffer only.
                SendOp::Read { off, len, .. } => {
                    self.check(off, len)?;
                    // SAFETY: within `buf` (checked).
                    (unsafe { self.buf.as_ptr().add(off) } as u64, len, sink_lkey)
                }
                SendOp::Write { off, len, .. } | SendOp::Send { off, len, .. } => {
                    let (addr, lkey) = self.source(off, len)?;
                    (addr, len, lkey)
                }
            };
            sges.push(sys::ibv_sge {
                addr,
                length: len as u32,
                lkey,
            });
        }
        // SAFETY: ibv_send_wr is plain data (pointers and unions of
        // integers); all-zero is valid.
        let mut wrs: Vec<sys::ibv_send_wr> = (0..ops.len())
            .map(|_| unsafe { std::mem::zeroed() })
            .collect();
        for (i, op) in ops.iter().enumerate() {
            let w = &mut wrs[i];
            w.sg_list = &mut sges[i];
            w.num_sge = 1;
            match *op {
                SendOp::Write { rkey, addr, .. } => {
                    w.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
                    w.wr.rdma = sys::rdma_t {
                        remote_addr: addr,
                        rkey,
                    };
                }
                SendOp::Read { rkey, addr, .. } => {
                    w.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_READ;
                    w.wr.rdma = sys::rdma_t {
                        remote_addr: addr,
                        rkey,
                    };
                }
                SendOp::Send { inv, .. } => {
                    w.opcode = sys::ibv_wr_opcode::IBV_WR_SEND;
                    if let Some(rkey) = inv {
                        w.opcode = sys::ibv_wr_opcode::IBV_WR_SEND_WITH_INV;
                        w.imm_data_invalidated_rkey_union.invalidated_rkey = rkey;
                        // rdma-core's siw provider takes the STag to
                        // invalidate from `wr.rdma.rkey`, not from
                        // `invalidate_rkey` (providers/siw/siw.c,
                        // push_send_wqe(), copies `wr.rdma.rkey` into the
                        // SQE for every opcode); without this siw sends
                        // STag 0 and the client answers with a TERMINATE
                        // ("cannot invalidate"). Other providers ignore
                        // `wr.rdma` for a Send.
                        w.wr.rdma = sys::rdma_t {
                            remote_addr: 0,
                            rkey,
                        };
                    }
                }
            }
            if let Some(id) = op.signal() {
                w.wr_id = id;
                w.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
            }
        }
        let base = wrs.as_mut_ptr();
        for i in 1..wrs.len() {
            // SAFETY: `i - 1` and `i` index `wrs`, which is not reallocated.
            unsafe { (*base.add(i - 1)).next = base.add(i) };
        }
        let mut bad: *mut sys::ibv_send_wr = ptr::null_mut();
        // SAFETY: the chain and its SGEs live through the call; every SGE
        // lies in our registered buffer or read area (checked above).
        let r = unsafe { sys::ibv_post_send((*self.id).qp, base, &mut bad) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(())
    }

    /// Takes the completion channel's event, re-arms the CQ, then drains
    /// the CQ into `out` (re-arm before the drain: a completion that
    /// arrives during the drain raises a new event, none is missed).
    ///
    /// One event read per call: the CQ is armed once per call, so at most
    /// one event is pending; the channel's fd is polled level-triggered,
    /// and an event that arrives later makes it readable again. (A second
    /// read only to see `EAGAIN` is one system call per wakeup saved.)
    pub fn poll(&self, out: &mut Vec<Wc>) {
        let mut cq: *mut sys::ibv_cq = ptr::null_mut();
        let mut ctx: *mut libc::c_void = ptr::null_mut();
        // SAFETY: non-blocking channel; each event obtained is acked.
        unsafe {
            if sys::ibv_get_cq_event(self.chan, &mut cq, &mut ctx) == 0 {
                sys::ibv_ack_cq_events(cq, 1);
            }
            sys::ibv_req_notify_cq(self.cq, 0);
        }
        loop {
            // SAFETY: ibv_wc is plain data.
            let mut wc: [sys::ibv_wc; 16] = unsafe { std::mem::zeroed() };
            // SAFETY: `cq` is valid; `wc` has room for 16 entries.
            let n = unsafe { sys::ibv_poll_cq(self.cq, 16, wc.as_mut_ptr()) };
            if n <= 0 {
                break;
            }
            for w in &wc[..n as usize] {
                out.push(Wc {
                    wr_id: w.wr_id,
                    status: w.status,
                    byte_len: w.byte_len,
                });
            }
        }
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: reverse order of creation; each pointer is either null
        // or an object we created and nobody else frees.
        unsafe {
            if self.qp_ready {
                sys::rdma_destroy_qp(self.id);
            }
            if !self.read_sink_mr.is_null() {
                sys::ibv_dereg_mr(self.read_sink_mr);
            }
            if !self.mr.is_null() {
                sys::ibv_dereg_mr(self.mr);
            }
            if !self.area_mr.is_null() {
                sys::ibv_dereg_mr(self.area_mr);
            }
            if !self.chan.is_null() {
                let mut cq: *mut sys::ibv_cq = ptr::null_mut();
                let mut ctx: *mut libc::c_void = ptr::null_mut();
                while sys::ibv_get_cq_event(self.chan, &mut cq, &mut ctx) == 0 {
                    sys::ibv_ack_cq_events(cq, 1);
                }
            }
            if !self.cq.is_null() {
                let mut wc: [sys::ibv_wc; 16] = std::mem::zeroed();
                while sys::ibv_poll_cq(self.cq, 16, wc.as_mut_ptr()) > 0 {}
                sys::ibv_destroy_cq(self.cq);
            }
            if !self.chan.is_null() {
                sys::ibv_destroy_comp_channel(self.chan);
            }
            if !self.pd.is_null() {
                sys::ibv_dealloc_pd(self.pd);
            }
            if self.owns_id {
                sys::rdma_destroy_id(self.id);
            }
        }
    }
}

/// Waits for `fds` (`(fd, events)`) for at most `timeout_ms`; returns the
/// `revents` of each.
pub fn poll_fds(fds: &[(i32, i16)], timeout_ms: i32) -> Vec<i16> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, events)| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of `p.len()` pollfds.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    if n <= 0 {
        return vec![0; fds.len()];
    }
    p.iter().map(|x| x.revents).collect()
}

/// Signals the server reacts to.
pub mod signals {
    use std::sync::atomic::{AtomicBool, Ordering};

    /// SIGUSR1 seen (write the stats file now).
    pub static USR1: AtomicBool = AtomicBool::new(false);
    /// SIGTERM or SIGINT seen (write the stats file and exit).
    pub static TERM: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_signal(sig: libc::c_int) {
        if sig == libc::SIGUSR1 {
            USR1.store(true, Ordering::Relaxed);
        } else {
            TERM.store(true, Ordering::Relaxed);
        }
    }

    /// Installs the handlers (async-signal-safe: they only store flags).
    pub fn install() {
        let h = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only performs atomic stores.
        unsafe {
            libc::signal(libc::SIGUSR1, h);
            libc::signal(libc::SIGTERM, h);
            libc::signal(libc::SIGINT, h);
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
}
