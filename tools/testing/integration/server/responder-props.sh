#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-v2-props.sh: responders on ports 20090-20093
#   20090 --remote-invalidate                versions 2 and 1, R bit set
#   20091 --no-connprop                      a v2 server that never sends
#                                            RDMA2_CONNPROP
#   20092 --prop-segs 4 --prop-seg-size 65536 --connprop-pieces 3
#                                            small segment properties,
#                                            advertised (in a CONNPROP
#                                            continued over three
#                                            messages) and enforced
#   20093 --connprop-twice                   a second RDMA2_CONNPROP with
#                                            1024-byte sizes after the
#                                            first

RESPONDER_INSTANCES="20090 --remote-invalidate
20091 --no-connprop
20092 --prop-segs 4 --prop-seg-size 65536 --connprop-pieces 3
20093 --connprop-twice"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
