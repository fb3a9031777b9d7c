#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# integration-test: version 2 credit words in the other reading of -00 §4.3.1 from the responder (the grant in the low half; the high half the same, or zero): inline-only rpcrdma2 (frwr=0) continuing Calls and receiving continued replies, eight RPCs in flight, without stall and without overrunning the responder's Receives
# run.sh-options: --timeout 900 --server-script tools/testing/integration/server/responder-continuation.sh
# integration-tier: long
#
# Client script for tools/testing/vm/run.sh. The server runs six
# responders (server/responder-continuation.sh); this test uses two,
# 20084 and 20085, which continue every reply over 1024 bytes with 8
# credits and send their credit words in the other reading of -00
# §4.3.1: the grant (8, never zero) in the low half, the high half 8
# (20084, --credit-word total) or 0 (20085, total-zero-max). rpcrdma2
# takes the grant as its limit. Through each, with rpcrdma2 inline only
# (frwr=0, so every Call and Reply over 4096 bytes is continued), the
# cases of lib/continuation.sh:
#   1. (one_case, NFSv4.1) files of 3000, 65536 and 200003 bytes
#      written, caches dropped, remounted, read back and compared with
#      cmp; a 300-entry directory listed; the connection is on version 2;
#      rpcrdma2 traced and mountstats counts continued replies and
#      continued Calls; no memory registered; no reply error and no
#      kernel warning is logged;
#   2. (concurrent_case) eight RPCs in flight at once on a 256 KiB mount
#      (fio, a verifying writer and a reader): continued Calls and
#      replies neither stall (fio completes within its timeout) nor
#      overrun the responder's Receives (the responder accepts with
#      rnr_retry_count 0, so an overrun is an RNR error that drops the
#      connection: none is traced);
#   3. afterwards the responder received continued Call pieces and
#      nothing malformed, and counts one connection per mount (three: a
#      lost connection would add one).
# With 8 credits and every word read the other way the concurrent case
# is slow (about 1200 waits for credits per 8 MiB), so it moves 2 MiB per
# job here: still eight RPCs in flight, each side out of the other's
# credits.

set -euo pipefail
# shellcheck source=../vm/guest/lib.sh
. "$TESTBED_LIB"

# one_case, concurrent_case, cont_setup; stat_of (lib/counters.sh).
# shellcheck source=SCRIPTDIR/lib/continuation.sh
. "$SRC/tools/testing/integration/lib/continuation.sh"

cont_setup

for port in 20084 20085; do
	one_case $port 4.1 0
	concurrent_case $port 2m
	sleep 2
	tb_log "responder $port: $(tr '\n' ' ' <"/results/ctl/responder-$port.stats")"
	(($(stat_of $port malformed) == 0)) || tb_die "responder $port: rpcrdma2 sent malformed messages"
	(($(stat_of $port continuations_received) > 0)) || tb_die "responder $port: no continued Call piece received" # conformance: credit-other-reading
	# one_case mounts twice, concurrent_case once: one connection each
	(($(stat_of $port connections) == 3)) || tb_die "responder $port: $(stat_of $port connections) connections, not one per mount (a connection was lost)" # conformance: credit-other-reading
done
echo 1 >/sys/module/rpcrdma2/parameters/frwr

tb_step "rmmod rpcrdma2" tb_rmmod rpcrdma2
tb_log "the other reading of the credit word: all checks passed"
