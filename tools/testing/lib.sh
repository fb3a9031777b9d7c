# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers for the rpcrdma2 test scripts.  Source, do not execute.

RPCRDMA2_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RPCRDMA2_CACHE=${RPCRDMA2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma2}

# Toolchain the testbed kernel and the module are built with (README.md,
# "Building against your own kernel").
RPCRDMA2_LLVM=${RPCRDMA2_LLVM:--15}
RPCRDMA2_RUSTC=${RPCRDMA2_RUSTC:-/usr/bin/rustc}
RPCRDMA2_BINDGEN=${RPCRDMA2_BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-15/lib}

# The testbed kernel variant (tools/testing/kernel/build.sh --variant):
# "default", or "debug" (KASAN, lockdep, kmemleak, ...). build.sh, vm/run.sh,
# integration/run-all.sh and kunit/run.sh all follow this variable.
export RPCRDMA2_KERNEL_VARIANT=${RPCRDMA2_KERNEL_VARIANT:-default}

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
