// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for the RDMA layer of rpcrdma2 (see ib_shim.h): static inlines
 * and macros of ib_verbs.h / rdma_cm.h as real functions, the ib_client
 * static, and a netdev IPv4 lookup for the KUnit loopback test.
 *
 * Nothing here has policy; the safe wrappers are in rpcrdma/ib/.
 */
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>

#include "ib_shim.h"

struct rdma_cm_id *rpcrdma2_shim_create_id(struct net *net,
					   rdma_cm_event_handler handler,
					   void *context,
					   enum rdma_ucm_port_space ps,
					   enum ib_qp_type qp_type)
{
	return rdma_create_id(net, handler, context, ps, qp_type);
}

struct net *rpcrdma2_shim_init_net(void)
{
	return &init_net;
}

bool rpcrdma2_shim_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

const char *rpcrdma2_shim_device_name(struct ib_device *dev)
{
	return dev_name(&dev->dev);
}

bool rpcrdma2_shim_uses_virt_dma(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev);
}

struct ib_pd *rpcrdma2_shim_alloc_pd(struct ib_device *dev,
				     unsigned int flags)
{
	return ib_alloc_pd(dev, flags);
}

void rpcrdma2_shim_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

struct ib_cq *rpcrdma2_shim_alloc_cq_any(struct ib_device *dev,
					 void *private, int nr_cqe,
					 enum ib_poll_context poll_ctx)
{
	return ib_alloc_cq_any(dev, private, nr_cqe, poll_ctx);
}

int rpcrdma2_shim_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr)
{
	return ib_post_send(qp, wr, bad_wr);
}

int rpcrdma2_shim_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad_wr)
{
	return ib_post_recv(qp, wr, bad_wr);
}

int rpcrdma2_shim_dma_map_single(struct ib_device *dev, void *cpu_addr,
				 size_t size, enum dma_data_direction dir,
				 u64 *dma_addr)
{
	u64 addr = ib_dma_map_single(dev, cpu_addr, size, dir);

	if (ib_dma_mapping_error(dev, addr))
		return -EIO;
	*dma_addr = addr;
	return 0;
}

void rpcrdma2_shim_dma_unmap_single(struct ib_device *dev, u64 dma_addr,
				    size_t size, enum dma_data_direction dir)
{
	ib_dma_unmap_single(dev, dma_addr, size, dir);
}

void rpcrdma2_shim_dma_sync_for_cpu(struct ib_device *dev, u64 dma_addr,
				    size_t size, enum dma_data_direction dir)
{
	ib_dma_sync_single_for_cpu(dev, dma_addr, size, dir);
}

void rpcrdma2_shim_dma_sync_for_device(struct ib_device *dev, u64 dma_addr,
				       size_t size,
				       enum dma_data_direction dir)
{
	ib_dma_sync_single_for_device(dev, dma_addr, size, dir);
}

static struct ib_client rpcrdma2_ib_client = {
	.name	= "rpcrdma2",
	.add	= rpcrdma2_rs_ib_add_one,
	.remove	= rpcrdma2_rs_ib_remove_one,
};

int rpcrdma2_shim_register_ib_client(void)
{
	return ib_register_client(&rpcrdma2_ib_client);
}

void rpcrdma2_shim_unregister_ib_client(void)
{
	ib_unregister_client(&rpcrdma2_ib_client);
}

int rpcrdma2_shim_port_ipv4(struct ib_device *dev, u32 port, __be32 *addr)
{
	const struct in_ifaddr *ifa;
	struct net_device *ndev;
	struct in_device *in_dev;
	int ret = -EADDRNOTAVAIL;

	ndev = ib_device_get_netdev(dev, port);
	if (!ndev)
		return -ENODEV;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(ndev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			*addr = ifa->ifa_local;
			ret = 0;
			break;
		}
	}
	rcu_read_unlock();

	dev_put(ndev);
	return ret;
}
