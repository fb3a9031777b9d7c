/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of rpcrdma2: prototypes shared by shim.c and the Rust crate.
 *
 * rpcrdma2_shim_*  are implemented in C (shim.c) and called from Rust.
 * The C side calls Rust only through function pointers Rust hands it (the
 * class's setup, the connect work function, the rpc_xprt_ops table):
 * generic trampolines of rpcrdma/sunrpc/ instantiated for the transport
 * type, so no Rust symbol here names one.
 */
#ifndef RPCRDMA2_SHIM_H
#define RPCRDMA2_SHIM_H

struct rpc_xprt;
struct xprt_create;

/*
 * The "rdma" xprt_class (ident XPRT_TRANSPORT_RDMA, netids rdma, rdma6),
 * registered with @setup as its xprt_class::setup (which returns an
 * ERR_PTR on failure). -EBUSY if the class already has a setup.
 */
int rpcrdma2_shim_register_class(struct rpc_xprt *(*setup)(struct xprt_create *));
void rpcrdma2_shim_unregister_class(void);


/* --- rpc_xprt helpers (static inlines and macros in the kernel headers) --- */
struct rpc_task;
struct delayed_work;
struct xprt_class;

const struct xprt_class *rpcrdma2_shim_class(void);

/* Module parameters (6.12's Rust module! has none; see rpcrdma/compat/params.rs). */
bool rpcrdma2_shim_param_force_v1(void);
bool rpcrdma2_shim_param_ddp(void);
bool rpcrdma2_shim_param_frwr(void);
unsigned int rpcrdma2_shim_param_cont_reply_pieces(void);
unsigned int rpcrdma2_shim_param_max_mrs(void);
int rpcrdma2_shim_module_get(void);
void rpcrdma2_shim_module_put(void);

/* Waits up to @timeout jiffies for *@count == 0; 0 on timeout. */
long rpcrdma2_shim_wait_zero(unsigned long *count, long timeout);
/* Wakes rpcrdma2_shim_wait_zero() waiters after *@count dropped to 0. */
void rpcrdma2_shim_wake_zero(unsigned long *count);

void rpcrdma2_shim_xprt_set_connected(struct rpc_xprt *xprt);
void rpcrdma2_shim_xprt_clear_connected(struct rpc_xprt *xprt);
int rpcrdma2_shim_xprt_connected(struct rpc_xprt *xprt);
bool rpcrdma2_shim_xprt_awaiting_replies(struct rpc_xprt *xprt);
void rpcrdma2_shim_xprt_clear_connecting(struct rpc_xprt *xprt);
void rpcrdma2_shim_xprt_set_bound(struct rpc_xprt *xprt);
int rpcrdma2_shim_rpc_reply_expected(struct rpc_task *task);
bool rpcrdma2_shim_task_set_rpc_status(struct rpc_task *task, int status);

unsigned long rpcrdma2_shim_jiffies(void);
/* Whether rpc_task_gfp_mask() is plain GFP_KERNEL (not an rpciod worker). */
bool rpcrdma2_shim_task_gfp_is_kernel(void);

struct rpc_rqst;
struct xdr_buf;
bool rpcrdma2_shim_rqst_auth_datatouch(struct rpc_rqst *rqst);
int rpcrdma2_shim_fill_sparse_pages(struct xdr_buf *buf);

/* The backchannel (see shim.c). */
bool rpcrdma2_shim_rqst_is_bc(struct rpc_rqst *rqst);
bool rpcrdma2_shim_bc_has_service(struct rpc_xprt *xprt);
bool rpcrdma2_shim_bc_queue(struct rpc_rqst *rqst);
void rpcrdma2_shim_put_cong(struct rpc_rqst *rqst);

/* The transport's workers (connect, keepalive): delayed works on
 * system_long_wq (6.12's Rust has no delayed work) running @fn, a Rust
 * trampoline. */
struct work_struct;
void rpcrdma2_shim_init_delayed_work(struct delayed_work *dwork,
				     void (*fn)(struct work_struct *work));
void rpcrdma2_shim_queue_delayed_work(struct delayed_work *dwork, unsigned long delay);
void rpcrdma2_shim_cancel_delayed_work(struct delayed_work *dwork);

#endif /* RPCRDMA2_SHIM_H */

/* --- fault injection (debugfs rpcrdma2/fail_*, the kernel's fault_attr) --- */

/* The injection points; see rpcrdma/fault.rs. */
enum rpcrdma2_fault {
	RPCRDMA2_FAULT_SEND_BUF = 0,	/* a Call finds no free Send buffer */
	RPCRDMA2_FAULT_POST_SEND = 1,	/* a Call's final post fails */
	RPCRDMA2_FAULT_HOLD_CONN = 2,	/* buf_free holds the connection 2 s */
	RPCRDMA2_FAULT_DELAY_FLUSH = 3,	/* a flushed Receive is handled 2 s late */
	RPCRDMA2_FAULT_COUNT = 4,
};

/*
 * Creates /sys/kernel/debug/rpcrdma2/ with one fault_attr directory per
 * point (Documentation/fault-injection/fault-injection.rst); without
 * CONFIG_FAULT_INJECTION_DEBUG_FS, or if debugfs fails, nothing (and no
 * point ever fires).
 */
void rpcrdma2_shim_faults_init(void);
void rpcrdma2_shim_faults_exit(void);
/* Whether point @which fires now (should_fail() of its fault_attr). */
bool rpcrdma2_shim_should_fail(unsigned int which);
