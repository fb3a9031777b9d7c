#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: kmemleak after umount and rmmod: nothing rpcrdma2 allocated is left unreferenced (v1 and v2 mounts, chunked I/O, injected reconnects)
# kernel-variant: debug
# run.sh-options: --timeout 1200 --server-script tools/testing/integration/server/responder.sh
#
# Client script for tools/testing/vm/run.sh, on the debug kernel
# (CONFIG_DEBUG_KMEMLEAK, no automatic scans; Documentation/testing.rst).
#   1. kmemleak is running; what it already suspects (boot) is cleared;
#   2. insmod rpcrdma2.ko; NFSv3 to svcrdma (version 1 after the probe)
#      and NFSv4.1 to the responder (server/responder.sh, port 20050,
#      version 2): files of 0 B to 1 MiB + 13 written (inline and Read
#      chunks) while disconnects are injected (fail_sunrpc: reconnects),
#      caches dropped, remounted, read back and compared (inline and Write
#      chunks), a 300-entry directory listed (Reply chunks), umount;
#   3. the address ranges of rpcrdma2's executable sections are recorded
#      and rpcrdma2 is unloaded;
#   4. kmemleak scans (twice) and no unreferenced object may have a frame
#      of rpcrdma2 in its allocation backtrace: by name, or, since the
#      module is gone, by address inside the recorded ranges.
# Objects other code leaked are listed in the log but do not fail the test.
# Before judging, the checker must find a synthetic report of a frame in
# those ranges, so a broken checker cannot pass.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
REF=/tmp/ref
SIZES=(0 1 3000 4097 65537 1048589)
F=/sys/kernel/debug/fail_sunrpc
[ -f "$KO" ] || tb_die "$KO is not built (make modules-debug)"

# 1. kmemleak on, boot's suspects forgotten
tb_kmemleak_on
[ -d "$F" ] || tb_die "no $F: the kernel lacks CONFIG_FAIL_SUNRPC"
tb_step "kmemleak: clear" sh -c "echo clear >$TB_KMEMLEAK"

# 2. the module's life: load, mounts with I/O and reconnects, unload
tb_random_files "$REF" f "${SIZES[@]}"
dmesg -C
tb_step "insmod rpcrdma2.ko" insmod "$KO"

inject() { # N: inject N disconnects, one every 20 transmissions
	echo 0 >"$F/verbose"
	echo 0 >"$F/probability"
	echo 20 >"$F/interval"
	echo "$1" >"$F/times"
	echo 100 >"$F/probability"
}

one_mount() { # PORT VERS
	local port=$1 vers=$2 dir s
	tb_log "=== port $port, NFS vers=$vers"
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	tb_assert_proto "$MNT" rdma
	dir=$MNT/leak-$port-$vers
	rm -rf "$dir"
	mkdir -p "$dir/big"
	inject 2
	for s in "${SIZES[@]}"; do
		cp "$REF/f$s" "$dir/f$s"
	done
	sync
	echo 0 >"$F/probability"
	(cd "$dir/big" && seq -f 'entry-%04g' 1 300 | xargs touch)
	tb_umount "$MNT"
	tb_drop_caches
	NFS_RDMA_PORT=$port tb_mount "$vers" rdma "$MNT"
	for s in "${SIZES[@]}"; do
		cmp "$REF/f$s" "$dir/f$s" || tb_die "port $port vers=$vers: f$s differs after the round trip"
	done
	[ "$(ls "$dir/big" | wc -l)" = 300 ] || tb_die "port $port vers=$vers: the directory does not list 300 entries"
	rm -rf "$dir"
	tb_umount "$MNT"
}
one_mount "$NFS_RDMA_PORT" 3
one_mount 20050 4.1
n=$(dmesg | grep -c "rpcrdma2: connected to" || true)
tb_log "$n connects in all (the injected disconnects reconnected)"

# 3. where rpcrdma2's code was, then unload
RANGES=$RESULTS/rpcrdma2-text-ranges.txt
tb_module_text_ranges rpcrdma2 "$KO" >"$RANGES"
[ -s "$RANGES" ] || tb_die "no executable section of rpcrdma2 found (/sys/module/rpcrdma2/sections)"
grep -E '[[:space:]]\[rpcrdma2\]$' /proc/kallsyms | sort >"$RESULTS/rpcrdma2-kallsyms.txt" || true
tb_log "rpcrdma2's code: $(wc -l <"$RANGES") section(s), $(wc -l <"$RESULTS/rpcrdma2-kallsyms.txt") symbols"
tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2

# The checker itself: a frame inside the first range, printed as a bare
# address the way kmemleak prints a frame of an unloaded module, must be
# found; a report without one must not.
read -r lo _ <"$RANGES"
{
	echo "unreferenced object 0xffff888000000000 (size 8):"
	echo "  backtrace (crc 0):"
	echo "    __kmalloc_noprof+0x0/0x10"
	printf '    0x%x\n' $((16#$lo + 4))
} >/tmp/selftest-report
tb_kmemleak_findings rpcrdma2 "$RANGES" /tmp/selftest-report >/dev/null ||
	tb_die "kmemleak checker: missed a frame inside rpcrdma2's recorded code"
printf 'unreferenced object 0xffff888000000000 (size 8):\n  backtrace (crc 0):\n    kfree+0x0/0x10\n' |
	tb_kmemleak_findings rpcrdma2 "$RANGES" >/dev/null &&
	tb_die "kmemleak checker: flagged a report with no frame of rpcrdma2"

# 4. scan: objects must be over 5 s old to be reported
sleep 6
REPORT=$RESULTS/kmemleak.txt
tb_kmemleak_scan >"$REPORT"
total=$(grep -c '^unreferenced object' "$REPORT" || true)
tb_log "kmemleak: $total unreferenced object(s) in all (full report: kmemleak.txt)"
if tb_kmemleak_findings rpcrdma2 "$RANGES" "$REPORT" >"$RESULTS/kmemleak-rpcrdma2.txt"; then
	echo "--- kmemleak: objects allocated through rpcrdma2 and never freed:"
	# Name the bare addresses by the symbols rpcrdma2 had before rmmod.
	while IFS= read -r line; do
		if [[ $line =~ ^[[:space:]]+0x([0-9a-f]+)$ ]]; then
			a=$((16#${BASH_REMATCH[1]}))
			sym=$(awk -v a="$(printf '%016x' "$a")" '$1 <= a {s = $1 " " $3} END {print s}' \
				"$RESULTS/rpcrdma2-kallsyms.txt")
			[ -z "$sym" ] || line+="  (${sym#* }+0x$(printf '%x' $((a - 16#${sym%% *}))) [rpcrdma2])"
		fi
		echo "$line"
	done <"$RESULTS/kmemleak-rpcrdma2.txt"
	tb_die "kmemleak: $(grep -c '^unreferenced object' "$RESULTS/kmemleak-rpcrdma2.txt") unreferenced object(s) allocated through rpcrdma2"
fi
((total == 0)) || { echo "--- other unreferenced objects (not rpcrdma2's):"; grep -A1 '^unreferenced object' "$REPORT" | head -n 40; }
tb_log "rpcrdma2 kmemleak: nothing of rpcrdma2's unreferenced after umount and rmmod"
