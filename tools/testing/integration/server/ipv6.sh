#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Server script for tools/testing/vm/run.sh --server-script: gives the
# server's eth0 the IPv6 address fd00:100::1/64 (no duplicate address
# detection, so it is usable at once) beside its IPv4 one, and exports
# the export to fd00:100::/64 with the options server.sh gives the IPv4
# link. nfsd's rdma listener (server.sh: "rdma PORT" in
# /proc/fs/nfsd/portlist) listens on IPv4 and IPv6 both, so the client
# can mount over netid rdma6.

set -euo pipefail
ip -6 addr add fd00:100::1/64 dev eth0 nodad
ip -6 addr show dev eth0
opts=$(awk 'NR == 1 {sub(/^[^(]*\(/, ""); sub(/\)$/, ""); print}' /etc/exports)
printf '%s\tfd00:100::/64(%s)\n' "${NFS_EXPORT:-/export}" "$opts" >>/etc/exports
exportfs -ra
cat /etc/exports
exportfs -v
grep -E "^rdma" /proc/fs/nfsd/portlist
