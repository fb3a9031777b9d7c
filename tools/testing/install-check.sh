#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make install` into a staging root, as a user's `make install` would
# install into /: the testbed kernel's own module tree is copied into
# $STAGE first, so that depmod sees a whole tree. Checks that rpcrdma2.ko
# lands in updates/ and is in modules.dep, that the modprobe.d snippet is
# installed and makes `modprobe rpcrdma` (the kernel's request_module for
# a proto=rdma mount) load rpcrdma2, and that modinfo describes every
# parameter. The guest test rpcrdma2-install then loads and autoloads the
# module from this tree.
#
#   install-check.sh [STAGE]     default: $RPCRDMA2_TOP/.install-stage

set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA2_TOP"

STAGE=${1:-$RPCRDMA2_TOP/.install-stage}
kroot=$(dirname "$(tools/testing/kernel/build.sh --kdir)")
krel=$(cat "$kroot/kernelrelease")
rm -rf "$STAGE"
mkdir -p "$STAGE/lib/modules"
cp -a "$kroot/mods/lib/modules/$krel" "$STAGE/lib/modules/"
make -s install KERNEL="$RPCRDMA2_KERNEL_VARIANT" INSTALL_MOD_PATH="$STAGE" DESTDIR="$STAGE" >/dev/null

mod=$STAGE/lib/modules/$krel/updates/rpcrdma2.ko
[ -f "$mod" ] || die "make install did not install $mod"
grep -q '^updates/rpcrdma2.ko:' "$STAGE/lib/modules/$krel/modules.dep" ||
	die "depmod did not add updates/rpcrdma2.ko to modules.dep"
conf=$STAGE/etc/modprobe.d/rpcrdma2.conf
cmp -s "$conf" samples/modprobe.d/rpcrdma2.conf || die "make install did not install $conf"
# What the kernel's request_module("rpcrdma") becomes on this machine.
show=$(modprobe -d "$STAGE" -S "$krel" -C "$STAGE/etc/modprobe.d" --show-depends rpcrdma)
grep -q 'install /sbin/modprobe --ignore-install rpcrdma2' <<<"$show" ||
	die "with the snippet, modprobe rpcrdma does not load rpcrdma2: $show"
# Every parameter (each module_param() of rpcrdma/shim.c) described.
params=$(sed -n 's/^module_param(\([a-z0-9_]*\),.*/\1/p' rpcrdma/shim.c)
[ -n "$params" ] || die "no module_param() found in rpcrdma/shim.c"
for p in $params; do
	modinfo -F parm "$mod" | grep -q "^$p:.\{20,\}" ||
		die "modinfo: parameter $p has no description"
done
echo "make install: $mod in modules.dep, modprobe.d snippet, parameters described"
