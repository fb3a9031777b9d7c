// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rpcrdma2: only what Rust on Linux 6.12 cannot express.
 *
 * struct xprt_class ends in a flexible array of netid strings terminated by
 * an empty string; that static is easiest (and clearest) in C.
 */
#include <linux/module.h>
#include <linux/sunrpc/xprt.h>

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
