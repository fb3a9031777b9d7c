#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-error-race.sh: two responders that answer
# every 5th Call after the first 60 of each connection with a transport
# error: on 20070 in version 2 (RDMA2_ERR_SYSTEM), on 20071 in version 1
# only (ERR_CHUNK, as svcrdma would).

RESPONDER_INSTANCES="20070 --err-every 60:5:10
20071 --v1-only --err-every 60:5:2"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
