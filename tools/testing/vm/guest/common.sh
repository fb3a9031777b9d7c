# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for the testbed's guest-side setup (stage2.sh, server.sh,
# client.sh).  Sourced by bash; not for test scripts (see lib.sh).

TB_CTL=/results/ctl

tb_uptime() { cut -d' ' -f1 /proc/uptime; }

# log MSG: to the serial console and to this guest's setup log.
log() {
	local line
	line="TESTBED[$TB_ROLE $(tb_uptime)]: $*"
	echo "$line" >/dev/console
	echo "$line" >>"$TB_LOG"
}

# mark PHASE: tell the host (and the peer) that PHASE is reached.
mark() {
	tb_uptime >"$TB_CTL/$TB_ROLE.$1"
	log "phase $1"
}

# fail STEP [DETAIL]: record the failure for the host and stop this guest.
fail() {
	trap - ERR
	{
		echo "step '$1' failed${2:+: $2}"
		echo "--- last lines of $TB_ROLE/setup.log:"
		tail -n 25 "$TB_LOG" 2>/dev/null
	} >"$TB_CTL/$TB_ROLE.failed.tmp"
	mv "$TB_CTL/$TB_ROLE.failed.tmp" "$TB_CTL/$TB_ROLE.failed"
	log "FAILED: step '$1'${2:+: $2}"
	finish
	exit 1
}

# step NAME CMD...: run CMD with its output in the setup log; fail NAME on error.
step() {
	local name=$1 rc=0
	shift
	echo "+ [$(tb_uptime) $name] $*" >>"$TB_LOG"
	# Self-test of the testbed: RPCRDMA2_VM_INJECT_FAIL=ROLE:STEP on the host.
	if [ -n "${TB_INJECT_FAIL:-}" ] && [[ "$TB_ROLE:$name" == "$TB_INJECT_FAIL"* ]]; then
		fail "$name" "injected failure (RPCRDMA2_VM_INJECT_FAIL)"
	fi
	"$@" >>"$TB_LOG" 2>&1 </dev/null || rc=$?
	((rc == 0)) || fail "$name" "'$*' exited $rc"
}

# wait_for SECS DESC CMD...: poll CMD every 0.2 s until it succeeds.
wait_for() {
	local secs=$1 desc=$2 end
	shift 2
	end=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		(($(date +%s) < end)) || fail "$desc" "not done after ${secs} s"
		sleep 0.2
	done
}

# finish: save this guest's kernel log, tell everyone this guest is done.
finish() {
	dmesg >"/results/$TB_ROLE/dmesg.txt" 2>&1 || true
	[ -e "$TB_CTL/$TB_ROLE.finished" ] || mark finished
}
