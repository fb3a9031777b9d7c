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
# Variants (--variant, default $RPCRDMA2_KERNEL_VARIANT or "default"; the
# table is in ../lib.sh):
#   default  config.fragment
#   debug    config.fragment, then debug.fragment on top (KASAN, lockdep,
#            kmemleak, ...; Documentation/testing.rst), cached under
#            $RPCRDMA2_CACHE/kernel/<version>-debug-<key>/; its key also
#            hashes debug.fragment.  The default variant's key is computed
#            exactly as before variants existed.
#   next     Linux 7.3 (linux-source-7.3) with config.fragment, then
#            next.fragment on top (what 7.3 split into new options),
#            built with clang-19 (7.3 needs LLVM 17 or later), cached under
#            $RPCRDMA2_CACHE/kernel/<version>-next-<key>/. Debian 12 has no
#            7.3 source: the package comes from trixie-backports, which this
#            script adds as an apt source pinned so that apt takes nothing
#            else from it (TRIXIE_BPO_* below).

set -euo pipefail
. "$(dirname "$0")/../lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
FRAGMENT=$HERE/config.fragment
VARIANT=${RPCRDMA2_KERNEL_VARIANT:-default}
BINDGEN_VERSION=0.73.2

# The apt source for the next variant's kernel source: Debian 13's
# backports, of which only linux-source-7.3 may be installed (an
# architecture-independent tarball whose dependencies Debian 12 has).
TRIXIE_BPO_SOURCES=/etc/apt/sources.list.d/rpcrdma2-trixie-backports.sources
TRIXIE_BPO_PIN=/etc/apt/preferences.d/rpcrdma2-trixie-backports.pref

# deb_pkgs: the Debian packages the variant's build needs.
# lib.sh's KERNEL_DEBS, with the variant's kernel source and LLVM.
deb_pkgs() {
	local l=${RPCRDMA2_LLVM#-} p
	for p in "${KERNEL_DEBS[@]}"; do
		case $p in
		linux-source-6.12) p=$(variant_source "$VARIANT") ;;
		libclang-15-dev) p=libclang-$l-dev ;;
		clang-15 | lld-15 | llvm-15) p=${p%-15}-$l ;;
		esac
		printf '%s ' "$p"
	done
}

src_pkg() {
	variant_source "$VARIANT"
}

src_version() {
	dpkg-query -W -f='${Version}' "$(src_pkg)" 2>/dev/null || true
}

# ensure_trixie_backports: add the pinned trixie-backports apt source (root
# only; apt-get update follows in ensure_debs when a package is missing).
ensure_trixie_backports() {
	[ -f "$TRIXIE_BPO_SOURCES" ] && [ -f "$TRIXIE_BPO_PIN" ] && return 0
	[ "$(id -u)" = 0 ] || die "the next kernel needs linux-source-7.3 from trixie-backports: run as root once"
	log "adding the apt source trixie-backports ($TRIXIE_BPO_SOURCES), pinned to linux-source-7.3"
	cat >"$TRIXIE_BPO_SOURCES" <<-EOF
	# rpcrdma2 (tools/testing/kernel/build.sh --variant next): linux-source-7.3
	Types: deb
	URIs: http://deb.debian.org/debian
	Suites: trixie-backports
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	cat >"$TRIXIE_BPO_PIN" <<-EOF
	# rpcrdma2: nothing from trixie-backports but linux-source-7.3.
	Package: *
	Pin: release n=trixie-backports
	Pin-Priority: -1

	Package: linux-source-7.3
	Pin: release n=trixie-backports
	Pin-Priority: 500
	EOF
	# ensure_debs updates the lists only when a package is missing.
	apt-get update -qq || die "apt-get update failed"
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
			frag=$(variant_fragment "$VARIANT")
			[ -z "$frag" ] || cat "$HERE/$frag"
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
	local files=("$FRAGMENT") extra
	extra=$(variant_fragment "$VARIANT")
	[ -z "$extra" ] || files+=("$HERE/$extra")
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
	local pkgs
	[ "$VARIANT" != next ] || ensure_trixie_backports
	read -ra pkgs <<<"$(deb_pkgs)"
	ensure_debs "${pkgs[@]}"
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
	local v src pkg
	pkg=$(src_pkg)
	v=$(src_version)
	src=$RPCRDMA2_CACHE/src/linux-source-${v//[~+:]/_}
	if [ ! -f "$src/.unpacked" ]; then
		log "unpacking $pkg ($v) into $src"
		rm -rf "$src" && mkdir -p "$src.tmp"
		tar -C "$src.tmp" -xf "/usr/src/$pkg.tar.xz" ||
			die "cannot unpack /usr/src/$pkg.tar.xz"
		mv "$src.tmp/$pkg" "$src" && rmdir "$src.tmp"
		touch "$src/.unpacked"
	fi
	echo "$src"
}

# gone_symbols: the fragment's symbols that the variant's kernel no longer
# has because what they switched on is always there: Linux 7.3 builds
# /proc/sys with CONFIG_SYSCTL (no CONFIG_PROC_SYSCTL) and NFSv4.1 with
# CONFIG_NFS_V4 (no CONFIG_NFS_V4_1). verify_config accepts their absence
# only while no Kconfig file of the source declares them.
gone_symbols() {
	case $VARIANT in
	next) echo CONFIG_PROC_SYSCTL CONFIG_NFS_V4_1 ;;
	esac
}

verify_config() { # CONFIG FRAGMENT SOURCE
	local cfg=$1 frag=$2 src=$3 bad=0 line sym gone
	gone=" $(gone_symbols) "
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			sym=${line%%=*}
			if [[ $gone == *" $sym "* ]]; then
				if grep -rqsE --include='Kconfig*' "^[[:space:]]*(menu)?config ${sym#CONFIG_}\$" "$src"; then
					log "config: $sym is declared in this kernel's Kconfig: it is not gone, take it out of gone_symbols"
					bad=1
				fi
				continue
			fi
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
	if [ -n "$(variant_fragment "$VARIANT")" ]; then
		frag=$kdir/config.fragment
		merged_fragment >"$frag"
	fi
	mapfile -t vars < <(kmake_vars)
	local jobs=$(($(nproc) + 1))
	step "rustavailable" make -s -C "$src" O="$out" "${vars[@]}" rustavailable
	step "configure (allnoconfig + fragment, variant $VARIANT)" make -s -C "$src" O="$out" "${vars[@]}" \
		KCONFIG_ALLCONFIG="$frag" allnoconfig
	verify_config "$out/.config" "$frag" "$src" || die "config fragment did not apply (see above)"
	log "building the $VARIANT kernel in $out with -j$jobs (how long: Documentation/testing.rst, \"Durations\")"
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
variant_known "$VARIANT" ||
	die "no kernel variant '$VARIANT' (have: ${RPCRDMA2_KERNEL_VARIANTS[*]})"
if [ -n "$(variant_fragment "$VARIANT")" ]; then
	[ -f "$HERE/$(variant_fragment "$VARIANT")" ] ||
		die "no $HERE/$(variant_fragment "$VARIANT") for variant '$VARIANT'"
fi
# The variant's clang/LLVM (lib.sh set the one of RPCRDMA2_KERNEL_VARIANT).
variant_toolchain "$VARIANT"
case "${1:-}" in
--kdir) echo "$(kernel_dir)/build" ;;
--check) [ -f "$(kernel_dir)/.complete" ] ;;
"") mkdir -p "$RPCRDMA2_CACHE"
    exec 9>"$RPCRDMA2_CACHE/.build.lock"
    flock 9 # one build at a time per cache
    build ;;
*) die "usage: $0 [--variant ${RPCRDMA2_KERNEL_VARIANTS[*]// /|}] [--kdir|--check]" ;;
esac
