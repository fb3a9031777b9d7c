#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Run the guest integration tests (tools/testing/vm/run.sh per test) and
# close with the line 'N passed, N failed' (', N skipped' when some were).
#
#   run-all.sh [--list] [--no-kernel-build] [--allow-skips] [--results DIR]
#              [--variant NAME] [--tier check|long] [TEST...]
#
# A test is a client script in this directory with a line
#   # integration-test: DESCRIPTION
# and optionally
#   # run.sh-options: OPTIONS...   (e.g. --timeout 900 --allow-rpcrdma-autoload)
#   # run.sh-args: ARGS...         (passed to the script)
#   # kernel-variant: NAME         (runs only on that testbed kernel variant)
#   # integration-tier: long       (make check-long's, not make check's)
# TEST names a test (file name with or without .sh); default: all of them
# that run on the kernel variant (--variant, or RPCRDMA2_KERNEL_VARIANT:
# default or debug; the guests boot that kernel and load the rpcrdma2.ko
# built for it); with --tier, only those of that tier (a test without the
# line is of tier check).  A script exits 0 (pass), 77 (skipped) or
# anything else (fail). Skips fail the run unless --allow-skips is given.  Without
# --no-kernel-build a missing testbed kernel is built first
# (tools/testing/kernel/build.sh; how long: Documentation/testing.rst,
# "Durations").

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"
RUN=$RPCRDMA2_TOP/tools/testing/vm/run.sh
KBUILD=$RPCRDMA2_TOP/tools/testing/kernel/build.sh

list=0 build_kernel=1 results= allow_skips=0 tier=
while (($#)); do
	case $1 in
	--list) list=1; shift ;;
	--allow-skips) allow_skips=1; shift ;;
	--no-kernel-build) build_kernel=0; shift ;;
	--results) results=${2:?--results needs DIR}; shift 2 ;;
	--variant) RPCRDMA2_KERNEL_VARIANT=${2:?--variant needs NAME}; shift 2 ;;
	--tier) tier=${2:?--tier needs check or long}; shift 2 ;;
	-h | --help) sed -n '5,27s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "${0##*/}: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done

variant=$RPCRDMA2_KERNEL_VARIANT
variant_known "$variant" ||
	{ echo "${0##*/}: no kernel variant '$variant' (have: ${RPCRDMA2_KERNEL_VARIANTS[*]})" >&2; exit 2; }
export RPCRDMA2_KERNEL_VARIANT=$variant
case $tier in
"" | check | long) ;;
*) echo "${0##*/}: no tier '$tier' (check or long)" >&2; exit 2 ;;
esac

field() { # FILE KEY: the value of '# KEY: value' in FILE
	sed -n "s/^# $2:[[:space:]]*//p" "$1" | head -n 1
}
runs_here() { # FILE: does the test run on this kernel variant?
	local want
	want=$(field "$1" kernel-variant)
	[ -z "$want" ] || [ "$want" = "$variant" ]
}
of_tier() { # FILE: is the test of --tier's tier (any without --tier)?
	local t
	t=$(field "$1" integration-tier)
	[ -z "$tier" ] || [ "${t:-check}" = "$tier" ]
}
# A tier line that names neither tier would leave its test out of both
# make check and make check-long, so CI would never run it: refuse it.
bad_tiers() {
	local f t bad=0
	for f in $(grep -l '^# integration-test:' "$HERE"/*.sh 2>/dev/null); do
		t=$(field "$f" integration-tier)
		case $t in
		"" | check | long) ;;
		*) echo "${0##*/}: $(basename "$f"): unknown integration-tier '$t' (check or long)" >&2; bad=1 ;;
		esac
	done
	return $bad
}
all_tests() {
	local f
	for f in $(grep -l '^# integration-test:' "$HERE"/*.sh 2>/dev/null | sort); do
		! runs_here "$f" || ! of_tier "$f" || echo "$f"
	done
}
bad_tiers || exit 2

tests=()
if (($#)); then
	[ -z "$tier" ] || { echo "${0##*/}: --tier chooses the tests itself: name no TEST with it" >&2; exit 2; }
	for t in "$@"; do
		f=$HERE/${t%.sh}.sh
		if ! [ -f "$f" ] || ! grep -q '^# integration-test:' "$f"; then
			echo "${0##*/}: no integration test '$t'" >&2
			exit 2
		fi
		if ! runs_here "$f"; then
			echo "${0##*/}: $t runs on the $(field "$f" kernel-variant) kernel only (--variant), not on $variant" >&2
			exit 2
		fi
		tests+=("$f")
	done
else
	mapfile -t tests < <(all_tests)
fi
if ((list)); then
	for f in "${tests[@]}"; do
		printf '%-20s %s\n' "$(basename "$f" .sh)" "$(field "$f" integration-test)"
	done
	exit 0
fi
((${#tests[@]})) || { echo "${0##*/}: no integration tests found" >&2; exit 2; }

passed=0 failed=0 skipped=0 summary=()
closing() {
	local line="$passed passed, $failed failed"
	((skipped == 0)) || line+=", $skipped skipped"
	echo
	echo "integration tests on the $variant kernel (results: $results):"
	printf '  %s\n' "${summary[@]}"
	echo "$line"
}

if [ -z "$results" ]; then
	results=$RPCRDMA2_CACHE/vm/integration/$(date +%Y%m%d-%H%M%S)-$$
fi
mkdir -p "$results"
results=$(cd "$results" && pwd)

if ! "$KBUILD" --check; then
	if ((build_kernel)); then
		log "integration: testbed kernel ($variant) not built yet; building it (how long: Documentation/testing.rst, \"Durations\")"
		if ! "$KBUILD" >"$results/kernel-build.log" 2>&1; then
			tail -n 30 "$results/kernel-build.log" >&2
			failed=${#tests[@]}
			summary=("FAIL all: kernel build failed (see $results/kernel-build.log)")
			closing
			exit 1
		fi
	else
		failed=${#tests[@]}
		summary=("FAIL all: testbed kernel not built (tools/testing/kernel/build.sh --variant $variant)")
		closing
		exit 1
	fi
fi

# The user-space responder (tools/responder) runs in the server guest from
# the host's build; build it (seconds when up to date). A failure here
# fails the tests that start it (their server script finds no binary).
if grep -lqE 'server/(responder|soak)' "${tests[@]}"; then
	"$RPCRDMA2_TOP/tools/responder/build.sh" >/dev/null ||
		log "integration: building the responder failed (tools/responder/build.sh)"
fi

for f in "${tests[@]}"; do
	name=$(basename "$f" .sh)
	read -ra opts <<<"$(field "$f" run.sh-options)"
	read -ra args <<<"$(field "$f" run.sh-args)"
	log "integration: === $name: $(field "$f" integration-test)"
	start=$SECONDS
	rc=0
	"$RUN" --results "$results/$name" "${opts[@]}" "$f" "${args[@]}" 2>&1 |
		tee "$results/$name.log" || rc=${PIPESTATUS[0]}
	secs=$((SECONDS - start))
	case $rc in
	0) passed=$((passed + 1)); res=PASS ;;
	77) skipped=$((skipped + 1)); res=SKIP ;;
	124) failed=$((failed + 1)); res="FAIL (timeout)" ;;
	125) failed=$((failed + 1)); res="FAIL (testbed error)" ;;
	*) failed=$((failed + 1)); res="FAIL (exit $rc)" ;;
	esac
	summary+=("$(printf '%-20s %s  %ds' "$name" "$res" "$secs")")
	log "integration: $name: $res in ${secs}s"
done
closing
((failed == 0)) || exit 1
# A skipped test is a test that did not run: under make check that is a
# failure, not a pass (see --allow-skips for interactive use).
if ((skipped > 0 && !allow_skips)); then
	echo "${0##*/}: $skipped test(s) skipped; failing (use --allow-skips to accept)" >&2
	exit 1
fi
