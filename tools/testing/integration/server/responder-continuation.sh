#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-v2-continuation.sh (20080-20083, 20086) and
# rpcrdma2-v2-credit-reading.sh (20084, 20085): responders that continue
# replies and return credits in each of their grant patterns.
#   20080  every reply over 1024 bytes continued in 1024-byte pieces
#   20081  the same, --grant exact, 8 credits
#   20082  the same, --grant lazy, 8 credits
#   20083  4 credits, replies continued only when they must be (-00
#          §6.3.3.1: larger than the client's Receives, no Reply chunk)
#   20084  as 20080 with 8 credits, its credit words in the other reading
#          of -00 §4.3.1 (--credit-word total: the grant in the low half)
#   20085  the same with a zero high half (--credit-word total-zero-max)
#   20086  as 20080, the first three pieces of every continued reply
#          carrying 1, 2 and 3 bytes (--tiny-pieces)
#   20087  every reply over 64 bytes continued in 64-byte pieces: a
#          READ's reduced Reply too, its Write list in the last piece
#          (-00 §4.5.3)

RESPONDER_INSTANCES="20080 --continue-over 1024
20081 --continue-over 1024 --grant exact --credits 8
20082 --continue-over 1024 --grant lazy --credits 8
20083 --credits 4
20084 --continue-over 1024 --credit-word total --credits 8
20085 --continue-over 1024 --credit-word total-zero-max --credits 8
20086 --continue-over 1024 --tiny-pieces
20087 --continue-over 64"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
