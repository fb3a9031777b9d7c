// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rpcrdma2: only what Rust on Linux 6.12 cannot express.
 *
 * struct xprt_class ends in a flexible array of netid strings terminated by
 * an empty string; that static is easiest (and clearest) in C.
 *
 * RPCRDMA2_KERNEL_7_3 (Kbuild: Linux 7.3 or later) selects what differs
 * from 6.12; Documentation/design.rst, "Linux 7.3", says why.
 */
#include <linux/module.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/auth.h>
#include <linux/sunrpc/bc_xprt.h>
#include <linux/sunrpc/svc.h>
#include <linux/gfp.h>
#include <linux/workqueue.h>
#include <linux/wait_bit.h>

#include "shim.h"

static struct xprt_class rpcrdma2_class = {
	.list	= LIST_HEAD_INIT(rpcrdma2_class.list),
	.name	= "rdma",
	.owner	= THIS_MODULE,
	.ident	= XPRT_TRANSPORT_RDMA,
	/* .setup is the Rust transport type's, set at registration. */
	.netid	= { "rdma", "rdma6", "" },
};

int rpcrdma2_shim_register_class(struct rpc_xprt *(*setup)(struct xprt_create *))
{
	int ret;

	if (!setup)
		return -EINVAL;
	if (rpcrdma2_class.setup)
		return -EBUSY;
	rpcrdma2_class.setup = setup;
	ret = xprt_register_transport(&rpcrdma2_class);
	if (ret)
		rpcrdma2_class.setup = NULL;
	return ret;
}

void rpcrdma2_shim_unregister_class(void)
{
	xprt_unregister_transport(&rpcrdma2_class);
	rpcrdma2_class.setup = NULL;
}

static bool force_v1;
module_param(force_v1, bool, 0644);
MODULE_PARM_DESC(force_v1,
		 "Speak RPC-over-RDMA version 1 only; by default each new connection probes for version 2 first (read at connect)");

bool rpcrdma2_shim_param_force_v1(void)
{
	return READ_ONCE(force_v1);
}

static bool ddp = true;
module_param(ddp, bool, 0644);
MODULE_PARM_DESC(ddp,
		 "Direct data placement: NFS WRITE data in Read chunks, READ and READLINK results in Write chunks (default); off, large RPCs travel as Long Calls and Long Replies (read per RPC)");

bool rpcrdma2_shim_param_ddp(void)
{
	return READ_ONCE(ddp);
}

static bool frwr = true;
module_param(frwr, bool, 0644);
MODULE_PARM_DESC(frwr,
		 "Register memory with FRWR for chunks (default); off, connections are inline only, as on a device without FRWR: on version 2, messages over the inline threshold are continued (read at connect)");

bool rpcrdma2_shim_param_frwr(void)
{
	return READ_ONCE(frwr);
}

static unsigned int cont_reply_pieces = 128;
module_param(cont_reply_pieces, uint, 0644);
MODULE_PARM_DESC(cont_reply_pieces,
		 "Version 2 with FRWR: a reply that may exceed the inline threshold but fits in this many continued Sends (RPCRDMA2_F_MORE) is not given a Reply chunk, so metadata RPCs register no memory; 0: a Reply chunk as in version 1. At most the credits requested (128); READ data keeps its Write chunk (default 128, read at mount)");

unsigned int rpcrdma2_shim_param_cont_reply_pieces(void)
{
	return READ_ONCE(cont_reply_pieces);
}

static unsigned int max_mrs;
module_param(max_mrs, uint, 0644);
MODULE_PARM_DESC(max_mrs,
		 "MRs each connection registers chunks with: 0 for enough for every request (at most 256), else this many (at least 2); with fewer, an RPC's chunks take at most half of them and RPCs wait for MRs (read at connect)");

unsigned int rpcrdma2_shim_param_max_mrs(void)
{
	return READ_ONCE(max_mrs);
}

const struct xprt_class *rpcrdma2_shim_class(void)
{
	return &rpcrdma2_class;
}

int rpcrdma2_shim_module_get(void)
{
	return try_module_get(THIS_MODULE);
}

void rpcrdma2_shim_module_put(void)
{
	module_put(THIS_MODULE);
}

/*
 * A count that a waiter wants to see reach zero (a transport's back
 * references): wait_var_event_timeout() and wake_up_var() are macros or
 * need the barrier below, which Rust on 6.12 cannot express.
 */
long rpcrdma2_shim_wait_zero(unsigned long *count, long timeout)
{
	return wait_var_event_timeout(count, smp_load_acquire(count) == 0, timeout);
}

void rpcrdma2_shim_wake_zero(unsigned long *count)
{
	/* Orders the caller's decrement before the waitqueue check. */
	smp_mb();
	wake_up_var(count);
}

void rpcrdma2_shim_xprt_set_connected(struct rpc_xprt *xprt)
{
	xprt_set_connected(xprt);
}

void rpcrdma2_shim_xprt_clear_connected(struct rpc_xprt *xprt)
{
	xprt_clear_connected(xprt);
}

int rpcrdma2_shim_xprt_connected(struct rpc_xprt *xprt)
{
	return xprt_connected(xprt);
}

/*
 * Whether requests wait for replies (the receive queue is not empty):
 * read without queue_lock, as xprt_schedule_autodisconnect() does; a
 * snapshot.
 */
bool rpcrdma2_shim_xprt_awaiting_replies(struct rpc_xprt *xprt)
{
	return !RB_EMPTY_ROOT(&xprt->recv_queue);
}

void rpcrdma2_shim_xprt_clear_connecting(struct rpc_xprt *xprt)
{
	xprt_clear_connecting(xprt);
}

void rpcrdma2_shim_xprt_set_bound(struct rpc_xprt *xprt)
{
	xprt_set_bound(xprt);
}

int rpcrdma2_shim_rpc_reply_expected(struct rpc_task *task)
{
	return rpc_reply_expected(task);
}

/*
 * sched.c's rpc_task_set_rpc_status(), which is not exported: record a
 * terminal error for the task, once. __rpc_execute() ends a task whose
 * tk_rpc_status is set before running its next action, so no later state
 * of the call machine (call_transmit_status() clearing tk_status, say) can
 * turn the error back into a retransmission.
 */
bool rpcrdma2_shim_task_set_rpc_status(struct rpc_task *task, int status)
{
	return cmpxchg(&task->tk_rpc_status, 0, status) == 0;
}

unsigned long rpcrdma2_shim_jiffies(void)
{
	return jiffies;
}

bool rpcrdma2_shim_task_gfp_is_kernel(void)
{
	return rpc_task_gfp_mask() == GFP_KERNEL;
}

void rpcrdma2_shim_init_delayed_work(struct delayed_work *dwork,
				     void (*fn)(struct work_struct *work))
{
	INIT_DELAYED_WORK(dwork, fn);
}

/*
 * The connect worker runs on the unbound workqueue for long work, as the C
 * client's: system_long_wq on 6.12, system_dfl_long_wq on 7.3 (where
 * system_long_wq is the per-CPU one).
 */
void rpcrdma2_shim_queue_delayed_work(struct delayed_work *dwork, unsigned long delay)
{
#ifdef RPCRDMA2_KERNEL_7_3
	queue_delayed_work(system_dfl_long_wq, dwork, delay);
#else
	queue_delayed_work(system_long_wq, dwork, delay);
#endif
}

void rpcrdma2_shim_cancel_delayed_work(struct delayed_work *dwork)
{
	cancel_delayed_work_sync(dwork);
}

/*
 * Whether the request's auth flavour touches the data (GSS integrity and
 * privacy, whose checksums cover the payload): test_bit() is a static
 * inline.
 */
bool rpcrdma2_shim_rqst_auth_datatouch(struct rpc_rqst *rqst)
{
	return test_bit(RPCAUTH_AUTH_DATATOUCH,
			 &rqst->rq_cred->cr_auth->au_flags);
}

/*
 * An xdr_buf flagged XDRBUF_SPARSE_PAGES (NFSv3 GETACL, LISTXATTRS)
 * leaves its receive pages for the transport to allocate: fill the holes
 * in the page range the reply may use. The upper layer frees them. May
 * not sleep (called from ->send_request): -ENOBUFS makes the caller wait
 * for buffer space and try again.
 */
int rpcrdma2_shim_fill_sparse_pages(struct xdr_buf *buf)
{
	struct page **ppages = buf->pages + (buf->page_base >> PAGE_SHIFT);
	unsigned int n = PAGE_ALIGN(offset_in_page(buf->page_base) +
				    buf->page_len) >> PAGE_SHIFT;

	if (!(buf->flags & XDRBUF_SPARSE_PAGES) || !buf->page_len)
		return 0;
	for (; n; n--, ppages++) {
		if (*ppages)
			continue;
		*ppages = alloc_page(GFP_NOWAIT | __GFP_NOWARN);
		if (!*ppages)
			return -ENOBUFS;
	}
	return 0;
}

/*
 * The backchannel (NFSv4.1 callbacks). bc_prealloc(), lwq_enqueue() and
 * the RPC_BC_PA_IN_USE bit operations are static inlines; xprt->bc_serv
 * exists only with CONFIG_SUNRPC_BACKCHANNEL.
 */
#if IS_ENABLED(CONFIG_SUNRPC_BACKCHANNEL)
bool rpcrdma2_shim_rqst_is_bc(struct rpc_rqst *rqst)
{
	return bc_prealloc(rqst);
}

bool rpcrdma2_shim_bc_has_service(struct rpc_xprt *xprt)
{
	return READ_ONCE(xprt->bc_serv) != NULL;
}

/*
 * Hands a reverse-direction Call (rq_rcv_buf and rq_private_buf set up) to
 * the transport's callback service, as xprt_complete_bc_request() does for
 * the preallocated requests of the socket transports: marked in use (so
 * that xprt_release() gives it back through ->bc_free_rqst), a transport
 * reference for the request, queued, an idle callback thread woken.
 * Returns false, the request still the caller's, when there is no service.
 *
 * On 7.3 the NFS client clears bc_serv under bc_pa_lock before it destroys
 * the service (xprt_svc_shutdown_bc()), and xprt_enqueue_bc_request()
 * queues under that lock: so does this (that function is not used because
 * without a service it frees the request itself).
 */
static void rpcrdma2_bc_enqueue(struct rpc_rqst *rqst, struct svc_serv *serv)
{
	set_bit(RPC_BC_PA_IN_USE, &rqst->rq_bc_pa_state);
	xprt_get(rqst->rq_xprt);
	lwq_enqueue(&rqst->rq_bc_list, &serv->sv_cb_list);
	svc_pool_wake_idle_thread(&serv->sv_pools[0]);
}

#ifdef RPCRDMA2_KERNEL_7_3
bool rpcrdma2_shim_bc_queue(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;
	struct svc_serv *serv;

	spin_lock(&xprt->bc_pa_lock);
	serv = xprt->bc_serv;
	if (serv)
		rpcrdma2_bc_enqueue(rqst, serv);
	spin_unlock(&xprt->bc_pa_lock);
	return serv != NULL;
}
#else
bool rpcrdma2_shim_bc_queue(struct rpc_rqst *rqst)
{
	struct svc_serv *serv = READ_ONCE(rqst->rq_xprt->bc_serv);

	if (!serv)
		return false;
	rpcrdma2_bc_enqueue(rqst, serv);
	return true;
}
#endif
#else
bool rpcrdma2_shim_rqst_is_bc(struct rpc_rqst *rqst)
{
	return false;
}

bool rpcrdma2_shim_bc_has_service(struct rpc_xprt *xprt)
{
	return false;
}

bool rpcrdma2_shim_bc_queue(struct rpc_rqst *rqst)
{
	return false;
}
#endif

/* __xprt_put_cong() needs transport_lock; xprt_release_rqst_cong() does
 * not take it (it is the ->release_request op, called under it). */
void rpcrdma2_shim_put_cong(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->transport_lock);
	if (rqst->rq_task)
		xprt_release_rqst_cong(rqst->rq_task);
	spin_unlock(&xprt->transport_lock);
}

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

static struct fault_attr rpcrdma2_faults[RPCRDMA2_FAULT_COUNT] = {
	[0 ... RPCRDMA2_FAULT_COUNT - 1] = FAULT_ATTR_INITIALIZER,
};
static const char *const rpcrdma2_fault_names[RPCRDMA2_FAULT_COUNT] = {
	[RPCRDMA2_FAULT_SEND_BUF] = "fail_send_buf",
	[RPCRDMA2_FAULT_POST_SEND] = "fail_post_send",
	[RPCRDMA2_FAULT_HOLD_CONN] = "hold_conn",
	[RPCRDMA2_FAULT_DELAY_FLUSH] = "delay_flush",
};
static struct dentry *rpcrdma2_debugfs;

void rpcrdma2_shim_faults_init(void)
{
	struct dentry *dir = debugfs_create_dir("rpcrdma2", NULL);
	unsigned int i;

	if (IS_ERR(dir))
		return;
	for (i = 0; i < RPCRDMA2_FAULT_COUNT; i++)
		fault_create_debugfs_attr(rpcrdma2_fault_names[i], dir, &rpcrdma2_faults[i]);
	rpcrdma2_debugfs = dir;
}

void rpcrdma2_shim_faults_exit(void)
{
	debugfs_remove_recursive(rpcrdma2_debugfs);
	rpcrdma2_debugfs = NULL;
}

bool rpcrdma2_shim_should_fail(unsigned int which)
{
	if (which >= RPCRDMA2_FAULT_COUNT)
		return false;
	return should_fail(&rpcrdma2_faults[which], 1);
}
#else
void rpcrdma2_shim_faults_init(void)
{
}

void rpcrdma2_shim_faults_exit(void)
{
}

bool rpcrdma2_shim_should_fail(unsigned int which)
{
	return false;
}
#endif
