/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of rpcrdma2: prototypes shared by shim.c and the Rust crate.
 *
 * rpcrdma2_shim_*  are implemented in C (shim.c) and called from Rust.
 * rpcrdma2_rs_*    are implemented in Rust (#[no_mangle]) and called from C.
 */
#ifndef RPCRDMA2_SHIM_H
#define RPCRDMA2_SHIM_H

struct rpc_xprt;
struct xprt_create;

/* The "rdma" xprt_class (ident XPRT_TRANSPORT_RDMA, netids rdma, rdma6). */
int rpcrdma2_shim_register_class(void);
void rpcrdma2_shim_unregister_class(void);

/* xprt_class::setup, implemented in Rust. Returns an ERR_PTR on failure. */
struct rpc_xprt *rpcrdma2_rs_setup(struct xprt_create *args);

#endif /* RPCRDMA2_SHIM_H */
