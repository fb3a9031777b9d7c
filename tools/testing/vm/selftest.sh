#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Self-test of the two-guest testbed (run.sh): the environment a client
# script gets (rxe0 by default, siw0 with --provider siw), exit-status
# passing, the kernel-log check, and that every failure (guest setup step,
# panic, no boot, timeout, bad --provider) is reported with the right exit
# status, a message naming it, and no QEMU left running.
# About 2-3 minutes; ends with 'N passed, N failed'.
#
#   selftest.sh [CASE...]

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"
RUN=$HERE/run.sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma2-vm-selftest.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

passed=0 failed=0

# check NAME WANT_RC WANT_REGEX RUN_ARGS...: run.sh must exit WANT_RC, its
# output must match WANT_REGEX, and no QEMU of this run may survive it.
check() {
	local name=$1 want=$2 re=$3 rc=0 res=$WORK/$1 why=''
	shift 3
	if ((${#only[@]})) && [[ " ${only[*]} " != *" $name "* ]]; then
		return 0
	fi
	log "selftest: $name"
	"$RUN" --results "$res" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
	((rc == want)) || why+=" exit $rc, wanted $want;"
	grep -Eq -- "$re" "$WORK/$name.out" || why+=" output lacks /$re/;"
	sleep 0.5
	! pgrep -f -- "$res" >/dev/null || why+=" QEMU still running;"
	if [ -z "$why" ]; then
		passed=$((passed + 1))
		log "selftest: $name: ok"
	else
		failed=$((failed + 1))
		log "selftest: $name: FAILED:$why"
		sed 's/^/    /' "$WORK/$name.out" | tail -n 40 >&2
		pkill -KILL -f -- "$res" 2>/dev/null || true
	fi
}

only=("$@")

cat >"$WORK/env.sh" <<'EOF'
set -euo pipefail
. "$TESTBED_LIB"
[ "$SERVER_IP" = 192.168.100.1 ] && [ "$CLIENT_IP" = 192.168.100.2 ] || tb_die "IPs"
[ "$NFS_RDMA_PORT" = 20049 ] && [ "$NFS_TCP_PORT" = 2049 ] || tb_die "ports"
[ "$#" = 3 ] && [ "$1" = 'a b' ] && [ "$2" = 'c"d' ] && [ "$3" = "e'f" ] || tb_die "args: $*"
[ "$PWD" = "$RESULTS" ] && echo x >"$RESULTS/written" || tb_die "results not writable"
[ -f "$SRC/tools/testing/vm/run.sh" ] || tb_die "repository not at $SRC"
! touch "$SRC/.rw-test" 2>/dev/null || tb_die "repository is writable"
[ "$(uname -r)" = "$KREL" ] && [ -d "$MODS/lib/modules/$KREL" ] || tb_die "modules"
[ "$RDMA_PROVIDER" = rxe ] && [ "$RDMA_DEV" = rxe0 ] || tb_die "provider '$RDMA_PROVIDER' device '$RDMA_DEV'"
rdma link show rxe0/1 | grep -q ACTIVE || tb_die "rxe0 not ACTIVE"
[ "$(cat /sys/class/net/eth0/mtu)" = 9000 ] || tb_die "mtu"
[ -e /run/testbed/block-rpcrdma ] || tb_die "rpcrdma autoload not blocked"
rpcinfo -T tcp server nfs 4 >/dev/null || tb_die "server nfs v4 over tcp"
[ "$(stat -c %a /)" = 755 ] || tb_die "root mode $(stat -c %a /)"
echo "env ok"
EOF

check env 0 'env ok' "$WORK/env.sh" 'a b' 'c"d' "e'f"
# --provider siw: siw0 (iWARP) on eth0 in both guests, no rxe device.
check siw 0 'siw ok' --provider siw --cmd '
	[ "$RDMA_PROVIDER" = siw ] && [ "$RDMA_DEV" = siw0 ] || exit 11
	rdma link show siw0/1 | grep -q "state ACTIVE.*netdev eth0" || exit 12
	ibv_devinfo -d siw0 | grep -q "transport:.*iWARP" || exit 13
	! rdma link show rxe0/1 >/dev/null 2>&1 || exit 14
	echo "siw ok"'
check bad-provider 2 "--provider .*rxe or siw, not 'roce'" --provider roce --cmd true
check exit-status 3 'exit status 3' --cmd 'echo hello; exit 3'
check warning 1 'client.console:.*WARNING: selftest' \
	--cmd 'echo "WARNING: selftest fake warning" >/dev/kmsg'
check warning-allowed 0 'warning line\(s\) \(allowed\)' --allow-kernel-warnings \
	--cmd 'echo "WARNING: selftest fake warning" >/dev/kmsg'
RPCRDMA2_VM_INJECT_FAIL='client:rxe: rdma link add' \
	check rxe-fails 125 "client: step 'rxe: rdma link add rxe0' failed" --cmd true
RPCRDMA2_VM_INJECT_FAIL='server:rpc.nfsd' \
	check nfsd-fails 125 "server: step 'rpc.nfsd \(tcp 2049\)' failed" --cmd true
check client-panic 125 'client guest exited unexpectedly \(kernel panic\)' \
	--cmd 'echo c >/proc/sysrq-trigger'
check no-boot 125 'did not boot \(QEMU exited\) \(kernel panic\)' \
	--append rdinit=/nonexistent --cmd true
check timeout 124 'timeout after 25 s, waiting for: client finished' \
	--timeout 25 --cmd 'sleep 120'

echo "$passed passed, $failed failed"
((failed == 0))
