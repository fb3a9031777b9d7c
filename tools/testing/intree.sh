#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# intree.sh: build rpcrdma2 as part of a kernel tree (Kconfig
# SUNRPC_XPRT_RDMA2, net/sunrpc/xprtrdma2/) rather than as an external
# module, in a copy of the testbed kernel's source (`make modules-intree`).
#
#   intree.sh [--config-only] [WORKDIR]     default WORKDIR: build/intree
#
#   1. WORKDIR/linux: the testbed kernel's source, hard-linked (cheap; the
#      files the steps below change are replaced, never written through a
#      link, so the cached source stays as it is), with this repository's
#      Kconfig, Kbuild, rpcrdma/ and xdr/src/ copied to
#      net/sunrpc/xprtrdma2/, `source "net/sunrpc/xprtrdma2/Kconfig"` added
#      to net/sunrpc/Kconfig and `obj-$(CONFIG_SUNRPC_XPRT_RDMA2) +=
#      xprtrdma2/` to net/sunrpc/Makefile: what a kernel tree carrying
#      rpcrdma2 has;
#   2. WORKDIR/build: the testbed kernel's .config with
#      SUNRPC_XPRT_RDMA2=m, through olddefconfig; fails unless Kconfig
#      keeps it (its dependencies hold);
#   3. (not with --config-only) modules_prepare (the Rust crates: a few
#      minutes on 2 cores) and net/sunrpc/xprtrdma2/rpcrdma2.ko, with the
#      testbed kernel's Module.symvers and, for modpost, its vmlinux.o;
#      fails unless the module is built and modinfo names it rpcrdma2.
#
# Needs the testbed kernel (make kernel).

set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RPCRDMA2_TOP"

config_only=0
if [ "${1:-}" = --config-only ]; then config_only=1; shift; fi
work=$(realpath -m "${1:-build/intree}")

kdir=$(tools/testing/kernel/build.sh --kdir)
[ -f "$kdir/.config" ] || die "no testbed kernel at $kdir: run 'make kernel'"
ksrc=$(realpath "$kdir/source")
[ -f "$ksrc/net/sunrpc/Kconfig" ] || die "no kernel source behind $kdir"

src=$work/linux out=$work/build
# Another kernel's source (KERNEL=next, then default): its build directory
# goes too (its generated host tools, scripts/kconfig's lexer among them,
# belong to the other source).
if [ ! -f "$src/.linked" ] || [ "$(cat "$src/.linked")" != "$ksrc" ]; then
	log "hard-linking $ksrc to $src"
	rm -rf "$src" "$out"
	mkdir -p "$work"
	# Across filesystems (the cache and the clone on different mounts) a
	# hard link cannot be made: copy instead (1.7 GiB more, same result).
	if ! cp -al "$ksrc" "$src" 2>/dev/null; then
		log "$src is on another filesystem than $ksrc: copying instead"
		rm -rf "$src"
		cp -a "$ksrc" "$src"
	fi
	echo "$ksrc" >"$src/.linked"
fi

# replace FILE: stdin becomes FILE's content through a new inode (the old
# one is the cached source's).
replace() {
	cat >"$1.new"
	mv "$1.new" "$1"
}

dest=$src/net/sunrpc/xprtrdma2
rm -rf "$dest"
mkdir -p "$dest"
find Kconfig Kbuild rpcrdma xdr/src -type f \
	\( -name Kconfig -o -name Kbuild -o -name '*.rs' -o -name '*.c' -o -name '*.h' \) \
	! -name bindings_generated.rs -exec cp --parents -t "$dest/" {} +
# rpcrdma/bindings.rs include!s bindings_generated.rs from its own
# directory, where an external module's build (and a kernel built in its
# source directory) writes it; with O= it is written under the output
# directory: point the source copy at it.
ln -s "$out/net/sunrpc/xprtrdma2/rpcrdma/bindings_generated.rs" "$dest/rpcrdma/bindings_generated.rs"
grep -q xprtrdma2 "$ksrc/net/sunrpc/Kconfig" && die "the cached source already names xprtrdma2"
{ cat "$ksrc/net/sunrpc/Kconfig"; echo 'source "net/sunrpc/xprtrdma2/Kconfig"'; } |
	replace "$src/net/sunrpc/Kconfig"
{ cat "$ksrc/net/sunrpc/Makefile"; echo 'obj-$(CONFIG_SUNRPC_XPRT_RDMA2) += xprtrdma2/'; } |
	replace "$src/net/sunrpc/Makefile"

mapfile -t vars < <(kmake_vars)
mkdir -p "$out"
cp "$kdir/.config" "$out/.config"
"$src/scripts/config" --file "$out/.config" --module SUNRPC_XPRT_RDMA2
step "olddefconfig with SUNRPC_XPRT_RDMA2=m" make -s -C "$src" O="$out" "${vars[@]}" olddefconfig
grep -qx 'CONFIG_SUNRPC_XPRT_RDMA2=m' "$out/.config" ||
	die "Kconfig dropped SUNRPC_XPRT_RDMA2 (its dependencies do not hold): $(grep SUNRPC_XPRT_RDMA "$out/.config")"
log "in-tree configuration: CONFIG_SUNRPC_XPRT_RDMA2=m"
((config_only)) && exit 0

cp "$kdir/Module.symvers" "$out/Module.symvers"
# modpost resolves an in-tree module's symbols against vmlinux.o of the
# output directory (Module.symvers is read only for external modules);
# without it every symbol is undefined. The testbed kernel has sunrpc and
# ib_core built in, so its vmlinux.o has all the module needs (read only:
# a link does).
ln -sfn "$kdir/vmlinux.o" "$out/vmlinux.o"
jobs=$(($(nproc) + 1))
step "modules_prepare" make -s -C "$src" O="$out" "${vars[@]}" -j"$jobs" modules_prepare
step "net/sunrpc/xprtrdma2/rpcrdma2.ko" make -s -C "$src" O="$out" "${vars[@]}" -j"$jobs" \
	net/sunrpc/xprtrdma2/rpcrdma2.ko
ko=$out/net/sunrpc/xprtrdma2/rpcrdma2.ko
[ -f "$ko" ] || die "no $ko"
[ "$(modinfo -F name "$ko")" = rpcrdma2 ] || die "$ko: modinfo does not name it rpcrdma2"
log "in-tree build: $ko ($(modinfo -F vermagic "$ko"))"
