#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse) the rpcrdma2 testbed kernel.
#
#   build.sh [--variant V]           install missing prerequisites, build, print KDIR
#   build.sh [--variant V] --kdir    print the build directory for the current key (no build)
#   build.sh [--variant V] --check   exit 0 iff the cached build for the current key exists
#
# The kernel is Debian's linux-source-6.12 configured with allnoconfig plus
# config.fragment, built with Debian's rustc and clang-15, and cached under
# $RPCRDMA2_CACHE/kernel/<version>-<key>/ where <key> hashes the source
# package version, the fragment, the recipe number below and the toolchain
# versions. A cache entry is used only when its .complete stamp exists.
#
# Variants (--variant, default $RPCRDMA2_KERNEL_VARIANT or "default"):
#   default  config.fragment
#   debug    config.fragment, then debug.fragment on top (KASAN, lockdep,
#            kmemleak, ...; Documentation/testing.rst), cached under
#            $RPCRDMA2_CACHE/kernel/<version>-debug-<key>/; its key also
#            hashes debug.fragment.  The default variant's key is computed
#            exactly as before variants existed.

set -euo pipefail
. "$(dirname "$0")/../lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
FRAGMENT=$HERE/config.fragment
VARIANT=${RPCRDMA2_KERNEL_VARIANT:-default}
DEB_PKGS=("${KERNEL_DEBS[@]}") # lib.sh
BINDGEN_VERSION=0.73.2

src_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true
}

cache_key() {
	{
		# Bump when the build recipe below changes what gets built.
		echo "recipe=1"
		echo "src=$(src_version)"
		cat "$FRAGMENT"
		"$RPCRDMA2_RUSTC" --version 2>/dev/null || echo no-rustc
		"clang$RPCRDMA2_LLVM" --version 2>/dev/null | head -1 || echo no-clang
		"$RPCRDMA2_BINDGEN" --version 2>/dev/null || echo no-bindgen
		# Appended only for other variants: the default key is unchanged.
		if [ "$VARIANT" != default ]; then
			echo "variant=$VARIANT"
			cat "$HERE/$VARIANT.fragment"
		fi
	} | sha256sum | cut -c1-16
}

kernel_dir() {
	local v tag=
	v=$(src_version); v=${v%%-*}
	[ "$VARIANT" = default ] || tag=-$VARIANT
	echo "$RPCRDMA2_CACHE/kernel/${v:-unknown}$tag-$(cache_key)"
}

# merged_fragment: the variant's fragments in order, each symbol once with
# its last value (a later fragment overrides an earlier one, as
# KCONFIG_ALLCONFIG does), so verify_config checks what was asked for.
merged_fragment() {
	local files=("$FRAGMENT")
	[ "$VARIANT" = default ] || files+=("$HERE/$VARIANT.fragment")
	cat "${files[@]}" | awk '
		function sym(l, a) {
			if (l ~ /^CONFIG_[A-Za-z0-9_]+=/) { sub(/=.*/, "", l); return l }
			if (l ~ /^# CONFIG_[A-Za-z0-9_]+ is not set$/) { split(l, a, " "); return a[2] }
			return ""
		}
		{ s = sym($0); if (s != "") { line[NR] = $0; name[NR] = s; last[s] = NR } }
		END { for (i = 1; i <= NR; i++) if ((i in name) && last[name[i]] == i) print line[i] }
	'
}

install_prereqs() {
	ensure_debs "${DEB_PKGS[@]}"
	require_rustc_release
	if ! "$RPCRDMA2_BINDGEN" --version 2>/dev/null | grep -q "$BINDGEN_VERSION"; then
		command -v cargo >/dev/null || die "bindgen missing and no cargo to install it (Debian package cargo-web)"
		log "installing bindgen-cli $BINDGEN_VERSION with cargo"
		cargo install --locked --quiet "bindgen-cli@$BINDGEN_VERSION" ||
			die "cargo install bindgen-cli@$BINDGEN_VERSION failed"
		RPCRDMA2_BINDGEN=$HOME/.cargo/bin/bindgen
	fi
	[ -x "$RPCRDMA2_RUSTC" ] || die "no rustc at $RPCRDMA2_RUSTC (Debian package rustc-web)"
	[ -d /usr/lib/rustlib/src/rust/library ] ||
		die "no Rust library source at /usr/lib/rustlib/src/rust/library (rust-web-src)"
}

unpack_source() {
	local v src
	v=$(src_version)
	src=$RPCRDMA2_CACHE/src/linux-source-${v//[~+:]/_}
	if [ ! -f "$src/.unpacked" ]; then
		log "unpacking linux-source-6.12 ($v) into $src"
		rm -rf "$src" && mkdir -p "$src.tmp"
		tar -C "$src.tmp" -xf /usr/src/linux-source-6.12.tar.xz ||
			die "cannot unpack /usr/src/linux-source-6.12.tar.xz"
		mv "$src.tmp/linux-source-6.12" "$src" && rmdir "$src.tmp"
		touch "$src/.unpacked"
	fi
	echo "$src"
}

verify_config() { # CONFIG FRAGMENT
	local cfg=$1 frag=$2 bad=0 line sym
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF -- "$line" "$cfg" || { log "config: wanted '$line', got '$(grep -E "^(# )?${line%%=*}[= ]" "$cfg" || echo unset)'"; bad=1; }
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			! grep -q "^$sym=" "$cfg" || { log "config: wanted $sym unset"; bad=1; }
			;;
		esac
	done <"$frag"
	return $bad
}

build() {
	local src out kdir start
	install_prereqs
	kdir=$(kernel_dir)
	if [ -f "$kdir/.complete" ]; then
		log "kernel cache hit: $kdir"
		echo "$kdir/build"
		return
	fi
	start=$(date +%s)
	src=$(unpack_source)
	out=$kdir/build
	mkdir -p "$out"
	local frag=$FRAGMENT
	if [ "$VARIANT" != default ]; then
		frag=$kdir/config.fragment
		merged_fragment >"$frag"
	fi
	mapfile -t vars < <(kmake_vars)
	local jobs=$(($(nproc) + 1))
	step "rustavailable" make -s -C "$src" O="$out" "${vars[@]}" rustavailable
	step "configure (allnoconfig + fragment, variant $VARIANT)" make -s -C "$src" O="$out" "${vars[@]}" \
		KCONFIG_ALLCONFIG="$frag" allnoconfig
	verify_config "$out/.config" "$frag" || die "config fragment did not apply (see above)"
	log "building the $VARIANT kernel in $out with -j$jobs (about 15-20 min on 2 cores)"
	step "kernel build" make -s -C "$src" O="$out" "${vars[@]}" -j"$jobs" bzImage modules
	rm -rf "$kdir/mods"
	step "modules_install" make -s -C "$src" O="$out" "${vars[@]}" \
		INSTALL_MOD_PATH="$kdir/mods" INSTALL_MOD_STRIP=1 modules_install
	cp "$out/arch/x86/boot/bzImage" "$kdir/bzImage"
	make -s -C "$src" O="$out" kernelrelease >"$kdir/kernelrelease"
	touch "$kdir/.complete"
	log "kernel built in $(($(date +%s) - start)) s: $kdir"
	echo "$out"
}

if [ "${1:-}" = --variant ]; then
	VARIANT=${2:-}
	shift 2 || true
fi
case $VARIANT in
default) ;;
*[!a-z0-9_-]* | "") die "bad variant name '$VARIANT'" ;;
*) [ -f "$HERE/$VARIANT.fragment" ] ||
	die "no variant '$VARIANT' (no $HERE/$VARIANT.fragment)" ;;
esac
case "${1:-}" in
--kdir) echo "$(kernel_dir)/build" ;;
--check) [ -f "$(kernel_dir)/.complete" ] ;;
"") mkdir -p "$RPCRDMA2_CACHE"
    exec 9>"$RPCRDMA2_CACHE/.build.lock"
    flock 9 # one build at a time per cache
    build ;;
*) die "usage: $0 [--variant default|debug] [--kdir|--check]" ;;
esac
