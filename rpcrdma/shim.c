// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rpcrdma2: only what Rust on Linux 6.12 cannot express.
 *
 * struct xprt_class ends in a flexible array of netid strings terminated by
 * an empty string; that static is easiest (and clearest) in C.
 */
#include <linux/module.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/workqueue.h>

#include "shim.h"

static struct xprt_class rpcrdma2_class = {
	.list	= LIST_HEAD_INIT(rpcrdma2_class.list),
	.name	= "rdma",
	.owner	= THIS_MODULE,
	.ident	= XPRT_TRANSPORT_RDMA,
	.setup	= rpcrdma2_rs_setup,
	.netid	= { "rdma", "rdma6", "" },
};

int rpcrdma2_shim_register_class(void)
{
	return xprt_register_transport(&rpcrdma2_class);
}

void rpcrdma2_shim_unregister_class(void)
{
	xprt_unregister_transport(&rpcrdma2_class);
}

static bool force_v1;
module_param(force_v1, bool, 0644);
MODULE_PARM_DESC(force_v1,
		 "Speak RPC-over-RDMA version 1 only; by default each new connection probes for version 2 first (read at connect)");

bool rpcrdma2_shim_param_force_v1(void)
{
	return READ_ONCE(force_v1);
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

unsigned long rpcrdma2_shim_jiffies(void)
{
	return jiffies;
}

void rpcrdma2_shim_spin_lock(spinlock_t *lock)
{
	spin_lock(lock);
}

void rpcrdma2_shim_spin_unlock(spinlock_t *lock)
{
	spin_unlock(lock);
}

static void rpcrdma2_connect_work_fn(struct work_struct *work)
{
	rpcrdma2_rs_connect_worker(to_delayed_work(work));
}

void rpcrdma2_shim_init_connect_work(struct delayed_work *dwork)
{
	INIT_DELAYED_WORK(dwork, rpcrdma2_connect_work_fn);
}

void rpcrdma2_shim_queue_connect_work(struct delayed_work *dwork, unsigned long delay)
{
	queue_delayed_work(system_long_wq, dwork, delay);
}

void rpcrdma2_shim_cancel_connect_work(struct delayed_work *dwork)
{
	cancel_delayed_work_sync(dwork);
}
