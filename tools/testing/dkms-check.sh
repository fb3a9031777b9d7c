#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms.conf works: `dkms build` of the committed tree (git ls-files, as a
# release tarball would carry it) against the testbed kernel, in a private
# DKMS tree, must produce rpcrdma2.ko. Installs Debian's dkms if missing.

set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA2_TOP"

ensure_debs dkms
kdir=$(tools/testing/kernel/build.sh --kdir)
krel=$(cat "$(dirname "$kdir")/kernelrelease")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
[ -n "$ver" ] || die "dkms.conf has no PACKAGE_VERSION"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src/rpcrdma2-$ver
mkdir -p "$src" "$tmp/dkms"
git ls-files -z | xargs -0 cp --parents -t "$src"
if ! LLVM=$RPCRDMA2_LLVM dkms build --dkmstree "$tmp/dkms" --sourcetree "$tmp/src" \
	-m rpcrdma2 -v "$ver" -k "$krel" --kernelsourcedir "$kdir" >"$tmp/out" 2>&1; then
	cat "$tmp/out" "$tmp"/dkms/rpcrdma2/"$ver"/build/make.log 2>/dev/null | tail -n 30 >&2
	die "dkms build failed"
fi
ko=$(find "$tmp/dkms/rpcrdma2/$ver/$krel" -name 'rpcrdma2.ko*' | head -n 1)
[ -n "$ko" ] || die "dkms build produced no rpcrdma2.ko"
echo "dkms build: rpcrdma2/$ver for $krel"
