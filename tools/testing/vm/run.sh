#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Two-guest testbed: boot a server and a client guest (QEMU TCG) of the
# testbed kernel on a private L2, bring up a software RDMA device on both
# (soft-RoCE rxe0 by default, soft-iWARP siw0 with --provider siw), start
# stock nfsd (TCP 2049, RDMA 20049) on the server and run CLIENT_SCRIPT in
# the client.  See Documentation/testing.rst.
#
#   run.sh [options] CLIENT_SCRIPT [ARGS...]
#   run.sh [options] --cmd 'COMMAND'
#   run.sh [options] --shell
#
# Exit status: the client script's, or 124 (timeout), 125 (the testbed
# failed: missing tool, kernel not built, guest did not boot, the RDMA device
# or nfsd did not come up, ...), 2 (usage); 1 if the script passed but the
# client kernel log has warnings (unless --allow-kernel-warnings).

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"

readonly EX_TIMEOUT=124 EX_TESTBED=125
readonly SERVER_IP=192.168.100.1 CLIENT_IP=192.168.100.2 PREFIX=24 MTU=9000
readonly NFS_RDMA_PORT=20049 NFS_TCP_PORT=2049
# Lines of the client's kernel log that fail a run.
# The last alternative is rpcrdma2's own leak report at unload
# (rpcrdma/ib/census.rs).
# On the debug kernel (build.sh --variant debug) KASAN reports ("BUG:
# KASAN: ..."), lockdep splats ("WARNING: possible circular locking
# dependency detected", "... recursive locking ...", "inconsistent lock
# state"), DEBUG_ATOMIC_SLEEP ("BUG: sleeping function called from invalid
# context"), DEBUG_LIST and debugobjects (a WARNING each) all match too;
# the lockdep alternatives are also named on their own, in case a kernel
# prints them without the prefix.  kmemleak reports nothing on the console
# by itself (integration/rpcrdma2-kmemleak.sh asks it).
readonly WARN_RE='WARNING:|BUG:|Oops|Call Trace|KASAN|UBSAN|Kernel panic|general protection fault|rcu: INFO|rcu_.* detected stalls|blocked for more than|possible (circular|recursive) locking|inconsistent lock state|ib census at unload: .* leaked'
# The Debian packages the host needs: lib.sh VM_DEBS.

usage() {
	cat <<EOF
usage: ${0##*/} [options] CLIENT_SCRIPT [ARGS...]
       ${0##*/} [options] --cmd 'COMMAND'
       ${0##*/} [options] --shell

Boots a server and a client guest, a software RDMA device (soft-RoCE rxe0,
or soft-iWARP siw0) on a private L2, stock nfsd on the server (tcp
$NFS_TCP_PORT, rdma $NFS_RDMA_PORT), then runs CLIENT_SCRIPT (a bash file
on the host) with ARGS in the client guest.

options:
  --timeout SECS            limit for the whole run (default 600; --shell 3600)
  --results DIR             results directory (default: a new directory under
                            \$RPCRDMA2_CACHE/vm/results, linked as 'latest')
  --allow-kernel-warnings   do not fail on WARNING/BUG/Oops/... in the client log
  --allow-rpcrdma-autoload  let a proto=rdma mount autoload the stock rpcrdma
                            on the client (blocked by default)
  --server-script FILE      bash file run on the server once nfsd is up,
                            before the client starts (may start daemons)
  --cmd 'COMMAND'           run COMMAND (bash) as the client script
  --shell                   interactive root shell on the client's console
  --variant NAME            testbed kernel variant: default, debug (KASAN,
                            lockdep, kmemleak) or next (Linux 7.3); also
                            picks the rpcrdma2.ko built for it
                            (RPCRDMA2_KERNEL_VARIANT)
  --kernel DIR              kernel cache entry with bzImage, kernelrelease,
                            mods/ and build/ (default: build.sh --kdir's parent)
  --append 'ARGS'           extra kernel command line for both guests
  --mem MB                  memory per guest (default 2048)
  --provider rxe|siw        the RDMA device both guests create on eth0:
                            rxe (soft-RoCE, rxe0; the default) or siw
                            (soft-iWARP, siw0)
  --quiet                   do not stream the client script's output
  -h, --help                this text

exit status: the script's; 124 timeout; 125 testbed failure; 2 usage;
1 if the script passed but the client kernel log has warnings.
environment: RPCRDMA2_CACHE, RPCRDMA2_KERNEL_DIR (= --kernel),
RPCRDMA2_PROVIDER (= --provider), RPCRDMA2_KERNEL_VARIANT (= --variant),
RPCRDMA2_BOOT_TIMEOUT (90 s), RPCRDMA2_VM_CPU (QEMU's -cpu, default
max,-erms,-fsrm: see the comment at its use), RPCRDMA2_DEBUG_SLOWDOWN (4:
the debug kernel's time limits are that many times longer, --timeout and
the boot timeout included), RPCRDMA2_VM_INJECT_FAIL=ROLE:STEP (self-test).
Client scripts get SERVER_IP CLIENT_IP NFS_SERVER NFS_EXPORT NFS_RDMA_PORT
NFS_TCP_PORT RESULTS SRC MODS KREL TESTBED_LIB RDMA_PROVIDER RDMA_DEV
RPCRDMA2_KO RPCRDMA2_KUNIT_KO RPCRDMA2_KERNEL_VARIANT
(Documentation/testing.rst); server scripts get RDMA_PROVIDER RDMA_DEV too.
EOF
}

timeout=600 timeout_set=0 results='' check_warnings=1 allow_autoload=0
cmd='' shell=0 server_script='' append='' mem=2048 kroot=${RPCRDMA2_KERNEL_DIR:-}
cpu=${RPCRDMA2_VM_CPU:-max,-erms,-fsrm}
quiet=0 boot_timeout=${RPCRDMA2_BOOT_TIMEOUT:-90} provider=${RPCRDMA2_PROVIDER:-rxe}
while (($#)); do
	[[ $1 == --*=* ]] && set -- "${1%%=*}" "${1#*=}" "${@:2}"
	case $1 in
	--timeout) timeout=${2:?--timeout needs SECS}; timeout_set=1; shift 2 ;;
	--results) results=${2:?--results needs DIR}; shift 2 ;;
	--allow-kernel-warnings) check_warnings=0; shift ;;
	--allow-rpcrdma-autoload) allow_autoload=1; shift ;;
	--server-script) server_script=${2:?--server-script needs FILE}; shift 2 ;;
	--cmd) cmd=${2:?--cmd needs COMMAND}; shift 2 ;;
	--shell) shell=1; shift ;;
	--kernel) kroot=${2:?--kernel needs DIR}; shift 2 ;;
	--variant) RPCRDMA2_KERNEL_VARIANT=${2:?--variant needs NAME}; shift 2 ;;
	--append) append=${2?--append needs ARGS}; shift 2 ;;
	--mem) mem=${2:?--mem needs MB}; shift 2 ;;
	--provider) provider=${2:?--provider needs rxe or siw}; shift 2 ;;
	--quiet) quiet=1; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) echo "${0##*/}: unknown option $1" >&2; usage >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ -n "$cmd" ] || ((shell)); then
	(($# == 0)) || { echo "${0##*/}: --cmd/--shell take no CLIENT_SCRIPT" >&2; exit 2; }
	[ -z "$cmd" ] || ((!shell)) || { echo "${0##*/}: --cmd or --shell, not both" >&2; exit 2; }
	if ((shell)); then
		[ -t 0 ] || { echo "${0##*/}: --shell needs a terminal on stdin" >&2; exit 2; }
		exec {TTY_FD}<&0
		((timeout_set)) || timeout=3600
	fi
else
	(($# >= 1)) || { usage >&2; exit 2; }
	script=$1
	shift
fi
[[ $timeout =~ ^[0-9]+$ ]] || { echo "${0##*/}: --timeout: not a number: $timeout" >&2; exit 2; }
[[ $mem =~ ^[0-9]+$ ]] || { echo "${0##*/}: --mem: not a number: $mem" >&2; exit 2; }
case $provider in
rxe | siw) ;;
*) echo "${0##*/}: --provider (or RPCRDMA2_PROVIDER): rxe or siw, not '$provider'" >&2; exit 2 ;;
esac
# The device both guests create on eth0 (tools/testing/vm/guest/stage2.sh).
readonly RDMA_DEV=${provider}0
variant_known "$RPCRDMA2_KERNEL_VARIANT" ||
	{ echo "${0##*/}: no kernel variant '$RPCRDMA2_KERNEL_VARIANT' (have: ${RPCRDMA2_KERNEL_VARIANTS[*]})" >&2; exit 2; }
# build.sh (below) reads it too.
export RPCRDMA2_KERNEL_VARIANT
# The debug kernel runs many times slower under TCG (Documentation/
# testing.rst, "The debug kernel"): its runs get RPCRDMA2_DEBUG_SLOWDOWN
# (default 4) times the time limits, here and in the guests (TB_SLOW).
slow=1
[ "$RPCRDMA2_KERNEL_VARIANT" != debug ] || slow=${RPCRDMA2_DEBUG_SLOWDOWN:-4}
[[ $slow =~ ^[1-9][0-9]*$ ]] || { echo "${0##*/}: RPCRDMA2_DEBUG_SLOWDOWN: not a number: $slow" >&2; exit 2; }
timeout=$((timeout * slow))
boot_timeout=${RPCRDMA2_BOOT_TIMEOUT:-$((90 * slow))}
# The debug kernel interprets ACPI so slowly under TCG that the _PRT
# method (PCI INTx routing) runs into ACPICA's 30 s loop limit once per
# PCI device: minutes of boot, and RCU stall warnings that fail the run.
# virtio-pci uses MSI-X and needs no INTx routing, so acpi=noirq skips it.
variant_append=
[ "$RPCRDMA2_KERNEL_VARIANT" != debug ] || variant_append=acpi=noirq

T0=${EPOCHREALTIME/./}
# ms since start
elapsed() { echo $(((${EPOCHREALTIME/./} - T0) / 1000)); }
# fmt MS -> "12.3s"
fmt() { printf '%d.%ds' $(($1 / 1000)) $(($1 % 1000 / 100)); }
RES='' CTL=''
vm_log() {
	log "vm: $*"
	[ -z "$CTL" ] || printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >>"$RES/run.log"
}
tb_fail() { # exit EX_TESTBED naming what failed
	vm_log "ERROR: $*"
	exit $EX_TESTBED
}

# --- prerequisites -----------------------------------------------------------

# vm_prereqs: install (or name) the missing host packages; check the kernel.
vm_prereqs() {
	( ensure_debs "${VM_DEBS[@]}" ) || tb_fail "host prerequisites missing (see above)"
	local c
	for c in qemu-system-x86_64 setpriv gzip stat; do
		command -v "$c" >/dev/null || tb_fail "missing tool: $c"
	done
	for c in /usr/bin/bash /usr/sbin/modprobe /usr/sbin/rpc.nfsd /usr/sbin/nfsdcld \
		/usr/sbin/rpcbind /usr/sbin/mount.nfs /usr/bin/rdma /usr/bin/ibv_devices \
		/usr/bin/fio; do
		[ -x "$c" ] || tb_fail "missing tool the guests need: $c"
	done
	if [ -z "$kroot" ]; then
		local kdir
		kdir=$("$RPCRDMA2_TOP/tools/testing/kernel/build.sh" --kdir) ||
			tb_fail "cannot locate the testbed kernel (tools/testing/kernel/build.sh --kdir)"
		"$RPCRDMA2_TOP/tools/testing/kernel/build.sh" --check ||
			tb_fail "kernel not built: run tools/testing/kernel/build.sh (cache: ${kdir%/build})"
		kroot=${kdir%/build}
	fi
	BZIMAGE=$kroot/bzImage
	[ -f "$BZIMAGE" ] || tb_fail "kernel not built: no $BZIMAGE"
	[ -s "$kroot/kernelrelease" ] || tb_fail "kernel not built: no $kroot/kernelrelease"
	KREL=$(cat "$kroot/kernelrelease")
	MODS=$kroot/mods
	[ -f "$MODS/lib/modules/$KREL/modules.dep" ] ||
		tb_fail "kernel modules missing: no $MODS/lib/modules/$KREL/modules.dep"
}

vm_prereqs
INITRD=$("$HERE/mkinitramfs.sh" "$kroot/build") || tb_fail "initramfs build failed"

# --- results directory and the guests' control files ------------------------

if [ -n "$cmd" ]; then
	name=cmd
elif ((shell)); then
	name=shell
else
	if ! [ -f "$script" ] || ! [ -r "$script" ]; then
		echo "${0##*/}: no such script: $script" >&2
		exit 2
	fi
	name=$(basename "$script" .sh)
fi
if [ -z "$results" ]; then
	base=$RPCRDMA2_CACHE/vm/results
	mkdir -p "$base"
	results=$base/$(date +%Y%m%d-%H%M%S)-$name-$$
	# keep the 50 newest default result directories
	find "$base" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn |
		tail -n +50 | cut -d' ' -f2- | xargs -r rm -rf
	mkdir -p "$results"
	ln -sfn "${results##*/}" "$base/latest"
else
	mkdir -p "$results"
	[ -z "$(ls -A "$results")" ] || { echo "${0##*/}: results dir not empty: $results" >&2; exit 2; }
fi
RES=$(cd "$results" && pwd)
for p in "$RES" "$RPCRDMA2_TOP" "$MODS"; do
	[[ $p != *,* ]] || tb_fail "path contains a comma (QEMU option syntax): $p"
done
CTL=$RES/ctl
mkdir -p "$CTL" "$RES/client" "$RES/server"

guest_path() { # host file -> path in the guest (repository files via /src)
	local f
	f=$(realpath "$1")
	if [[ $f == "$RPCRDMA2_TOP"/* ]]; then
		echo "/src/${f#"$RPCRDMA2_TOP"/}"
	else
		cp "$f" "$CTL/$2"
		echo "/results/ctl/$2"
	fi
}
if [ -n "$cmd" ]; then
	printf '# --cmd\n%s\n' "$cmd" >"$CTL/cmd.sh"
	gscript=/results/ctl/cmd.sh
elif ((shell)); then
	gscript=
else
	gscript=$(guest_path "$script" client-script.sh)
fi
gserver_script=
if [ -n "$server_script" ]; then
	[ -r "$server_script" ] || { echo "${0##*/}: no such server script: $server_script" >&2; exit 2; }
	gserver_script=$(guest_path "$server_script" server-script.sh)
fi
{
	printf '%s=%q\n' SERVER_IP "$SERVER_IP" CLIENT_IP "$CLIENT_IP" TB_PREFIX "$PREFIX" \
		TB_MTU "$MTU" NFS_EXPORT /export NFS_RDMA_PORT "$NFS_RDMA_PORT" \
		NFS_TCP_PORT "$NFS_TCP_PORT" TB_TIMEOUT "$timeout" \
		TB_ALLOW_RPCRDMA_AUTOLOAD "$allow_autoload" TB_SCRIPT "$gscript" \
		TB_SERVER_SCRIPT "$gserver_script" TB_INTERACTIVE "$shell" \
		TB_INJECT_FAIL "${RPCRDMA2_VM_INJECT_FAIL:-}" TB_PROVIDER "$provider" \
		TB_RDMA_DEV "$RDMA_DEV" \
		TB_KERNEL_VARIANT "$RPCRDMA2_KERNEL_VARIANT" TB_SLOW "$slow" \
		TB_KO "/src/$(module_ko "$RPCRDMA2_KERNEL_VARIANT")" \
		TB_KUNIT_KO "/src/$(module_ko "$RPCRDMA2_KERNEL_VARIANT" kunit)"
} >"$CTL/testbed.env"
{
	printf 'TB_ARGS=('
	(($#)) && printf '%q ' "$@"
	printf ')\n'
} >"$CTL/args"

# --- the guests ------------------------------------------------------------------

SOCKDIR=$(mktemp -d /tmp/rpcrdma2-vm.XXXXXX)
declare -A PID=()

kill_guest() { # ROLE: stop its QEMU (TERM, then KILL)
	local pid=${PID[$1]:-} i
	[ -n "$pid" ] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 30; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	PID[$1]=
}
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	set +e
	kill_guest client
	kill_guest server
	rm -rf "$SOCKDIR"
}
trap cleanup EXIT
trap 'vm_log "interrupted"; exit 130' INT
trap 'vm_log "terminated"; exit 143' TERM
trap 'vm_log "hangup"; exit 129' HUP

launch() { # ROLE PEER MAC
	local role=$1 peer=$2 mac=$3 serial
	local -a q
	serial=(-serial "file:$RES/$role.console")
	if [ "$role" = client ] && ((shell)); then
		serial=(-chardev "stdio,id=con,signal=off,logfile=$RES/client.console" -serial chardev:con)
	fi
	# -cpu max without ERMS and FSRM: with them the kernel's copies
	# between user space and the kernel, and glibc's large ones, are
	# "rep movsb", which TCG runs one byte per loop turn (a 128 MiB
	# tmpfs read took 0.61 s, against 0.25 s with "rep movsq" without
	# ERMS); see "The CPU" in Documentation/testing.rst.
	q=(qemu-system-x86_64 -name "rpcrdma2-$role" -accel tcg -cpu "$cpu" -smp 1 -m "$mem"
		-nodefaults -no-user-config -display none -monitor none -no-reboot
		-kernel "$BZIMAGE" -initrd "$INITRD"
		-append "console=ttyS0 panic=1 oops=panic testbed.role=$role $variant_append $append"
		"${serial[@]}"
		-device virtio-rng-pci
		-netdev "dgram,id=l2,local.type=unix,local.path=$SOCKDIR/$role.sock,remote.type=unix,remote.path=$SOCKDIR/$peer.sock"
		-device "virtio-net-pci,netdev=l2,mac=$mac,romfile="
		-virtfs "local,path=/usr,mount_tag=usr,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=/etc,mount_tag=etc,security_model=none,readonly=on,multidevs=remap"
		-virtfs "local,path=$MODS,mount_tag=mods,security_model=none,readonly=on"
		-virtfs "local,path=$RPCRDMA2_TOP,mount_tag=src,security_model=none,readonly=on"
		-virtfs "local,path=$RES,mount_tag=results,security_model=none")
	printf '%q ' "${q[@]}" >"$RES/$role.qemu-cmdline"
	# --pdeathsig: QEMU dies with this runner even if it is SIGKILLed.
	if [ "$role" = client ] && ((shell)); then
		# an asynchronous command's stdin is /dev/null unless redirected
		setpriv --pdeathsig KILL -- "${q[@]}" <&"$TTY_FD" 2>"$RES/$role.qemu.log" &
	else
		setpriv --pdeathsig KILL -- "${q[@]}" </dev/null >"$RES/$role.qemu.log" 2>&1 &
	fi
	PID[$role]=$!
}

vm_log "results: $RES"
vm_log "kernel $KREL ($kroot, variant $RPCRDMA2_KERNEL_VARIANT), RDMA provider $provider ($RDMA_DEV), client script: ${gscript:-interactive shell} ${*}"
launch server client 52:54:00:52:44:01
launch client server 52:54:00:52:44:02
echo "server ${PID[server]} client ${PID[client]}" >"$RES/qemu.pids"

# --- supervise -------------------------------------------------------------------

readonly PHASES=(server.booted client.booted server.rdma client.rdma server.ready
	client.started client.finished)
declare -A DESC=([server.booted]="server booted" [client.booted]="client booted"
	[server.rdma]="server $RDMA_DEV ACTIVE" [client.rdma]="client $RDMA_DEV ACTIVE"
	[server.ready]="server ready: nfsd tcp/$NFS_TCP_PORT rdma/$NFS_RDMA_PORT"
	[client.started]="client script started" [client.finished]="client finished")
declare -A T=()
out_off=0

pump() { # stream new client script output to stdout
	local f=$RES/client/output.log size
	((quiet)) && return 0
	[ -f "$f" ] || return 0
	size=$(stat -c %s "$f")
	((size > out_off)) || return 0
	dd if="$f" bs=64k skip="$out_off" count=$((size - out_off)) \
		iflag=skip_bytes,count_bytes status=none
	out_off=$size
}
console_tail() { # ROLE: last console lines, indented
	[ -f "$RES/$1.console" ] || return 0
	echo "--- last lines of $1.console:"
	tail -n "${2:-20}" "$RES/$1.console" | sed 's/^/    /'
}
console_problems() { # ROLE: the console's warning/oops/panic lines, if any
	[ -f "$RES/$1.console" ] || return 0
	grep -qE "$WARN_RE" "$RES/$1.console" || return 0
	echo "--- warning/oops/panic lines of $1.console:"
	grep -nE "$WARN_RE" "$RES/$1.console" | head -n 10 | sed 's/^/    /'
}
# release_server: the client will not finish by itself; let the server stop
# (it saves its kernel log and powers off when it sees client.finished).
release_server() {
	[ -e "$CTL/client.finished" ] || echo host >"$CTL/client.finished"
}
alive() { [ -n "${PID[$1]:-}" ] && kill -0 "${PID[$1]}" 2>/dev/null; }
# shutdown_guests SECS: let the guests power off by themselves, then kill them.
shutdown_guests() {
	local end=$(($(elapsed) + $1 * 1000)) r
	while (alive server || alive client) && (($(elapsed) < end)); do
		sleep 0.1
	done
	for r in server client; do
		if alive "$r"; then
			vm_log "$r guest did not power off by itself within $1 s; killing it"
			kill_guest "$r"
		fi
	done
}
guest_failed() { # ROLE: a setup step in ROLE failed
	local r=$1
	vm_log "ERROR: $r: $(head -n 1 "$CTL/$r.failed")"
	tail -n +2 "$CTL/$r.failed" | sed 's/^/    /' >&2
	pump
	shutdown_guests 15
	tb_fail "$r guest setup failed (results: $RES)"
}
guest_died() { # ROLE: QEMU exited before the run was done
	local r=$1 why
	if [ -z "${T[$r.booted]:-}" ]; then
		why="$r guest did not boot (QEMU exited)"
	else
		why="$r guest exited unexpectedly"
	fi
	grep -q 'Kernel panic' "$RES/$r.console" 2>/dev/null && why+=" (kernel panic)"
	[ ! -s "$RES/$r.qemu.log" ] || { echo "--- $r.qemu.log:"; sed 's/^/    /' "$RES/$r.qemu.log"; } >&2
	console_problems "$r" >&2
	console_tail "$r" 30 >&2
	pump
	release_server
	shutdown_guests 5
	tb_fail "$why (results: $RES)"
}

while :; do
	pump
	for p in "${PHASES[@]}"; do
		if [ -z "${T[$p]:-}" ] && [ -e "$CTL/$p" ]; then
			T[$p]=$(elapsed)
			vm_log "$(fmt "${T[$p]}") ${DESC[$p]}"
		fi
	done
	[ -n "${T[client.finished]:-}" ] && break
	for r in server client; do
		[ ! -e "$CTL/$r.failed" ] || guest_failed "$r"
	done
	for r in server client; do
		alive "$r" || guest_died "$r"
	done
	now=$(elapsed)
	for r in server client; do
		if [ -z "${T[$r.booted]:-}" ] && ((now > boot_timeout * 1000)); then
			vm_log "ERROR: $r guest did not boot within $boot_timeout s"
			console_tail "$r" 30 >&2
			tb_fail "$r guest did not boot (results: $RES)"
		fi
	done
	if ((now > timeout * 1000)); then
		waiting="client script"
		for p in "${PHASES[@]}"; do
			[ -n "${T[$p]:-}" ] || { waiting=${DESC[$p]}; break; }
		done
		vm_log "ERROR: timeout after $timeout s, waiting for: $waiting"
		pump
		console_problems client >&2
		console_tail client 20 >&2
		release_server
		shutdown_guests 3
		echo timeout >"$RES/status"
		exit $EX_TIMEOUT
	fi
	sleep 0.2
done
pump

# --- results -----------------------------------------------------------------

rc=$(cat "$CTL/client.status" 2>/dev/null || true)
if ! [[ $rc =~ ^[0-9]+$ ]]; then
	[ -e "$CTL/client.failed" ] && guest_failed client
	tb_fail "client finished without an exit status (results: $RES)"
fi
shutdown_guests 30
t_end=$(elapsed)
vm_log "$(fmt "$t_end") guests powered off"

# Kernel log check (the console has everything up to a panic).
if [ -f "$RES/client.console" ]; then
	grep -nE "$WARN_RE" "$RES/client.console" >"$RES/client.warnings" || true
fi
if [ -s "$RES/client.warnings" ]; then
	if ((check_warnings)); then
		vm_log "ERROR: the client kernel log has $(wc -l <"$RES/client.warnings") warning line(s):"
		head -n 20 "$RES/client.warnings" | sed 's/^/    client.console:/' >&2
		((rc != 0)) || rc=1
	else
		vm_log "note: client kernel log has $(wc -l <"$RES/client.warnings") warning line(s) (allowed)"
	fi
fi
if [ -f "$RES/server.console" ] && grep -nE "$WARN_RE" "$RES/server.console" >"$RES/server.warnings"; then
	vm_log "note: the server kernel log has warning lines (see $RES/server.warnings)"
else
	rm -f "$RES/server.warnings"
fi

maxt() { local a=${T[$1]:-0} b=${T[$2]:-0}; echo $((a > b ? a : b)); }
timings="boot $(fmt "$(maxt server.booted client.booted)")"
timings+=", $RDMA_DEV up $(fmt "$(maxt server.rdma client.rdma)")"
timings+=", server ready $(fmt "${T[server.ready]:-0}")"
t_fin=${T[client.finished]} t_start=${T[client.started]:-0}
timings+=", script $(fmt $((t_fin - t_start)))"
timings+=", power off $(fmt $((t_end - t_fin)))"
timings+=", total $(fmt "$t_end")"
echo "$timings" >"$RES/timings"
echo "$rc" >"$RES/status"
vm_log "timings: $timings"
vm_log "client script exit status $rc; results: $RES"
exit "$rc"
