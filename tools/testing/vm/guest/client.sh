# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Client role (sourced by stage2.sh): wait for the server, then run the
# client script from the host with the testbed environment; its exit status
# goes to the host through ctl/client.status.

wait_server() {
	[ -e "$TB_CTL/server.ready" ] && return 0
	[ -e "$TB_CTL/server.failed" ] && fail "wait for server" "the server failed"
	return 1
}
wait_for "${TB_SERVER_WAIT:-$((180 * ${TB_SLOW:-1}))}" "wait for server ready" wait_server
step "reach server over the guest L2 (rpcinfo nfs 3 tcp)" rpcinfo -T tcp "$SERVER_IP" nfs 3

mkdir -p /mnt /results/client
export SERVER_IP CLIENT_IP KREL
export NFS_SERVER=$SERVER_IP NFS_EXPORT=${NFS_EXPORT:-/export}
export NFS_RDMA_PORT NFS_TCP_PORT
export RESULTS=/results/client SRC=/src MODS=/mods TESTBED_LIB=/testbed/lib.sh
# The rpcrdma2.ko (and KUnit variant) built for this kernel variant.
export RPCRDMA2_KO=${TB_KO:-/src/rpcrdma2.ko} RPCRDMA2_KUNIT_KO=${TB_KUNIT_KO:-/src/build/kunit/rpcrdma2.ko}
export RPCRDMA2_KERNEL_VARIANT=${TB_KERNEL_VARIANT:-default}
# How many times longer the testbed's own time limits are (the debug kernel).
export TB_SLOW=${TB_SLOW:-1}
export TESTBED=1

TB_ARGS=()
# shellcheck disable=SC1091 # written by run.sh
[ -r "$TB_CTL/args" ] && . "$TB_CTL/args"
log "running client script: $TB_SCRIPT${TB_ARGS[*]:+ ${TB_ARGS[*]}}"
mark started
rc=0
if [ "${TB_INTERACTIVE:-0}" = 1 ]; then
	echo "TESTBED: interactive shell; 'exit' ends the run" >/dev/console
	(cd /results/client && exec setsid -c -w bash -l) </dev/ttyS0 >/dev/ttyS0 2>&1 || rc=$?
else
	(cd /results/client && exec bash "$TB_SCRIPT" "${TB_ARGS[@]}") \
		>/results/client/output.log 2>&1 </dev/null || rc=$?
fi
log "client script exited $rc"
echo "$rc" >"$TB_CTL/client.status"
finish
