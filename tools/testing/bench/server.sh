# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Server side of `make bench` (sourced by the --server-script wrapper that
# tools/testing/bench/run.sh generates, which sets BENCH_SIZE, BENCH_RUNTIME,
# BENCH_LAT_ITERS, BENCH_META_FILES, BENCH_META_DIRSIZE and
# BENCH_RESPONDER).  Runs on the server guest once nfsd is up:
#   1. creates the fio data files in the export (on the server, so that no
#      fio job spends its measured time laying a file out over NFS);
#   2. for the metadata workloads (BENCH_META_FILES > 0), the tree
#      meta/tree/dNN/fNNNNN: BENCH_META_FILES files of 100 bytes in
#      directories of BENCH_META_DIRSIZE entries, and the empty meta/work;
#   3. with BENCH_RESPONDER=1, the user-space responder (tools/responder)
#      on port 20050 (versions 2 and 1) and 20051 (--v1-only), exactly as
#      the integration tests start it (integration/server/responder.sh);
#      if it cannot start, this script fails and so does the testbed run;
#      with BENCH_RESPONDER_BASELINE=1 (run.sh --responder-baseline) also
#      target/bench/responder-baseline on port 20052 (--v1-only);
#   4. starts the perftest servers, each in a restart loop (a perftest
#      server serves one client run and exits): ib_write_bw on port 18515,
#      ib_read_bw on 18516, ib_send_lat on 18517, all over rdma_cm (-R);
#   5. starts the CPU sampler: the server's /proc/stat on the client's
#      request (over TCP, port 18520), at the start and end of every
#      measured interval (see cpu_sampler below), and under make bench
#      --profile a perf profile of the whole server guest over that
#      interval (srv_perf_start, srv_perf_report).
# It returns at once; the loops and the responders die with the guest.

set -euo pipefail
: "${BENCH_SIZE:?}" "${BENCH_RUNTIME:?}" "${BENCH_LAT_ITERS:?}"
: "${BENCH_META_FILES:=0}" "${BENCH_META_DIRSIZE:=1000}" "${BENCH_RESPONDER:=0}"
: "${BENCH_RESPONDER_BASELINE:=0}"

# the kernel this guest runs, for run.sh's build-info.txt
echo "kernel $(uname -r)" >/results/server/bench-kernel.txt

dir=${NFS_EXPORT:-/export}/bench
mkdir -p "$dir"
chmod 0777 "$dir"
for f in randread seqread seqwrite; do
	# tmpfs supports fallocate; reads of the file return zeros at memory speed
	fallocate -l "$BENCH_SIZE" "$dir/$f.dat" 2>/dev/null ||
		dd if=/dev/zero of="$dir/$f.dat" bs=1M count="$(numfmt --from=iec "${BENCH_SIZE^^}" | awk '{print int($1 / 1048576)}')" status=none
	chmod 0666 "$dir/$f.dat"
done
ls -l "$dir"

if ((BENCH_META_FILES > 0)); then
	meta=${NFS_EXPORT:-/export}/meta
	mkdir -p "$meta/tree" "$meta/work"
	printf -v line '%099d' 0 # 99 digits + newline: 100 bytes
	for ((i = 0; i < BENCH_META_FILES; i++)); do
		printf -v d '%s/tree/d%02d' "$meta" $((i / BENCH_META_DIRSIZE))
		printf -v f 'f%05d' "$i"
		((i % BENCH_META_DIRSIZE)) || mkdir -p "$d"
		printf '%s\n' "$line" >"$d/$f"
	done
	chmod -R a+rwX "$meta"
	echo "metadata tree: $(find "$meta/tree" -type f | wc -l) files in $(find "$meta/tree" -mindepth 1 -type d | wc -l) directories"
fi

if ((BENCH_RESPONDER)); then
	if ((BENCH_RESPONDER_BASELINE)); then
		# run.sh --responder-baseline: that build on port 20052, --v1-only
		export RESPONDER_INSTANCES=$'20050 --remote-invalidate\n20051 --v1-only --remote-invalidate\n20052 --v1-only'
		export RESPONDER_BIN_20052=/src/target/bench/responder-baseline
	fi
	# (a separate bash: responder.sh exits on error)
	bash /src/tools/testing/integration/server/responder.sh
fi

# userspace rdma_cm (perftest -R); built in or a module depending on config
modprobe rdma_ucm 2>/dev/null || true
modprobe ib_uverbs 2>/dev/null || true

# nap SECS: sleep without a fork.  The guests run the host's /usr over
# 9p, where an exec costs the server's one vCPU tens of milliseconds:
# loops that ran sleep and grep twice a second took most of the server's
# CPU during the fio runs (make bench --profile showed it), so the loops
# that run for the whole bench use builtins only.  (read -t on a FIFO
# that nobody writes: it times out.)
mkfifo /tmp/bench-nap.fifo 2>/dev/null || [ -p /tmp/bench-nap.fifo ]
exec {NAP_FD}<>/tmp/bench-nap.fifo
nap() { read -r -t "$1" -u "$NAP_FD" _ || true; }
# alive PID: the process exists and is not a zombie (builtins only)
alive() {
	local k v
	[ -d "/proc/$1" ] || return 1
	{
		while read -r k v; do
			[ "$k" = State: ] || continue
			[[ $v != Z* ]]
			return
		done
	} <"/proc/$1/status" 2>/dev/null
	return 1
}

# perf_loop NAME PORT ARGS...: serve NAME forever, one client run at a time.
# /results/server/perftest-NAME.ready exists while an instance is listening
# (rdma_cm shows it in LISTEN): the client waits for it, since a connect
# that finds no listener is rejected and the perftest client then crashes
# in librdmacm.  A client whose run failed asks for a fresh instance with
# /results/server/perftest-NAME.restart (a server whose client died would
# otherwise wait forever).  Idle instances are never restarted.
perf_loop() {
	local name=$1 port=$2 ready=/results/server/perftest-$1.ready
	local restart=/results/server/perftest-$1.restart
	shift 2
	while :; do
		rm -f "$ready" "$restart"
		echo "=== $(date +%T) $name -p $port $*"
		"$name" -d "${RDMA_DEV:-rxe0}" -R -F -p "$port" "$@" &
		local pid=$! i
		for ((i = 0; i < 300; i++)); do
			if rdma resource show cm_id 2>/dev/null | grep -qE "state LISTEN.*:$port( |$)"; then
				: >"$ready"
				break
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		# (a killed instance whose peer crashed may take long to exit: it
		# is not waited for, the next one starts at once)
		while alive "$pid"; do
			if [ -e "$restart" ]; then
				rm -f "$ready" "$restart"
				echo "=== $(date +%T) restart requested by the client"
				kill -KILL "$pid" 2>/dev/null
				break
			fi
			# every 2 s: a look runs bash code, reads /proc and stats a
			# file on the 9p share; the three loops looking twice a
			# second took 3.5 % of the server's vCPU through every
			# measured interval (a profile of the metadata stat phase)
			nap 2
		done
		sleep 1
	done >>"/results/server/perftest-$name.log" 2>&1 </dev/null &
}
# cpu_sampler: the server's side of guest.sh's server_cpu.  The client
# keeps one TCP connection to port 18520 (busybox nc -l, whose output is
# this loop's input) and writes a line "NAME CLIENT_T" (CLIENT_T: the
# client's EPOCHREALTIME) whenever it wants a sample; the loop, blocked in
# read until then (it costs nothing while it waits), reads the first line
# of /proc/stat at once and appends to /results/server/cpu-samples.txt
#   NAME CLIENT_T SERVER_T SELF_TICKS cpu user nice system idle iowait ...
# SERVER_T is this guest's EPOCHREALTIME at that read, SELF_TICKS the
# loop's own CPU time so far (utime + stime of /proc/BASHPID/stat, USER_HZ
# ticks), so that the report can state what the sampling cost; then it
# creates /results/server/cpu-ack/NAME (the client may wait for it).
# Builtins only, no fork per sample.  The clocks of the two guests are
# set from the RTC at boot and need not agree, so the report takes the
# server's interval from the server's own samples.
#
# Profiling (make bench --profile): a request "NAME CLIENT_T perf=SECS"
# also starts, right after its sample, perf record of the whole guest
# (cpu-clock, 1000 Hz, call graphs) for SECS seconds (srv_perf_start); a
# request "perf-report.BASE" (after the fio run, when the client waits
# for its ack) waits for that recording and turns it into
# /results/server/bench/BASE.srv-folded.txt (perf-fold.py: call chains
# with their sample counts, which report.py classifies) and
# BASE.srv-perf-self.txt (perf's self time by command, module and symbol).
# perf's own start-up and the reports cost the server CPU outside the
# measured interval; the recording itself (perf's few samples) inside it.
CPU_PORT=18520 CPU_LOG=/results/server/cpu-samples.txt CPU_ACK=/results/server/cpu-ack
SRV_PERF_DIR=/results/server/bench SRV_PERF_PID=
srv_perf_start() { # BASE SECS
	mkdir -p "$SRV_PERF_DIR"
	perf record -q -e cpu-clock -F 1000 -a -g -o "/tmp/$1.srv.perf" -- sleep "$2" \
		</dev/null >/dev/null 2>"$SRV_PERF_DIR/$1.srv-perf.err" &
	SRV_PERF_PID=$!
}
srv_perf_report() { # BASE
	local data=/tmp/$1.srv.perf
	# perf writes its data after the interval
	[ -z "$SRV_PERF_PID" ] || wait "$SRV_PERF_PID" 2>/dev/null || true
	SRV_PERF_PID=
	if [ ! -s "$data" ]; then
		echo "no profile data $data" >>"$SRV_PERF_DIR/$1.srv-perf.err"
		return 0
	fi
	perf script -i "$data" -F comm,tid,ip,sym,dso 2>>"$SRV_PERF_DIR/$1.srv-perf.err" |
		python3 /src/tools/testing/bench/perf-fold.py >"$SRV_PERF_DIR/$1.srv-folded.txt" 2>>"$SRV_PERF_DIR/$1.srv-perf.err"
	perf report -i "$data" --stdio --no-children --sort comm,dso,sym --percent-limit 0.2 \
		-g none >"$SRV_PERF_DIR/$1.srv-perf-self.txt" 2>&1
	rm -f "$data"
}
cpu_sampler() {
	local name ctime extra stat self t
	local -a sf
	echo "# user_hz $(getconf CLK_TCK) nproc $(nproc) sampler pid $BASHPID port $CPU_PORT"
	while read -r name ctime extra; do
		[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || continue
		if [[ $name == perf-report.* ]]; then
			srv_perf_report "${name#perf-report.}" </dev/null >/dev/null 2>&1 || true
			: >"$CPU_ACK/$name" || true
			continue
		fi
		read -r stat </proc/stat
		t=$EPOCHREALTIME
		read -r self <"/proc/$BASHPID/stat"
		# shellcheck disable=SC2206 # the fields after "(bash) "
		sf=(${self##*) })
		echo "$name ${ctime:--} $t $((sf[11] + sf[12])) $stat"
		if [[ ${extra:-} =~ ^perf=([1-9][0-9]*)$ && $name == *.0 ]]; then
			srv_perf_start "${name%.0}" "${BASH_REMATCH[1]}"
		fi
		: >"$CPU_ACK/$name" || true
	done
	echo "# the client closed the connection"
}
mkdir -p "$CPU_ACK"
/testbed/busybox nc -l -p "$CPU_PORT" </dev/null 2>/results/server/cpu-sampler.err |
	cpu_sampler >"$CPU_LOG" 2>>/results/server/cpu-sampler.err &
echo "server CPU sampler listening on port $CPU_PORT"

perf_loop ib_write_bw 18515 -s 1048576 -D "$BENCH_RUNTIME"
perf_loop ib_read_bw 18516 -s 1048576 -D "$BENCH_RUNTIME"
perf_loop ib_send_lat 18517 -s 4096 -n "$BENCH_LAT_ITERS"
echo "perftest servers started"
