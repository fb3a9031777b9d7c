# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for client scripts run by tools/testing/vm/run.sh.  In the client
# guest, source it with:   . "$TESTBED_LIB"
#
# Environment provided by the testbed (see Documentation/testing.rst):
#   SERVER_IP CLIENT_IP NFS_SERVER NFS_EXPORT NFS_RDMA_PORT NFS_TCP_PORT
#   RESULTS (this run's client results dir, also the cwd) SRC (repository,
#   read-only) MODS (modules_install tree) KREL (uname -r) TESTBED_LIB TESTBED=1
#   RDMA_PROVIDER (rxe or siw, run.sh --provider) RDMA_DEV (rxe0 or siw0,
#   the RDMA device on eth0)

TB_SKIP=77

tb_log() { printf '[%s] %s\n' "$(cut -d' ' -f1 /proc/uptime)" "$*"; }
tb_die() {
	printf '[%s] FAIL: %s\n' "$(cut -d' ' -f1 /proc/uptime)" "$*" >&2
	exit 1
}
# tb_skip REASON: end the script as skipped (exit 77).
tb_skip() {
	printf '[%s] SKIP: %s\n' "$(cut -d' ' -f1 /proc/uptime)" "$*" >&2
	exit "$TB_SKIP"
}
# tb_step DESC CMD...: run CMD; on failure die naming DESC.
tb_step() {
	local desc=$1 rc=0
	shift
	tb_log "$desc"
	"$@" || rc=$?
	((rc == 0)) || tb_die "$desc: '$*' exited $rc"
}

# tb_sleep_until_ms AT: sleep until AT (milliseconds since the epoch, as
# date +%s%3N prints it); at once if AT has passed. The guests' clocks both
# come from the host's, so two guests can start something together.
tb_sleep_until_ms() {
	local d
	d=$(($1 - $(date +%s%3N)))
	((d > 0)) || return 0
	sleep "$((d / 1000)).$(printf %03d $((d % 1000)))"
}

# tb_rdma_net_state: the RDMA links and CM ids, the GID tables, the RDMA
# devices' and eth0's counters, UDP statistics, routes and neighbours (what
# to log when a connection hangs).
tb_rdma_net_state() {
	rdma link show || true
	rdma resource show cm_id || true
	grep -H . /sys/class/infiniband/*/ports/1/gids/* 2>/dev/null |
		grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$' || true
	grep -H . /sys/class/infiniband/*/ports/1/hw_counters/* 2>/dev/null |
		grep -v ':0$' | sed 's#.*/hw_counters/##' | tr '\n' ' ' || true
	echo
	ip -s -o link show eth0 || true
	grep '^Udp:' /proc/net/snmp || true
	ip route show
	ip neigh show
}

# tb_modprobe ARGS...: modprobe from the guest's module tree.
tb_modprobe() { modprobe -d "$MODS" "$@"; }

# tb_allow_rpcrdma_autoload: let the kernel autoload the stock rpcrdma
# (blocked on the client by default; see /testbed/modprobe).
tb_allow_rpcrdma_autoload() { rm -f /run/testbed/block-rpcrdma; }

# tb_transports: the registered *server-side* (svc_xprt) transport classes,
# one a line (SUNRPC_DEBUG).  Client xprt classes are not listed there: the
# stock rpcrdma.ko shows up (its svcrdma half registers "rdma"), a
# client-only module such as rpcrdma2.ko does not.
tb_transports() { cat /proc/sys/sunrpc/transports; }

# tb_has_transport NAME: is a server-side transport class NAME registered?
tb_has_transport() { awk '{print $1}' /proc/sys/sunrpc/transports | grep -qx "$1"; }

# tb_mount VERS PROTO MNT [EXTRA_OPTS]: mount the server's export.
#   VERS 3, 4.0, 4.1, 4.2; PROTO rdma (port $NFS_RDMA_PORT) or tcp.
tb_mount() {
	local vers=$1 proto=$2 mnt=$3 extra=${4:-} opts
	opts="vers=$vers,proto=$proto,sec=sys"
	[ "$proto" = rdma ] && opts+=",port=$NFS_RDMA_PORT"
	[ "$vers" = 3 ] && opts+=",nolock"
	[ -n "$extra" ] && opts+=",$extra"
	mkdir -p "$mnt"
	tb_log "mount -t nfs -o $opts $NFS_SERVER:$NFS_EXPORT $mnt"
	timeout "${TB_MOUNT_TIMEOUT:-$((90 * ${TB_SLOW:-1}))}" mount -t nfs -o "$opts" "$NFS_SERVER:$NFS_EXPORT" "$mnt" ||
		tb_die "mount vers=$vers proto=$proto on $mnt failed"
}

# tb_assert_proto MNT PROTO: the mount on MNT really uses transport PROTO
# (/proc/mounts proto= and the xprt: line of /proc/self/mountstats).
tb_assert_proto() {
	local mnt=$1 proto=$2 opts xprt
	opts=$(awk -v m="$mnt" '$2 == m {print $4}' /proc/mounts | tail -n 1)
	[ -n "$opts" ] || tb_die "$mnt is not mounted"
	case ",$opts," in
	*",proto=$proto,"*) ;;
	*) tb_die "$mnt: /proc/mounts has '$opts', expected proto=$proto" ;;
	esac
	xprt=$(awk -v m="$mnt" '$1 == "device" {cur = ($5 == m)} cur && $1 == "xprt:" {print $2}' \
		/proc/self/mountstats | tail -n 1)
	[ "$xprt" = "$proto" ] ||
		tb_die "$mnt: /proc/self/mountstats shows xprt '${xprt:-none}', expected '$proto'"
	tb_log "$mnt uses $proto (proc/mounts and mountstats agree)"
}

# tb_umount MNT: unmount, failing loudly if it does not go away.
tb_umount() {
	timeout "${TB_MOUNT_TIMEOUT:-$((90 * ${TB_SLOW:-1}))}" umount "$1" || tb_die "umount $1 failed"
}

# tb_random_files DIR PREFIX SIZE...: DIR/PREFIX<SIZE> of SIZE random
# bytes each (reference data for round trips).
tb_random_files() {
	local dir=$1 prefix=$2 s
	shift 2
	mkdir -p "$dir"
	for s in "$@"; do
		head -c "$s" /dev/urandom >"$dir/$prefix$s"
	done
}

# tb_drop_caches: write back and drop the page, dentry and inode caches.
tb_drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# tb_rmmod MOD [SECS]: unload MOD, retrying while it is still busy (an
# rpc_xprt is torn down asynchronously after the last umount).
tb_rmmod() {
	local mod=$1 secs=${2:-$((20 * ${TB_SLOW:-1}))} i
	for ((i = 0; i < secs * 5; i++)); do
		grep -q "^$mod " /proc/modules || return 0
		rmmod "$mod" 2>/dev/null && return 0
		sleep 0.2
	done
	rmmod "$mod" || tb_die "rmmod $mod: still busy after ${secs} s"
}

# tb_trace_rpcrdma2: enable every rpcrdma2 tracepoint (tracefs mounted,
# buffer cleared). tb_trace_events EVENT [ERE]: the trace lines of
# rpcrdma2_EVENT (matching ERE), for assertions on what the transport did.
tb_trace_rpcrdma2() {
	local t=/sys/kernel/tracing
	mountpoint -q "$t" || mount -t tracefs nodev "$t"
	[ -d "$t/events/rpcrdma2" ] || tb_die "no rpcrdma2 tracepoints (is rpcrdma2.ko loaded?)"
	echo 16384 >"$t/buffer_size_kb"
	echo >"$t/trace"
	echo 1 >"$t/events/rpcrdma2/enable"
	echo 1 >"$t/tracing_on"
}
tb_trace_events() {
	grep -E " rpcrdma2_$1: " /sys/kernel/tracing/trace | grep -E -- "${2:-.}" || true
}

# --- kmemleak (the debug kernel: CONFIG_DEBUG_KMEMLEAK, no automatic scans) --
TB_KMEMLEAK=/sys/kernel/debug/kmemleak

# tb_kmemleak_on: debugfs mounted and kmemleak running (a scan is accepted),
# or die: the kernel has no kmemleak or kmemleak disabled itself.
tb_kmemleak_on() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	[ -e "$TB_KMEMLEAK" ] ||
		tb_die "no $TB_KMEMLEAK: the kernel lacks CONFIG_DEBUG_KMEMLEAK (run on the debug kernel: --variant debug)"
	echo scan >"$TB_KMEMLEAK" 2>/dev/null ||
		tb_die "kmemleak refuses to scan (disabled?): $(dmesg | grep -i kmemleak | tail -n 3 | tr '\n' ' ')"
}

# tb_kmemleak_scan: two scans (an object is reported only once it has been
# unreferenced on a scan and is older than 5 s; the second scan catches
# what the first one saw being freed), then the report on stdout.
tb_kmemleak_scan() {
	echo scan >"$TB_KMEMLEAK" || tb_die "kmemleak scan failed"
	sleep 1
	echo scan >"$TB_KMEMLEAK" || tb_die "kmemleak scan failed"
	cat "$TB_KMEMLEAK"
}

# tb_module_text_ranges MOD KO: "START END SECTION" (16 hex digits each,
# END exclusive) for every executable section of the loaded module MOD,
# addresses from /sys/module/MOD/sections, sizes from its file KO.  Taken
# before rmmod, they let a backtrace frame that no longer has a symbol be
# attributed to MOD.
tb_module_text_ranges() {
	local mod=$1 ko=$2 readelf name size addr
	readelf=$(command -v llvm-readelf-15 || command -v readelf) || tb_die "no readelf"
	"$readelf" -S -W "$ko" | sed -n 's/^ *\[ *[0-9]*\] //p' |
		awk '$1 ~ /^\./ && $7 ~ /X/ && $7 ~ /A/ {print $1, $5}' |
		while read -r name size; do
			[ -r "/sys/module/$mod/sections/$name" ] || continue
			addr=$(cat "/sys/module/$mod/sections/$name")
			(((16#${size}) > 0)) || continue
			printf '%016x %016x %s\n' "$addr" $((addr + 16#$size)) "$name"
		done
}

# tb_kmemleak_findings MOD RANGES [REPORT]: the entries of a kmemleak
# report (file REPORT or stdin) whose allocation backtrace has a frame in
# MOD: named "[MOD]" (module loaded) or, for a frame printed as a bare
# address (module unloaded), inside one of the ranges of the file RANGES
# (tb_module_text_ranges).  Exit status 0 iff there is at least one.
tb_kmemleak_findings() {
	local mod=$1 ranges=$2 prog
	prog='
		BEGIN { n = 0; while ((getline l < rf) > 0) { split(l, f, " "); lo[n] = f[1]; hi[n] = f[2]; n++ } }
		function hex16(a) { a = tolower(a); sub(/^0x/, "", a); while (length(a) < 16) a = "0" a; return a }
		function flush() { if (entry != "" && hit) { printf "%s", entry; found++ } entry = ""; hit = 0; bt = 0 }
		/^unreferenced object / { flush() }
		{ entry = entry $0 "\n" }
		/^  backtrace/ { bt = 1; next }
		bt && index($0, mod) { hit = 1 }
		bt && $1 ~ /^0x[0-9a-fA-F]+$/ {
			a = hex16($1)
			for (i = 0; i < n; i++) if (a >= lo[i] && a < hi[i]) hit = 1
		}
		END { flush(); exit found ? 0 : 1 }
	'
	# (no /dev/stdin in the guests: awk reads stdin when given no file)
	if (($# >= 3)); then
		awk -v mod="[$mod]" -v rf="$ranges" "$prog" "$3"
	else
		awk -v mod="[$mod]" -v rf="$ranges" "$prog"
	fi
}
