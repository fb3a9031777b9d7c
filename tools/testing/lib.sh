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
	next) echo next.fragment ;;
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

# The Debian packages each part of the setup installs when they are missing
# (README.md, "Prerequisites"; ensure_debs below).
#
# The kernel phase (kernel/build.sh): the kernel source, Debian's Rust
# toolchain and LLVM 15, the kernel's build tools. linux-source-6.12 and
# the -web Rust packages come from bookworm-security (deb_hint below);
# cargo-web and ca-certificates install bindgen-cli from crates.io.
KERNEL_DEBS=(linux-source-6.12 rustc-web rust-web-src clang-15 lld-15 llvm-15
	libclang-15-dev flex bison bc libelf-dev libssl-dev cpio kmod xz-utils
	make python3 rust-web-clippy cargo-web ca-certificates)
# The guests (vm/run.sh): QEMU, a static busybox, and everything the guests
# run from the host's /usr (nfsd, rpcbind and the NFS client tools,
# rdma-core, perftest, fio, ...).
VM_DEBS=(qemu-system-x86 busybox-static nfs-kernel-server nfs-common
	rpcbind rdma-core ibverbs-providers ibverbs-utils libibverbs1 librdmacm1 perftest fio iproute2
	kmod util-linux procps gzip)
# The host phase of make check (README.md,
# "Prerequisites"), installed by host-check.sh, fuzz/fuzz.sh and
# tools/responder/build.sh: Debian's Rust toolchain, the same release as the
# kernel's rustc (rustc-web pulls in gcc, libc6-dev and binutils; cargo,
# rustfmt and clippy are separate packages that rustc-web only recommends,
# and ensure_debs installs no recommends), g++ for libFuzzer (the
# libfuzzer-sys crate compiles its C++), ca-certificates for crates.io,
# python3 and Sphinx for the bench tools' unit tests and the documentation,
# matplotlib for the chart the documentation build draws
# (Documentation/sphinx/benchchart.py; make bench's report draws it too).
# git for the docs check, which asks it which files and branches the
# repository has.
# The -web toolchain packages come from bookworm-security (bookworm's own
# are older than the crates' rust-version).
HOST_DEBS=(rustc-web cargo-web rustfmt-web rust-web-clippy g++ make ca-certificates
	python3 python3-sphinx python3-matplotlib git)
# The responder (tools/responder/build.sh), on top of HOST_DEBS: cmake for
# rdma-mummy-sys's C part, libclang for its bindgen, the rdma-core
# libraries it loads.
RESPONDER_DEBS=(cmake gcc libclang-15-dev libibverbs1 librdmacm1 ibverbs-providers rdma-core)
# The module phase, on top of the kernel phase's packages: git
# (dkms-check.sh copies the committed tree), kmod (modinfo, depmod),
# binutils (nm), dkms.
MODULE_DEBS=(git kmod binutils dkms)

# deb_hint PKG: where a package that apt cannot find comes from.
deb_hint() {
	case $1 in
	linux-source-6.12 | *-web | rust-web-*)
		echo "$1 is in Debian 12's security suite: add 'deb http://deb.debian.org/debian-security bookworm-security main' to /etc/apt/sources.list, or a bookworm-security entry to /etc/apt/sources.list.d/debian.sources, and run apt-get update" ;;
	*) echo "is this Debian 12 (bookworm) with its main component?" ;;
	esac
}

# ensure_debs PKG...: install the Debian packages among PKG that are missing
# (apt-get, needs root); die naming them when that is not possible, and
# saying which suite a package apt does not know comes from.
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
	apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update failed"
	for p in "${missing[@]}"; do
		[[ $(apt-cache policy "$p" 2>/dev/null) == *"Candidate: "[!\(]* ]] ||
			die "no Debian package $p to install: $(deb_hint "$p")"
	done
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}

# require_rustc_release: Debian's rustc ($RPCRDMA2_RUSTC, the kernel's and
# the module's) is new enough for the crates (their rust-version, 1.88):
# bookworm-security's rustc-web, not bookworm's own (1.85).
require_rustc_release() {
	local v min=1.88
	v=$("$RPCRDMA2_RUSTC" --version 2>/dev/null | awk 'NR == 1 && $1 == "rustc" {print $2}')
	[ -n "$v" ] || die "no rustc at $RPCRDMA2_RUSTC (Debian package rustc-web)"
	printf '%s\n%s\n' "$min" "${v%%-*}" | sort -V -C ||
		die "$RPCRDMA2_RUSTC is rustc $v, older than $min: $(deb_hint rustc-web)"
}
