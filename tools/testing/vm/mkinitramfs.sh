#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck source-path=SCRIPTDIR
#
# Build (or reuse) the testbed guests' initramfs and print its path.
#
#   mkinitramfs.sh KDIR
#
# KDIR is the kernel build directory (tools/testing/kernel/build.sh --kdir);
# its usr/gen_init_cpio writes the archive, so no root is needed for the
# /dev/console node.  The archive holds only a static busybox, /init and the
# guest scripts of tools/testing/vm/guest/; everything else comes from the
# host over virtio-9p.  It is cached under $RPCRDMA2_CACHE/vm/ by the hash
# of its inputs.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib.sh"

KDIR=${1:?usage: mkinitramfs.sh KDIR}
GUEST=$HERE/guest
BUSYBOX=${RPCRDMA2_BUSYBOX:-/bin/busybox}

[ -x "$BUSYBOX" ] || die "initramfs: no busybox at $BUSYBOX (Debian package busybox-static)"
ldd_out=$(ldd "$BUSYBOX" 2>&1 || true)
grep -Eq 'not a dynamic executable|statically linked' <<<"$ldd_out" ||
	die "initramfs: $BUSYBOX is not statically linked (install busybox-static, not busybox)"

gen=$KDIR/usr/gen_init_cpio
if [ ! -x "$gen" ]; then
	gen=$RPCRDMA2_CACHE/vm/gen_init_cpio
	if [ ! -x "$gen" ]; then
		src=$KDIR/source/usr/gen_init_cpio.c
		[ -f "$src" ] || die "initramfs: neither $KDIR/usr/gen_init_cpio nor $src"
		cc=$(command -v cc || command -v gcc || command -v "clang$RPCRDMA2_LLVM") ||
			die "initramfs: no C compiler for gen_init_cpio"
		mkdir -p "$(dirname "$gen")"
		"$cc" -O2 -o "$gen.tmp" "$src" || die "initramfs: cannot build gen_init_cpio"
		mv "$gen.tmp" "$gen"
	fi
fi

list() {
	local d f
	echo "dir / 0755 0 0"
	echo "dir /dev 0755 0 0"
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "nod /dev/null 0666 0 0 c 1 3"
	for d in proc sys tmp run var usr etc mods src results export mnt root \
		.host .host/usr .host/etc .rw testbed testbed/bin; do
		echo "dir /$d 0755 0 0"
	done
	# Merged /usr, like the host: the host's binaries and libraries resolve.
	for d in bin sbin lib lib64; do
		echo "slink /$d usr/$d 0777 0 0"
	done
	echo "file /init $GUEST/init 0755 0 0"
	echo "file /testbed/busybox $BUSYBOX 0755 0 0"
	for f in "$GUEST"/*; do
		[ "${f##*/}" = init ] && continue
		echo "file /testbed/${f##*/} $f $(stat -c %a "$f") 0 0"
	done
}

key=$({
	echo "recipe=1"
	list
	sha256sum "$BUSYBOX" "$GUEST"/*
} | sha256sum | cut -c1-16)
out=$RPCRDMA2_CACHE/vm/initramfs-$key.cpio.gz
if [ ! -f "$out" ]; then
	mkdir -p "$(dirname "$out")"
	tmp=$(mktemp "$out.XXXXXX")
	list >"$tmp.list"
	"$gen" "$tmp.list" | gzip -1 >"$tmp" || { rm -f "$tmp" "$tmp.list"; die "initramfs: gen_init_cpio failed"; }
	rm -f "$tmp.list"
	chmod 0644 "$tmp"
	mv "$tmp" "$out"
	# Keep the cache small: drop archives unused for a day (a concurrent run
	# may be about to boot an older one).
	find "$(dirname "$out")" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -path "$out" \
		-amin +1440 -mmin +1440 -delete
fi
echo "$out"
