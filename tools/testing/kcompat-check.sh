#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kcompat-check.sh NAME SYMBOL_RE MOD=PATH...
#
# Compiles module trees the way the rpcrdma2 kernel module includes them
# (#[path] modules of a no_std crate root, edition 2021, the kernel's rustc
# lint flags, -Dwarnings, overflow checks on, panic=abort, optimised), then
# checks with nm that
#   - no core panic entry point is referenced (panicking::*, panic_fmt,
#     bounds/length-mismatch *_fail, unwrap/expect): no input can reach a
#     panic, which in the kernel is a BUG();
#   - a symbol matching SYMBOL_RE is defined (the object really holds the
#     code under test, not an empty shell).
# KRUSTC selects rustc (default /usr/bin/rustc, the kernel's, else rustc).

set -euo pipefail
name=${1:?usage: kcompat-check.sh NAME SYMBOL_RE MOD=PATH...}
symbol_re=${2:?usage: kcompat-check.sh NAME SYMBOL_RE MOD=PATH...}
shift 2
(($#)) || { echo "kcompat-check: no MOD=PATH given" >&2; exit 2; }

krustc=${KRUSTC:-}
if [ -z "$krustc" ]; then
	if [ -x /usr/bin/rustc ]; then krustc=/usr/bin/rustc; else krustc=rustc; fi
fi
command -v nm >/dev/null 2>&1 ||
	{ echo "FAIL: nm (binutils) is needed for the panic-path check" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "//! Stand-in for the rpcrdma2 module's crate root."
	echo "#![no_std]"
	for m in "$@"; do
		echo "/// \`${m%%=*}\`."
		echo "#[path = \"$(realpath "${m#*=}")\"]"
		echo "pub mod ${m%%=*};"
	done
} >"$tmp/root.rs"

# The flags of rust_common_flags in the kernel's top-level Makefile that
# rustc (not clippy) applies, plus -Dwarnings (CONFIG_WERROR), the module
# build's overflow checks (CONFIG_RUST_OVERFLOW_CHECKS=y) and panic
# strategy. Debug assertions stay off as with the default
# CONFIG_RUST_DEBUG_ASSERTIONS=n: with them core adds unsafe-precondition
# checks (panic_nounwind) to slice helpers that no input can trigger.
"$krustc" --edition=2021 --crate-type rlib --crate-name "rpcrdma2_${name}_check" \
	-Dwarnings -Dnon_ascii_idents -Dunsafe_op_in_unsafe_fn \
	-Wmissing_docs -Wrust_2018_idioms -Wunreachable_pub \
	-Cpanic=abort -Coverflow-checks=on -Copt-level=2 \
	--emit=obj -o "$tmp/check.o" "$tmp/root.rs"
echo "compiled with $("$krustc" --version)"

nm -u "$tmp/check.o" >"$tmp/undefined"
if grep -E 'panic|_fail' "$tmp/undefined"; then
	echo "FAIL: the $name object references a panic path (above)" >&2
	exit 1
fi
nm "$tmp/check.o" >"$tmp/defined"
grep -E "$symbol_re" "$tmp/defined" >/dev/null ||
	{ echo "FAIL: no symbol matching '$symbol_re' in the $name object" >&2; exit 1; }
echo "no panic paths in the optimised $name object"
