#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-v2-recovery.sh: one responder per transport
# error on ports 20100-20109 (version 2), each refusing the Calls that
# carry the chunk the error is about:
#   20100 Read chunks refused (RDMA2_ERR_READ_CHUNKS, max 0)
#   20101 no Write chunks taken (RDMA2_ERR_REPLY_RESOURCE, the reply's length)
#   20102 at most 2 segments per chunk (RDMA2_ERR_SEGMENTS 2)
#   20103 the first Call with a Write chunk: RDMA2_ERR_WRITE_CHUNKS
#   20104 the first Call with a Write chunk: RDMA2_ERR_WRITE_RESOURCE
#   20105 the second Call without chunks: RDMA2_ERR_REPLY_RESOURCE (at its reply)
#   20106 the first two Calls with Read chunks: RDMA2_ERR_READ_CHUNKS
#         (the second is the Position-Zero Read resend: it must fail)
#   20107 the first Call with a Write chunk: RDMA2_ERR_SYSTEM
#   20108 the first four Calls with a Write chunk: BAD_XDR, INVAL_HTYPE,
#         INVAL_FLAG, and code 42 (undefined)
#   20109 the first Call with a Reply chunk: RDMA2_ERR_REPLY_RESOURCE for
#         more than that Reply chunk, which covers the RPC's whole buffer

RESPONDER_INSTANCES="20100 --refuse-read-chunks
20101 --no-write-chunks
20102 --max-segs 2
20103 --err-calls write --err-nth 1:6
20104 --err-calls write --err-nth 1:8
20105 --err-calls inline --err-nth 2:9
20106 --err-calls read --err-nth 1:5 --err-nth 2:5
20107 --err-calls write --err-nth 1:10
20108 --err-calls write --err-nth 1:2 --err-nth 2:3 --err-nth 3:4 --err-nth 4:42
20109 --err-calls reply --err-nth 1:9"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
