# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Metadata workloads of `make bench` (sourced by guest.sh, which defines
# bench_mount, bench_umount, use_module, record, cpu_sample, server_cpu,
# server_cpu_wait, MNT, OUT, MODULE and the META_* settings).  The server
# (server.sh) has created meta/tree/dNN/fNNNNN in the export: META_FILES
# files of 100 bytes in directories of META_DIRSIZE entries.  run_meta
# CONFIG VERS REPEAT runs, each phase on a fresh mount with the client's
# caches dropped first (except restat, which needs stat's cached dentries):
#
#   stat     stat(1) of every file of the tree (cold: LOOKUP-heavy)
#   restat   the same again on the same mount once every file's attribute
#            cache has expired (acregmin is 3 s; 4 s later): GETATTR-heavy
#   ls       ls -l of every directory of the tree (READDIR, large dirs)
#   create   META_CREATE files of 100 bytes created in an empty directory
#   remove   rm -r of that directory
#   untar    tar -x of a real source tree (a subtree of the testbed's
#            kernel source, made on the host by run.sh)
#   rmtree   rm -rf of the untarred tree
#
# Around each phase, and outside its measured interval, the script saves
# /proc/self/mountstats (per-op counts and cumulative RTT, the transport's
# counters) and the trace buffer with these events of the interval:
#   sunrpc:rpc_stats_latency   every RPC's RTT and execute time (per-op
#                              distributions: p50)
#   rpcrdma2:rpcrdma2_marshal  (rpcrdma2) only Calls that used a chunk
#   rpcrdma2:rpcrdma2_mr_reg   (rpcrdma2) every memory registration
#   rpcrdma:xprtrdma_marshal   (C client) only Calls that used a chunk
#   rpcrdma:xprtrdma_mr_fastreg  (C client) every memory registration
# The same events are on in every configuration, so their cost is shared.
# Inside the interval only the command runs; the client's /proc/stat CPU
# line is read (no fork) right before and after it.  The server's is read
# on request (server_cpu) before the interval, once the server has
# answered, and after it, waiting for the answer before going on (so that
# the next unmount is not in the server's window).

META_PHASES=(stat restat ls create remove untar rmtree)
META_LIMIT=900 # seconds, per phase
TRACE=/sys/kernel/tracing

# meta_name CONFIG VERS: the configuration's name in runs.tsv
meta_name() {
	if [ "$2" = 4.1 ]; then echo "$1"; else echo "$1.nfs$2"; fi
}

# meta_trace_start MODULE: the events above on, buffer empty
meta_trace_start() {
	local mod=$1 ev
	mountpoint -q "$TRACE" || mount -t tracefs nodev "$TRACE" || return 1
	echo 0 >"$TRACE/tracing_on"
	: >"$TRACE/set_event"
	ev=(sunrpc/rpc_stats_latency)
	case $mod in
	rpcrdma2)
		echo 'call != "inline" || reply != "inline"' >"$TRACE/events/rpcrdma2/rpcrdma2_marshal/filter" || return 1
		ev+=(rpcrdma2/rpcrdma2_marshal rpcrdma2/rpcrdma2_mr_reg) ;;
	rpcrdma)
		# rtype > rpcrdma_noch_mapped: a Read chunk; wtype: a Write or Reply chunk
		echo 'rtype > 2 || wtype != 0' >"$TRACE/events/rpcrdma/xprtrdma_marshal/filter" || return 1
		ev+=(rpcrdma/xprtrdma_marshal rpcrdma/xprtrdma_mr_fastreg) ;;
	esac
	for e in "${ev[@]}"; do
		[ -e "$TRACE/events/$e/enable" ] || { tb_log "no tracepoint $e" >&2; return 1; }
		echo 1 >"$TRACE/events/$e/enable" || return 1
	done
	echo >"$TRACE/trace"
	echo 1 >"$TRACE/tracing_on"
}

meta_trace_stop() { # FILE
	echo 0 >"$TRACE/tracing_on"
	cat "$TRACE/trace" >"$1"
	: >"$TRACE/set_event"
}

# meta_setup: once per boot
meta_setup() {
	local i d
	mountpoint -q "$TRACE" || mount -t tracefs nodev "$TRACE" || tb_die "cannot mount tracefs"
	echo 16384 >"$TRACE/buffer_size_kb"
	# the tree's file names, relative to meta/tree (as server.sh made them)
	: >/tmp/meta-files
	for ((i = 0; i < META_FILES; i++)); do
		printf 'd%02d/f%05d\n' $((i / META_DIRSIZE)) "$i"
	done >/tmp/meta-files
	META_DIRS=()
	for ((d = 0; d * META_DIRSIZE < META_FILES; d++)); do
		META_DIRS+=("$(printf 'd%02d' "$d")")
	done
	[ -f "$UNTAR" ] || tb_die "no tarball for the untar phase: $UNTAR"
	cp "$UNTAR" /tmp/bench-untar.tar || tb_die "cannot copy $UNTAR"
	tb_log "metadata: $META_FILES files in ${#META_DIRS[@]} directories, create $META_CREATE," \
		"untar $(tar -tf /tmp/bench-untar.tar | wc -l) entries ($(du -k /tmp/bench-untar.tar | cut -f1) KiB)"
}

# meta_cmd PHASE WORKDIR: the measured command of PHASE (in a child bash,
# so that the time limit applies to it)
meta_cmd() {
	local phase=$1 w=$2
	case $phase in
	stat | restat)
		cd "$MNT/meta/tree" && xargs -d '\n' -a /tmp/meta-files stat -c %s >/dev/null ;;
	ls)
		cd "$MNT/meta/tree" && ls -l "${META_DIRS[@]}" >/dev/null ;;
	create)
		local i f line
		printf -v line '%099d' 0
		for ((i = 0; i < META_CREATE; i++)); do
			printf -v f '%s/c/f%05d' "$w" "$i"
			printf '%s\n' "$line" >"$f" || return 1
		done ;;
	remove)
		rm -r "$w/c" ;;
	untar)
		tar -xf /tmp/bench-untar.tar -C "$w/u" ;;
	rmtree)
		rm -rf "$w/u" ;;
	esac
}

# meta_phase NAME CONFIG REPEAT PHASE OPTS WORKDIR: one measured phase on
# the current mount
meta_phase() {
	local name=$1 cfg=$2 rep=$3 phase=$4 opts=$5 w=$6 base rc=0 script
	base=meta.$name.$rep.$phase
	tb_log "metadata $phase on $name (repeat $rep)"
	script="$(declare -f meta_cmd); $(declare -p MNT META_DIRS META_CREATE); meta_cmd $phase $w"
	cat /proc/self/mountstats >"$OUT/$base.ms0"
	if ! meta_trace_start "${MODULE[$cfg]}"; then
		record meta "$name" "$phase" "$rep" failed:tracepoints - "$opts"
		return 1
	fi
	server_cpu "$base.0"
	server_cpu_wait "$base.0"
	{
		cpu_sample
		timeout -k 10 "$META_LIMIT" bash -c "$script" >"$OUT/$base.err" 2>&1 || rc=$?
		cpu_sample
	} >"$OUT/$base.cpu"
	server_cpu "$base.1"
	server_cpu_wait "$base.1"
	meta_trace_stop "$OUT/$base.trace"
	cat /proc/self/mountstats >"$OUT/$base.ms1"
	if ((rc == 0)); then
		record meta "$name" "$phase" "$rep" ok "$base" "$opts"
	else
		tb_log "metadata $phase on $name failed (exit $rc): $(head -c 300 "$OUT/$base.err")"
		record meta "$name" "$phase" "$rep" "failed:$rc" "$base.err" "$opts"
	fi
	return "$rc"
}

# run_meta CONFIG VERS REPEAT
run_meta() {
	local cfg=$1 vers=$2 rep=$3 name phase opts='' w i done_to=-1
	name=$(meta_name "$cfg" "$vers")
	[ -n "${META_DIRS[*]:-}" ] || meta_setup
	w=$MNT/meta/work/$name.$rep
	if ! use_module "${MODULE[$cfg]}"; then
		for phase in "${META_PHASES[@]}"; do record meta "$name" "$phase" "$rep" module-failed - -; done
		return 1
	fi
	for i in "${!META_PHASES[@]}"; do
		phase=${META_PHASES[i]}
		if [ "$phase" != restat ]; then
			bench_umount || tb_log "umount before $phase failed"
			if ! opts=$(bench_mount "$cfg" "$vers"); then
				dmesg >"$OUT/mount.$name.$rep.$phase.dmesg"
				bench_umount
				break
			fi
		fi
		case $phase in
		create) rm -rf "$w" && mkdir -p "$w/c" "$w/u" ;;
		restat) sleep 4 ;; # every file's attributes expire (acregmin 3 s)
		esac
		[ "$phase" = restat ] || tb_drop_caches
		meta_phase "$name" "$cfg" "$rep" "$phase" "$opts" "$w"
		done_to=$i
		dmesg >>"$OUT/meta.$name.$rep.dmesg"
		dmesg -C
	done
	# phases that could not run (a failed mount) get a line each
	for ((i = done_to + 1; i < ${#META_PHASES[@]}; i++)); do
		record meta "$name" "${META_PHASES[i]}" "$rep" mount-failed - -
	done
	rm -rf "$w" 2>/dev/null
	bench_umount || tb_log "umount of $name failed"
}
