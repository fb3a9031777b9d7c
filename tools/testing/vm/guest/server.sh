# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Server role (sourced by stage2.sh): stock nfsd with svcrdma, a tmpfs
# export, TCP on 2049 and RDMA on 20049.  Stays up until the client is
# finished, then returns (and /init powers off).

NFS_EXPORT=${NFS_EXPORT:-/export}

step "export: tmpfs $NFS_EXPORT" mount -t tmpfs -o "mode=0777,size=${TB_EXPORT_SIZE:-50%}" tmpfs "$NFS_EXPORT"
mkdir -p /var/lib/nfs/nfsdcld /var/lib/nfs/v4recovery /var/lib/nfs/sm /run/rpcbind /run/rpc_pipefs
touch /var/lib/nfs/etab /var/lib/nfs/rmtab
cat >/etc/exports <<EXPORTS
$NFS_EXPORT	${SERVER_IP%.*}.0/$TB_PREFIX(rw,sync,no_subtree_check,no_root_squash,insecure,fsid=${TB_FSID:-1})
EXPORTS
cat >/etc/nfs.conf <<NFSCONF
[general]
pipefs-directory=/run/rpc_pipefs
[mountd]
manage-gids=n
[nfsdcld]
storagedir=/var/lib/nfs/nfsdcld
[nfsd]
threads=${TB_NFSD_THREADS:-8}
udp=n
tcp=y
vers3=y
vers4=y
vers4.0=y
vers4.1=y
vers4.2=y
NFSCONF
rm -rf /etc/nfs.conf.d

step "rpc_pipefs" mount -t rpc_pipefs sunrpc /run/rpc_pipefs
step "modprobe nfsd" modprobe nfsd
step "modprobe rpcrdma (svcrdma)" modprobe rpcrdma
step "nfsd fs" mount -t nfsd nfsd /proc/fs/nfsd
step "rpcbind" rpcbind -w
step "nfsdcld" nfsdcld
step "exportfs -ra" exportfs -ra
step "rpc.mountd" rpc.mountd
step "rpc.nfsd (tcp 2049)" rpc.nfsd
step "nfsd rdma listener (echo rdma $NFS_RDMA_PORT > portlist)" \
	bash -c "echo 'rdma $NFS_RDMA_PORT' >/proc/fs/nfsd/portlist"
step "nfsd portlist" grep -q "rdma $NFS_RDMA_PORT" /proc/fs/nfsd/portlist
step "nfsd portlist (tcp)" grep -q "tcp $NFS_TCP_PORT" /proc/fs/nfsd/portlist
step "rpcinfo: nfs v3 over tcp" rpcinfo -T tcp localhost nfs 3
step "rpcinfo: mountd" rpcinfo -T tcp localhost mountd 3
log "nfsd up: versions '$(cat /proc/fs/nfsd/versions)', ports '$(tr '\n' ' ' </proc/fs/nfsd/portlist)', threads $(cat /proc/fs/nfsd/threads)"

if [ -n "${TB_SERVER_SCRIPT:-}" ]; then
	log "running server script $TB_SERVER_SCRIPT"
	rc=0
	(cd "/results/server" && exec bash "$TB_SERVER_SCRIPT") \
		>"/results/server/server-script.log" 2>&1 </dev/null || rc=$?
	((rc == 0)) || fail "server script" "$TB_SERVER_SCRIPT exited $rc (see server/server-script.log)"
fi
mark ready

# Serve until the client is finished (the host's --timeout bounds this too).
# Builtins only (no date, no sleep): an exec of the host's /usr over 9p
# costs the server's one vCPU tens of milliseconds, and this loop runs
# through every test (read -t on a FIFO nobody writes is the sleep).
mkfifo /tmp/tb-wait.fifo 2>/dev/null || [ -p /tmp/tb-wait.fifo ]
exec {wait_fd}<>/tmp/tb-wait.fifo
end=$((EPOCHSECONDS + TB_TIMEOUT))
until [ -e "$TB_CTL/client.finished" ]; do
	if ((EPOCHSECONDS > end)); then
		log "client not finished after $TB_TIMEOUT s; giving up"
		break
	fi
	read -r -t 0.5 -u "$wait_fd" _ || true
done
exec {wait_fd}<&-
{
	echo "# nfsstat -s"; nfsstat -s 2>&1
	echo "# /proc/fs/nfsd/pool_stats"; cat /proc/fs/nfsd/pool_stats 2>&1
} >/results/server/nfsstat.txt || true
finish
