# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers for the rpcrdma2 test scripts.  Source, do not execute.

RPCRDMA2_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RPCRDMA2_CACHE=${RPCRDMA2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma2}

# Toolchain the testbed kernel and the module are built with (DESIGN.md §4).
RPCRDMA2_LLVM=${RPCRDMA2_LLVM:--15}
RPCRDMA2_RUSTC=${RPCRDMA2_RUSTC:-/usr/bin/rustc}
RPCRDMA2_BINDGEN=${RPCRDMA2_BINDGEN:-$(command -v bindgen 2>/dev/null || echo "$HOME/.cargo/bin/bindgen")}
export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-15/lib}

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
