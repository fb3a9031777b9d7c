#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Client side of `make bench` (runs in the client guest, started by
# tools/testing/bench/run.sh through tools/testing/vm/run.sh).  In one boot:
#
#   for each repeat 1..N:
#     raw     perftest ib_write_bw / ib_read_bw (1 MiB) and ib_send_lat (4 KiB)
#     tcp     NFSv4.1 over TCP, default rsize/wsize
#     c       stock C client rpcrdma.ko, default rsize/wsize
#     r2      rpcrdma2, default rsize/wsize (chunks, DDP)
#     r2-0    the same with run.sh --module-baseline's build of rpcrdma2
#             (on request; r2 and r2-0 swap places in even repeats)
#     c-1k    stock C client, rsize=1024,wsize=1024
#     r2-1k   rpcrdma2, rsize=1024,wsize=1024 (all RPCs inline)
#     v2      rpcrdma2 through the responder, version 2 (chunks, FRWR)
#     v2-inl  the same with frwr=N: no memory registration, Calls and
#             Replies over the inline threshold go by Message Continuation
#     m-tcp   metadata workloads (meta.sh) over NFS/TCP
#     m-c     metadata workloads, C client to svcrdma
#     m-r2    metadata workloads, rpcrdma2 to svcrdma
#     m-v1    metadata workloads, rpcrdma2 through the responder --v1-only
#     m-v2    metadata workloads, rpcrdma2 through the responder (version 2)
#     c-resp  fio, stock C client through the responder --v1-only (port 20051)
#     m-c-resp  metadata workloads, the same
#     c-resp0, m-c-resp0  the same through run.sh --responder-baseline's
#             build of the responder (port 20052), on request
#     n-r2, n-c, n-r2-1k, n-c-1k  exact per-RPC event counts (counts.sh)
#             of rpcrdma2 and the C client, default and 1 KiB sizes
#
# fio runs samples/fio/{randread-4k,seqread-1m,seqwrite-1m}.fio on each NFS
# configuration, with the client's CPU time (/proc/stat) sampled inside
# the measured interval, and the server's at the same instants on request
# (server_cpu; the server's answers are in /results/server/cpu-samples.txt).  The repeat loop is outermost so that a drift in
# host load spreads over all configurations instead of biasing one.
# Nothing is parsed here: raw outputs and one line per run in
# bench/runs.tsv go to $RESULTS/bench; run.sh (report.py) turns them into
# numbers on the host.  The script exits 1 if any run failed (after all
# of them), so that a configuration that cannot run fails the bench.
#
# usage: guest.sh [--repeats N] [--runtime S] [--ramp S] [--size SIZE]
#                 [--lat-iters N] [--configs LIST] [--meta-vers 'VERS...']
#                 [--meta-files N] [--meta-dirsize N] [--meta-create N]
#                 [--untar TARBALL] [--jobs 'JOBS...']
#                 [--module-baseline KO (relative to the repository)]
#                 [--profile] [--count-rpcs N]

set -uo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

REPEATS=3 RUNTIME=10 RAMP=2 SIZE=128m LAT_ITERS=2000
CONFIGS='raw tcp c c-1k r2-1k r2 c-resp m-tcp m-c m-r2 m-v1 m-v2 m-c-resp'  # v2 v2-inl: on request
META_VERS=4.1 META_FILES=3000 META_DIRSIZE=1000 META_CREATE=300
UNTAR=/src/target/bench/untar.tar
JOBS=(randread-4k seqread-1m seqwrite-1m)
PROFILE=0
KO0_SRC=
COUNT_RPCS=
while (($#)); do
	case $1 in
	--repeats) REPEATS=$2; shift 2 ;;
	--runtime) RUNTIME=$2; shift 2 ;;
	--ramp) RAMP=$2; shift 2 ;;
	--size) SIZE=$2; shift 2 ;;
	--lat-iters) LAT_ITERS=$2; shift 2 ;;
	--configs) CONFIGS=$2; shift 2 ;;
	--meta-vers) META_VERS=$2; shift 2 ;;
	--meta-files) META_FILES=$2; shift 2 ;;
	--meta-dirsize) META_DIRSIZE=$2; shift 2 ;;
	--meta-create) META_CREATE=$2; shift 2 ;;
	--untar) UNTAR=$2; shift 2 ;;
	--jobs) read -ra JOBS <<<"$2"; shift 2 ;;
	--profile) PROFILE=1; shift ;;
	--module-baseline) KO0_SRC=$SRC/$2; shift 2 ;;
	--count-rpcs) COUNT_RPCS=$2; shift 2 ;;
	*) tb_die "guest.sh: unknown argument $1" ;;
	esac
done

KO=$RPCRDMA2_KO
MNT=/mnt/bench
OUT=$RESULTS/bench
RUNS=$OUT/runs.tsv
SMALL=rsize=1024,wsize=1024
# fio may block in the kernel; this bounds every job (ramp + runtime + the
# time to drain iodepth 1 MiB I/Os at rsize 1024 + slack).
JOB_LIMIT=$((RAMP + RUNTIME + 120))
# CPU samples of a fio run (see run_fio), in seconds after its start
if ((RUNTIME >= 2)); then
	CPU_T0=$RAMP.5 CPU_DT=$((RUNTIME - 1))
else
	CPU_T0=$RAMP CPU_DT=$RUNTIME
fi
mkdir -p "$OUT"
printf 'kind\tconfig\tjob\trepeat\tstatus\tfile\tmount_options\n' >"$RUNS"

has() { [[ " $CONFIGS " == *" $1 "* ]]; }
FAILED=0
record() { # KIND CONFIG JOB REPEAT STATUS FILE OPTS
	local IFS=$'\t'
	[ "$5" = ok ] || FAILED=$((FAILED + 1))
	echo "$*" >>"$RUNS"
}

# cpu_sample: "EPOCHREALTIME cpu user nice system idle iowait irq softirq
# steal ..." (the first line of /proc/stat, in USER_HZ ticks); builtins
# only, so that sampling costs no fork.
cpu_sample() {
	local line
	read -r line </proc/stat
	echo "$EPOCHREALTIME $line"
}

# server_cpu NAME: ask the server guest (bench/server.sh, cpu_sampler) to
# read its /proc/stat now, as sample NAME: one line over the TCP
# connection that srv_cpu_connect opened (a builtin write: no fork, so
# it can sit right beside the client's own samples).  A failed write
# (the sampler gone) closes the connection: the report then says n/a.
SRV_CPU_PORT=18520 SRV_CPU_ACK=/results/server/cpu-ack SRV_CPU_FD=
srv_cpu_connect() {
	local i
	for ((i = 0; i < 10; i++)); do
		{ exec {SRV_CPU_FD}>"/dev/tcp/$SERVER_IP/$SRV_CPU_PORT"; } 2>/dev/null && return 0
		sleep 1
	done
	SRV_CPU_FD=
	tb_log "no connection to the server's CPU sampler ($SERVER_IP port $SRV_CPU_PORT): server CPU will be n/a"
}
# server_cpu NAME perf=SECS (--profile): the same, and the server starts
# a SECS-second perf profile of itself right after the sample
server_cpu() {
	[ -n "$SRV_CPU_FD" ] || return 0
	trap '' PIPE
	if ! printf '%s %s%s\n' "$1" "$EPOCHREALTIME" "${2:+ $2}" >&"$SRV_CPU_FD"; then
		exec {SRV_CPU_FD}>&-
		SRV_CPU_FD=
		tb_log "the server's CPU sampler went away at $1: server CPU will be n/a"
	fi 2>/dev/null
	trap - PIPE
}

# server_cpu_wait NAME [TENTHS]: until the server has taken sample NAME
# (at most TENTHS/10 s, default 5 s)
server_cpu_wait() {
	local i
	[ -n "$SRV_CPU_FD" ] || return 1
	for ((i = 0; i < ${2:-50} * 2; i++)); do
		[ -e "$SRV_CPU_ACK/$1" ] && return 0
		sleep 0.05
	done
	tb_log "server CPU sample $1: no answer from the server within $((${2:-50} / 10)) s"
	return 1
}

# --- transports ----------------------------------------------------------------

declare -A PROTO=([tcp]=tcp [c]=rdma [c-1k]=rdma [r2-1k]=rdma [r2]=rdma [r2-0]=rdma
	[v2]=rdma [v2-inl]=rdma [c-resp]=rdma [c-resp0]=rdma
	[m-tcp]=tcp [m-c]=rdma [m-r2]=rdma [m-v1]=rdma [m-v2]=rdma [m-c-resp]=rdma [m-c-resp0]=rdma
	[n-r2]=rdma [n-c]=rdma [n-r2-1k]=rdma [n-c-1k]=rdma)
declare -A MODULE=([tcp]='' [c]=rpcrdma [c-1k]=rpcrdma [r2-1k]=rpcrdma2 [r2]=rpcrdma2 [r2-0]=rpcrdma2
	[v2]=rpcrdma2 [v2-inl]=rpcrdma2 [c-resp]=rpcrdma [c-resp0]=rpcrdma
	[m-tcp]='' [m-c]=rpcrdma [m-r2]=rpcrdma2 [m-v1]=rpcrdma2 [m-v2]=rpcrdma2 [m-c-resp]=rpcrdma [m-c-resp0]=rpcrdma
	[n-r2]=rpcrdma2 [n-c]=rpcrdma [n-r2-1k]=rpcrdma2 [n-c-1k]=rpcrdma)
declare -A EXTRA=([tcp]='' [c]='' [c-1k]=$SMALL [r2-1k]=$SMALL [r2]='' [r2-0]='' [v2]='' [v2-inl]='' [c-resp]='' [c-resp0]=''
	[m-tcp]='' [m-c]='' [m-r2]='' [m-v1]='' [m-v2]='' [m-c-resp]='' [m-c-resp0]=''
	[n-r2]='' [n-c]='' [n-r2-1k]=$SMALL [n-c-1k]=$SMALL)
# RDMA port: svcrdma, or the responder (server.sh) in version 2 or v1-only mode
declare -A PORT=([m-v1]=20051 [m-v2]=20050 [v2]=20050 [v2-inl]=20050 [c-resp]=20051 [m-c-resp]=20051
	[c-resp0]=20052 [m-c-resp0]=20052)
# rpcrdma2's module parameters per configuration (default: none), and
# those it was loaded with
declare -A PARAMS=([v2-inl]=frwr=N)
LOADED_PARAMS=
# which build of rpcrdma2 (both are named rpcrdma2): the baseline for
# r2-0 (snapshot below), the module under test otherwise; and the one loaded
KO0=/tmp/rpcrdma2-baseline.ko
declare -A KOFILE=([r2-0]=$KO0)
LOADED_KO=

loaded() { grep -q "^$1 " /proc/modules; }

# use_module rpcrdma|rpcrdma2|'' [PARAMS [KO]]: make exactly that RDMA
# client loaded (rpcrdma2 from file KO, default $KO, with the module
# parameters PARAMS)
use_module() {
	local ko=${3:-$KO}
	case $1 in
	'') return 0 ;;
	rpcrdma)
		if loaded rpcrdma2; then (tb_rmmod rpcrdma2) || return 1; fi
		tb_allow_rpcrdma_autoload
		loaded rpcrdma || tb_modprobe rpcrdma || return 1
		;;
	rpcrdma2)
		if loaded rpcrdma; then (tb_rmmod rpcrdma) || return 1; fi
		# a proto=rdma mount must never fall back to the C client
		mkdir -p /run/testbed && : >/run/testbed/block-rpcrdma
		if loaded rpcrdma2 && { [ "$LOADED_PARAMS" != "${2:-}" ] || [ "$LOADED_KO" != "$ko" ]; }; then
			(tb_rmmod rpcrdma2) || return 1
		fi
		if ! loaded rpcrdma2; then
			# shellcheck disable=SC2086 # a list of parameters
			insmod "$ko" ${2:-} || return 1
			tb_log "insmod $ko (sha256 $(sha256sum <"$ko" | cut -c1-16)) ${2:-}: coresize $(cat /sys/module/rpcrdma2/coresize 2>/dev/null)"
		fi
		LOADED_PARAMS=${2:-} LOADED_KO=$ko
		;;
	esac
	tb_log "modules: $(grep -oE '^rpcrdma2? ' /proc/modules | tr '\n' ' ')"
}

# bench_mount CONFIG [VERS]: mount (NFS VERS, default 4.1) and check that
# CONFIG's transport carries it; through the responder, also that the
# connection settled on the version the configuration names.  Prints the
# mount options the kernel reports (/proc/mounts).
bench_mount() {
	local cfg=$1 vers=${2:-4.1} proto=${PROTO[$1]} opts
	opts="vers=$vers,proto=$proto,sec=sys"
	[ "$proto" = rdma ] && opts+=",port=${PORT[$cfg]:-$NFS_RDMA_PORT}"
	[ "$vers" = 3 ] && opts+=",nolock"
	[ -n "${EXTRA[$cfg]}" ] && opts+=",${EXTRA[$cfg]}"
	mkdir -p "$MNT"
	dmesg -C
	tb_log "mount -t nfs -o $opts $NFS_SERVER:$NFS_EXPORT $MNT" >&2
	timeout 90 mount -t nfs -o "$opts" "$NFS_SERVER:$NFS_EXPORT" "$MNT" >&2 || return 1
	(tb_assert_proto "$MNT" "$proto") >&2 || return 1
	case ${MODULE[$cfg]} in
	rpcrdma2)
		dmesg | grep -q "rpcrdma2: connected" || { tb_log "$cfg: no 'rpcrdma2: connected' in dmesg" >&2; return 1; }
		! loaded rpcrdma || return 1
		case $cfg in
		m-v2 | v2 | v2-inl)
			dmesg | grep -q "connection settled on version 2" ||
				{ tb_log "$cfg: the connection did not settle on RPC-over-RDMA version 2" >&2; return 1; } ;;
		m-v1)
			dmesg | grep -q "ERR_VERS: continuing in version 1" ||
				{ tb_log "$cfg: rpcrdma2 did not fall back to version 1" >&2; return 1; } ;;
		esac ;;
	rpcrdma)
		loaded rpcrdma && ! loaded rpcrdma2 || return 1 ;;
	esac
	# through the responder: the mount must name its port (the C client
	# speaks version 1 only, so nothing in its log tells the two apart)
	if [ -n "${PORT[$cfg]:-}" ]; then
		grep -qE " $MNT nfs4? .*,port=${PORT[$cfg]}[, ]" /proc/mounts ||
			{ tb_log "$cfg: the mount does not use port ${PORT[$cfg]}" >&2; return 1; }
	fi
	awk -v m="$MNT" '$2 == m {print $4}' /proc/mounts | tail -n 1
}

bench_umount() {
	mountpoint -q "$MNT" || return 0
	timeout 90 umount "$MNT" || timeout 30 umount -f "$MNT" || return 1
}

# profile_report BASE: perf's reports of the profile run_fio recorded (self
# time by module and symbol; inclusive time by symbol; self time by
# module), then the data goes
profile_report() {
	local data=/tmp/$1.perf
	if [ ! -s "$data" ]; then
		tb_log "profile of $1 missing: $(head -c 300 "$OUT/$1.perf.err" 2>/dev/null)"
		FAILED=$((FAILED + 1))
		return 1
	fi
	perf report -i "$data" --stdio --no-children --sort dso,sym --percent-limit 0.2 \
		-g none >"$OUT/$1.perf-self.txt" 2>&1
	perf report -i "$data" --stdio --children --sort sym --percent-limit 0.5 \
		-g none >"$OUT/$1.perf-children.txt" 2>&1
	perf report -i "$data" --stdio --no-children --sort dso -g none \
		>"$OUT/$1.perf-dso.txt" 2>&1
	# rpcrdma2 loaded: its raw sample addresses (every sample's call chain,
	# address and object per frame) and where its sections lie, for
	# bench/hotspots.py on the host (perf in the guest cannot resolve the
	# module: the guest's /lib is the host's); the .ko is in $OUT
	if loaded rpcrdma2; then
		{
			echo "ko ${KOCOPY[$LOADED_KO]:-?}"
			echo "proc_modules $(grep '^rpcrdma2 ' /proc/modules)"
			local s
			for s in /sys/module/rpcrdma2/sections/.*text*; do
				echo "section ${s##*/} $(cat "$s")"
			done
		} >"$OUT/$1.perf-module.txt" 2>&1
		perf script -i "$data" -F ip,sym,dso 2>"$OUT/$1.perf-script.err" |
			gzip -1 >"$OUT/$1.perf-ips.gz"
	fi
	rm -f "$data"
	if grep -qE "data size field is 0|failed to process" "$OUT/$1.perf-dso.txt"; then
		tb_log "profile of $1 is incomplete (perf record did not finish writing it)"
		FAILED=$((FAILED + 1))
		return 1
	fi
}

# run_fio CONFIG JOB REPEAT OPTS [LIMIT]: one fio run; returns fio's status
run_fio() {
	local cfg=$1 job=$2 rep=$3 opts=$4 limit=${5:-$JOB_LIMIT} base rc=0
	base=fio.$cfg.$job.$rep
	tb_log "fio $job on $cfg (repeat $rep)"
	dmesg -C
	# client CPU time inside fio's measured interval: a sample half a
	# second after the ramp and half a second before the end (fio's own
	# start-up of well under a second shifts both the same way); the
	# server's on request right before the first and right after the
	# second
	(
		sleep "$CPU_T0"
		server_cpu "$base.0" "$( ((PROFILE)) && echo "perf=$CPU_DT")"
		cpu_sample
		# the profile covers the same interval; perf writes its data
		# after the interval, while the samples keep their instants
		if ((PROFILE)); then
			perf record -q -e cpu-clock -F 1000 -a -g -o "/tmp/$base.perf" \
				-- sleep "$CPU_DT" 2>"$OUT/$base.perf.err" &
		fi
		sleep "$CPU_DT"
		cpu_sample
		server_cpu "$base.1"
		wait
	) >"$OUT/$base.cpu" 2>/dev/null &
	local sampler=$!
	BENCH_DIR=$MNT/bench BENCH_SIZE=$SIZE BENCH_RUNTIME=$RUNTIME BENCH_RAMP=$RAMP \
		timeout -k 10 "$limit" fio --output-format=json --output="$OUT/$base.json" \
		"$SRC/samples/fio/$job.fio" >"$OUT/$base.err" 2>&1 || rc=$?
	# a profile is complete only once perf has written it (up to a minute
	# on a busy TCG guest)
	local t=0
	while ((PROFILE && t < 60)) && kill -0 "$sampler" 2>/dev/null; do
		sleep 1
		t=$((t + 1))
	done
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null
	dmesg >"$OUT/$base.dmesg"
	if ((PROFILE)); then
		# the server's profile (server.sh, srv_perf_report) while the
		# client makes its own reports; then wait for it (perf's report
		# of a busy guest's 9 s takes a while)
		server_cpu "perf-report.$base"
		profile_report "$base"
		if server_cpu_wait "perf-report.$base" 1800 &&
			[ -s "/results/server/bench/$base.srv-folded.txt" ]; then
			:
		else
			tb_log "server profile of $base missing: $(head -c 300 "/results/server/bench/$base.srv-perf.err" 2>/dev/null)"
			FAILED=$((FAILED + 1))
		fi
	fi
	if ((rc == 0)); then
		record fio "$cfg" "$job" "$rep" ok "$base.json" "$opts"
	else
		tb_log "fio $job on $cfg failed (exit $rc): $(grep -m1 -iE 'err|fail' "$OUT/$base.err")"
		record fio "$cfg" "$job" "$rep" "failed:$rc" "$base.err" "$opts"
	fi
	return "$rc"
}

# run_config CONFIG REPEAT [STOP_AT_FIRST_FAILURE]
run_config() {
	local cfg=$1 rep=$2 opts job
	if ! use_module "${MODULE[$cfg]}" "${PARAMS[$cfg]:-}" "${KOFILE[$cfg]:-$KO}"; then
		for job in "${JOBS[@]}"; do record fio "$cfg" "$job" "$rep" module-failed - -; done
		return 1
	fi
	if ! opts=$(bench_mount "$cfg"); then
		dmesg >"$OUT/mount.$cfg.$rep.dmesg"
		for job in "${JOBS[@]}"; do record fio "$cfg" "$job" "$rep" mount-failed - -; done
		bench_umount
		return 1
	fi
	tb_log "$cfg mounted: $opts"
	for job in "${JOBS[@]}"; do
		run_fio "$cfg" "$job" "$rep" "$opts"
	done
	bench_umount || tb_log "umount of $cfg failed"
}

# --- metadata workloads ---------------------------------------------------------

# shellcheck source=meta.sh
. "$SRC/tools/testing/bench/meta.sh"

# --- exact per-RPC counts -------------------------------------------------------

# shellcheck source=counts.sh
. "$SRC/tools/testing/bench/counts.sh"
[ -z "$COUNT_RPCS" ] || COUNTS_RPCS=$COUNT_RPCS

# --- raw RDMA ----------------------------------------------------------------

# run_perf NAME PORT REPEAT ARGS...: one perftest client run (retries the
# connection while the server's restart loop comes back up)
run_perf() {
	local name=$1 port=$2 rep=$3 out try i rc=1
	shift 3
	out=perftest.$name.$rep.txt
	# the server restarts within ~1 s after a run, and on request after a
	# failed one
	for try in 1 2 3; do
		rc=0
		# the server's instance is listening (see server.sh)
		for ((i = 0; i < 300; i++)); do
			[ -e "/results/server/perftest-$name.ready" ] && break
			sleep 0.2
		done
		timeout -k 5 $((RUNTIME + 60)) "$name" -d "${RDMA_DEV:-rxe0}" -R -F -p "$port" "$@" "$SERVER_IP" \
			>"$OUT/$out" 2>&1 || rc=$?
		((rc == 0)) && break
		cp "$OUT/$out" "$OUT/$out.attempt$try"
		tb_log "$name attempt $try failed (exit $rc); asking the server for a fresh instance"
		# wait for a new listener (see server.sh)
		rm -f "/results/server/perftest-$name.ready"
		: >"/results/server/perftest-$name.restart"
		sleep 2
	done
	if ((rc == 0)); then
		record perftest raw "$name" "$rep" ok "$out" "-R $*"
	else
		record perftest raw "$name" "$rep" "failed:$rc" "$out" "-R $*"
	fi
}

run_raw() {
	local rep=$1
	modprobe -d "$MODS" rdma_ucm 2>/dev/null || true
	tb_log "perftest (repeat $rep)"
	run_perf ib_write_bw 18515 "$rep" -s 1048576 -D "$RUNTIME"
	run_perf ib_read_bw 18516 "$rep" -s 1048576 -D "$RUNTIME"
	run_perf ib_send_lat 18517 "$rep" -s 4096 -n "$LAT_ITERS"
}

# --- main --------------------------------------------------------------------

[ -f "$RPCRDMA2_KO" ] || tb_die "$RPCRDMA2_KO is not built (make modules)"
# Snapshot the module: the tree may be rebuilt while the bench runs.
cp "$RPCRDMA2_KO" /tmp/rpcrdma2.ko || tb_die "cannot copy $RPCRDMA2_KO"
KO=/tmp/rpcrdma2.ko
if has r2-0; then
	[ -n "$KO0_SRC" ] || tb_die "guest.sh: r2-0 needs --module-baseline"
	cp "$KO0_SRC" "$KO0" || tb_die "cannot copy $KO0_SRC"
fi
# a profile's module addresses are read against the very objects loaded
# (bench/hotspots.py): beside the results
declare -A KOCOPY=([$KO]=rpcrdma2.ko [$KO0]=rpcrdma2-baseline.ko)
if ((PROFILE)); then
	cp "$KO" "$OUT/rpcrdma2.ko" || tb_die "cannot copy $KO to $OUT"
	! has r2-0 || cp "$KO0" "$OUT/rpcrdma2-baseline.ko" || tb_die "cannot copy $KO0 to $OUT"
fi
tb_log "bench: repeats $REPEATS, runtime ${RUNTIME}s + ramp ${RAMP}s, file size $SIZE, configs: $CONFIGS"
{
	echo "kernel $KREL"
	echo "repeats $REPEATS runtime $RUNTIME ramp $RAMP size $SIZE lat_iters $LAT_ITERS"
	echo "configs $CONFIGS"
	echo "jobs ${JOBS[*]}"
	echo "meta_vers ${META_VERS// /,} meta_files $META_FILES meta_dirsize $META_DIRSIZE meta_create $META_CREATE"
	echo "user_hz $(getconf CLK_TCK) nproc $(nproc)"
	ip -o link show eth0
	rdma link show
	fio --version
	ib_write_bw --version 2>&1 | head -n 1
	modinfo -F vermagic "$KO"
	# the C client: the running kernel's own module (tb_modprobe)
	echo "rpcrdma.ko (C client) $(modinfo -b "$MODS" -k "$KREL" -F filename rpcrdma) vermagic $(modinfo -b "$MODS" -k "$KREL" -F vermagic rpcrdma | sed 's/ *$//')"
	echo "rpcrdma2.ko sha256 $(sha256sum <"$KO" | cut -d' ' -f1)"
	! has r2-0 || echo "rpcrdma2.ko baseline (r2-0) sha256 $(sha256sum <"$KO0" | cut -d' ' -f1)"
	((!PROFILE)) || echo "profiled: perf record -e cpu-clock -F 1000 -a -g ($(perf --version))"
	echo "count_rpcs $COUNTS_RPCS count_warm $COUNTS_WARM"
} >"$OUT/environment.txt" 2>&1

srv_cpu_connect
for ((rep = 1; rep <= REPEATS; rep++)); do
	tb_log "===== repeat $rep of $REPEATS"
	has raw && run_raw "$rep"
	# the module before and after (r2-0, r2), the responder before and
	# after (c-resp0, c-resp): each first in every other repeat
	r2pair='r2 r2-0' resppair='c-resp c-resp0'
	((rep % 2)) || r2pair='r2-0 r2' resppair='c-resp0 c-resp'
	for cfg in tcp c $r2pair c-1k r2-1k $resppair v2 v2-inl; do
		has "$cfg" && run_config "$cfg" "$rep"
	done
	# the counts: rpcrdma2 and the C client next to each other, which
	# first alternating
	npair='n-r2 n-c n-r2-1k n-c-1k'
	((rep % 2)) || npair='n-c n-r2 n-c-1k n-r2-1k'
	for cfg in $npair; do
		has "$cfg" && run_counts "$cfg" "$rep"
	done
	for vers in $META_VERS; do
		for cfg in m-tcp m-c m-r2 m-v1 m-v2 m-c-resp m-c-resp0; do
			has "$cfg" && run_meta "$cfg" "$vers" "$rep"
		done
	done
done

# (a mount that would not go away keeps rpcrdma2 busy; the guest powers off)
! loaded rpcrdma2 || (tb_rmmod rpcrdma2) || tb_log "rmmod rpcrdma2 failed"
loaded rpcrdma && { (tb_rmmod rpcrdma) || tb_log "rmmod rpcrdma failed"; }
tb_log "bench: done ($(($(wc -l <"$RUNS") - 1)) runs recorded$([ ! -f "$OUT/counts.tsv" ] || echo ", $(($(wc -l <"$OUT/counts.tsv") - 1)) counts runs"))"
if ((FAILED)); then
	tb_log "bench: FAILED: $FAILED runs did not produce a number:"
	awk -F'\t' 'NR > 1 && $5 != "ok" {print "    " $2 " " $3 " repeat " $4 ": " $5}' "$RUNS"
	[ ! -f "$OUT/counts.tsv" ] ||
		awk -F'\t' 'NR > 1 && $3 != "ok" {print "    " $1 " repeat " $2 ": " $3}' "$OUT/counts.tsv"
	exit 1
fi
