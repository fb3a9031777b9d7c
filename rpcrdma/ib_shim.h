/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C side of the RDMA layer (rpcrdma/ib/): real functions for the
 * static inlines and macros of ib_verbs.h and rdma_cm.h that Rust cannot
 * call, the module's struct ib_client, and one netdev address lookup and
 * a stack-use probe for the KUnit loopback tests.
 *
 * rpcrdma2_shim_*  are implemented in C (ib_shim.c) and called from Rust.
 * rpcrdma2_rs_*    are implemented in Rust (#[no_mangle]) and called from C.
 */
#ifndef RPCRDMA2_IB_SHIM_H
#define RPCRDMA2_IB_SHIM_H

#include <linux/dma-direction.h>
#include <linux/scatterlist.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/* rdma_create_id() is a macro around __rdma_create_kernel_id(). */
struct rdma_cm_id *rpcrdma2_shim_create_id(struct net *net,
					   rdma_cm_event_handler handler,
					   void *context,
					   enum rdma_ucm_port_space ps,
					   enum ib_qp_type qp_type);

/* The registration lock of ib_device_try_get()/ib_device_put(). */
bool rpcrdma2_shim_device_try_get(struct ib_device *dev);
/* dev_name(&dev->dev). */
const char *rpcrdma2_shim_device_name(struct ib_device *dev);
bool rpcrdma2_shim_uses_virt_dma(struct ib_device *dev);

/* ib_alloc_pd() is a macro; ib_dealloc_pd() is static inline. */
struct ib_pd *rpcrdma2_shim_alloc_pd(struct ib_device *dev,
				     unsigned int flags);
void rpcrdma2_shim_dealloc_pd(struct ib_pd *pd);

/* ib_alloc_cq_any() is static inline. */
struct ib_cq *rpcrdma2_shim_alloc_cq_any(struct ib_device *dev,
					 void *private, int nr_cqe,
					 enum ib_poll_context poll_ctx);

/* ib_post_send() and ib_post_recv() are static inline. */
int rpcrdma2_shim_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr);
int rpcrdma2_shim_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad_wr);

/*
 * ib_dma_map_single() + ib_dma_mapping_error(): 0 and *dma_addr on
 * success, -EIO when the mapping failed.
 */
int rpcrdma2_shim_dma_map_single(struct ib_device *dev, void *cpu_addr,
				 size_t size, enum dma_data_direction dir,
				 u64 *dma_addr);
void rpcrdma2_shim_dma_unmap_single(struct ib_device *dev, u64 dma_addr,
				    size_t size, enum dma_data_direction dir);
void rpcrdma2_shim_dma_sync_for_cpu(struct ib_device *dev, u64 dma_addr,
				    size_t size, enum dma_data_direction dir);
void rpcrdma2_shim_dma_sync_for_device(struct ib_device *dev, u64 dma_addr,
				       size_t size,
				       enum dma_data_direction dir);

/* The module's ib_client ("rpcrdma2"): device add/remove go to Rust. */
int rpcrdma2_shim_register_ib_client(void);
void rpcrdma2_shim_unregister_ib_client(void);
int rpcrdma2_rs_ib_add_one(struct ib_device *dev);
void rpcrdma2_rs_ib_remove_one(struct ib_device *dev, void *client_data);

/* FRWR (rpcrdma/ib/mr.rs): static inlines around memory registration. */
int rpcrdma2_shim_dereg_mr(struct ib_mr *mr);
void rpcrdma2_shim_update_fast_reg_key(struct ib_mr *mr, u8 newkey);
void rpcrdma2_shim_sg_init_table(struct scatterlist *sg, unsigned int nents);
void rpcrdma2_shim_sg_set_page(struct scatterlist *sg, struct page *page,
			       unsigned int len, unsigned int offset);
/* sg_set_buf(): @buf must be in the linear map (kmalloc, not vmalloc). */
int rpcrdma2_shim_sg_set_buf(struct scatterlist *sg, const void *buf,
			     unsigned int len);
int rpcrdma2_shim_dma_map_sg(struct ib_device *dev, struct scatterlist *sg,
			     int nents, enum dma_data_direction dir);
void rpcrdma2_shim_dma_unmap_sg(struct ib_device *dev, struct scatterlist *sg,
				int nents, enum dma_data_direction dir);
/* ib_map_mr_sg() with a NULL offset and PAGE_SIZE pages. */
int rpcrdma2_shim_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg,
			    int sg_nents);

#endif /* RPCRDMA2_IB_SHIM_H */
