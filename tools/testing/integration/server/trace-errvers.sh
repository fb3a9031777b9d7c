#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: traces a bad
# RPC-over-RDMA version received (svcrdma_decode_badvers_err) and
# ERR_VERS sent (svcrdma_err_vers) into /results/ctl/server-trace.txt.

set -euo pipefail
# shellcheck source=trace-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/trace-lib.sh"
trace_svcrdma svcrdma_decode_badvers_err svcrdma_err_vers
