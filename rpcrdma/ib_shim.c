// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for the RDMA layer of rpcrdma2 (see ib_shim.h): static inlines
 * and macros of ib_verbs.h / rdma_cm.h as real functions, the ib_client
 * static, and a netdev IPv4 lookup for the KUnit loopback test.
 *
 * Nothing here has policy; the safe wrappers are in rpcrdma/ib/.
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/netdevice.h>

#include "ib_shim.h"

struct rdma_cm_id *rpcrdma2_shim_create_id(struct net *net,
					   rdma_cm_event_handler handler,
					   void *context,
					   enum rdma_ucm_port_space ps,
					   enum ib_qp_type qp_type)
{
	return rdma_create_id(net, handler, context, ps, qp_type);
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

int rpcrdma2_shim_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

void rpcrdma2_shim_update_fast_reg_key(struct ib_mr *mr, u8 newkey)
{
	ib_update_fast_reg_key(mr, newkey);
}

void rpcrdma2_shim_sg_init_table(struct scatterlist *sg, unsigned int nents)
{
	sg_init_table(sg, nents);
}

void rpcrdma2_shim_sg_set_page(struct scatterlist *sg, struct page *page,
			       unsigned int len, unsigned int offset)
{
	sg_set_page(sg, page, len, offset);
}

int rpcrdma2_shim_sg_set_buf(struct scatterlist *sg, const void *buf,
			     unsigned int len)
{
	if (!virt_addr_valid(buf))
		return -EINVAL;
	sg_set_buf(sg, buf, len);
	return 0;
}

int rpcrdma2_shim_dma_map_sg(struct ib_device *dev, struct scatterlist *sg,
			     int nents, enum dma_data_direction dir)
{
	return ib_dma_map_sg(dev, sg, nents, dir);
}

void rpcrdma2_shim_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg,
				int nents, enum dma_data_direction dir)
{
	ib_dma_unmap_sg(dev, sg, nents, dir);
}

int rpcrdma2_shim_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg,
			    int sg_nents)
{
	return ib_map_mr_sg(mr, sg, sg_nents, NULL, PAGE_SIZE);
}
