#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# make bench: fio over rpcrdma2, the stock C client (rpcrdma.ko) and NFS/TCP,
# plus raw perftest between the same two guests, and metadata workloads
# (stat, ls -l, create/remove, untar) over NFS/TCP, the C client and
# rpcrdma2 to svcrdma and rpcrdma2 through the responder in versions 1 and
# 2, with the client's and the server's CPU time per operation, and on request exact
# per-RPC event counts of rpcrdma2 and the C client (counts.sh), in one
# testbed boot; then a table (mean, spread, ratios), a PNG chart and
# JSON/CSV results. --variant next (make bench KERNEL=next) does all of
# it on the Linux 7.3 testbed kernel with the module built for it.
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
perftest ib_write_bw/ib_read_bw/ib_send_lat, and the metadata workloads
(tools/testing/bench/meta.sh); N repeats of each.

configurations (--configs; 'fio', 'meta' and 'counts' stand for their
groups):
  raw    perftest              m-tcp  metadata over NFS/TCP
  tcp    fio, NFS/TCP          m-c    metadata, C client to svcrdma
  c      fio, C client         m-r2   metadata, rpcrdma2 to svcrdma
  c-1k   fio, C client, 1 KiB  m-v1   metadata, rpcrdma2 through the
  r2     fio, rpcrdma2                responder --v1-only (port 20051)
  r2-1k  fio, rpcrdma2, 1 KiB  m-v2   metadata, rpcrdma2 through the
                                      responder, version 2 (port 20050)
  c-resp fio, C client through the responder --v1-only (port 20051)
  m-c-resp  metadata, C client through the responder --v1-only
  c-resp0, m-c-resp0  the same through --responder-baseline's build
         (port 20052; not in 'fio' or 'meta')
  r2-0   fio, rpcrdma2 as r2 but the --module-baseline build (not in
         'fio')
  v2     fio, rpcrdma2 through the responder, version 2 (not in 'fio')
  v2-inl fio, the same with frwr=N: Message Continuation instead of
         chunks (not in 'fio')
  n-r2, n-c, n-r2-1k, n-c-1k  ('counts') exact
         per-RPC event counts (lock acquisitions, XID lookups, CQ work
         runs, doorbells, completions, copies, ...) of rpcrdma2 and the
         C client at the default sizes and at 1 KiB, over a fixed number
         of READs (tools/testing/bench/counts.sh; report DIR/counts.txt)

options:
  --variant NAME     testbed kernel: default (Linux 6.12) or next (Linux
                     7.3) (default: \$RPCRDMA2_KERNEL_VARIANT, else
                     default); the guests boot it, rpcrdma2 is the module
                     built for it (make KERNEL=NAME modules: rpcrdma2.ko,
                     build/next/rpcrdma2.ko) and the C client its rpcrdma.ko
  --repeats N        repeats per job (default 3)
  --runtime S        measured seconds per fio job and perftest bw run (default 10)
  --ramp S           unmeasured fio warm-up seconds per job (default 2)
  --size SIZE        size of each fio file on the server (default 128m)
  --lat-iters N      ib_send_lat iterations (default 2000)
  --configs 'LIST'   subset of the above (default: all but those marked:
                     'counts fio meta')
  --jobs 'LIST'      fio jobs of samples/fio/ to run (default: all three:
                     'randread-4k seqread-1m seqwrite-1m')
  --meta-vers 'V..'  NFS versions of the metadata workloads (default 4.1;
                     e.g. '4.1 3')
  --meta-files N     files in the metadata tree (default 3000)
  --meta-dirsize N   files per directory of the tree (default 1000)
  --meta-create N    files of the create/remove phases (default 300)
  --untar 'DIRS'     kernel source directories in the untar tarball
                     (default 'fs/nfs net/sunrpc')
  --linux-src DIR    kernel source tree for the tarball (default: the
                     testbed kernel's, \$RPCRDMA2_CACHE/src/linux-source-
                     6.12.* or, for next, linux-source-7.3.*)
  --results DIR      results directory (default: a new directory under
                     \$RPCRDMA2_CACHE/bench/)
  --timeout S        limit for the whole testbed run (default: computed)
  --responder-baseline BIN  also run responder binary BIN (e.g. a build
                     of an older commit) on port 20052 --v1-only, for
                     c-resp0 and m-c-resp0: before and after in one boot
  --count-rpcs N     READ RPCs each counts run measures (default 2000)
  --module-baseline KO  also load rpcrdma2 module KO (e.g. a build of an
                     older commit, for the --variant kernel) for r2-0:
                     the module before and after in one boot
  --profile          record a cpu-clock profile of the client guest (perf,
                     the host's linux-perf, 1000 Hz, all CPUs, call graphs)
                     over each fio run's CPU-sampling interval; perf's
                     reports go beside the fio outputs (fio.CFG.JOB.N.perf-
                     self.txt, -children.txt, -dso.txt); and of the server
                     guest over the same interval (testbed/server/bench/
                     fio.CFG.JOB.N.srv-folded.txt, -srv-perf-self.txt):
                     the report gives the server's CPU per I/O by
                     component (the responder's code, its libraries, its
                     system calls; nfsd, svcrdma, rdma_rxe). The sampling
                     costs a little CPU, so a profiled run's numbers are
                     not the reference numbers. With rpcrdma2 loaded, also
                     its raw call chains and load addresses
                     (fio.*.perf-ips.gz, -module.txt) and a copy of the
                     .ko, from which hotspots.py writes DIR/hotspots.txt:
                     its time per function, source line and instruction.
                     The build (without --no-build) then adds line tables
                     (KRUSTFLAGS=-Cdebuginfo=1 KCFLAGS=-g: the same code)
  --no-build         do not run 'make -s KERNEL=NAME modules' first
  --report-only DIR  only (re)build the report from DIR's raw results
  -h, --help         this text

Writes DIR/bench.txt (the table), DIR/bench.json, DIR/bench.csv,
DIR/bench.png (and with --profile DIR/hotspots.txt, with 'counts'
DIR/counts.txt and counts.json); the raw outputs are in
DIR/testbed/client/bench/.
Exit status: the testbed run's, or 1 if any selected configuration has a
run without a number (the report names them).
EOF
}

FIO_CONFIGS='raw tcp c c-1k r2-1k r2 c-resp' META_CONFIGS='m-tcp m-c m-r2 m-v1 m-v2 m-c-resp'
COUNTS_CONFIGS='n-r2 n-c n-r2-1k n-c-1k'
repeats=3 runtime=10 ramp=2 size=128m lat_iters=2000 configs='counts fio meta' count_rpcs=2000
jobs='randread-4k seqread-1m seqwrite-1m'
meta_vers=4.1 meta_files=3000 meta_dirsize=1000 meta_create=300
untar_dirs='fs/nfs net/sunrpc' linux_src=''
results='' timeout='' build=1 report_only='' resp_base='' mod_base='' profile=0
variant=$RPCRDMA2_KERNEL_VARIANT
while (($#)); do
	[[ $1 == --*=* ]] && set -- "${1%%=*}" "${1#*=}" "${@:2}"
	case $1 in
	--variant) variant=${2:?}; shift 2 ;;
	--repeats) repeats=${2:?}; shift 2 ;;
	--runtime) runtime=${2:?}; shift 2 ;;
	--ramp) ramp=${2:?}; shift 2 ;;
	--size) size=${2:?}; shift 2 ;;
	--lat-iters) lat_iters=${2:?}; shift 2 ;;
	--count-rpcs) count_rpcs=${2:?}; shift 2 ;;
	--configs) configs=${2:?}; shift 2 ;;
	--jobs) jobs=${2:?}; shift 2 ;;
	--meta-vers) meta_vers=${2:?}; shift 2 ;;
	--meta-files) meta_files=${2:?}; shift 2 ;;
	--meta-dirsize) meta_dirsize=${2:?}; shift 2 ;;
	--meta-create) meta_create=${2:?}; shift 2 ;;
	--untar) untar_dirs=${2:?}; shift 2 ;;
	--linux-src) linux_src=${2:?}; shift 2 ;;
	--results) results=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--no-build) build=0; shift ;;
	--profile) profile=1; shift ;;
	--responder-baseline) resp_base=${2:?}; shift 2 ;;
	--module-baseline) mod_base=${2:?}; shift 2 ;;
	--report-only) report_only=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "${0##*/}: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
for v in repeats runtime lat_iters count_rpcs meta_files meta_dirsize meta_create ${timeout:+timeout}; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] ||
		{ echo "${0##*/}: --${v//_/-}: not a positive number: ${!v}" >&2; exit 2; }
done
# The kernel measured on: the guests boot it (vm/run.sh follows
# RPCRDMA2_KERNEL_VARIANT) and load the rpcrdma2.ko built for it
# (lib.sh module_ko); the debug kernel's figures would measure KASAN and
# lockdep, not the transports.
case $variant in
default | next) ;;
debug) echo "${0##*/}: --variant debug: not for measurements (KASAN, lockdep, ...); default or next" >&2; exit 2 ;;
*) echo "${0##*/}: --variant: no kernel variant '$variant' (default or next)" >&2; exit 2 ;;
esac
export RPCRDMA2_KERNEL_VARIANT=$variant
variant_toolchain "$variant"
KO=$(module_ko "$variant")
[[ $ramp =~ ^[0-9]+$ ]] || { echo "${0##*/}: --ramp: not a number: $ramp" >&2; exit 2; }
[[ $size =~ ^[1-9][0-9]*[kmg]$ ]] || { echo "${0##*/}: --size: want e.g. 128m: $size" >&2; exit 2; }
for j in $jobs; do
	[ -f "samples/fio/$j.fio" ] || { echo "${0##*/}: --jobs: no samples/fio/$j.fio" >&2; exit 2; }
done
[ -n "${jobs// /}" ] || { echo "${0##*/}: --jobs: empty" >&2; exit 2; }
njobs=$(wc -w <<<"$jobs")
expanded=
for c in $configs; do
	case $c in
	fio) expanded+=" $FIO_CONFIGS" ;;
	meta) expanded+=" $META_CONFIGS" ;;
	counts) expanded+=" $COUNTS_CONFIGS" ;;
	v2 | v2-inl | c-resp0 | m-c-resp0 | r2-0) expanded+=" $c" ;;
	*)
		[[ " $FIO_CONFIGS $META_CONFIGS $COUNTS_CONFIGS " == *" $c "* ]] ||
			{ echo "${0##*/}: unknown config $c" >&2; exit 2; }
		expanded+=" $c" ;;
	esac
done
configs=$(tr ' ' '\n' <<<"$expanded" | awk 'NF && !seen[$0]++' | tr '\n' ' ')
configs=${configs% }
for v in $meta_vers; do
	[[ $v =~ ^(3|4\.0|4\.1|4\.2)$ ]] || { echo "${0##*/}: --meta-vers: not an NFS version: $v" >&2; exit 2; }
done
(( meta_files <= 100 * meta_dirsize )) ||
	{ echo "${0##*/}: --meta-files: at most 100 directories of --meta-dirsize files" >&2; exit 2; }
has_meta=0 has_responder=0
for c in $configs; do
	case $c in
	v2 | v2-inl | c-resp) has_responder=1 ;;
	c-resp0) has_responder=1; [ -n "$resp_base" ] || { echo "${0##*/}: $c needs --responder-baseline" >&2; exit 2; } ;;
	r2-0)
		[ -n "$mod_base" ] || { echo "${0##*/}: $c needs --module-baseline KO (the rpcrdma2.ko to compare with)" >&2; exit 2; }
		[ -f "$mod_base" ] || { echo "${0##*/}: --module-baseline: no such file: $mod_base" >&2; exit 2; } ;;
	m-c-resp0) [ -n "$resp_base" ] || { echo "${0##*/}: $c needs --responder-baseline" >&2; exit 2; } ;&
	m-v1 | m-v2 | m-c-resp) has_responder=1 ;& m-*) has_meta=1 ;;
	esac
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
if ((profile)); then
	# the guests run the host's /usr: its perf is theirs
	command -v perf >/dev/null || ( ensure_debs linux-perf ) ||
		die "--profile needs perf (Debian linux-perf) on the host: install it and rerun"
	[ -x /usr/bin/perf ] || die "--profile: no /usr/bin/perf (the guests see the host's /usr)"
fi
ensure_plotting

report() { # DIR
	local rc=0 crc=0
	# (a run of counts configurations only has no line in runs.tsv)
	if [ "$(wc -l <"$1/testbed/client/bench/runs.tsv")" -gt 1 ] ||
		[ ! -f "$1/testbed/client/bench/counts.tsv" ]; then
		"$PY" "$HERE/report.py" "$1" || rc=$?
	fi
	# the exact per-RPC counts (configurations n-*): exit 3 if a run has
	# no numbers, as report.py
	if [ -f "$1/testbed/client/bench/counts.tsv" ]; then
		"$PY" "$HERE/counts-report.py" "$1" || crc=$?
		((rc != 0 || crc == 0)) || rc=$crc
	fi
	# --profile with rpcrdma2: where inside the module the time went
	if compgen -G "$1/testbed/client/bench/fio.*.perf-ips.gz" >/dev/null; then
		"$PY" "$HERE/hotspots.py" "$1" || log "WARNING: hotspots.py failed (exit $?)"
	fi
	return "$rc"
}

if [ -n "$report_only" ]; then
	report "$report_only"
	exit
fi

if ((build)); then
	step "testbed kernel ($variant) present" tools/testing/kernel/build.sh --variant "$variant" --check
	if ((profile)); then
		# line tables for hotspots.py (debug info changes no code)
		step "build $KO (with line tables)" make -s KERNEL="$variant" modules KRUSTFLAGS=-Cdebuginfo=1 KCFLAGS=-g
	else
		step "build $KO" make -s KERNEL="$variant" modules
	fi
fi

# The metadata workloads' inputs: the responder (in the server guest, from
# /src) and the untar tarball, in the tree's cargo target directory (the
# guests see the repository as /src; the directory is not under git).
if ((has_responder)); then
	step "build the responder (m-v1, m-v2, m-c-resp, c-resp, v2, v2-inl)" tools/responder/build.sh
	[ -x tools/responder/target/release/rpcrdma-responder ] ||
		die "no responder binary at tools/responder/target/release/rpcrdma-responder: the configurations through it cannot run"
fi
if [ -n "$resp_base" ]; then
	[ -x "$resp_base" ] || die "--responder-baseline: not an executable: $resp_base"
	mkdir -p target/bench
	cp "$resp_base" target/bench/responder-baseline || die "cannot copy $resp_base"
fi
# The baseline module goes where the guest looks for it (guest.sh, r2-0).
if [ -n "$mod_base" ]; then
	[ -f "$mod_base" ] || die "--module-baseline: no such file: $mod_base"
	[ "$(modinfo -F name "$mod_base" 2>/dev/null)" = rpcrdma2 ] ||
		die "--module-baseline: $mod_base is not an rpcrdma2 module (modinfo -F name)"
	[ -f "$KO" ] && [ "$(modinfo -F vermagic "$mod_base")" = "$(modinfo -F vermagic "$KO")" ] ||
		die "--module-baseline: $mod_base was not built for the kernel $KO was (vermagic '$(modinfo -F vermagic "$mod_base")')"
	mkdir -p target/bench
	cp "$mod_base" target/bench/rpcrdma2-baseline.ko.tmp &&
		mv target/bench/rpcrdma2-baseline.ko.tmp target/bench/rpcrdma2-baseline.ko ||
		die "cannot copy $mod_base"
fi
if ((has_meta)); then
	if [ -z "$linux_src" ]; then
		# the testbed kernel's own source (build.sh unpacks it there)
		linux_src=$(ls -d "$RPCRDMA2_CACHE/src/$(variant_source "$variant")".* 2>/dev/null | tail -n 1)
		[ -n "$linux_src" ] || die "no $(variant_source "$variant") source under $RPCRDMA2_CACHE/src (make kernel KERNEL=$variant) for the untar tarball; or --linux-src DIR"
	fi
	for d in $untar_dirs; do
		[ -d "$linux_src/$d" ] || die "--untar: no directory $d in $linux_src"
	done
	mkdir -p target/bench
	# shellcheck disable=SC2086 # a list of directories
	tar -C "$linux_src" --sort=name --owner=0 --group=0 -cf target/bench/untar.tar $untar_dirs ||
		die "cannot make target/bench/untar.tar from $linux_src"
	log "untar tarball: $untar_dirs of ${linux_src##*/}: $(tar -tf target/bench/untar.tar | grep -vc '/$') files, $(du -k target/bench/untar.tar | cut -f1) KiB"
fi

if [ -z "$results" ]; then
	base=$RPCRDMA2_CACHE/bench
	mkdir -p "$base"
	results=$base/$(date +%Y%m%d-%H%M%S)
	ln -sfn "${results##*/}" "$base/latest"
fi
mkdir -p "$results"
results=$(cd "$results" && pwd)

# What is measured: the module as built now (the guest snapshots it at
# start), on the kernel the guests boot (vm/run.sh: RPCRDMA2_KERNEL_DIR or
# the variant's cache entry).
[ -f "$KO" ] || die "$KO is not built (make KERNEL=$variant modules)"
kroot=${RPCRDMA2_KERNEL_DIR:-}
if [ -z "$kroot" ]; then
	kroot=$(tools/testing/kernel/build.sh --variant "$variant" --kdir) || die "cannot locate the $variant testbed kernel"
	kroot=${kroot%/build}
fi
krel=$(cat "$kroot/kernelrelease" 2>/dev/null) || die "testbed kernel ($variant) not built: no $kroot/kernelrelease"
{
	echo "rpcrdma2.ko sha256 $(sha256sum <"$KO" | cut -d' ' -f1) built $(date -r "$KO" '+%F %T %Z') ($KO, vermagic $(modinfo -F vermagic "$KO" | sed 's/ *$//'))"
	echo "testbed kernel: variant $variant, release $krel (${kroot##*/})"
	echo "git HEAD $(git rev-parse --short HEAD 2>/dev/null) $(git log -1 --format=%s 2>/dev/null)"
	echo "uncommitted changes in rpcrdma/ xdr/ Kbuild: $(git status --short -- rpcrdma xdr Kbuild 2>/dev/null | tr '\n' ' ')"
	echo "host: $(nproc) CPUs, $(uname -r), load at start $(cut -d' ' -f1-3 /proc/loadavg), qemu processes $(pgrep -c qemu-system || true)"
	echo "guests' QEMU -cpu: ${RPCRDMA2_VM_CPU:-the default of tools/testing/vm/run.sh} (testbed/*.qemu-cmdline)"
	((!has_meta)) || echo "untar: $untar_dirs of ${linux_src##*/} ($(tar -tf target/bench/untar.tar | grep -vc '/$') files)"
	((!has_responder)) || echo "responder sha256 $(sha256sum <tools/responder/target/release/rpcrdma-responder | cut -d' ' -f1)"
	[ -z "$resp_base" ] || echo "responder baseline (port 20052) $resp_base sha256 $(sha256sum <target/bench/responder-baseline | cut -d' ' -f1)"
	[ -z "$mod_base" ] || echo "rpcrdma2.ko baseline (r2-0) $mod_base sha256 $(sha256sum <target/bench/rpcrdma2-baseline.ko | cut -d' ' -f1) built $(date -r "$mod_base" '+%F %T %Z')"
} >"$results/build-info.txt"

ncfg=0 raw=0 nmeta=0 ncounts=0
for c in $configs; do
	case $c in raw) raw=1 ;; m-*) nmeta=$((nmeta + 1)) ;; n-*) ncounts=$((ncounts + 1)) ;; *) ncfg=$((ncfg + 1)) ;; esac
done
nmeta=$((nmeta * $(wc -w <<<"$meta_vers")))
# Bound (about twice the expected time; Documentation/testing.rst,
# "Durations", estimates the defaults): boot, then per
# repeat 4 NFS configurations x 3 fio jobs (ramp + runtime + ~7 s of mount,
# fio start-up and drain each), perftest (2 bandwidth runs + the latency
# run) and module switches; then the rpcrdma2 default-size probe (3 jobs,
# each limited to ramp + runtime + 30 s in the guest).  A job that hangs is
# killed by its own limit; if the whole run still overruns, the report
# covers everything measured before the timeout.
if [ -z "$timeout" ]; then
	nrep=$ncfg
	[[ " $configs " == *" r2 "* ]] && nrep=$((nrep - 1))
	timeout=$((180 + repeats * (nrep * njobs * (ramp + runtime + 7) + raw * (2 * runtime + 40) + 20)))
	[[ " $configs " == *" r2 "* ]] && timeout=$((timeout + njobs * (ramp + runtime + 30) + 60))
	# r2-0: two more module switches per repeat (an older build may run
	# its KUnit suites when loaded)
	[[ " $configs " == *" r2-0 "* ]] && timeout=$((timeout + repeats * 30))
	# counts: per run a mount, a warm-up, placing the probes (ftrace
	# patches the kernel's text for each), the measured READs at about
	# 25 ms each under the probes, and the reading
	timeout=$((timeout + repeats * ncounts * (90 + count_rpcs * 25 / 1000)))
	# --profile: perf writes and reports both guests' data after each run
	((!profile)) || timeout=$((timeout + repeats * ncfg * njobs * 40))
	# metadata: per configuration and repeat 6 mounts, the restat pause,
	# and about 3 ms per file stat'ed/listed, 30 ms per file created or
	# removed or untarred (a 1-repeat run took about half of this)
	((nmeta == 0)) || timeout=$((timeout + 60 + repeats * nmeta * 2 * (40 + (3 * 3 * meta_files + 30 * 2 * meta_create + 30 * 2 * $(tar -tf target/bench/untar.tar | wc -l)) / 1000)))
fi

# The server side needs the settings too: a generated wrapper around
# server.sh (run.sh copies a script from outside the repository into the run).
srv=$(mktemp /tmp/rpcrdma2-bench-server.XXXXXX)
trap 'rm -f "$srv"; [ -z "${loadpid:-}" ] || kill "$loadpid" 2>/dev/null || true' EXIT
mfiles=0
((!has_meta)) || mfiles=$meta_files
printf '%s=%q\n' BENCH_SIZE "$size" BENCH_RUNTIME "$runtime" BENCH_LAT_ITERS "$lat_iters" \
	BENCH_META_FILES "$mfiles" BENCH_META_DIRSIZE "$meta_dirsize" BENCH_RESPONDER "$has_responder" \
	BENCH_RESPONDER_BASELINE "$([ -n "$resp_base" ] && echo 1 || echo 0)" >"$srv"
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

log "bench: kernel $variant ($krel), $KO; repeats $repeats, runtime ${runtime}s (+${ramp}s ramp), configs: $configs; timeout ${timeout}s"
log "results: $results"
rc=0
tools/testing/vm/run.sh --timeout "$timeout" --results "$tb" --server-script "$srv" \
	tools/testing/bench/guest.sh --repeats "$repeats" --runtime "$runtime" --ramp "$ramp" \
	--size "$size" --lat-iters "$lat_iters" --configs "$configs" --jobs "$jobs" --meta-vers "$meta_vers" \
	--meta-files "$meta_files" --meta-dirsize "$meta_dirsize" --meta-create "$meta_create" \
	--count-rpcs "$count_rpcs" \
	${mod_base:+--module-baseline target/bench/rpcrdma2-baseline.ko} \
	$( ((profile)) && echo --profile) || rc=$?
kill "$loadpid" 2>/dev/null || true
loadpid=
# The kernel each guest ran (uname -r; client: environment.txt, server:
# server.sh), for the reports
gk() { # FILE: its 'kernel RELEASE' line's release, or ?
	local k
	k=$(sed -n 's/^kernel //p' "$1" 2>/dev/null | head -n 1)
	echo "${k:-?}"
}
echo "guests' kernel (uname -r): client $(gk "$tb/client/bench/environment.txt"), server $(gk "$tb/server/bench-kernel.txt")" >>"$results/build-info.txt"

if ((rc != 0)); then
	log "WARNING: the testbed run exited $rc (see $tb/run.log); reporting what was measured"
fi
[ -f "$tb/client/bench/runs.tsv" ] || die "no results from the guest (testbed exit $rc, see $tb/run.log)"
rrc=0
report "$results" || rrc=$?
case $rrc in
0) ;;
3)
	log "FAILED: configurations or jobs without a number (see FAILED in $results/bench.txt)"
	((rc != 0)) || rc=1 ;;
*) die "report failed (exit $rrc)" ;;
esac
if [ "$(wc -l <"$tb/client/bench/runs.tsv")" -gt 1 ]; then
	log "results: $results/bench.txt bench.json bench.csv bench.png"
fi
[ ! -f "$tb/client/bench/counts.tsv" ] || log "counts: $results/counts.txt counts.json counts-functions.txt"
exit "$rc"
