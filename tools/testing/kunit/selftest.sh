#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Proves ktap-check.sh can fail: a passing log passes, and a log with a
# failed case, a crashed (unterminated) suite or a missing suite does not.

set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fx=$here/fixtures
fails=0
expect() {
	local want=$1 name=$2; shift 2
	if "$here/ktap-check.sh" "$@" >/dev/null 2>&1; then got=pass; else got=fail; fi
	if [ "$got" = "$want" ]; then
		echo "ok: $name ($got)"
	else
		echo "FAIL: $name: expected $want, got $got"; fails=$((fails + 1))
	fi
}
expect pass "all cases pass"    "$fx/pass.log" demo_suite
expect fail "one case fails"    "$fx/fail.log" demo_suite
expect fail "suite missing"     "$fx/pass.log" demo_suite other_suite
expect fail "suite crashed"     "$fx/crash.log" demo_suite
expect fail "empty log"         /dev/null demo_suite
echo "ktap selftest: $((5 - fails)) passed, $fails failed"
[ $fails = 0 ]
