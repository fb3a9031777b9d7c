#!/usr/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Stage 2 of a testbed guest (bash, host /usr): network, modules, the
# software RDMA device (soft-RoCE rxe0 or soft-iWARP siw0), then the role's
# own setup (server.sh or client.sh).  Started by /init, which
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
# The RDMA provider run.sh --provider chose, and the device it gets on eth0.
RDMA_PROVIDER=${TB_PROVIDER:-rxe}
RDMA_DEV=${TB_RDMA_DEV:-${RDMA_PROVIDER}0}
export KREL SERVER_IP CLIENT_IP RDMA_PROVIDER RDMA_DEV

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

# The RDMA device on eth0: soft-RoCE (rdma_rxe) or soft-iWARP (siw).  The
# step names start with the provider ("rxe: ...", "siw: ..."), which
# RPCRDMA2_VM_INJECT_FAIL matches.
case $RDMA_PROVIDER in
rxe) rdma_mod=rdma_rxe ;;
siw) rdma_mod=siw ;;
*) fail "RDMA provider" "unknown provider '$RDMA_PROVIDER' (rxe or siw)" ;;
esac
P=$RDMA_PROVIDER D=$RDMA_DEV
step "$P: modprobe $rdma_mod" modprobe "$rdma_mod"
step "$P: rdma link add $D" rdma link add "$D" type "$P" netdev eth0
rdma_active() { rdma link show "$D/1" | grep -q 'state ACTIVE'; }
wait_for $((20 * ${TB_SLOW:-1})) "$P: $D ACTIVE (rdma link)" rdma_active
step "$P: ibv_devices lists $D" bash -c "ibv_devices | grep -qw $D"
step "$P: ibv_devinfo" ibv_devinfo -d "$D"
# The device must be the provider's: transport InfiniBand (RoCE) or iWARP.
case $P in
rxe) want_transport=InfiniBand ;;
siw) want_transport=iWARP ;;
esac
have_transport=$(ibv_devinfo -d "$D" | awk '/transport:/ {print $2; exit}')
[ "$have_transport" = "$want_transport" ] ||
	fail "$P: $D transport" "ibv_devinfo says '$have_transport', expected '$want_transport'"
log "$D: $(rdma link show "$D/1" | tr -s ' '), transport $have_transport, active_mtu $(ibv_devinfo -d "$D" | awk '/active_mtu/ {print $2}')"
mark rdma

# shellcheck source=/dev/null
. "/testbed/$TB_ROLE.sh"
