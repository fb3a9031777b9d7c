#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# docs-check.sh - the documentation builds and the conformance table does
# not rot (run by `make check`, phase host):
#
#   1. Documentation/ builds with Sphinx, warnings as errors (a broken
#      table, list or reference fails);
#   2. every test the conformance table (Documentation/conformance.rst)
#      names exists: selftest:NAME a case! of a rpcrdma/proto/**/selftest.rs,
#      chunks:/model:/backchannel:/continuation:/recovery:NAME a #[test] fn in
#      rpcrdma/proto/tests/, xdr-neg:/xdr-rt:NAME one in xdr/tests/, and
#      rpcrdma2-NAME an integration test script;
#   3. every row of the table names at least one test;
#   4. README.md and Documentation/*.rst refer only to repository paths
#      that exist (or that git ignores: build outputs), only to make
#      targets the Makefile defines, and say nothing of how the work was
#      organised (session N, issue N, DESIGN.md): docs-refs.py;
#   5. (at the end) docs_admin_check.py: the install directory, module
#      parameters, tracepoint fields, responder switches and make targets
#      agree with the code.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$RPCRDMA2_TOP"

ensure_debs python3-sphinx

fail=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# -C: no conf.py (the defaults suffice); -W: warnings are errors.
sphinx-build -q -C -W -b html -d "$out/doctrees" Documentation "$out/html" || fail=1

table=Documentation/conformance.rst
test_fns() { # FILE...: the names of the #[test] functions in FILE...
	grep -h -A1 '#\[test\]' "$@" | sed -n 's/.*fn \([a-z0-9_]*\).*/\1/p'
}
declare -A have=()
while read -r n; do have[selftest:$n]=1; done < <(find rpcrdma/proto -name selftest.rs -exec grep -ho 'case!([a-z0-9_]*)' {} + | sed 's/case!(\(.*\))/\1/')
for k in chunks model backchannel continuation recovery; do
	while read -r n; do have[$k:$n]=1; done < <(test_fns "rpcrdma/proto/tests/$k.rs")
done
while read -r n; do have[xdr-neg:$n]=1; done < <(test_fns xdr/tests/negative.rs)
while read -r n; do have[xdr-rt:$n]=1; done < <(test_fns xdr/tests/roundtrip.rs)
for f in tools/testing/integration/rpcrdma2-*.sh; do
	n=${f##*/}
	have[${n%.sh}]=1
done

refs=$(grep -o '``\(selftest\|chunks\|model\|backchannel\|continuation\|recovery\|xdr-neg\|xdr-rt\):[a-z0-9_*]*``\|``rpcrdma2-[a-z0-9-]*``' "$table" | tr -d '`' | sort -u)
[ -n "$refs" ] || { echo "docs-check: $table names no test" >&2; exit 1; }
for r in $refs; do
	case $r in
	*:\*) # a whole file of tests, e.g. backchannel:*
		grep -q "^${r%\*}" < <(printf '%s\n' "${!have[@]}") || { echo "docs-check: $table: no tests $r" >&2; fail=1; } ;;
	*) [ -n "${have[$r]:-}" ] || { echo "docs-check: $table names $r, which does not exist" >&2; fail=1; } ;;
	esac
done

# Rows: a list-table row starts with '   * - '; its fourth cell (Tests)
# must name a test.
awk -v f="$table" '
	function flush() {
		if (row != "" && rule !~ /^Rule/ && cell >= 4 && tests !~ /``(selftest|chunks|model|backchannel|continuation|recovery|xdr-neg|xdr-rt):|``rpcrdma2-|every integration test/) {
			printf "docs-check: %s: row \"%s\" names no test\n", f, rule > "/dev/stderr"; bad = 1
		}
		row = ""; cell = 0; tests = ""; rule = ""
	}
	/^   \* - / { flush(); row = $0; cell = 1; next }
	/^     - / { cell++; if (cell == 2) rule = substr($0, 8, 60); if (cell == 4) tests = $0; next }
	/^       / { if (cell == 4) tests = tests $0; next }
	/^[^ ]/ { flush() }
	END { flush(); exit bad }
' "$table" || fail=1

python3 "$here/docs-refs.py" || fail=1

((fail == 0)) || die "documentation check failed"
echo "docs-check: Documentation renders; $(wc -w <<<"$refs") tests named by the conformance table exist;" \
	"the paths and make targets the documents name exist"

# ---- administrator-facing checks (tools/testing/docs_admin_check.py) ----
# The install directory, the module parameters, the tracepoint fields, the
# responder's switches and the make targets the documentation names exist
# in the code (and the parameters, fields and switches the code has are
# documented); its self-test first proves each check fails on a planted
# error.
admin_checks() {
	python3 -B "$here/docs_admin_check.py" --selftest >/dev/null ||
		{ python3 -B "$here/docs_admin_check.py" --selftest >&2; return 1; }
	python3 -B "$here/docs_admin_check.py" "$RPCRDMA2_TOP"
}
admin_checks || die "documentation check (administrator-facing) failed"
# ---- end of the administrator-facing checks ----
