# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers for the rpcrdma2 test scripts.  Source, do not execute.

RPCRDMA2_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RPCRDMA2_CACHE=${RPCRDMA2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma2}

# The testbed kernel variant (tools/testing/kernel/build.sh --variant):
# "default" (Linux 6.12), "debug" (6.12 with KASAN, lockdep, kmemleak, ...)
# or "next" (Linux 7.3, the newest kernel Debian ships: linux-source-7.3
# from trixie-backports). build.sh, vm/run.sh, integration/run-all.sh and
# kunit/run.sh all follow this variable.
export RPCRDMA2_KERNEL_VARIANT=${RPCRDMA2_KERNEL_VARIANT:-default}
RPCRDMA2_KERNEL_VARIANTS=(default debug next)

# variant_known VARIANT: whether VARIANT is one of RPCRDMA2_KERNEL_VARIANTS.
variant_known() {
	local v
	for v in "${RPCRDMA2_KERNEL_VARIANTS[@]}"; do [ "$v" = "$1" ] && return 0; done
	return 1
}

# variant_source VARIANT: the Debian package with the variant's kernel
# source (/usr/src/<package>.tar.xz).
variant_source() {
	case $1 in
	next) echo linux-source-7.3 ;;
	*) echo linux-source-6.12 ;;
	esac
}

# variant_fragment VARIANT: the configuration fragment the variant adds on
# top of config.fragment (tools/testing/kernel/), or nothing.
variant_fragment() {
	case $1 in
	debug) echo debug.fragment ;;
	esac
}

# variant_llvm VARIANT: the clang/LLVM suffix the variant's kernel (and so
# the module built for it) is compiled with: 6.12 with clang-15, 7.3 with
# clang-19 (7.3 needs LLVM 17 or later; Debian 12 has 15, 16 and 19).
variant_llvm() {
	case $1 in
	next) echo -19 ;;
	*) echo -15 ;;
	esac
}

# Toolchain the testbed kernel and the module are built with: Debian's
# rustc and bindgen-cli for every variant, clang/LLVM by variant
# (RPCRDMA2_LLVM overrides it; libclang, which bindgen loads, always
# matches clang).
RPCRDMA2_RUSTC=${RPCRDMA2_RUSTC:-/usr/bin/rustc}
RPCRDMA2_BINDGEN=${RPCRDMA2_BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
RPCRDMA2_LLVM_SET=${RPCRDMA2_LLVM:-}

# variant_toolchain VARIANT: set RPCRDMA2_LLVM and, for a versioned LLVM
# (-N), LIBCLANG_PATH for it.
variant_toolchain() {
	RPCRDMA2_LLVM=${RPCRDMA2_LLVM_SET:-$(variant_llvm "$1")}
	case $RPCRDMA2_LLVM in
	-[0-9]*) export LIBCLANG_PATH=/usr/lib/llvm$RPCRDMA2_LLVM/lib ;;
	esac
}
variant_toolchain "$RPCRDMA2_KERNEL_VARIANT"

# module_ko VARIANT [kunit]: the rpcrdma2.ko built for that kernel variant,
# relative to the repository (Makefile): the production module is
# rpcrdma2.ko (default) or build/VARIANT/rpcrdma2.ko, the KUnit variant
# build/kunit/rpcrdma2.ko or build/kunit-VARIANT/rpcrdma2.ko.  A module
# loads only into the kernel it was built for (the debug kernel has its
# own release string).
module_ko() {
	case $1:${2:-} in
	default:) echo rpcrdma2.ko ;;
	default:kunit) echo build/kunit/rpcrdma2.ko ;;
	*:kunit) echo "build/kunit-$1/rpcrdma2.ko" ;;
	*) echo "build/$1/rpcrdma2.ko" ;;
	esac
}

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# step NAME CMD...: run CMD, and on failure die naming the step.
step() {
	local name=$1; shift
	log "step: $name"
	"$@" || die "step '$name' failed (exit $?)"
}

# The make variables every kernel-side build needs.
kmake_vars() {
	printf '%s\n' "LLVM=$RPCRDMA2_LLVM" "RUSTC=$RPCRDMA2_RUSTC" \
		"BINDGEN=$RPCRDMA2_BINDGEN" "HOSTRUSTC=$RPCRDMA2_RUSTC"
}

# ensure_debs PKG...: install the Debian packages among PKG that are missing
# (apt-get, needs root); die naming them when that is not possible.
ensure_debs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	command -v apt-get >/dev/null ||
		die "missing packages ${missing[*]} and no apt-get: install them"
	[ "$(id -u)" = 0 ] ||
		die "missing packages ${missing[*]} and not root: run 'apt-get install ${missing[*]}' as root"
	log "installing Debian packages: ${missing[*]}"
	apt-get update -qq || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}
