#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# make bench: fio over rpcrdma2, the stock C client (rpcrdma.ko) and NFS/TCP,
# plus raw perftest between the same two guests, in one testbed boot; then
# a table (mean, spread, ratios), a PNG chart and JSON/CSV results.
# See Documentation/benchmarks.rst.
#
#   tools/testing/bench/run.sh [options]
#   tools/testing/bench/run.sh --report-only RESULTS_DIR

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"
cd "$RPCRDMA2_TOP"

usage() {
	cat <<EOF
usage: ${0##*/} [options]
       ${0##*/} --report-only RESULTS_DIR

Boots the two testbed guests once and runs, in the client guest, the fio
jobs of samples/fio/ (4 KiB random read iodepth 32, 1 MiB sequential read
and write iodepth 4, direct I/O, NFSv4.1) over NFS/TCP, the C client
(default and 1 KiB rsize/wsize), rpcrdma2 (1 KiB, and the default sizes),
and perftest ib_write_bw/ib_read_bw/ib_send_lat; N repeats of each.

options:
  --repeats N        repeats per job (default 3)
  --runtime S        measured seconds per fio job and perftest bw run (default 10)
  --ramp S           unmeasured fio warm-up seconds per job (default 2)
  --size SIZE        size of each fio file on the server (default 128m)
  --lat-iters N      ib_send_lat iterations (default 2000)
  --configs 'LIST'   subset of: raw tcp c c-1k r2-1k r2 (default: all)
  --results DIR      results directory (default: a new directory under
                     \$RPCRDMA2_CACHE/bench/)
  --timeout S        limit for the whole testbed run (default: computed)
  --no-build         do not run 'make -s modules' first
  --report-only DIR  only (re)build the report from DIR's raw results
  -h, --help         this text

Writes DIR/bench.txt (the table), DIR/bench.json, DIR/bench.csv,
DIR/bench.png; the raw fio/perftest outputs are in DIR/client/bench/.
EOF
}

repeats=3 runtime=10 ramp=2 size=128m lat_iters=2000 configs='raw tcp c c-1k r2-1k r2'
results='' timeout='' build=1 report_only=''
while (($#)); do
	[[ $1 == --*=* ]] && set -- "${1%%=*}" "${1#*=}" "${@:2}"
	case $1 in
	--repeats) repeats=${2:?}; shift 2 ;;
	--runtime) runtime=${2:?}; shift 2 ;;
	--ramp) ramp=${2:?}; shift 2 ;;
	--size) size=${2:?}; shift 2 ;;
	--lat-iters) lat_iters=${2:?}; shift 2 ;;
	--configs) configs=${2:?}; shift 2 ;;
	--results) results=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--no-build) build=0; shift ;;
	--report-only) report_only=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "${0##*/}: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
for v in repeats runtime lat_iters ${timeout:+timeout}; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] ||
		{ echo "${0##*/}: --${v//_/-}: not a positive number: ${!v}" >&2; exit 2; }
done
[[ $ramp =~ ^[0-9]+$ ]] || { echo "${0##*/}: --ramp: not a number: $ramp" >&2; exit 2; }
[[ $size =~ ^[1-9][0-9]*[kmg]$ ]] || { echo "${0##*/}: --size: want e.g. 128m: $size" >&2; exit 2; }
for c in $configs; do
	[[ " raw tcp c c-1k r2-1k r2 " == *" $c "* ]] || { echo "${0##*/}: unknown config $c" >&2; exit 2; }
done

# The report needs matplotlib (Debian python3-matplotlib) in the system
# python; check before spending a quarter of an hour on the guests.
PY=/usr/bin/python3
ensure_plotting() {
	if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
		( ensure_debs python3-matplotlib ) ||
			die "cannot install python3-matplotlib (needed for the chart): install it and rerun"
		"$PY" -c 'import matplotlib' ||
			die "python3-matplotlib is installed but '$PY -c \"import matplotlib\"' fails"
	fi
}
[ -x "$PY" ] || ensure_debs python3
ensure_plotting

report() { # DIR
	"$PY" "$HERE/report.py" "$1"
}

if [ -n "$report_only" ]; then
	report "$report_only"
	exit
fi

if ((build)); then
	step "testbed kernel present" tools/testing/kernel/build.sh --check
	step "build rpcrdma2.ko" make -s modules
fi

if [ -z "$results" ]; then
	base=$RPCRDMA2_CACHE/bench
	mkdir -p "$base"
	results=$base/$(date +%Y%m%d-%H%M%S)
	ln -sfn "${results##*/}" "$base/latest"
fi
mkdir -p "$results"
results=$(cd "$results" && pwd)

# What is measured: the module as built now (the guest snapshots it at start).
[ -f rpcrdma2.ko ] || die "rpcrdma2.ko is not built (make modules)"
{
	echo "rpcrdma2.ko sha256 $(sha256sum <rpcrdma2.ko | cut -d' ' -f1) built $(date -r rpcrdma2.ko '+%F %T %Z')"
	echo "git HEAD $(git rev-parse --short HEAD 2>/dev/null) $(git log -1 --format=%s 2>/dev/null)"
	echo "uncommitted changes in rpcrdma/ xdr/ Kbuild: $(git status --short -- rpcrdma xdr Kbuild 2>/dev/null | tr '\n' ' ')"
	echo "host: $(nproc) CPUs, $(uname -r), load at start $(cut -d' ' -f1-3 /proc/loadavg), qemu processes $(pgrep -c qemu-system || true)"
} >"$results/build-info.txt"

ncfg=0 raw=0
for c in $configs; do
	case $c in raw) raw=1 ;; *) ncfg=$((ncfg + 1)) ;; esac
done
# Bound (expected: ~15 min for the defaults on an idle host): boot, then per
# repeat 4 NFS configurations x 3 fio jobs (ramp + runtime + ~7 s of mount,
# fio start-up and drain each), perftest (2 bandwidth runs + the latency
# run) and module switches; then the rpcrdma2 default-size probe (3 jobs,
# each limited to ramp + runtime + 30 s in the guest).  A job that hangs is
# killed by its own limit; if the whole run still overruns, the report
# covers everything measured before the timeout.
if [ -z "$timeout" ]; then
	nrep=$ncfg
	[[ " $configs " == *" r2 "* ]] && nrep=$((nrep - 1))
	timeout=$((180 + repeats * (nrep * 3 * (ramp + runtime + 7) + raw * (2 * runtime + 40) + 20)))
	[[ " $configs " == *" r2 "* ]] && timeout=$((timeout + 3 * (ramp + runtime + 30) + 60))
fi

# The server side needs the settings too: a generated wrapper around
# server.sh (run.sh copies a script from outside the repository into the run).
srv=$(mktemp /tmp/rpcrdma2-bench-server.XXXXXX)
trap 'rm -f "$srv"; [ -z "${loadpid:-}" ] || kill "$loadpid" 2>/dev/null || true' EXIT
printf '%s=%q\n' BENCH_SIZE "$size" BENCH_RUNTIME "$runtime" BENCH_LAT_ITERS "$lat_iters" >"$srv"
echo '. /src/tools/testing/bench/server.sh' >>"$srv"

# Host load during the run (other guests on this 2-core machine skew numbers).
tb=$results/testbed
mkdir -p "$tb"
(
	while :; do
		printf '%s %s qemu=%s\n' "$(date +%T)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
			"$(pgrep -c qemu-system || true)"
		sleep 15
	done
) >"$results/host-load.txt" 2>/dev/null &
loadpid=$!

log "bench: repeats $repeats, runtime ${runtime}s (+${ramp}s ramp), configs: $configs; timeout ${timeout}s"
log "results: $results"
rc=0
tools/testing/vm/run.sh --timeout "$timeout" --results "$tb" --server-script "$srv" \
	tools/testing/bench/guest.sh --repeats "$repeats" --runtime "$runtime" --ramp "$ramp" \
	--size "$size" --lat-iters "$lat_iters" --configs "$configs" || rc=$?
kill "$loadpid" 2>/dev/null || true
loadpid=

if ((rc != 0)); then
	log "WARNING: the testbed run exited $rc (see $tb/run.log); reporting what was measured"
fi
[ -f "$tb/client/bench/runs.tsv" ] || die "no results from the guest (testbed exit $rc, see $tb/run.log)"
report "$results" || die "report failed"
log "results: $results/bench.txt bench.json bench.csv bench.png"
exit "$rc"
