#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: traces the
# chunks svcrdma decodes (Read segments with their XDR position, Write
# segments offered), the Write chunk segments it returns, and its Sends
# With Invalidate (remote invalidation, inv_rkey != 0) into
# /results/ctl/server-trace.txt.

set -euo pipefail
# shellcheck source=trace-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/trace-lib.sh"
trace_svcrdma svcrdma_decode_rseg svcrdma_decode_wseg svcrdma_encode_wseg \
	'svcrdma_post_send:inv_rkey != 0'
