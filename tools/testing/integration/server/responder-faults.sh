#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-v2-faults.sh: a clean responder on 20050 and
# one responder per fault switch on 20060 and up (see that test).

RESPONDER_INSTANCES="20050
20060 --malform-nth 4:trunc-header
20061 --malform-nth 4:reserved-flag
20062 --malform-nth 4:write-count-overrun
20063 --malform-nth 4:credit-zero
20064 --malform-nth 4:bad-vers
20065 --malform-nth 4:foreign-inv
20066 --err-nth 4:10
20067 --disconnect-after 6
20068 --no-connprop --no-private-data --credits 2
20069 --delay-nth 4:1500"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
