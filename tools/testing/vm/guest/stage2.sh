#!/usr/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Stage 2 of a testbed guest (bash, host /usr): network, modules, soft-RoCE,
# then the role's own setup (server.sh or client.sh).  Started by /init, which
# powers the guest off when this returns.

set -eEuo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/testbed/bin
export HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8

TB_ROLE=$(sed -n 's/.*testbed\.role=\([a-z]*\).*/\1/p' /proc/cmdline)
case $TB_ROLE in
server | client) ;;
*) echo "TESTBED: no testbed.role= on the kernel command line" >/dev/console; exit 1 ;;
esac
mkdir -p "/results/$TB_ROLE"
TB_LOG=/results/$TB_ROLE/setup.log
# shellcheck source=common.sh
. /testbed/common.sh
trap 'fail "setup" "unexpected error at ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND"' ERR

[ -r "$TB_CTL/testbed.env" ] || fail "read $TB_CTL/testbed.env" "missing"
# shellcheck disable=SC1091 # written by run.sh
. "$TB_CTL/testbed.env"
if [ "$TB_ROLE" = server ]; then
	TB_MY_IP=$SERVER_IP
else
	TB_MY_IP=$CLIENT_IP
fi
KREL=$(uname -r)
export KREL SERVER_IP CLIENT_IP

mkdir -p /root /var/tmp /var/lib /var/log /run/testbed
chmod 1777 /var/tmp
hostname "rpcrdma2-$TB_ROLE"
cat >/etc/hosts <<HOSTS
127.0.0.1	localhost
$SERVER_IP	server rpcrdma2-server
$CLIENT_IP	client rpcrdma2-client
HOSTS
echo "rpcrdma2-$TB_ROLE" >/etc/hostname
mark booted

# Syslog of the daemons (rpcbind, mountd, nfsdcld, mount.nfs) into results.
/testbed/busybox syslogd -O "/results/$TB_ROLE/syslog.txt" ||
	log "busybox syslogd did not start (continuing)"

# Modules: the kernel's modules_install tree, read-only at /mods.  The
# symlink makes plain modprobe/modinfo work; /testbed/modprobe (which adds
# -d /mods and gates rpcrdma on the client) serves the kernel's autoloads.
step "module tree" test -f "/mods/lib/modules/$KREL/modules.dep"
mkdir -p /usr/lib/modules
ln -sfn "/mods/lib/modules/$KREL" "/usr/lib/modules/$KREL"
if [ "$TB_ROLE" = client ] && [ "${TB_ALLOW_RPCRDMA_AUTOLOAD:-0}" != 1 ]; then
	touch /run/testbed/block-rpcrdma
fi
echo /testbed/modprobe >/proc/sys/kernel/modprobe

step "network: lo" ip link set lo up
step "network: eth0 up, mtu $TB_MTU" ip link set eth0 mtu "$TB_MTU" up
step "network: eth0 address" ip addr add "$TB_MY_IP/$TB_PREFIX" dev eth0

# Soft-RoCE on eth0.
step "rxe: modprobe rdma_rxe" modprobe rdma_rxe
step "rxe: rdma link add rxe0" rdma link add rxe0 type rxe netdev eth0
rxe_active() { rdma link show rxe0/1 | grep -q 'state ACTIVE'; }
wait_for $((20 * ${TB_SLOW:-1})) "rxe: rxe0 ACTIVE (rdma link)" rxe_active
step "rxe: ibv_devices lists rxe0" bash -c 'ibv_devices | grep -qw rxe0'
step "rxe: ibv_devinfo" ibv_devinfo -d rxe0
log "rxe0: $(rdma link show rxe0/1 | tr -s ' '), active_mtu $(ibv_devinfo -d rxe0 | awk '/active_mtu/ {print $2}')"
mark rxe

# shellcheck source=/dev/null
. "/testbed/$TB_ROLE.sh"
