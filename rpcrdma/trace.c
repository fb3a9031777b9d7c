// SPDX-License-Identifier: GPL-2.0
/*
 * rpcrdma2's tracepoints (trace.h), instantiated, and one out-of-line
 * wrapper per event for Rust to call: trace_<event>() is a static inline
 * that Rust on 6.12 cannot reach (Linux 6.13's kernel::tracepoint and
 * DEFINE_RUST_DO_TRACE do the same job). rpcrdma/trace.rs checks the
 * event's static key before calling, so a disabled event costs no call.
 */
#include <linux/types.h>

#define CREATE_TRACE_POINTS
#include "trace.h"

#include "trace_shim.h"

void rpcrdma2_trace_connect(u32 conn, const char *peer, u32 vers,
			    u32 inline_send, u32 inline_recv, u32 max_credits)
{
	trace_rpcrdma2_connect(conn, peer, vers, inline_send, inline_recv,
			       max_credits);
}

void rpcrdma2_trace_connect_error(const char *peer, const char *step,
				  int status)
{
	trace_rpcrdma2_connect_error(peer, step, status);
}

void rpcrdma2_trace_disconnect(u32 conn, const char *reason)
{
	trace_rpcrdma2_disconnect(conn, reason);
}

void rpcrdma2_trace_keepalive(u32 conn, const char *what)
{
	trace_rpcrdma2_keepalive(conn, what);
}

void rpcrdma2_trace_reconnect(u32 conn, const char *reason)
{
	trace_rpcrdma2_reconnect(conn, reason);
}

void rpcrdma2_trace_pvtdata(u32 conn, bool present, u32 send_size,
			    u32 recv_size, bool remote_inv)
{
	trace_rpcrdma2_pvtdata(conn, present, send_size, recv_size,
			       remote_inv);
}

void rpcrdma2_trace_version(u32 conn, u32 vers, const char *how)
{
	trace_rpcrdma2_version(conn, vers, how);
}

void rpcrdma2_trace_connprop(u32 conn, const char *dir, u32 max_send,
			     u32 recv_buf, u32 max_seg_size,
			     u32 max_seg_count, u32 reverse_req)
{
	trace_rpcrdma2_connprop(conn, dir, max_send, recv_buf, max_seg_size,
				max_seg_count, reverse_req);
}

void rpcrdma2_trace_credits(u32 conn, u32 xid, u32 credits)
{
	trace_rpcrdma2_credits(conn, xid, credits);
}

void rpcrdma2_trace_marshal(u32 conn, u32 task, u32 xid, u32 vers,
			    const char *call, const char *reply, u32 hdr_len,
			    u32 rpc_len, u32 inline_len, u32 nread, u32 nwrite,
			    u32 nreply, bool probe, u32 resends,
			    const char *hints)
{
	trace_rpcrdma2_marshal(conn, task, xid, vers, call, reply, hdr_len,
			       rpc_len, inline_len, nread, nwrite, nreply,
			       probe, resends, hints);
}

void rpcrdma2_trace_post_send(u32 conn, u32 task, u32 xid, u32 mrs,
			      bool signaled, u32 free)
{
	trace_rpcrdma2_post_send(conn, task, xid, mrs, signaled, free);
}

void rpcrdma2_trace_reply(u32 conn, u32 xid, u32 vers, const char *class,
			  u32 len, int status)
{
	trace_rpcrdma2_reply(conn, xid, vers, class, len, status);
}

void rpcrdma2_trace_peer_error(u32 conn, u32 xid, u32 vers, u32 code,
			       const char *name, const char *action)
{
	trace_rpcrdma2_peer_error(conn, xid, vers, code, name, action);
}

void rpcrdma2_trace_mr_reg(u32 conn, u32 xid, u32 handle, u32 length,
			   u64 offset)
{
	trace_rpcrdma2_mr_reg(conn, xid, handle, length, offset);
}

void rpcrdma2_trace_mr_inv(u32 conn, u32 xid, const char *how, u32 handle,
			   u32 n)
{
	trace_rpcrdma2_mr_inv(conn, xid, how, handle, n);
}

void rpcrdma2_trace_piece(u32 conn, u32 xid, const char *dir, u32 offset,
			  u32 len, bool more)
{
	trace_rpcrdma2_piece(conn, xid, dir, offset, len, more);
}

void rpcrdma2_trace_grant(u32 conn, u32 granted, u32 max)
{
	trace_rpcrdma2_grant(conn, granted, max);
}

void rpcrdma2_trace_credit_wait(u32 conn, u32 xid, u32 outstanding,
				u32 limit, u32 consumed, u32 posted)
{
	trace_rpcrdma2_credit_wait(conn, xid, outstanding, limit, consumed,
				   posted);
}

void rpcrdma2_trace_bc_call(u32 conn, u32 xid, u32 vers, u32 len,
			    const char *outcome)
{
	trace_rpcrdma2_bc_call(conn, xid, vers, len, outcome);
}

void rpcrdma2_trace_bc_reply(u32 conn, u32 xid, u32 vers, u32 len,
			     const char *outcome)
{
	trace_rpcrdma2_bc_reply(conn, xid, vers, len, outcome);
}

/*
 * The static keys Rust reads (see trace_shim.h): struct tracepoint holds a
 * struct static_key on 6.12 and a struct static_key_false (which wraps
 * one) on 7.3.
 */
#ifdef RPCRDMA2_KERNEL_7_3
#define TP_STATIC_KEY(ev) (&__tracepoint_rpcrdma2_##ev.key.key)
#else
#define TP_STATIC_KEY(ev) (&__tracepoint_rpcrdma2_##ev.key)
#endif
#define KEY(ev) [RPCRDMA2_TP_##ev] = &TP_STATIC_KEY(ev)->enabled
const atomic_t *const rpcrdma2_trace_keys[RPCRDMA2_TP_COUNT] = {
	KEY(connect), KEY(connect_error), KEY(disconnect), KEY(pvtdata),
	KEY(version), KEY(connprop), KEY(credits), KEY(marshal), KEY(reply),
	KEY(peer_error), KEY(mr_reg), KEY(mr_inv), KEY(piece), KEY(grant),
	KEY(reconnect), KEY(bc_call), KEY(bc_reply), KEY(credit_wait),
	KEY(keepalive), KEY(post_send),
};
