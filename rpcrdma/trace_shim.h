/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Rust-facing side of rpcrdma2's tracepoints (trace.h, trace.c): one
 * out-of-line wrapper per event, and the events' static-key counters so
 * that Rust can skip a disabled event without a call (static_key_enabled()
 * reads the same counter).
 */
#ifndef RPCRDMA2_TRACE_SHIM_H
#define RPCRDMA2_TRACE_SHIM_H

#include <linux/types.h>

enum rpcrdma2_tp {
	RPCRDMA2_TP_connect,
	RPCRDMA2_TP_connect_error,
	RPCRDMA2_TP_disconnect,
	RPCRDMA2_TP_pvtdata,
	RPCRDMA2_TP_version,
	RPCRDMA2_TP_connprop,
	RPCRDMA2_TP_credits,
	RPCRDMA2_TP_marshal,
	RPCRDMA2_TP_reply,
	RPCRDMA2_TP_peer_error,
	RPCRDMA2_TP_mr_reg,
	RPCRDMA2_TP_mr_inv,
	RPCRDMA2_TP_piece,
	RPCRDMA2_TP_grant,
	RPCRDMA2_TP_reconnect,
	RPCRDMA2_TP_bc_call,
	RPCRDMA2_TP_bc_reply,
	RPCRDMA2_TP_credit_wait,
	RPCRDMA2_TP_keepalive,
	RPCRDMA2_TP_post_send,
	RPCRDMA2_TP_COUNT
};

extern const atomic_t *const rpcrdma2_trace_keys[RPCRDMA2_TP_COUNT];

void rpcrdma2_trace_connect(u32 conn, const char *peer, u32 vers,
			    u32 inline_send, u32 inline_recv, u32 max_credits);
void rpcrdma2_trace_connect_error(const char *peer, const char *step,
				  int status);
void rpcrdma2_trace_disconnect(u32 conn, const char *reason);
void rpcrdma2_trace_keepalive(u32 conn, const char *what);
void rpcrdma2_trace_pvtdata(u32 conn, bool present, u32 send_size,
			    u32 recv_size, bool remote_inv);
void rpcrdma2_trace_version(u32 conn, u32 vers, const char *how);
void rpcrdma2_trace_connprop(u32 conn, const char *dir, u32 max_send,
			     u32 recv_buf, u32 max_seg_size,
			     u32 max_seg_count, u32 reverse_req);
void rpcrdma2_trace_credits(u32 conn, u32 xid, u32 credits);
void rpcrdma2_trace_marshal(u32 conn, u32 task, u32 xid, u32 vers,
			    const char *call, const char *reply, u32 hdr_len,
			    u32 rpc_len, u32 inline_len, u32 nread, u32 nwrite,
			    u32 nreply, bool probe, u32 resends,
			    const char *hints);
void rpcrdma2_trace_post_send(u32 conn, u32 task, u32 xid, u32 mrs,
			      bool signaled, u32 free);
void rpcrdma2_trace_reply(u32 conn, u32 xid, u32 vers, const char *class,
			  u32 len, int status);
void rpcrdma2_trace_peer_error(u32 conn, u32 xid, u32 vers, u32 code,
			       const char *name, const char *action);
void rpcrdma2_trace_mr_reg(u32 conn, u32 xid, u32 handle, u32 length,
			   u64 offset);
void rpcrdma2_trace_mr_inv(u32 conn, u32 xid, const char *how, u32 handle,
			   u32 n);
void rpcrdma2_trace_piece(u32 conn, u32 xid, const char *dir, u32 offset,
			  u32 len, bool more);
void rpcrdma2_trace_grant(u32 conn, u32 granted, u32 max);
void rpcrdma2_trace_credit_wait(u32 conn, u32 xid, u32 outstanding,
				u32 limit, u32 consumed, u32 posted);
void rpcrdma2_trace_reconnect(u32 conn, const char *reason);
void rpcrdma2_trace_bc_call(u32 conn, u32 xid, u32 vers, u32 len,
			    const char *outcome);
void rpcrdma2_trace_bc_reply(u32 conn, u32 xid, u32 vers, u32 len,
			     const char *outcome);

#endif /* RPCRDMA2_TRACE_SHIM_H */
