#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Client script for tools/testing/vm/run.sh: load the KUnit variant of
# rpcrdma2.ko built for the booted kernel variant ($RPCRDMA2_KUNIT_KO:
# build/kunit/ by make modules-kunit, build/kunit-debug/ by make
# modules-kunit-debug, build/kunit-next/ by make KERNEL=next modules-kunit;
# its KUnit suites run at load and print KTAP to the kernel log), save the
# log to
# $RESULTS/kunit.log for the host to judge, and unload the module.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

ko=$RPCRDMA2_KUNIT_KO
[ -f "$ko" ] || tb_die "$ko not built (make modules-kunit; modules-kunit-debug for the debug kernel, KERNEL=next modules-kunit for next)"
dmesg -C
tb_step "insmod rpcrdma2.ko (runs the KUnit suites)" insmod "$ko"
dmesg >"$RESULTS/kunit.log"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
grep -q "KTAP version" "$RESULTS/kunit.log" || tb_die "no KTAP output after insmod"
tb_log "KTAP saved to $RESULTS/kunit.log"
