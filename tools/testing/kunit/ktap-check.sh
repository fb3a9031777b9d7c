#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ktap-check.sh LOG [SUITE...]
#
# Judges a kernel log holding KUnit KTAP output: the kernel's own parser
# (tools/testing/kunit/kunit.py parse) must report success, and every SUITE
# named (default: every kunit_suite! declared under rpcrdma/) must appear as
# "ok". A missing suite is a failure, so a module that silently ran no tests
# cannot pass.

set -euo pipefail
. "$(dirname "$0")/../lib.sh"

log_file=${1:?usage: ktap-check.sh LOG [SUITE...]}
shift
[ -s "$log_file" ] || die "KTAP log $log_file is missing or empty"

suites=("$@")
if ((${#suites[@]} == 0)); then
	# Invocations at the start of a line (not doc examples), possibly
	# split over lines by rustfmt.
	# (The KUnit variant's build copy under build/ is not searched.)
	mapfile -t suites < <(find "$RPCRDMA2_TOP/rpcrdma" -name '*.rs' -print0 |
		xargs -0 perl -0ne 'while (/^\s*kunit_(?:table_)?suite!\(\s*(\w+)/mg) { print "$1\n" }' |
		sort -u)
fi
((${#suites[@]})) || die "no KUnit suites declared under rpcrdma/"

kunit_py=${KUNIT_PY:-}
if [ -z "$kunit_py" ]; then
	kunit_py=$(ls -d "$RPCRDMA2_CACHE"/src/linux-source-*/tools/testing/kunit/kunit.py 2>/dev/null | tail -1)
fi
[ -f "$kunit_py" ] || die "kunit.py not found (unpack linux-source-6.12 via tools/testing/kernel/build.sh, or set KUNIT_PY)"

rc=0
python3 "$kunit_py" parse "$log_file" || rc=$?
for s in "${suites[@]}"; do
	# The suite's own result line: "ok N <suite>" at the top level.
	if grep -qE "^(\[[ 0-9.]+\] )?ok [0-9]+ $s\$" "$log_file"; then
		log "suite $s: ok"
	elif grep -qE "not ok [0-9]+ $s\$" "$log_file"; then
		log "suite $s: FAILED"; rc=1
	else
		log "suite $s: did not run"; rc=1
	fi
done
exit $rc
