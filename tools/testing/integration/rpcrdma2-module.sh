#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2.ko: class registration, clean unload, -EBUSY vs rpcrdma.ko
#
# Client script for tools/testing/vm/run.sh (runs in the client guest).
# Loading and unloading, and the conflict with the in-kernel transport:
#   1. insmod rpcrdma2.ko registers the "rdma" client class (netids rdma,
#      rdma6): SUNRPC logs "RPC: Registered rdma transport module." (client
#      xprt classes are not listed in /proc/sys/sunrpc/transports, which
#      shows server-side svc_xprt classes only; the KUnit suite
#      rpcrdma2_class checks the netid lookups from inside the kernel);
#   2. rmmod unregisters the class;
#   3. with the stock rpcrdma.ko loaded, insmod rpcrdma2.ko fails with
#      EBUSY ("Device or resource busy"; EEXIST would tell insmod the
#      module is loaded already) and a message naming the conflict.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
grep -q '^rpcrdma ' /proc/modules && tb_die "rpcrdma is loaded before the test"

# 1. registration
dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"
dmesg | grep "RPC: Registered rdma transport module." >/dev/null ||
	tb_die "SUNRPC did not register an rdma transport class"
dmesg | grep "rpcrdma2: RPC-over-RDMA transport 'rdma' registered" >/dev/null ||
	tb_die "no registration message from rpcrdma2"
tb_log "registered: $(dmesg | grep -E 'RPC: Registered rdma|rpcrdma2:' | tr '\n' ' ')"

# 2. unload
dmesg -C
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
dmesg | grep "RPC: Unregistered rdma transport module." >/dev/null ||
	tb_die "rmmod rpcrdma2 did not unregister the rdma class"

# 3. the stock client owns ident 256: rpcrdma2 must refuse with EBUSY
tb_allow_rpcrdma_autoload
tb_step "modprobe rpcrdma (stock)" tb_modprobe rpcrdma
dmesg -C
rc=0
insmod "$KO" 2>/tmp/insmod.err || rc=$?
cat /tmp/insmod.err
((rc != 0)) || { rmmod rpcrdma2; tb_die "insmod rpcrdma2.ko succeeded while rpcrdma.ko is loaded"; }
grep -q "Device or resource busy" /tmp/insmod.err || tb_die "insmod failed, but not with EBUSY"
dmesg | grep "rpcrdma2: transport ident 256 (netid rdma) is already registered, probably by rpcrdma.ko" >/dev/null ||
	tb_die "no message from rpcrdma2 naming the conflict"
grep -q '^rpcrdma2 ' /proc/modules && tb_die "rpcrdma2 is loaded after a failed insmod"
tb_step "rmmod rpcrdma" tb_rmmod rpcrdma
tb_log "rpcrdma2 module: all checks passed"
