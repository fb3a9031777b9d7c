#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: soak (short): fio with verify over rpcrdma2 (NFSv3 and v4.1; svcrdma in version 1 and the responder in version 2) while faults are injected on a schedule: disconnects, nfsd and responder restarts, replies malformed by the responder; no verify or I/O error, no kernel warning, I/O resumes after every fault
# run.sh-options: --timeout 1500 --server-script tools/testing/integration/server/soak.sh
# integration-tier: long
# run.sh-args: 40
#
# Client script for tools/testing/vm/run.sh; `make soak` runs it longer.
# Arguments: SECONDS per phase (default 40), EVERY seconds a fault
# (default 8), DEVICE_REMOVAL (1: add the device fault below; default 0),
# MAX_STALL seconds (default 60), LINK_BOUNCE (1: add the link fault
# below; default 0), OUTAGE (1: add the network outage below; default 0).
# Four phases, one per (NFS version, server): 3 and 4.1, each to svcrdma
# (port 20049, version 1) and to the responder (port 20050, version 2).
# In each, a verifying fio writer (verify_backlog: written blocks are read
# back and checked all along) and a reader run on a hard mount for the
# phase's length, while every EVERY seconds the
# next fault of the server's list is injected:
#   svcrdma:   fail_sunrpc disconnect, nfsd restart
#   responder: fail_sunrpc disconnect, responder killed and restarted,
#              responder restarted malforming a reply (MALFORMED below)
#              for one interval, then restarted without
# and, with LINK_BOUNCE=1, the server's eth0 down for 3 s (under load this
# breaks soft-RoCE on the server for any client: Documentation/testing.rst,
# "Soak"), with OUTAGE=1 every frame between the guests lost for 3 s
# (see outage), with DEVICE_REMOVAL=1 the client's RDMA device deleted under
# the live mount and added back (rdma link delete/add).
# FAULTS (default: all the above that apply) chooses faults by name,
# separated by commas or blanks: for example "outage" injects only the
# outage (a phase's server-specific faults are taken only in that phase).
# Around every outage the client traces its RPCs (see outage_trace):
# /results/trace-VERS-SERVER-N.txt, the longest time between two RPCs'
# ends in each to /results/soak-rpc-gaps.txt; each fault's longest stall
# goes to /results/soak-stalls.txt.
# A monitor samples the mount's byte counters every 0.5 s; the longest
# time without progress in a phase is its stall (faults cause them). Figures, one
# line per phase and a total, go to /results/soak.txt: bytes moved,
# faults, reconnects (mountstats connect count), longest stall (and the
# fault it followed), fio errors.
# Fails on any fio error (I/O or verify), a stall longer than
# MAX_STALL seconds (default 60: a hang, not a slow recovery; the
# goal of 10 s is reported, not enforced), no progress in a phase, fio
# still running MAX_STALL + 30 s after its end (a hang: both guests'
# state is logged first, see diagnose), or a kernel warning (run.sh).

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

SECS=${1:-40}
EVERY=${2:-8}
DEVICE_REMOVAL=${3:-0}
MAX_STALL=${4:-60}
LINK_BOUNCE=${5:-0}
OUTAGE=${6:-0}
FAULTS=${7:-}
KO=$RPCRDMA2_KO
MNT=/mnt/nfs
F=/sys/kernel/debug/fail_sunrpc
CTL=/results/ctl
OUT=/results/soak.txt
STALLS=/results/soak-stalls.txt
T=/sys/kernel/tracing
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
[ -d "$F" ] || tb_die "no $F: the kernel lacks CONFIG_FAIL_SUNRPC"
tb_step "insmod rpcrdma2.ko" insmod "$KO"
: >"$OUT"
: >"$STALLS"
: >/results/soak-rpc-gaps.txt
REQ=0

# Kinds of the responder's malformed-message catalogue that a hard mount
# must ride out without an error reaching the application
# (rpcrdma2-v2-faults judges each): rpcrdma2 disconnects and resends
# (foreign-inv, bad-vers, cont-close), drops the message and resends
# after the RPC's timeout (trunc-prefix, reverse-garbage), or is not
# disturbed (duplicate, credit-zero, xid-mismatch). Taken in turn, one
# per malformed fault; the kinds that fail the RPC they name (an I/O
# error by design) are not used here.
MALFORMED=(foreign-inv duplicate bad-vers trunc-prefix credit-zero cont-close reverse-garbage xid-mismatch)
MAL_N=0

# server_do ACTION...: ask the server (soak.sh) and wait for it.
# shellcheck source=lib/server-ctl.sh
. "$SRC/tools/testing/integration/lib/server-ctl.sh"

# diagnose WHY: what the client and the server look like (a hang).
diagnose() {
	tb_log "diagnostics: $1"
	tb_log "client: mountstats xprt: $(grep -A40 "$MNT" /proc/self/mountstats | grep -m1 'xprt:' || true)"
	tb_rdma_net_state
	dmesg | tail -n 40
	(server_do diag) || true
	REQ=$((REQ + 1))
	tb_log "server (/results/server/soak.log):"
	tail -n 80 /results/server/soak.log || true
}

disconnect() { # one injected disconnect at the next transmission
	echo 0 >"$F/verbose"
	echo 0 >"$F/probability"
	echo 1 >"$F/interval"
	echo 1 >"$F/times"
	echo 100 >"$F/probability"
}

# outage SECS: the network between the guests loses every frame for SECS
# seconds, both ways, while both links stay up: each side's neighbour entry
# for the other points at a MAC nobody has, then is deleted (ARP finds the
# peer again). Unlike link-bounce, no transmit fails locally; soft-RoCE
# moves a QP whose transmit fails to the error state, its GSI QP
# (connection management) included, for good. Both sides start at an
# agreed time, 1.5 s after the request, each on its own clock: when the
# client began first and ended after the server's answer, a "3 s" outage
# lasted 5-7 s on a loaded guest (the request's latency, a process start
# taking up to a second), long enough for RC retries to run out, so the
# fault was not the one named. The log says when each side's loss began
# and ended, relative to the agreed start.
outage() {
	local me at t0 t1 srv
	me=$(ip -4 -o addr show dev eth0 | awk '{sub("/.*", "", $4); print $4; exit}')
	at=$(($(date +%s%3N) + 1500))
	server_do outage "$1" "$me" "$at" &
	srv=$!
	tb_sleep_until_ms "$at"
	ip neigh replace "$NFS_SERVER" lladdr 02:00:00:00:00:01 nud permanent dev eth0
	t0=$(date +%s%3N)
	trace_mark "outage begins (client side)"
	sleep "$1"
	ip neigh del "$NFS_SERVER" dev eth0 || true
	t1=$(date +%s%3N)
	trace_mark "outage ends (client side)"
	wait "$srv" || tb_die "the server's side of the outage failed"
	# server_do ran in a subshell: its request number is used up here.
	REQ=$((REQ + 1))
	tb_log "  outage: the client's side from +$((t0 - at)) to +$((t1 - at)) ms of the agreed start; the server's: $(grep -h "outage at $at:" /results/server/soak.log | tail -n 1 | sed 's/.*outage at [0-9]*: //')"
}

# The outage's trace: what the client's RPCs and transport did from just
# before an outage to the next fault (or the phase's end), to tell which
# RPC waited after the reconnect. The events: rpcrdma2's connection
# events and replies, and SUNRPC's connects, disconnects, transmissions,
# retransmissions, timer expiries, connect/timeout/call statuses, task
# sleeps (which queue) and ends. The ring buffer does not overwrite: a
# full buffer (TRACE_KB per CPU) keeps the outage and drops the
# recovery's busy tail, so a trace is at most TRACE_KB KiB per CPU.
# The soak's own marks (trace_mark: the outage's ends, progress after
# a second or more without) carry the wall clock in ms.
TRACE_KB=2048
TRACE_EVENTS=(rpcrdma2/rpcrdma2_connect rpcrdma2/rpcrdma2_connect_error
	rpcrdma2/rpcrdma2_disconnect rpcrdma2/rpcrdma2_reconnect
	rpcrdma2/rpcrdma2_version rpcrdma2/rpcrdma2_credits
	rpcrdma2/rpcrdma2_credit_wait rpcrdma2/rpcrdma2_grant
	rpcrdma2/rpcrdma2_peer_error rpcrdma2/rpcrdma2_reply
	rpcrdma2/rpcrdma2_keepalive
	sunrpc/xprt_connect sunrpc/xprt_disconnect_auto
	sunrpc/xprt_disconnect_done sunrpc/xprt_disconnect_force
	sunrpc/xprt_transmit sunrpc/xprt_retransmit sunrpc/xprt_timer
	sunrpc/rpc_connect_status sunrpc/rpc_timeout_status
	sunrpc/rpc_call_status sunrpc/rpc_task_sleep sunrpc/rpc_task_end
	sunrpc/rpc_call_rpcerror)
TRACE_NAME=
trace_setup() {
	local e
	mountpoint -q "$T" || mount -t tracefs nodev "$T"
	echo 0 >"$T/tracing_on"
	echo "$TRACE_KB" >"$T/buffer_size_kb"
	echo 0 >"$T/options/overwrite"
	for e in "${TRACE_EVENTS[@]}"; do
		[ -e "$T/events/$e/enable" ] || tb_die "no tracepoint $e"
		echo 1 >"$T/events/$e/enable"
	done
}
# trace_mark TEXT: a line in the trace (while tracing), with the wall clock.
trace_mark() { echo "soak $(date +%s%3N): $*" >"$T/trace_marker" 2>/dev/null || true; }
# outage_trace NAME: start a trace, saved as trace-NAME.txt by trace_save.
outage_trace() {
	trace_save
	echo >"$T/trace"
	echo 1 >"$T/tracing_on"
	TRACE_NAME=$1
}
# trace_save: the trace to /results/trace-NAME.txt, and to RPC_GAPS the
# longest time between two RPCs' ends in it (rpc_task_end): the outage's
# stall as the RPC layer saw it, which the progress monitor's figure
# exceeds when the loaded guest runs the monitor late.
RPC_GAPS=/results/soak-rpc-gaps.txt
trace_save() {
	local f gap
	[ -n "$TRACE_NAME" ] || return 0
	f=/results/trace-$TRACE_NAME.txt
	trace_mark "trace ends"
	echo 0 >"$T/tracing_on"
	cp "$T/trace" "$f"
	gap=$(awk '$5 == "rpc_task_end:" {t = $4 + 0; if (n++ && t - last > g) {g = t - last; from = last} last = t}
		END {printf "rpc_gap_ms=%d from=%.3f to=%.3f rpc_ends=%d", g * 1000, from, from + g, n}' "$f")
	echo "$TRACE_NAME $gap" >>"$RPC_GAPS"
	tb_log "  trace: $f ($(wc -l <"$f") lines; the longest time between two RPCs' ends: $gap)"
	TRACE_NAME=
}

# clean_restart: the responder restarted without --malform-nth. Left
# malforming, it went on breaking every connection into the next faults
# and the next responder phase, whose stalls were then charged to no
# fault; so a malformed kind lasts one interval (or to the phase's end).
clean_restart() {
	tb_log "  the responder restarted without malforming"
	server_do responder-restart
}

device_readd() {
	rdma link delete "$RDMA_DEV"
	sleep 2
	rdma link add "$RDMA_DEV" type "$RDMA_PROVIDER" netdev eth0
}

# progress: the mount's bytes moved so far (mountstats "bytes:" line).
progress() {
	awk -v m="$MNT" '$1 == "device" {cur = ($5 == m)} cur && $1 == "bytes:" {printf "%.0f\n", $2 + $3 + $4 + $5; exit}' \
		/proc/self/mountstats
}
# connects: the mount's transport connect count (field 3 of its
# "xprt: rdma" line).
# shellcheck source=lib/counters.sh
. "$SRC/tools/testing/integration/lib/counters.sh"
connects() { xprt_field 3; }

# monitor FILE: every 0.5 s, "LONGEST CURRENT" to FILE: the longest time
# (ms) without progress so far, and the current one.
monitor() {
	local file=$1 last now t t_last worst=0 worst_at=0 fpid=
	last=$(progress)
	t_last=$(date +%s%3N)
	while [ ! -e "$file.stop" ]; do
		sleep 0.5
		# Nothing moves once fio is done: the time until the phase ends
		# (a fault's interval running out) is no stall.
		if [ -z "$fpid" ] && [ -e "$file.fio" ]; then
			read -r fpid <"$file.fio" || fpid=
		fi
		if [ -n "$fpid" ] && [ ! -e "/proc/$fpid" ]; then
			break
		fi
		now=$(progress)
		t=$(date +%s%3N)
		if [ "$now" != "$last" ]; then
			last=$now
			if ((t - t_last >= 1000)); then
				echo "$t_last $t" >>"$file.stalls"
				trace_mark "progress after $((t - t_last)) ms without (since $t_last)"
			fi
			if ((t - t_last > worst)); then
				worst=$((t - t_last))
				worst_at=$t_last
			fi
			t_last=$t
		fi
		echo "$worst $((t - t_last)) $worst_at $t_last" >"$file.tmp"
		mv "$file.tmp" "$file"
	done
}

phase() { # VERS PORT LABEL
	local vers=$1 port=$2 label=$3 dir faults=() n=0 fio_rc=0 c0 c1 b0 b1 stall cur mon
	local stall_at cur_at fault_at=() fault_of=() after=none i clean=0
	case $label in
	svcrdma) faults=(disconnect nfsd-restart) ;;
	responder) faults=(disconnect responder-restart malformed) ;;
	esac
	[ "$LINK_BOUNCE" = 1 ] && faults+=(link-bounce)
	[ "$OUTAGE" = 1 ] && faults+=(outage)
	[ "$DEVICE_REMOVAL" = 1 ] && faults+=(device-readd)
	if [ -n "$FAULTS" ]; then
		local f chosen=()
		for f in ${FAULTS//,/ }; do
			case $f in
			disconnect | link-bounce | outage | device-readd) chosen+=("$f") ;;
			nfsd-restart) [ "$label" = svcrdma ] && chosen+=("$f") ;;
			responder-restart | malformed) [ "$label" = responder ] && chosen+=("$f") ;;
			*) tb_die "FAULTS: unknown fault '$f'" ;;
			esac
		done
		((${#chosen[@]})) || tb_die "FAULTS '$FAULTS': none applies to the $label phase"
		faults=("${chosen[@]}")
	fi
	tb_log "=== phase vers=$vers $label (port $port): $SECS s, a fault every $EVERY s: ${faults[*]}"
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT" hard,timeo=100
	tb_assert_proto "$MNT" rdma
	dir=$MNT/soak-$label-$vers
	rm -rf "$dir"
	mkdir -p "$dir"
	c0=$(connects) b0=$(progress)
	mon=/tmp/soak-mon
	rm -f "$mon" "$mon.stop" "$mon.fio" "$mon.stalls"
	touch "$mon.stalls"
	echo "0 0" >"$mon"
	monitor "$mon" &
	fio --directory="$dir" --size=16m --bsrange=4k-256k --ioengine=libaio --iodepth=8 \
		--direct=1 --time_based --runtime="$SECS" \
		--name=writer --rw=randwrite --verify=crc32c --verify_backlog=32 --verify_fatal=1 \
		--name=reader --rw=randread \
		--output=/tmp/fio-soak.txt &
	local fio_pid=$! start
	echo "$fio_pid" >"$mon.fio"
	start=$(date +%s)
	sleep "$EVERY"
	while kill -0 "$fio_pid" 2>/dev/null && (($(date +%s) + EVERY / 2 < start + SECS)); do
		if ((clean)); then
			# A malformed reply kind lasts one interval (clean_restart).
			clean=0
			fault_at+=("$(date +%s%3N)")
			fault_of+=(clean-restart)
			clean_restart
			sleep "$EVERY"
			continue
		fi
		local f=${faults[n % ${#faults[@]}]}
		n=$((n + 1))
		fault_at+=("$(date +%s%3N)")
		fault_of+=("$f")
		tb_log "fault $n: $f"
		trace_save
		case $f in
		disconnect) disconnect ;;
		nfsd-restart | responder-restart) server_do "$f" ;;
		malformed)
			local kind=${MALFORMED[MAL_N++ % ${#MALFORMED[@]}]}
			tb_log "  the responder restarted malforming the 40th reply of every connection: $kind"
			server_do responder-restart --malform-nth "40:$kind"
			clean=1
			;;
		link-bounce) server_do link-bounce 3 ;;
		outage)
			outage_trace "$vers-$label-$n"
			outage 3
			;;
		device-readd) device_readd ;;
		esac
		sleep "$EVERY"
	done
	# fio is time-based: past its end plus the stall limit it is hung
	# (a hard mount retries for ever): say what both sides look like.
	while kill -0 "$fio_pid" 2>/dev/null && (($(date +%s) < start + SECS + MAX_STALL + 30)); do
		sleep 1
	done
	if kill -0 "$fio_pid" 2>/dev/null; then
		diagnose "vers=$vers $label: fio still running $((MAX_STALL + 30)) s after its end"
		tb_die "vers=$vers $label: I/O hung after fault $n (${faults[(n - 1) % ${#faults[@]}]}): see the diagnostics above"
	fi
	wait "$fio_pid" || fio_rc=$?
	touch "$mon.stop"
	wait
	trace_save
	# Restarted only now if the phase ended first: after the monitor, so
	# that the time after fio's end is not counted as a stall.
	((clean == 0)) || clean_restart
	read -r stall cur stall_at cur_at <"$mon" || tb_die "vers=$vers $label: the progress monitor left no figures"
	if ((cur > stall)); then
		stall=$cur
		stall_at=$cur_at
	fi
	# The fault the longest stall followed: the last one injected before
	# it began, or within a second after (the last progress seen is up to
	# 0.5 s old).
	for ((i = 0; i < ${#fault_at[@]}; i++)); do
		((fault_at[i] <= stall_at + 1000)) && after=${fault_of[i]}
	done
	# Each fault's longest stall: of those that began from a second
	# before it to a second before the next fault.
	local lo hi
	for ((i = 0; i < ${#fault_at[@]}; i++)); do
		lo=$((fault_at[i] - 1000))
		hi=$((i + 1 < ${#fault_at[@]} ? fault_at[i + 1] - 1000 : 1 << 62))
		printf '%-6s %-9s fault=%s %s stall_ms=%s\n' "$vers" "$label" "$((i + 1))" "${fault_of[i]}" \
			"$(awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi && $2 - $1 > m {m = $2 - $1} END {print m + 0}' "$mon.stalls")" \
			>>"$STALLS"
	done
	c1=$(connects) b1=$(progress)
	local moved=$((b1 - b0)) errs
	errs=$(grep -oE "err= *[0-9]+" /tmp/fio-soak.txt | awk '{s += $NF} END {print s + 0}')
	printf '%-6s %-9s bytes=%s faults=%s reconnects=%s longest_stall_ms=%s fio_rc=%s fio_errors=%s after=%s\n' \
		"$vers" "$label" "$moved" "$n" "$((c1 - c0))" "$stall" "$fio_rc" "$errs" "$after" | tee -a "$OUT"
	grep -E "^ +(READ|WRITE):" /tmp/fio-soak.txt || true
	((fio_rc == 0)) || { tail -n 20 /tmp/fio-soak.txt; tb_die "vers=$vers $label: fio failed (exit $fio_rc): an I/O or verify error"; }
	((errs == 0)) || tb_die "vers=$vers $label: fio counted $errs errors"
	((moved > 0)) || tb_die "vers=$vers $label: no I/O"
	((n > 0)) || tb_die "vers=$vers $label: no fault was injected ($SECS s is too short for one every $EVERY s)"
	((stall <= MAX_STALL * 1000)) ||
		tb_die "vers=$vers $label: I/O stalled for $stall ms after a fault (limit $MAX_STALL s)"
	rm -rf "$dir"
	tb_umount "$MNT"
}

# A phase that stops on an expansion error (which set -e does not catch)
# leaves no figures line: count them.
trace_setup
for vers in 3 4.1; do
	phase "$vers" 20049 svcrdma
	phase "$vers" 20050 responder
done
phases=$(wc -l <"$OUT")
((phases == 4)) || tb_die "$phases of 4 phases completed (see above)"
tb_log "soak figures ($SECS s per phase):"
cat "$OUT"
awk '{for (i = 3; i <= NF; i++) {split($i, kv, "="); s[kv[1]] += kv[2]; if (kv[1] == "longest_stall_ms" && kv[2] > m) m = kv[2]}}
	END {printf "total  bytes=%.0f faults=%d reconnects=%d longest_stall_ms=%d fio_errors=%d\n", s["bytes"], s["faults"], s["reconnects"], m, s["fio_errors"]}' \
	"$OUT" | tee -a "$OUT"
tb_log "each fault's longest stall (ms; soak-stalls.txt):"
cat "$STALLS"
if [ -s "$RPC_GAPS" ]; then
	tb_log "each outage's longest time between two RPCs' ends (from, to: the trace's clock; soak-rpc-gaps.txt):"
	cat "$RPC_GAPS"
fi
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "soak: all checks passed"
