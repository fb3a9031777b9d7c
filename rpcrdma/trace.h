/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of rpcrdma2 (trace system "rpcrdma2").
 *
 *   trace-cmd record -e rpcrdma2            every event
 *   trace-cmd record -e rpcrdma2:rpcrdma2_marshal -f 'xid == 0x1234abcd'
 *
 * Defined here in C (TRACE_EVENT cannot be written in Rust on 6.12),
 * instantiated in trace.c, and fired from Rust through the rpcrdma2_trace_*
 * wrappers in trace.c, after rpcrdma/trace.rs has checked the tracepoint's
 * static key: a disabled event costs one load and a branch.
 *
 * Fields a developer filters on: conn (a connection id, unique for the
 * module's lifetime, also in the connect log line), xid (host order, as
 * the C client's rpcrdma tracepoints print it) and task (tk_pid).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rpcrdma2

#if !defined(RPCRDMA2_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RPCRDMA2_TRACE_H

#include <linux/tracepoint.h>

/* A connection is up: the version it starts with and its inline sizes. */
TRACE_EVENT(rpcrdma2_connect,
	TP_PROTO(u32 conn, const char *peer, u32 vers, u32 inline_send,
		 u32 inline_recv, u32 max_credits),
	TP_ARGS(conn, peer, vers, inline_send, inline_recv, max_credits),
	TP_STRUCT__entry(
		__field(u32, conn)
		__string(peer, peer)
		__field(u32, vers)
		__field(u32, inline_send)
		__field(u32, inline_recv)
		__field(u32, max_credits)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__assign_str(peer);
		__entry->vers = vers;
		__entry->inline_send = inline_send;
		__entry->inline_recv = inline_recv;
		__entry->max_credits = max_credits;
	),
	TP_printk("conn=%u peer=%s vers=%u inline_send=%u inline_recv=%u max_credits=%u",
		  __entry->conn, __get_str(peer), __entry->vers,
		  __entry->inline_send, __entry->inline_recv,
		  __entry->max_credits)
);

/* A connection attempt failed at one step. */
TRACE_EVENT(rpcrdma2_connect_error,
	TP_PROTO(const char *peer, const char *step, int status),
	TP_ARGS(peer, step, status),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string(step, step)
		__field(int, status)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(step);
		__entry->status = status;
	),
	TP_printk("peer=%s step=%s status=%d", __get_str(peer),
		  __get_str(step), __entry->status)
);

/* A connection ends, or is replaced, and why (see rpcrdma/why.rs). */
DECLARE_EVENT_CLASS(rpcrdma2_conn_reason_class,
	TP_PROTO(u32 conn, const char *reason),
	TP_ARGS(conn, reason),
	TP_STRUCT__entry(
		__field(u32, conn)
		__string(reason, reason)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__assign_str(reason);
	),
	TP_printk("conn=%u reason=%s", __entry->conn, __get_str(reason))
);

/* Connection conn is torn down: the first cause noted (a completion
 * error, a protocol error, the peer's disconnect, an RPC timeout, ...) or
 * the caller's (close, reconnect, destroy, injected). */
DEFINE_EVENT(rpcrdma2_conn_reason_class, rpcrdma2_disconnect,
	TP_PROTO(u32 conn, const char *reason),
	TP_ARGS(conn, reason));

/* The transport connects again: conn is the connection that ended, for
 * reason (the new one follows as rpcrdma2_connect). */
DEFINE_EVENT(rpcrdma2_conn_reason_class, rpcrdma2_reconnect,
	TP_PROTO(u32 conn, const char *reason),
	TP_ARGS(conn, reason));

/* The keepalive of connection conn (rpcrdma/conn/keepalive.rs): what
 * happened to its probe, a zero-length RDMA Write posted after a period
 * with replies awaited and nothing received: probe (posted),
 * acknowledged, unanswered (the connection ends). */
DEFINE_EVENT(rpcrdma2_conn_reason_class, rpcrdma2_keepalive,
	TP_PROTO(u32 conn, const char *reason),
	TP_ARGS(conn, reason));

/* RFC 8797 private data received from the peer (present=0: absent or
 * invalid, the version's defaults apply). */
TRACE_EVENT(rpcrdma2_pvtdata,
	TP_PROTO(u32 conn, bool present, u32 send_size, u32 recv_size,
		 bool remote_inv),
	TP_ARGS(conn, present, send_size, recv_size, remote_inv),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(bool, present)
		__field(u32, send_size)
		__field(u32, recv_size)
		__field(bool, remote_inv)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->present = present;
		__entry->send_size = send_size;
		__entry->recv_size = recv_size;
		__entry->remote_inv = remote_inv;
	),
	TP_printk("conn=%u present=%d send_size=%u recv_size=%u remote_inv=%d",
		  __entry->conn, __entry->present, __entry->send_size,
		  __entry->recv_size, __entry->remote_inv)
);

/* The connection settled on a version: 2 (the probe was answered) or 1
 * (ERR_VERS, or the server was remembered as version-1-only). */
TRACE_EVENT(rpcrdma2_version,
	TP_PROTO(u32 conn, u32 vers, const char *how),
	TP_ARGS(conn, vers, how),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, vers)
		__string(how, how)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->vers = vers;
		__assign_str(how);
	),
	TP_printk("conn=%u vers=%u how=%s", __entry->conn, __entry->vers,
		  __get_str(how))
);

/* An RDMA2_CONNPROP (draft -00 section 5.2): dir "sent" (ours, the
 * version 2 probe; properties we leave out show their defaults) or
 * "received" (the peer's, whole or reassembled). */
TRACE_EVENT(rpcrdma2_connprop,
	TP_PROTO(u32 conn, const char *dir, u32 max_send, u32 recv_buf,
		 u32 max_seg_size, u32 max_seg_count, u32 reverse_req),
	TP_ARGS(conn, dir, max_send, recv_buf, max_seg_size, max_seg_count,
		reverse_req),
	TP_STRUCT__entry(
		__field(u32, conn)
		__string(dir, dir)
		__field(u32, max_send)
		__field(u32, recv_buf)
		__field(u32, max_seg_size)
		__field(u32, max_seg_count)
		__field(u32, reverse_req)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__assign_str(dir);
		__entry->max_send = max_send;
		__entry->recv_buf = recv_buf;
		__entry->max_seg_size = max_seg_size;
		__entry->max_seg_count = max_seg_count;
		__entry->reverse_req = reverse_req;
	),
	TP_printk("conn=%u dir=%s max_send=%u recv_buf=%u max_seg_size=%u max_seg_count=%u reverse_req=%u",
		  __entry->conn, __get_str(dir), __entry->max_send,
		  __entry->recv_buf,
		  __entry->max_seg_size, __entry->max_seg_count,
		  __entry->reverse_req)
);

/* The credit window changed (a grant in a reply or an asynchronous v2
 * credit grant): RPCs that may now be outstanding. */
TRACE_EVENT(rpcrdma2_credits,
	TP_PROTO(u32 conn, u32 xid, u32 credits),
	TP_ARGS(conn, xid, credits),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__field(u32, credits)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__entry->credits = credits;
	),
	TP_printk("conn=%u xid=0x%08x credits=%u", __entry->conn,
		  __entry->xid, __entry->credits)
);

/* How a Call was marshalled: call "inline", "read" (a Read chunk at
 * position) or "long" (Position-Zero Read chunk, RDMA_NOMSG); reply
 * "inline", "write" (a Write chunk) or "long" (a Reply chunk); for an RPC
 * sent again after transport errors, how many times (resends) and the
 * planning hints of its recovery ("none" otherwise). nread, nwrite and
 * nreply: the segments of its Read, Write and Reply chunks. Every event
 * prints its fields as NAME=VALUE under their filterable names. */
TRACE_EVENT(rpcrdma2_marshal,
	TP_PROTO(u32 conn, u32 task, u32 xid, u32 vers, const char *call,
		 const char *reply, u32 hdr_len, u32 rpc_len, u32 inline_len,
		 u32 nread, u32 nwrite, u32 nreply, bool probe, u32 resends,
		 const char *hints),
	TP_ARGS(conn, task, xid, vers, call, reply, hdr_len, rpc_len,
		inline_len, nread, nwrite, nreply, probe, resends, hints),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, task)
		__field(u32, xid)
		__field(u32, vers)
		__string(call, call)
		__string(reply, reply)
		__field(u32, hdr_len)
		__field(u32, rpc_len)
		__field(u32, inline_len)
		__field(u32, nread)
		__field(u32, nwrite)
		__field(u32, nreply)
		__field(bool, probe)
		__field(u32, resends)
		__string(hints, hints)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->task = task;
		__entry->xid = xid;
		__entry->vers = vers;
		__assign_str(call);
		__assign_str(reply);
		__entry->hdr_len = hdr_len;
		__entry->rpc_len = rpc_len;
		__entry->inline_len = inline_len;
		__entry->nread = nread;
		__entry->nwrite = nwrite;
		__entry->nreply = nreply;
		__entry->probe = probe;
		__entry->resends = resends;
		__assign_str(hints);
	),
	TP_printk("conn=%u task=%u xid=0x%08x vers=%u call=%s reply=%s hdr_len=%u rpc_len=%u inline_len=%u nread=%u nwrite=%u nreply=%u probe=%d resends=%u hints=%s",
		  __entry->conn, __entry->task, __entry->xid, __entry->vers,
		  __get_str(call), __get_str(reply), __entry->hdr_len,
		  __entry->rpc_len, __entry->inline_len, __entry->nread,
		  __entry->nwrite, __entry->nreply, __entry->probe,
		  __entry->resends, __get_str(hints))
);

/* The Send of a Call is posted (as the C client's xprtrdma_post_send):
 * mrs the Call's REG_MRs posted before it (0: the Send alone; those
 * that overflow the Send's chain go in chains of their own), signaled
 * whether it asks for a completion (always with REG_MRs; an inline Send
 * as rpcrdma/proto/signal.rs decides), free the Send buffers left free
 * once it took its own. */
TRACE_EVENT(rpcrdma2_post_send,
	TP_PROTO(u32 conn, u32 task, u32 xid, u32 mrs, bool signaled,
		 u32 free),
	TP_ARGS(conn, task, xid, mrs, signaled, free),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, task)
		__field(u32, xid)
		__field(u32, mrs)
		__field(bool, signaled)
		__field(u32, free)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->task = task;
		__entry->xid = xid;
		__entry->mrs = mrs;
		__entry->signaled = signaled;
		__entry->free = free;
	),
	TP_printk("conn=%u task=%u xid=0x%08x mrs=%u signaled=%d free=%u",
		  __entry->conn, __entry->task, __entry->xid, __entry->mrs,
		  __entry->signaled, __entry->free)
);

/* A received message, classified (class, one of 17; rpcrdma/conn/reply.rs):
 *   deliver        an inline reply
 *   chunked        a reply using chunks
 *   piece          a piece of a continued reply (F_MORE set)
 *   last_piece     the last piece of a continued reply
 *   fail           the RPC fails (status: the errno)
 *   resend         the version 1 fallback: the RPC is sent again
 *   recover        a transport error whose RPC is sent again
 *   fallback       ERR_VERS answered our RDMA2_CONNPROP probe
 *   reverse_call   a reverse-direction Call (callback), or the last
 *                  piece of a continued one
 *   reverse_piece  a piece of a continued reverse-direction Call
 *   reverse_error  a reverse-direction Call we cannot serve, answered
 *                  with RDMA2_ERROR
 *   credit_grant   an asynchronous credit grant
 *   connprop       the peer's RDMA2_CONNPROP (whole or its last piece)
 *   connprop_part  a piece of a continued RDMA2_CONNPROP, or a second
 *                  RDMA2_CONNPROP (set aside: properties do not change)
 *   drop           dropped (answers no RPC, malformed, ...)
 *   disconnect     the message ends the connection
 *   stale          a reply for an RPC sent again whose new transmission
 *                  is not posted yet (it answers an earlier one: dropped)
 * A chunked reply whose chunks fail the RPC (not offered, overrunning
 * what was registered), or a piece of a continued reply that overruns the
 * receive buffer, is followed by a second event: class fail, len 0, the
 * errno. */
TRACE_EVENT(rpcrdma2_reply,
	TP_PROTO(u32 conn, u32 xid, u32 vers, const char *class, u32 len,
		 int status),
	TP_ARGS(conn, xid, vers, class, len, status),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__field(u32, vers)
		__string(class, class)
		__field(u32, len)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__entry->vers = vers;
		__assign_str(class);
		__entry->len = len;
		__entry->status = status;
	),
	TP_printk("conn=%u xid=0x%08x vers=%u class=%s len=%u status=%d",
		  __entry->conn, __entry->xid, __entry->vers,
		  __get_str(class), __entry->len, __entry->status)
);

/* The peer answered with an RDMA_ERROR / RDMA2_ERROR; action: what the
 * transport does about it ("fail", "resend:<recovery>", or "drop" for an
 * error that answers no RPC). */
TRACE_EVENT(rpcrdma2_peer_error,
	TP_PROTO(u32 conn, u32 xid, u32 vers, u32 code, const char *name,
		 const char *action),
	TP_ARGS(conn, xid, vers, code, name, action),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__field(u32, vers)
		__field(u32, code)
		__string(name, name)
		__string(action, action)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__entry->vers = vers;
		__entry->code = code;
		__assign_str(name);
		__assign_str(action);
	),
	TP_printk("conn=%u xid=0x%08x vers=%u code=%u (%s) action=%s",
		  __entry->conn, __entry->xid, __entry->vers, __entry->code,
		  __get_str(name), __get_str(action))
);

/* Memory registration of an RPC's chunks: one event per registered MR. */
TRACE_EVENT(rpcrdma2_mr_reg,
	TP_PROTO(u32 conn, u32 xid, u32 handle, u32 length, u64 offset),
	TP_ARGS(conn, xid, handle, length, offset),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__field(u32, handle)
		__field(u32, length)
		__field(u64, offset)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__entry->handle = handle;
		__entry->length = length;
		__entry->offset = offset;
	),
	TP_printk("conn=%u xid=0x%08x handle=0x%08x length=%u offset=0x%016llx",
		  __entry->conn, __entry->xid, __entry->handle,
		  __entry->length, __entry->offset)
);

/* An RPC's MRs are invalidated: "remote" (the peer's Send With
 * Invalidate named handle), "local" (LOCAL_INV posted for n MRs), or
 * "sync" (synchronous invalidation of an abandoned or resent RPC). */
TRACE_EVENT(rpcrdma2_mr_inv,
	TP_PROTO(u32 conn, u32 xid, const char *how, u32 handle, u32 n),
	TP_ARGS(conn, xid, how, handle, n),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__string(how, how)
		__field(u32, handle)
		__field(u32, n)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__assign_str(how);
		__entry->handle = handle;
		__entry->n = n;
	),
	TP_printk("conn=%u xid=0x%08x how=%s handle=0x%08x n=%u",
		  __entry->conn, __entry->xid, __get_str(how),
		  __entry->handle, __entry->n)
);

/* Message Continuation (-00 §4.5.2): one piece of a continued message,
 * dir "call" (a piece we sent) or "reply" (a piece received and placed);
 * offset and len in the RPC message, more = F_MORE (another follows). */
TRACE_EVENT(rpcrdma2_piece,
	TP_PROTO(u32 conn, u32 xid, const char *dir, u32 offset, u32 len,
		 bool more),
	TP_ARGS(conn, xid, dir, offset, len, more),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__string(dir, dir)
		__field(u32, offset)
		__field(u32, len)
		__field(bool, more)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__assign_str(dir);
		__entry->offset = offset;
		__entry->len = len;
		__entry->more = more;
	),
	TP_printk("conn=%u xid=0x%08x dir=%s offset=%u len=%u more=%d",
		  __entry->conn, __entry->xid, __get_str(dir),
		  __entry->offset, __entry->len, __entry->more)
);

/* A version 2 message had to wait for credits (-00 §4.3.1: "A sender
 * MUST NOT send RDMA messages in excess of the receiver's granted credit
 * limit"): xid the Call (0 for a backchannel reply), outstanding our
 * messages not yet returned by the responder, limit its credit limit,
 * consumed the Receives our next message returns, posted the Receives
 * posted now. The sender sleeps until a grant or a reply returns one. */
TRACE_EVENT(rpcrdma2_credit_wait,
	TP_PROTO(u32 conn, u32 xid, u32 outstanding, u32 limit, u32 consumed,
		 u32 posted),
	TP_ARGS(conn, xid, outstanding, limit, consumed, posted),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__field(u32, outstanding)
		__field(u32, limit)
		__field(u32, consumed)
		__field(u32, posted)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__entry->outstanding = outstanding;
		__entry->limit = limit;
		__entry->consumed = consumed;
		__entry->posted = posted;
	),
	TP_printk("conn=%u xid=0x%08x outstanding=%u limit=%u consumed=%u posted=%u",
		  __entry->conn, __entry->xid, __entry->outstanding,
		  __entry->limit, __entry->consumed, __entry->posted)
);

/* We sent an asynchronous credit grant (v2 RDMA2_NOMSG, XID 0): granted
 * credits returned, max the credits we advertise. */
TRACE_EVENT(rpcrdma2_grant,
	TP_PROTO(u32 conn, u32 granted, u32 max),
	TP_ARGS(conn, granted, max),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, granted)
		__field(u32, max)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->granted = granted;
		__entry->max = max;
	),
	TP_printk("conn=%u granted=%u max=%u", __entry->conn,
		  __entry->granted, __entry->max)
);

/* The backchannel (NFSv4.1 callbacks): a reverse-direction Call received
 * (rpcrdma2_bc_call: outcome "queued" for the callback service, or
 * "dropped (why)") and its reply (rpcrdma2_bc_reply: "sent", "dropped
 * (why)", or "deferred (why)" when SUNRPC sends it again later). len is
 * the RPC message's length, xid the Call's (the server's). */
DECLARE_EVENT_CLASS(rpcrdma2_bc_class,
	TP_PROTO(u32 conn, u32 xid, u32 vers, u32 len, const char *outcome),
	TP_ARGS(conn, xid, vers, len, outcome),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(u32, xid)
		__field(u32, vers)
		__field(u32, len)
		__string(outcome, outcome)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->xid = xid;
		__entry->vers = vers;
		__entry->len = len;
		__assign_str(outcome);
	),
	TP_printk("conn=%u xid=0x%08x vers=%u len=%u outcome=%s",
		  __entry->conn, __entry->xid, __entry->vers, __entry->len,
		  __get_str(outcome))
);

DEFINE_EVENT(rpcrdma2_bc_class, rpcrdma2_bc_call,
	TP_PROTO(u32 conn, u32 xid, u32 vers, u32 len, const char *outcome),
	TP_ARGS(conn, xid, vers, len, outcome));

DEFINE_EVENT(rpcrdma2_bc_class, rpcrdma2_bc_reply,
	TP_PROTO(u32 conn, u32 xid, u32 vers, u32 len, const char *outcome),
	TP_ARGS(conn, xid, vers, len, outcome));

#endif /* RPCRDMA2_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
