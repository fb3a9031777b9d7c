#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: rpcrdma2 tracepoints: every event exists; connect, negotiation, marshal decisions, Send signalling, registration and invalidation proven by them
#
# Client script for tools/testing/vm/run.sh (runs in the client guest),
# rpcrdma2 on the client, stock nfsd/svcrdma (version 1) on the server:
#   1. the trace system rpcrdma2 has every event of rpcrdma/trace.h;
#   2. with all of them enabled, an NFSv4.1 mount at the default sizes:
#      the connection is traced (rpcrdma2_connect vers=2, the peer's
#      private data), the first Call is the version 2 probe
#      (rpcrdma2_marshal probe=1 vers=2), svcrdma's ERR_VERS settles it
#      on version 1 (rpcrdma2_version), replies are classified
#      (rpcrdma2_reply) and credits granted (rpcrdma2_credits);
#   3. metadata (stat of 50 files with cold caches) marshals every
#      Call and Reply inline: no chunk, no registration;
#   4. 100 stats on a noac mount, one at a time: every Call's Send is
#      traced (rpcrdma2_post_send), some inline Sends signalled and some
#      not, as rpcrdma/proto/signal.rs decides (never 16 unsignalled in
#      a row);
#   5. a 1 MiB O_DIRECT write goes with a Read chunk and a 1 MiB O_DIRECT
#      read with a Write chunk, each with its MRs registered
#      (rpcrdma2_mr_reg) and invalidated (rpcrdma2_mr_inv) under its XID,
#      the write's Send signalled after its REG_MRs;
#   6. umount traces the disconnect; with the events disabled again, I/O
#      adds nothing to the trace.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

KO=$RPCRDMA2_KO
MNT=/mnt/nfs
T=/sys/kernel/tracing
EVENTS=(connect connect_error disconnect pvtdata version connprop credits
	marshal reply peer_error mr_reg mr_inv reconnect bc_call bc_reply
	piece grant credit_wait keepalive post_send)
[ -f "$KO" ] || tb_die "$KO is not built (make modules)"

tb_step "insmod rpcrdma2.ko" insmod "$KO"
mountpoint -q "$T" || mount -t tracefs nodev "$T"
for e in "${EVENTS[@]}"; do
	[ -d "$T/events/rpcrdma2/rpcrdma2_$e" ] || tb_die "no tracepoint rpcrdma2:rpcrdma2_$e"
done
tb_log "trace system rpcrdma2 has its ${#EVENTS[@]} events"

echo 16384 >"$T/buffer_size_kb"
echo >"$T/trace"
echo 1 >"$T/events/rpcrdma2/enable"
echo 1 >"$T/tracing_on"

# ev EVENT [ERE]: trace lines of rpcrdma2_EVENT (matching ERE).
ev() { grep -E " rpcrdma2_$1: " "$T/trace" | grep -E -- "${2:-.}" || true; }
need() { # EVENT ERE WHAT
	[ -n "$(ev "$1" "$2")" ] || {
		grep rpcrdma2 "$T/trace" | tail -n 40 >&2
		tb_die "$3: no rpcrdma2_$1 event matching '$2'"
	}
}

tb_log "=== connect and negotiate (NFSv4.1, default sizes)"
tb_mount 4.1 rdma "$MNT"
tb_assert_proto "$MNT" rdma
need connect "peer=$NFS_SERVER.* vers=2 " "the connection"
need pvtdata "present=1 " "svcrdma's RFC 8797 private data"
need connprop "dir=sent " "our RDMA2_CONNPROP, the version 2 probe"
need version "vers=1 how=ERR_VERS" "svcrdma's ERR_VERS"
need reply "class=fallback" "the fallback to version 1 (nothing to send again)"
need reply "vers=1 class=deliver" "an inline reply"
need credits "credits=[1-9]" "a credit grant"
tb_log "connect, private data, probe, ERR_VERS fallback, replies and credits traced"

tb_log "=== metadata is inline"
mkdir "$MNT/meta"
for i in $(seq 1 50); do echo "$i" >"$MNT/meta/file-$i"; done
tb_umount "$MNT"
tb_drop_caches
tb_mount 4.1 rdma "$MNT"
# The mount's own Calls (EXCHANGE_ID and CREATE_SESSION offer a Reply
# chunk for their large reply buffers) are not metadata traffic.
echo >"$T/trace"
for i in $(seq 1 50); do stat "$MNT/meta/file-$i" >/dev/null; done
n=$(ev marshal | wc -l)
((n >= 50)) || tb_die "only $n Calls traced for 50 stats"
chunked=$(ev marshal | grep -Ev 'call=inline reply=inline' || true)
[ -z "$chunked" ] || tb_die "metadata Calls used chunks: $chunked"
[ -z "$(ev mr_reg)" ] || tb_die "metadata Calls registered memory"
tb_log "$n metadata Calls, every one inline both ways, no registration"

tb_log "=== inline Call Sends: some signalled, some not (rpcrdma/proto/signal.rs)"
# The wiring of SendSignal into post_with_regs: a kernel that signalled
# every inline Send (or none) fails here. Why this workload must yield
# both: a connection has max_requests + 2 = 130 Send buffers, and stats
# one at a time keep one Call in flight; an unsignalled Send's buffer
# comes back only with the next signalled completion, so at most
# SIGNAL_EVERY - 1 = 15 buffers are ever held and every Send leaves at
# least 114 free, far above LOW_BUFFERS (16). The low-buffer rule never
# fires; SIGNAL_EVERY alone decides: of every 16 inline Sends in a row,
# 15 go unsignalled and the 16th is signalled. noac makes every stat an
# RPC (about 5 with its revalidation), so 100 stats post at least 100
# inline Sends: at least 6 signalled, at least 90 unsignalled.
tb_umount "$MNT"
tb_mount 4.1 rdma "$MNT" noac
echo >"$T/trace"
for i in $(seq 1 100); do stat "$MNT/meta/file-$((i % 50 + 1))" >/dev/null; done
calls=$(ev marshal | wc -l)
posts=$(ev post_send | wc -l)
((calls >= 100)) || tb_die "only $calls Calls traced for 100 stats"
((posts == calls)) || tb_die "$calls Calls marshalled but $posts Sends posted (rpcrdma2_post_send)"
# signalled unsignalled longest-unsignalled-run unsignalled-while-low
# (a here-string: the guest has no /dev/fd for process substitution)
read -r sig uns run low <<<"$(ev post_send 'mrs=0 ' | awk '
	{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) f[kv[1]] = kv[2] }
	f["signaled"] == 1 { sig++; r[f["conn"]] = 0; next }
	{ uns++; if (++r[f["conn"]] > run) run = r[f["conn"]]; if (f["free"] <= 16) low++ }
	END { printf "%d %d %d %d\n", sig, uns, run, low }')"
tb_log "inline Call Sends: $sig signalled, $uns unsignalled (longest unsignalled run $run)"
((sig + uns == posts)) || tb_die "$((posts - sig - uns)) of $posts metadata Sends had REG_MRs"
((uns > 0)) || tb_die "every one of $sig inline Sends was signalled: SendSignal is not wired in"
((sig > 0)) || tb_die "none of $uns inline Sends was signalled"
((run < 16)) || tb_die "$run inline Sends in a row were unsignalled (SIGNAL_EVERY is 16)"
((low == 0)) || tb_die "$low inline Sends left 16 or fewer Send buffers free unsignalled"
tb_umount "$MNT"
tb_mount 4.1 rdma "$MNT"

tb_log "=== 1 MiB direct write and read use chunks, registered and invalidated"
head -c 1048576 /dev/urandom >/tmp/ref
echo >"$T/trace"
dd if=/tmp/ref of="$MNT/big" bs=1M count=1 oflag=direct status=none
w=$(ev marshal 'call=read ' | head -n 1)
[ -n "$w" ] || tb_die "the 1 MiB write sent no Read chunk"
wx=$(sed -n 's/.* xid=\(0x[0-9a-f]*\) .*/\1/p' <<<"$w")
need mr_reg "xid=$wx " "the write's registration"
need mr_inv "xid=$wx " "the write's invalidation"
need post_send "xid=$wx mrs=[1-9][0-9]* signaled=[01] " "the write's Send, chained after its REG_MRs"
tb_log "write: Read chunk, xid $wx registered and invalidated"
echo 3 >/proc/sys/vm/drop_caches
echo >"$T/trace"
dd if="$MNT/big" of=/tmp/back bs=1M count=1 iflag=direct status=none
cmp -s /tmp/ref /tmp/back || tb_die "the 1 MiB read returned other data"
r=$(ev marshal 'reply=write ' | head -n 1)
[ -n "$r" ] || tb_die "the 1 MiB read offered no Write chunk"
rx=$(sed -n 's/.* xid=\(0x[0-9a-f]*\) .*/\1/p' <<<"$r")
need mr_reg "xid=$rx " "the read's registration"
need mr_inv "xid=$rx " "the read's invalidation"
need reply "xid=$rx .*class=chunked" "the read's reply"
tb_log "read: Write chunk, xid $rx registered, answered with chunks, invalidated ($(ev mr_inv "xid=$rx " | sed -n 's/.*how=\([a-z]*\).*/\1/p' | sort -u | tr '\n' ' '))"

# A Send with REG_MRs follows the same batching as an inline one (the
# request keeps its MRs; the REG_MRs' contexts only hold references):
# 64 direct 4 KiB reads are 64 READs with a Write chunk: some of their
# Sends signalled, some not, never 16 Sends in a row unsignalled, and
# every read's data right.
tb_log "=== chunked Sends are signalled in batches"
head -c 262144 /dev/urandom >/tmp/ref4
dd if=/tmp/ref4 of="$MNT/small" bs=256k count=1 oflag=direct status=none
echo >"$T/trace"
for i in $(seq 0 63); do
	dd if="$MNT/small" of=/tmp/blk bs=4k count=1 skip="$i" iflag=direct status=none
	dd if=/tmp/ref4 of=/tmp/refblk bs=4k count=1 skip="$i" status=none
	cmp -s /tmp/blk /tmp/refblk || tb_die "4 KiB read $i returned other data"
done
# Runs over every Call's Send (the inline ones among them share the
# batch), counts over those with REG_MRs.
read -r csig cuns crun <<<"$(ev post_send | awk '
	{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) f[kv[1]] = kv[2] }
	f["signaled"] == 1 { if (f["mrs"] > 0) sig++; r[f["conn"]] = 0; next }
	{ if (f["mrs"] > 0) uns++; if (++r[f["conn"]] > run) run = r[f["conn"]] }
	END { printf "%d %d %d\n", sig, uns, run }')"
tb_log "chunked Call Sends: $csig signalled, $cuns unsignalled (longest unsignalled run $crun)"
((csig + cuns >= 64)) || tb_die "only $((csig + cuns)) Sends with REG_MRs for 64 direct 4 KiB reads"
((cuns > 0)) || tb_die "every one of $csig Sends with REG_MRs was signalled"
((csig > 0)) || tb_die "none of $cuns Sends with REG_MRs was signalled"
((crun < 16)) || tb_die "$crun Sends in a row were unsignalled (SIGNAL_EVERY is 16)"

tb_log "=== disconnect, and nothing traced when disabled"
rm -rf "$MNT/meta" "$MNT/big" "$MNT/small"
tb_umount "$MNT"
need disconnect "reason=" "the end of the connection"
echo 0 >"$T/events/rpcrdma2/enable"
echo >"$T/trace"
tb_mount 4.1 rdma "$MNT"
ls "$MNT" >/dev/null
tb_umount "$MNT"
[ -z "$(grep rpcrdma2_ "$T/trace" || true)" ] || tb_die "disabled events were traced"

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "rpcrdma2 tracepoints: all checks passed"
