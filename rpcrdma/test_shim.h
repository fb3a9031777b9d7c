/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C for the KUnit suites only (rpcrdma/tests.rs, rpcrdma/ib/tests.rs,
 * rpcrdma/ib/mr_tests.rs): built and bound (bindings.h) only in the KUnit
 * variant of the module (RPCRDMA2_KUNIT=1, see Kbuild).
 */
#ifndef RPCRDMA2_TEST_SHIM_H
#define RPCRDMA2_TEST_SHIM_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

/*
 * The first IPv4 address of the netdev under @dev's @port (for the KUnit
 * loopback test): 0 and *addr (network order), -ENODEV when the port has
 * no netdev, -EADDRNOTAVAIL when the netdev has no IPv4 address.
 */
int rpcrdma2_shim_port_ipv4(struct ib_device *dev, u32 port, __be32 *addr);

/* One zeroed page and its kernel address (the KUnit page-list test). */
struct page *rpcrdma2_shim_alloc_page(void);
void rpcrdma2_shim_free_page(struct page *page);
void *rpcrdma2_shim_page_address(struct page *page);
/*
 * The most bytes of the current task's stack ever used (its stack is
 * zeroed at allocation; counts from the top down to the lowest non-zero
 * word above the end marker), and whether STACK_END_MAGIC is intact.
 */
unsigned long rpcrdma2_shim_stack_max_used(bool *end_intact);
unsigned long rpcrdma2_shim_stack_size(void);

#endif /* RPCRDMA2_TEST_SHIM_H */
