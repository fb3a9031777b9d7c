#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: every test of the project, in dependency order, with timings.
#
#   check.sh                 make check's phases: kernel host module kunit
#                            integration
#   check.sh PHASE...        only these (make check's; make check-long's:
#                            integration-long, the long tier of the
#                            integration tests; intree, the in-tree build
#                            alone (make check's module phase runs it); and the
#                            debug kernel's: kernel-debug module-debug
#                            kunit-debug integration-debug)
#   check.sh --kernel NAME [PHASE...]
#                            make check's phases (and integration-long) on
#                            another testbed kernel variant: next (Linux 7.3;
#                            make check KERNEL=next); its module and KUnit
#                            variant are build/NAME/ and build/kunit-NAME/
#
# A phase whose prerequisite phase failed is reported as failed too (never
# silently skipped).  Ends with a "N passed, N failed" line; exits non-zero
# if anything failed.

set -uo pipefail
# make check's phases run on the kernel variant --kernel names (default:
# default); the *-debug phases name theirs themselves.
kernel=default
if [ "${1:-}" = --kernel ]; then
	kernel=${2:?--kernel needs a kernel variant}
	shift 2
fi
export RPCRDMA2_KERNEL_VARIANT=$kernel
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA2_TOP"
variant_known "$kernel" || die "no kernel variant '$kernel' (have: ${RPCRDMA2_KERNEL_VARIANTS[*]})"
[ "$kernel" != debug ] || die "the debug kernel has its own phases: check.sh kernel-debug module-debug kunit-debug integration-debug"
# Where the module for this kernel is built (Makefile MOD_BUILD, KUNIT_BUILD).
if [ "$kernel" = default ]; then mod_build=. kunit_build=build/kunit
else mod_build=build/$kernel kunit_build=build/kunit-$kernel; fi

# The kernel phase comes first: it installs the toolchain and unpacks the
# kernel source, whose tools/testing/kunit/kunit.py the host phase's KTAP
# checker self-test needs on a cold machine.
# The *-debug phases repeat kernel, module, KUnit and a subset of the
# integration tests on the debug kernel (build.sh --variant debug: KASAN,
# lockdep, kmemleak, ...; Documentation/testing.rst, "The debug kernel").
# They run only when named (make check-debug): under TCG the debug kernel
# is far too slow for make check's time budget (the figures are in
# testing.rst).
# The integration tests come in two tiers (run-all.sh --tier, a test's
# "integration-tier: long" line): make check runs tier check; the long
# tier (fault catalogues, injected errors, soak, races, keepalive, the
# other reading of the credit word, the second RDMA provider (siw), the
# stock C client through the responder) runs as integration-long (make check-long), which CI runs
# after make check. The split keeps make check within its time budget
# (Documentation/testing.rst, "Durations").
# The in-tree build (intree.sh: rpcrdma2 built as net/sunrpc/xprtrdma2/ in
# a copy of the testbed kernel's tree) is part of make check's module
# phase; the intree phase runs it alone.
ALL=(kernel host module kunit integration)
OTHER_PHASES=(intree integration-long)
DEBUG_PHASES=(kernel-debug module-debug kunit-debug integration-debug)
declare -A needs=([module]=kernel [kunit]=module [integration]=module [integration-long]=module
	[module-debug]=kernel-debug [kunit-debug]=module-debug [integration-debug]=module-debug)
# The integration tests integration-debug runs: rpcrdma2-kmemleak, which
# covers module load and unload, the v1 (svcrdma) and v2 (responder) data
# paths with every chunk type, injected reconnects, and the leak check.
# RPCRDMA2_DEBUG_TESTS replaces the list; any test runs there with
# RPCRDMA2_KERNEL_VARIANT=debug tools/testing/integration/run-all.sh TEST.
# shellcheck disable=SC2206 # a list of names, split on purpose
DEBUG_TESTS=(${RPCRDMA2_DEBUG_TESTS:-rpcrdma2-kmemleak})
declare -A status=() took=()

phase_host() {
	step "host prerequisites (Debian packages, lib.sh HOST_DEBS)" ensure_debs "${HOST_DEBS[@]}"
	# The module's Rust (crate root and every module under it, including
	# the codec and proto trees it includes) as the kernel formats it.
	step "module: rustfmt --check" rustfmt --check --edition 2021 rpcrdma/rpcrdma2.rs
	# The import rules of design.rst (sunrpc/ and ib/ are peers that name
	# no transport module); the self-test first: the rules catch breaches.
	step "module: layering-check self-test" tools/testing/layering-check.py --selftest
	step "module: import layering (design.rst)" tools/testing/layering-check.py
	step "host crates (workspace): fmt, clippy, doc, tests, kcompat, fuzz" \
		tools/testing/host-check.sh
	step "responder: build, fmt, clippy, tests" tools/responder/check.sh
	step "documentation: Sphinx build, conformance table's tests exist" \
		tools/testing/docs-check.sh
	# Coverage-guided (libFuzzer) smoke run of every decoder the wire
	# reaches; the long run is `make fuzz` (Documentation/testing.rst).
	step "fuzz: libFuzzer smoke run, all targets" fuzz/fuzz.sh smoke "${FUZZ_SMOKE_SECONDS:-25}"
	step "KTAP checker self-test" tools/testing/kunit/selftest.sh
}

phase_kernel() {
	tools/testing/kernel/build.sh --variant "$kernel" >/dev/null
}

phase_module() {
	local ko
	ko=$(module_ko "$kernel")
	step "module prerequisites (Debian packages, lib.sh MODULE_DEBS)" ensure_debs "${MODULE_DEBS[@]}"
	step "module under clippy (kernel lints)" make -s KERNEL="$kernel" clippy
	step "module" make -s KERNEL="$kernel" modules
	[ -f "$ko" ] || die "make modules produced no $ko"
	step "module stack frames" tools/testing/stack-check.sh "$mod_build/rpcrdma/rpcrdma2.o"
	# The production module carries no test code (Kbuild, RPCRDMA2_KUNIT).
	step "no KUnit suites in the production module" \
		bash -c '! nm "$1" | grep -E "kunit|selftest|listen"' _ "$ko"
	# The KUnit variant the kunit phase loads (module_ko VARIANT kunit).
	step "KUnit variant under clippy (kernel lints)" make -s KERNEL="$kernel" clippy-kunit
	step "KUnit variant" make -s KERNEL="$kernel" modules-kunit
	step "KUnit variant stack frames" tools/testing/stack-check.sh "$kunit_build/rpcrdma/rpcrdma2.o"
	step "make install (staged)" tools/testing/install-check.sh
	step "dkms build" tools/testing/dkms-check.sh
	# rpcrdma2 built in-tree: Kconfig's SUNRPC_XPRT_RDMA2 holds in the
	# testbed kernel's tree, and net/sunrpc/xprtrdma2/ builds the module.
	step "in-tree build (Kconfig SUNRPC_XPRT_RDMA2=m, net/sunrpc/xprtrdma2/rpcrdma2.ko)" \
		tools/testing/intree.sh
}

phase_kunit() {
	tools/testing/kunit/run.sh
}

phase_integration() {
	tools/testing/integration/run-all.sh --tier check
}

# rpcrdma2.ko built in a copy of the testbed kernel's tree (make
# modules-intree), alone. The kernel is a cache hit after make check.
phase_intree() {
	tools/testing/kernel/build.sh --variant "$kernel" >/dev/null || die "the testbed kernel did not build"
	step "in-tree build (Kconfig SUNRPC_XPRT_RDMA2=m, net/sunrpc/xprtrdma2/rpcrdma2.ko)" \
		tools/testing/intree.sh
}

# Run alone (make check-long) it builds what it needs first: the kernel
# and the module are cache hits or an up-to-date make after make check.
phase_integration_long() {
	tools/testing/kernel/build.sh --variant "$kernel" >/dev/null || die "the testbed kernel did not build"
	step "module" make -s KERNEL="$kernel" modules
	tools/testing/integration/run-all.sh --tier long
}

phase_kernel_debug() {
	tools/testing/kernel/build.sh --variant debug >/dev/null
}

phase_module_debug() {
	local krel
	step "module for the debug kernel" make -s modules-debug
	step "KUnit variant for the debug kernel" make -s modules-kunit-debug
	krel=$(cat "$(dirname "$(tools/testing/kernel/build.sh --variant debug --kdir)")/kernelrelease")
	step "build/debug modules are for $krel" bash -c '
		for ko in build/debug/rpcrdma2.ko build/kunit-debug/rpcrdma2.ko; do
			v=$(modinfo -F vermagic "$ko") && [ "${v%% *}" = "$1" ] ||
				{ echo "$ko: vermagic \"$v\", kernel $1" >&2; exit 1; }
		done' _ "$krel"
}

phase_kunit_debug() {
	RPCRDMA2_KERNEL_VARIANT=debug tools/testing/kunit/run.sh
}

phase_integration_debug() {
	RPCRDMA2_KERNEL_VARIANT=debug tools/testing/integration/run-all.sh "${DEBUG_TESTS[@]}"
}

run_phase() {
	local p=$1 dep=${needs[$1]:-} t0 rc
	if [ -n "$dep" ] && [ "${status[$dep]:-}" = FAIL ]; then
		log "phase $p: not run because phase $dep failed"
		status[$p]=FAIL took[$p]=0
		return
	fi
	log "===== phase $p ====="
	t0=$(date +%s)
	( "phase_${p//-/_}" )
	rc=$?
	took[$p]=$(($(date +%s) - t0))
	if [ $rc = 0 ]; then status[$p]=PASS; else status[$p]=FAIL; fi
	log "===== phase $p: ${status[$p]} in ${took[$p]} s ====="
}

phases=("$@")
((${#phases[@]})) || phases=("${ALL[@]}")
for p in "${phases[@]}"; do
	declare -F "phase_${p//-/_}" >/dev/null || die "unknown phase '$p' (have: ${ALL[*]} ${OTHER_PHASES[*]} ${DEBUG_PHASES[*]})"
done
for p in "${phases[@]}"; do run_phase "$p"; done

pass=0 fail=0
echo
echo "phase              result  seconds"
for p in "${phases[@]}"; do
	printf '%-18s %-7s %s\n' "$p" "${status[$p]}" "${took[$p]}"
	if [ "${status[$p]}" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "check: $pass passed, $fail failed"
[ $fail = 0 ]
