#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-v2-faults.sh: a clean responder on 20050, one
# responder per kind of the malformed-message catalogue on 20100 and up (in
# the order `rpcrdma-responder --list-malformed` prints them, each
# malforming the 4th reply of every connection), and one per other fault
# switch on 20060-20064 (see that test).

BIN=/src/tools/responder/target/release/rpcrdma-responder
[ -x "$BIN" ] || { echo "no responder binary at $BIN (tools/responder/build.sh)"; exit 1; }
RESPONDER_INSTANCES="20050
20060 --err-nth 4:10
20061 --disconnect-after 6
20062 --no-connprop --no-private-data --credits 2
20063 --delay-nth 4:1500"
"$BIN" --list-malformed >/tmp/malformed-kinds
port=20100
while read -r kind _; do
	RESPONDER_INSTANCES+=$'\n'"$port --malform-nth 4:$kind"
	port=$((port + 1))
done </tmp/malformed-kinds
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
