/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input to the module-local bindgen step (see Kbuild): the kernel headers
 * whose types and exported functions rpcrdma2 uses, plus the C shim's
 * prototypes.
 */
#include <linux/errno.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xdr.h>
#include <linux/sunrpc/addr.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/delay.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "shim.h"
#include "ib_shim.h"
#include "trace_shim.h"
#ifdef RPCRDMA2_KUNIT
#include "test_shim.h"
#endif

/*
 * The kernel's timer frequency. bindgen gives the HZ macro the value of
 * the user-space header (<uapi/asm-generic/param.h>: 100), not the
 * kernel's CONFIG_HZ that <asm-generic/param.h> redefines it to (the
 * kernel crate's bindings::HZ is 100 too); an enumerator is evaluated by
 * the compiler, so it carries the kernel's value.
 */
enum { RPCRDMA2_HZ = HZ };
