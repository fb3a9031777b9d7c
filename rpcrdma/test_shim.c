// SPDX-License-Identifier: GPL-2.0
/*
 * C for the KUnit suites only (see test_shim.h): built into the KUnit
 * variant of the module (RPCRDMA2_KUNIT=1, see Kbuild), never into the
 * production rpcrdma2.ko.
 */
#include <linux/inetdevice.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/sched/task_stack.h>

#include "test_shim.h"

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

struct page *rpcrdma2_shim_alloc_page(void)
{
	return alloc_page(GFP_KERNEL | __GFP_ZERO);
}

void rpcrdma2_shim_free_page(struct page *page)
{
	__free_page(page);
}

void *rpcrdma2_shim_page_address(struct page *page)
{
	return page_address(page);
}

unsigned long rpcrdma2_shim_stack_max_used(bool *end_intact)
{
	unsigned long *end = end_of_stack(current);
	unsigned long *top = (unsigned long *)((char *)task_stack_page(current) + THREAD_SIZE);
	unsigned long *n = end + 1;

	*end_intact = *end == STACK_END_MAGIC;
	while (n < top && !*n)
		n++;
	return (unsigned long)top - (unsigned long)n;
}

unsigned long rpcrdma2_shim_stack_size(void)
{
	return THREAD_SIZE;
}
