#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for rpcrdma2-v2-backchannel.sh: nfsd's client state and
# conflicting accesses (nfsd-clients.sh, which restarts nfsd first), then
# the responder relaying nfsd's callbacks and probing each new
# backchannel with a CB_NULL of its own, on 20110 (versions 2 and 1) and
# 20111 (version 1 only, as svcrdma); on 20112 (versions 2 and 1) it
# relays callbacks and sends each connection one reverse-direction Call
# the client cannot serve (--bad-reverse-call); on 20113 one message of
# an unknown header type carrying the XID of a Call in flight
# (--unknown-htype-call); on 20114 a CB_NULL continued over two pieces
# when a session gets its backchannel (--continued-reverse-call); on
# 20115, with 1024-byte Receives (so the client's call threshold is
# 1024), it appends 150 CB_NOTIFY_LOCKs to every CB_COMPOUND it relays
# (--pad-callbacks), which makes the client's reply about 1.3 KB.

# shellcheck source=nfsd-clients.sh
. "$(dirname "${BASH_SOURCE[0]}")/nfsd-clients.sh"
RESPONDER_INSTANCES="20110 --relay-callbacks --probe-callbacks
20111 --v1-only --relay-callbacks --probe-callbacks
20112 --relay-callbacks --bad-reverse-call
20113 --relay-callbacks --unknown-htype-call
20114 --relay-callbacks --continued-reverse-call
20115 --relay-callbacks --inline 1024 --pad-callbacks 150"
# shellcheck source=responder.sh
. "$(dirname "${BASH_SOURCE[0]}")/responder.sh"
