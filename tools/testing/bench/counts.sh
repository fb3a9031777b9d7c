# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Exact per-RPC event counts of `make bench` (configurations n-r2, n-c,
# n-r2-1k, n-c-1k; sourced by guest.sh, which defines bench_mount,
# bench_umount, use_module, MNT, OUT, SRC, SIZE, MODULE and FAILED).
# run_counts CONFIG REPEAT mounts CONFIG's transport, warms it up with
# COUNTS_WARM READs of samples/fio/randread-4k.fio, then counts, over a
# fio run of that job with a fixed number of I/Os (COUNTS_RPCS READ RPCs:
# 4 KiB I/Os, or a quarter as many at rsize 1024), every event below in
# the client guest. Counting starts before fio starts and stops after it
# exits (fio's own OPEN and CLOSE are in the interval and among its RPCs);
# /proc/self/mountstats is read right after the start and right before
# the stop. counts-report.py divides the counts by the interval's RPCs.
#
#   lock acquisitions  a kprobe event on each lock function (_raw_spin_lock*,
#                      _raw_read_lock*, _raw_write_lock*, mutex_lock*,
#                      down_read*, down_write*) with a hist trigger keyed by
#                      the calling stack (16 frames): the report folds the
#                      stacks (the transport's: a frame of its module on
#                      the stack)
#   rxe_cq_post        the same: completions rxe generates, by whether the
#                      requester's completer (Send queue) or the receiver
#                      (Receive queue) posted them
#   do_complete        the same on both of rxe's static do_complete (by
#                      address: the name is not unique): under the
#                      completer, once per Send-queue WQE it retires
#                      (Send, REG_MR, LOCAL_INV; signalled or not)
#   function hits      the function profiler (trace_stat/function*) on
#                      COUNTS_FUNCS and every traceable function of the
#                      transport's module
#   work items         workqueue:workqueue_execute_start by work function
#   context switches   sched:sched_switch by the next task's name
#   softirqs, IRQs     irq:softirq_entry by vector, irq:irq_handler_entry
#                      by handler name
#   allocations        kmem:kmalloc and kmem:kmem_cache_alloc by calling
#                      stack, folded as the locks
#
# Each run's raw outputs go to $OUT/counts/CONFIG.REPEAT/ and a line to
# $OUT/counts.tsv; a hist table that dropped entries is the report's to
# refuse, and it reports the kprobe hits missed (kprobe_profile).

COUNTS_RPCS=2000 # READ RPCs per measured run
COUNTS_WARM=500  # READ RPCs of the warm-up
COUNTS_LIMIT=900 # seconds, per fio run
CT=/sys/kernel/tracing
COUNTS_LOCKS=(_raw_spin_lock _raw_spin_lock_bh _raw_spin_lock_irq _raw_spin_lock_irqsave
	_raw_read_lock _raw_read_lock_bh _raw_read_lock_irq _raw_read_lock_irqsave
	_raw_write_lock _raw_write_lock_bh _raw_write_lock_irq _raw_write_lock_irqsave
	mutex_lock mutex_lock_interruptible mutex_lock_killable
	down_read down_read_interruptible down_read_killable down_write down_write_killable)
# counted by stack besides the locks
COUNTS_STACKS=(rxe_cq_post)
# function profiler: SUNRPC's XID lookup and reply completion, the CQ
# work item and its poll loop, rxe's verbs (doorbells) and the work each
# WQE and each completion costs it, and rxe's tasks. (rxe's per-WR
# functions post_one_send and post_one_recv are inlined.)
COUNTS_FUNCS=(xprt_lookup_rqst xprt_complete_rqst xprt_transmit
	ib_cq_poll_work __ib_process_cq ib_cq_completion_workqueue ib_poll_handler
	rxe_post_send rxe_post_recv
	rxe_cq_post rxe_requester rxe_completer rxe_receiver rxe_sched_task rxe_run_task
	rxe_xmit_packet rxe_rcv rxe_comp_queue_pkt rxe_resp_queue_pkt rxe_map_mr_sg rxe_reg_fast_mr)
# hist triggers of this run: the trigger file -> its spec
declare -A COUNTS_HIST=()

counts_log() { tb_log "counts: $*" >&2; }

# counts_hist TRIGGERFILE SPEC: a paused hist trigger (counting starts at
# counts_start)
counts_hist() {
	echo "$2:pause" >"$1" || { counts_log "cannot add '$2' to $1"; return 1; }
	COUNTS_HIST[$1]=$2
}

# counts_kprobe NAME TARGET: kprobe event counts/NAME on TARGET with a
# paused stack-keyed hist; 1 if it cannot be placed
counts_kprobe() {
	echo "p:counts/$1 $2" >>"$CT/kprobe_events" 2>/dev/null ||
		{ counts_log "no kprobe on $2"; return 1; }
	counts_hist "$CT/events/counts/$1/trigger" "hist:keys=common_stacktrace:vals=hitcount:size=$3"
}

# counts_setup MODULE DIR: everything placed, paused; what was placed and
# what could not be goes to DIR/setup.txt
counts_setup() {
	local mod=$1 dir=$2 f n
	mountpoint -q "$CT" || mount -t tracefs nodev "$CT" || return 1
	counts_teardown
	# A hist trigger reads the event's record, which a soft-disabled event
	# writes to a per-CPU scratch buffer, or, when that is busy (an event
	# in an interrupt during another), to the ring buffer: which must be
	# on, or that hit is lost. Nothing else is enabled, so nothing stays
	# in it.
	: >"$CT/set_event"
	echo 1 >"$CT/tracing_on"
	{
		echo "module $mod"
		for f in "${COUNTS_LOCKS[@]}"; do
			# the biggest tables for the busiest locks; a full table
			# drops (the report refuses the run)
			# (the smallest table is 128 entries)
			case $f in _raw_spin_lock | _raw_spin_lock_irqsave | _raw_spin_lock_bh) n=16384 ;; *) n=4096 ;; esac
			if counts_kprobe "lk_$f" "$f" "$n"; then echo "lock $f"; else echo "nolock $f"; fi
		done
		for f in "${COUNTS_STACKS[@]}"; do
			if counts_kprobe "st_$f" "$f" 2048; then echo "stack $f"; else echo "nostack $f"; fi
		done
		n=0
		for f in $(awk '$3 == "do_complete" && $4 == "[rdma_rxe]" { print $1 }' /proc/kallsyms); do
			n=$((n + 1))
			if counts_kprobe "st_do_complete_$n" "0x$f" 2048; then echo "stack do_complete $f"; else echo "nostack do_complete $f"; fi
		done
		: >"$CT/set_ftrace_filter"
		for f in "${COUNTS_FUNCS[@]}"; do
			if echo "$f" >>"$CT/set_ftrace_filter" 2>/dev/null; then echo "func ${f%%:*}"; else echo "nofunc ${f%%:*}"; fi
		done
		# the module's traceable functions (its C shims; Rust code has
		# no fentry), listed for the report; and rxe's, for reading
		grep " \[$mod\]\$" "$CT/available_filter_functions" >"$dir/module-functions.txt"
		grep " \[rdma_rxe\]\$" "$CT/available_filter_functions" >"$dir/rxe-functions.txt"
		if echo "*:mod:$mod" >>"$CT/set_ftrace_filter" 2>/dev/null; then
			echo "modfuncs $mod $(wc -l <"$dir/module-functions.txt")"
		else
			echo "nomodfuncs $mod"
		fi
		for f in "workqueue/workqueue_execute_start function.sym 512" "sched/sched_switch next_comm 512" \
			"irq/softirq_entry vec 128" "irq/irq_handler_entry name 128" \
			"kmem/kmalloc common_stacktrace 4096" "kmem/kmem_cache_alloc common_stacktrace 4096"; do
			set -- $f
			if counts_hist "$CT/events/$1/trigger" "hist:keys=$2:vals=hitcount:size=$3"; then
				echo "event $1"
			else
				echo "noevent $1"
			fi
		done
	} >"$dir/setup.txt"
	# an empty filter would profile every function (tracefs files have
	# no size: read it)
	grep -q . "$CT/set_ftrace_filter" || { counts_log "no function for the profiler"; return 1; }
	cp "$CT/set_ftrace_filter" "$dir/ftrace-filter.txt"
	echo 0 >"$CT/function_profile_enabled" || return 1
	# the spin lock and every tracepoint: a run without them is no run
	grep -q '^lock _raw_spin_lock$' "$dir/setup.txt" && ! grep -q '^noevent ' "$dir/setup.txt" ||
		{ counts_log "placement failed: $(grep -E '^no(lock|event) ' "$dir/setup.txt" | tr '\n' ' ')"; return 1; }
}

# counts_start / counts_stop: every counter on (the profiler's statistics
# reset by enabling it), then off. The profiler's (un)registration patches
# ftrace trampolines, which takes locks: it comes first on and last off,
# outside the hist triggers' interval.
counts_start() {
	local t
	echo 1 >"$CT/function_profile_enabled" || return 1
	for t in "${!COUNTS_HIST[@]}"; do
		echo "${COUNTS_HIST[$t]}:clear" >>"$t" && echo "${COUNTS_HIST[$t]}:continue" >>"$t" || return 1
	done
}
counts_stop() {
	local t
	for t in "${!COUNTS_HIST[@]}"; do
		echo "${COUNTS_HIST[$t]}:pause" >>"$t"
	done
	echo 0 >"$CT/function_profile_enabled"
}

# counts_save DIR: the counters, as the kernel prints them
counts_save() {
	local dir=$1 t name f
	for t in "${!COUNTS_HIST[@]}"; do
		name=${t%/trigger}
		name=${name#"$CT/events/"}
		cat "${t%/trigger}/hist" >"$dir/${name//\//.}.hist"
	done
	for f in "$CT"/trace_stat/function*; do
		cat "$f" >"$dir/profile.${f##*/}"
	done
	cat "$CT/kprobe_profile" >"$dir/kprobe_profile"
}

# counts_teardown: no trigger, kprobe event, filter or profile left (also
# after a run that stopped half-way: the triggers as the files list them)
counts_teardown() {
	local t spec
	[ -d "$CT/events" ] || return 0
	echo 0 >"$CT/function_profile_enabled" 2>/dev/null
	for t in "${!COUNTS_HIST[@]}"; do
		echo "!${COUNTS_HIST[$t]}" >>"$t" 2>/dev/null
	done
	COUNTS_HIST=()
	for t in "$CT"/events/counts/*/trigger "$CT"/events/workqueue/workqueue_execute_start/trigger \
		"$CT"/events/sched/sched_switch/trigger "$CT"/events/irq/softirq_entry/trigger \
		"$CT"/events/irq/irq_handler_entry/trigger "$CT"/events/kmem/kmalloc/trigger \
		"$CT"/events/kmem/kmem_cache_alloc/trigger; do
		[ -f "$t" ] || continue
		grep '^hist:' "$t" | while read -r spec _; do
			echo "!$spec" >>"$t"
		done
	done
	sed -n 's|^p:\(counts/[^ ]*\) .*|-:\1|p' "$CT/kprobe_events" | while read -r spec; do
		echo "$spec" >>"$CT/kprobe_events"
	done
	: >"$CT/set_ftrace_filter"
}

# counts_jobfile IOS OUTPUT: the randread-4k job for IOS I/Os instead of
# a time
counts_jobfile() {
	local ios=$1 out=$2
	sed -e 's/^time_based=1$/time_based=0/' -e '/^runtime=/d' -e '/^ramp_time=/d' \
		"$SRC/samples/fio/randread-4k.fio" >"$out" || return 1
	grep -q '^time_based=0$' "$out" && grep -q '^bs=4k$' "$out" || {
		counts_log "samples/fio/randread-4k.fio changed: no time_based=1 or bs=4k to adapt"
		return 1
	}
	# the job section is the file's last
	echo "io_size=$((ios * 4))k" >>"$out"
}

counts_record() { # CONFIG REPEAT STATUS DIR OPTS
	local IFS=$'\t'
	[ "$3" = ok ] || FAILED=$((FAILED + 1))
	echo "$*" >>"$OUT/counts.tsv"
}

# run_counts CONFIG REPEAT
run_counts() {
	local cfg=$1 rep=$2 mod=${MODULE[$1]} opts dir per ios warm rc=0 t0 t1
	dir=$OUT/counts/$cfg.$rep
	mkdir -p "$dir"
	[ -f "$OUT/counts.tsv" ] || printf 'config\trepeat\tstatus\tdir\tmount_options\n' >"$OUT/counts.tsv"
	tb_log "counts on $cfg (repeat $rep)"
	if ! use_module "$mod"; then
		counts_record "$cfg" "$rep" module-failed - -
		return 1
	fi
	if ! opts=$(bench_mount "$cfg"); then
		dmesg >"$dir/mount.dmesg"
		counts_record "$cfg" "$rep" mount-failed - -
		bench_umount
		return 1
	fi
	# READ RPCs per 4 KiB I/O: 4096 / rsize
	per=1
	[[ ,$opts, == *,rsize=1024,* ]] && per=4
	ios=$((COUNTS_RPCS / per)) warm=$((COUNTS_WARM / per))
	if ! counts_jobfile "$warm" /tmp/counts-warm.fio || ! counts_jobfile "$ios" /tmp/counts.fio; then
		counts_record "$cfg" "$rep" failed:jobfile - "$opts"
		bench_umount
		return 1
	fi
	echo "ios $ios rpcs_per_io $per" >"$dir/run.txt"
	BENCH_DIR=$MNT/bench BENCH_SIZE=$SIZE timeout -k 10 "$COUNTS_LIMIT" \
		fio --output-format=json --output="$dir/warm.json" /tmp/counts-warm.fio >"$dir/warm.err" 2>&1 || rc=$?
	if ((rc == 0)) && counts_setup "$mod" "$dir"; then
		dmesg -C
		counts_start || rc=1
		t0=$EPOCHREALTIME
		cat /proc/self/mountstats >"$dir/ms0"
		BENCH_DIR=$MNT/bench BENCH_SIZE=$SIZE timeout -k 10 "$COUNTS_LIMIT" \
			fio --output-format=json --output="$dir/fio.json" /tmp/counts.fio >"$dir/fio.err" 2>&1 || rc=$?
		cat /proc/self/mountstats >"$dir/ms1"
		t1=$EPOCHREALTIME
		counts_stop
		echo "elapsed_s $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >>"$dir/run.txt"
		counts_save "$dir"
		dmesg >"$dir/dmesg"
	else
		((rc)) || rc=1
		counts_log "$cfg: warm-up fio exit or placement failed (see $dir)"
	fi
	counts_teardown
	bench_umount || tb_log "umount of $cfg failed"
	if ((rc == 0)); then
		counts_record "$cfg" "$rep" ok "counts/$cfg.$rep" "$opts"
	else
		counts_record "$cfg" "$rep" "failed:$rc" "counts/$cfg.$rep" "$opts"
	fi
	return "$rc"
}
