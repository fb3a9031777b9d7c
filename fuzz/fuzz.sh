#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz/fuzz.sh - build and run the coverage-guided fuzz targets (libFuzzer
# through the libfuzzer-sys crate) on the machine's stable toolchain.
#
#   fuzz.sh build                    build every target (instrumented)
#   fuzz.sh smoke [SECONDS]          every target for SECONDS in total
#                                    (default 25), from the committed seeds,
#                                    in a scratch corpus; `make check` runs
#                                    this. Fails on a crash, a timeout, an
#                                    out-of-memory, or if the build fails.
#   fuzz.sh long [SECONDS] [TARGET...]
#                                    the documented long run: each TARGET
#                                    (default all) for SECONDS (default
#                                    900), growing fuzz/work/corpus/TARGET,
#                                    logs in fuzz/work/TARGET.log, crashes
#                                    in fuzz/artifacts/TARGET/; ends with a
#                                    table of executions and coverage.
#   fuzz.sh coverage [TARGET...]     source coverage that the corpora
#                                    (fuzz/work/corpus/TARGET and the
#                                    seeds) reach in xdr/ and
#                                    rpcrdma/proto/: replays them through
#                                    -Cinstrument-coverage builds; needs
#                                    llvm-profdata/llvm-cov of LLVM >= 19
#                                    (Debian: llvm-19; LLVM_COV_SUFFIX)
#   fuzz.sh repro TARGET FILE...     run TARGET on saved inputs (a crash
#                                    artifact), with a backtrace
#   fuzz.sh seeds                    regenerate corpus/ from valid encodings
#   fuzz.sh targets                  list the targets
#
# Why no cargo-fuzz and no nightly: cargo-fuzz passes -Zsanitizer=...
# (nightly only). The coverage instrumentation libFuzzer needs is LLVM's
# SanitizerCoverage pass, which stable rustc runs with -Cpasses=sancov-module
# and its options through -Cllvm-args (both stable codegen options); the
# libFuzzer runtime comes from the libfuzzer-sys crate, which compiles
# LLVM's libFuzzer sources with the system C++ compiler. No sanitizer
# runtime is needed: the codec and proto crates forbid unsafe code, and the
# profile keeps overflow checks and debug assertions on (as the kernel's
# CONFIG_RUST_OVERFLOW_CHECKS), so the bugs to find are panics, overflow
# traps and broken properties, all of which abort into libFuzzer's crash
# report.
#
# Environment: CARGO_BUILD_JOBS (default 1), FUZZ_NICE (default 10).
# The machine has 2 shared cores: one libFuzzer process at a time
# (-jobs/-workers are never raised here).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# ensure_debs and HOST_DEBS (cargo, rustfmt, g++ for libFuzzer's C++).
# shellcheck source=../tools/testing/lib.sh
. "$here/../tools/testing/lib.sh"
cd "$here"

TARGETS=(header propset pvtdata chunk_reply transport)
( ensure_debs "${HOST_DEBS[@]}" ) >&2 || { echo "fuzz.sh: prerequisites missing" >&2; exit 1; }
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
BIN=$here/target/$TRIPLE/release
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
NICE=(nice -n "${FUZZ_NICE:-10}")

# cargo-fuzz's instrumentation, minus the nightly-only sanitizer flag.
# --target keeps RUSTFLAGS off build scripts and proc macros.
SANCOV="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing"

die() { echo "fuzz.sh: $*" >&2; exit 1; }

build() {
	RUSTFLAGS="$SANCOV" "${NICE[@]}" cargo build --locked --release \
		--target "$TRIPLE" --bins \
		|| die "building the fuzz targets failed"
	for t in "${TARGETS[@]}"; do
		[ -x "$BIN/$t" ] || die "no binary for target $t"
		# Instrumented, or the engine is blind: refuse to run.
		[ "$(nm "$BIN/$t" | grep -c __sancov_gen_)" -gt 0 ] \
			|| die "target $t has no SanitizerCoverage counters"
	done
}

# run TARGET LOG CORPUS... LIBFUZZER-OPTIONS: one libFuzzer process; fails
# loudly on any crash, leak, timeout or OOM (libFuzzer exits non-zero and
# leaves the input in the artifact prefix).
run() {
	local t=$1 log=$2 corpus=$3 art=$4; shift 4
	mkdir -p "$corpus" "$art"
	local rc=0
	"${NICE[@]}" "$BIN/$t" -jobs=0 -workers=1 -timeout=10 -rss_limit_mb=1024 \
		-max_len=4096 -print_final_stats=1 -artifact_prefix="$art/" \
		"$@" "$corpus" "$here/corpus/$t" >"$log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] || ! grep -q "Done [0-9]* runs" "$log"; then
		echo "fuzz.sh: target $t FAILED (exit $rc); last lines of $log:" >&2
		tail -n 40 "$log" >&2
		ls -l "$art" >&2 || true
		return 1
	fi
}

# summary TARGET LOG: executions, coverage (of the instrumented edges),
# features, corpus size, speed.
summary() {
	local t=$1 log=$2 execs cov total ft corp eps
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	total=$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
	cov=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 | sed 's/.*cov: \([0-9]*\).*/\1/')
	ft=$(grep -E '^#[0-9]+.*ft: ' "$log" | tail -1 | sed 's/.*ft: \([0-9]*\).*/\1/')
	corp=$(grep -E '^#[0-9]+.*corp: ' "$log" | tail -1 | sed 's/.*corp: \([0-9]*\).*/\1/')
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	printf '%-12s %12s %8s/%-6s %8s %8s %10s\n' "$t" "$execs" "$cov" "$total" "$ft" "$corp" "$eps"
}

header_line() {
	printf '%-12s %12s %15s %8s %8s %10s\n' target executions "cov/edges" features corpus "exec/s"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
build)
	build
	;;
smoke)
	secs=${1:-25}
	per=$(( (secs + ${#TARGETS[@]} - 1) / ${#TARGETS[@]} ))
	cargo fmt --check || die "cargo fmt --check: run 'cargo fmt' in fuzz/"
	build
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	failed=0
	for t in "${TARGETS[@]}"; do
		[ -n "$(ls "corpus/$t")" ] || die "no seeds in corpus/$t"
		run "$t" "$scratch/$t.log" "$scratch/corpus-$t" "$scratch/artifacts-$t" \
			-max_total_time="$per" -seed=0 || { failed=1; mkdir -p artifacts; cp -r "$scratch/artifacts-$t" "artifacts/$t" 2>/dev/null || true; }
	done
	header_line
	for t in "${TARGETS[@]}"; do summary "$t" "$scratch/$t.log"; done
	[ "$failed" = 0 ] || die "a fuzz target failed (crash inputs kept in fuzz/artifacts/)"
	echo "fuzz.sh: smoke run passed: ${#TARGETS[@]} targets, 0 crashes"
	;;
long)
	secs=${1:-900}
	[ $# -gt 0 ] && shift
	sel=("$@")
	((${#sel[@]})) || sel=("${TARGETS[@]}")
	build
	mkdir -p work
	failed=0
	for t in "${sel[@]}"; do
		echo "fuzz.sh: $t for ${secs}s (log: fuzz/work/$t.log)"
		run "$t" "work/$t.log" "work/corpus/$t" "artifacts/$t" \
			-max_total_time="$secs" || failed=1
	done
	header_line | tee work/summary.txt
	for t in "${sel[@]}"; do summary "$t" "work/$t.log"; done | tee -a work/summary.txt
	[ "$failed" = 0 ] || die "a fuzz target failed (see fuzz/artifacts/)"
	;;
coverage)
	sel=("$@")
	((${#sel[@]})) || sel=("${TARGETS[@]}")
	sfx=${LLVM_COV_SUFFIX:--19}
	command -v "llvm-cov$sfx" >/dev/null || die "no llvm-cov$sfx (apt-get install llvm${sfx})"
	RUSTFLAGS="-Cinstrument-coverage --cfg fuzzing" CARGO_TARGET_DIR="$here/target/cov" \
		"${NICE[@]}" cargo build --locked --release --target "$TRIPLE" --bins \
		|| die "building the coverage binaries failed"
	cbin=$here/target/cov/$TRIPLE/release
	prof=$here/work/coverage
	rm -rf "$prof"; mkdir -p "$prof"
	objs=()
	for t in "${sel[@]}"; do
		dirs=("corpus/$t")
		[ -d "work/corpus/$t" ] && dirs+=("work/corpus/$t")
		LLVM_PROFILE_FILE="$prof/$t-%p.profraw" "${NICE[@]}" "$cbin/$t" -runs=0 \
			"${dirs[@]}" >"$prof/$t.log" 2>&1 || die "replaying the $t corpus failed"
		objs+=(-object "$cbin/$t")
	done
	"llvm-profdata$sfx" merge -sparse "$prof"/*.profraw -o "$prof/all.profdata"
	# Library code only: the fuzz harness, std and self tests excluded.
	"llvm-cov$sfx" report "${objs[@]:1}" -instr-profile="$prof/all.profdata" \
		--ignore-filename-regex='(/\.cargo/|/rustc/|/fuzz/|selftest\.rs)' \
		| tee "$prof/report.txt"
	echo "fuzz.sh: line-by-line: llvm-cov$sfx show ${objs[*]:1} -instr-profile=$prof/all.profdata"
	;;
repro)
	[ $# -ge 2 ] || die "usage: fuzz.sh repro TARGET FILE..."
	t=$1; shift
	build
	RUST_BACKTRACE=1 "$BIN/$t" "$@"
	;;
seeds)
	cargo run --locked --release --example gen_corpus
	;;
targets)
	printf '%s\n' "${TARGETS[@]}"
	;;
*)
	sed -n '4,22p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
