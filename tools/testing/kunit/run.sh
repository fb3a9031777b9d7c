#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run rpcrdma2's KUnit suites in the client guest of the two-guest testbed
# (rxe0 is up, or siw0 with --provider siw, so suites that need an RDMA
# device have one) and judge the KTAP on the host with ktap-check.sh.
# Extra arguments go to vm/run.sh.
# The suites are in the module's KUnit variant, build/kunit/rpcrdma2.ko
# (make modules-kunit); the production rpcrdma2.ko has none.  With
# RPCRDMA2_KERNEL_VARIANT=debug the debug kernel boots and
# build/kunit-debug/rpcrdma2.ko (make modules-kunit-debug) is loaded; with
# =next Linux 7.3 and build/kunit-next/rpcrdma2.ko (make KERNEL=next
# modules-kunit).

set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"

ko=$(module_ko "$RPCRDMA2_KERNEL_VARIANT" kunit)
case $RPCRDMA2_KERNEL_VARIANT in
default) target=modules-kunit ;;
debug) target=modules-kunit-debug ;;
*) target="KERNEL=$RPCRDMA2_KERNEL_VARIANT modules-kunit" ;;
esac
[ -f "$RPCRDMA2_TOP/$ko" ] ||
	die "$ko (the KUnit variant for the $RPCRDMA2_KERNEL_VARIANT kernel) is not built: run 'make $target'"
results=$(mktemp -d "${TMPDIR:-/tmp}/rpcrdma2-kunit.XXXXXX")
trap 'rm -rf "$results"' EXIT
# kunit.enable=1: KUnit is on (the testbed kernels' default too; the
# option keeps a kernel configured otherwise usable). kunit.autorun=1: a
# module's suites run when it is loaded; 7.3 makes that a parameter whose
# default (KUNIT_AUTORUN_ENABLED) the testbed's allnoconfig base turns off,
# and without it 7.3 registers the suites and runs none. 6.12 always runs
# them and ignores the unknown kunit.autorun, as it does any dotted option.
"$RPCRDMA2_TOP/tools/testing/vm/run.sh" --results "$results" --append "kunit.enable=1 kunit.autorun=1" "$@" "$here/guest-kunit.sh" ||
	die "KUnit guest run failed (exit $?)"
ktap=$results/client/kunit.log
[ -f "$ktap" ] || die "the guest produced no $ktap"
mkdir -p "$RPCRDMA2_CACHE/kunit" && cp "$ktap" "$RPCRDMA2_CACHE/kunit/last.log"
"$here/ktap-check.sh" "$ktap"
