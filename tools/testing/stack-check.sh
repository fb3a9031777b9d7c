#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# stack-check.sh OBJECT: fail if a function of the module has a stack
# frame larger than allowed. The kernel stack is 16 KiB and rpcrdma2 runs
# at the bottom of deep NFS/SUNRPC call chains (rpciod) and in the CQ
# workqueue; without VMAP_STACK (the testbed kernel has it now) there is
# no guard page, and an overflow silently corrupts the page below (it did:
# see design-ib.rst, frwr_loopback). Limits (bytes, from the `sub $N, %rsp` of each
# function's prologue):
#   STACK_LIMIT       data-path and all other code     (default 2560)
#   STACK_LIMIT_TEST  KUnit cases and self-tests, which run in a fresh
#                     kthread (names containing "selftest" or "tests")
#                     (default 4096)

set -euo pipefail
obj=${1:?usage: stack-check.sh OBJECT}
limit=${STACK_LIMIT:-2560}
limit_test=${STACK_LIMIT_TEST:-4096}
objdump=${OBJDUMP:-$(command -v llvm-objdump-15 || command -v llvm-objdump || command -v objdump || true)}
[ -n "$objdump" ] || { echo "stack-check: no objdump (llvm-objdump-15 or binutils)" >&2; exit 1; }
[ -f "$obj" ] || { echo "stack-check: no $obj (build the module first)" >&2; exit 1; }

report=$("$objdump" -d --no-show-raw-insn "$obj" | perl -ne '
	BEGIN { ($lim, $limt) = @ARGV; @ARGV = (); $n = 0; $max = 0 }
	if (/^[0-9a-f]+ <(.*)>:$/) { $fn = $1; next }
	if (/\bsub[q]?\s+\$(0x[0-9a-f]+|\d+),\s*%rsp/) {
		$v = $1 =~ /^0x/ ? hex($1) : $1;
		$n++;
		$test = $fn =~ /selftest|tests/;
		$max = $v if !$test && $v > $max;
		printf "  %6d bytes (limit %d): %s\n", $v, $test ? $limt : $lim, $fn
			if $v > ($test ? $limt : $lim);
	}
	END { print "# $n frames, largest outside tests $max\n" }
' "$limit" "$limit_test")
summary=$(tail -n 1 <<<"$report")
over=$(grep -v '^#' <<<"$report" || true)
if [ -n "$over" ]; then
	echo "stack-check: frames over the limit in $obj:" >&2
	echo "$over" >&2
	exit 1
fi
[[ $summary == "# 0 frames"* ]] && { echo "stack-check: no function prologues found in $obj" >&2; exit 1; }
echo "stack-check: ${summary#\# } bytes (limits $limit / $limit_test for tests)"
