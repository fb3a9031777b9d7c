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
#      organised, name no missing section, branch or tag and no date
#      outside a results table's title: docs-refs.py (which holds the
#      code and scripts to all but the make targets too);
#   5. (at the end) docs_admin_check.py: the install directory, module
#      parameters, tracepoint fields, responder switches and make targets
#      agree with the code.
#   6. the conformance tables' Wire column names tagged assertions of
#      integration tests, and every host test they name asserts something
#      (conformance_asserts.py).

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
cd "$RPCRDMA2_TOP"

ensure_debs python3-sphinx python3-matplotlib

fail=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Documentation/conf.py: the local extension (sphinx/); -W: warnings are errors.
sphinx-build -q -W -b html -d "$out/doctrees" Documentation "$out/html" || fail=1

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
		if (row != "" && rule !~ /^Rule/ && cell >= 4 && tests !~ /``(selftest|chunks|model|backchannel|continuation|recovery|conformance|responder|xdr-neg|xdr-rt):|``rpcrdma2-|every integration test/) {
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

# ---- The conformance tables' Wire column (conformance_wire_check) ------
#
# Every row of a table of Documentation/conformance.rst whose fifth cell
# (Wire) says "wire" names the integration tests that prove it, each with
# the tags of its assertions: ``rpcrdma2-NAME`` #tag [#tag...]. Each tag
# must appear as "# conformance: ... tag ..." on a line of
# tools/testing/integration/rpcrdma2-NAME.sh (or of a lib/*.sh it sources)
# that calls tb_die, that is, on an assertion. A row that says "host"
# gives its reason after the colon. The tests named conformance:NAME
# (rpcrdma/proto/tests/conformance.rs) and responder:NAME
# (tools/responder/tests/proto.rs) must exist.
conformance_wire_check() {
	local table=Documentation/conformance.rst integ=tools/testing/integration bad=0 r n
	for r in $(grep -o '``conformance:[a-z0-9_]*``' "$table" | tr -d '`' | sort -u); do
		grep -A1 '#\[test\]' rpcrdma/proto/tests/conformance.rs | grep -q "fn ${r#conformance:}\b" ||
			{ echo "docs-check: $table names $r, which does not exist" >&2; bad=1; }
	done
	for r in $(grep -o '``responder:[a-z0-9_]*``' "$table" | tr -d '`' | sort -u); do
		grep -A1 '#\[test\]' tools/responder/tests/proto.rs | grep -q "fn ${r#responder:}\b" ||
			{ echo "docs-check: $table names $r, which does not exist" >&2; bad=1; }
	done
	# One line per row: "RULE<TAB>WIRE" (the row's rule, abridged, and its
	# whole Wire cell).
	local rows
	rows=$(awk '
		function flush() {
			if (row && cell >= 5 && rule !~ /^Rule/) printf "%s\t%s\n", rule, wire
			row = 0; cell = 0; wire = ""; rule = ""
		}
		/^   \* - / { flush(); row = 1; cell = 1; next }
		/^     - / { cell++; if (cell == 2) rule = substr($0, 8, 50); if (cell == 5) wire = substr($0, 8); next }
		/^       / { if (cell == 5) wire = wire " " substr($0, 8); next }
		/^[^ ]/ { flush() }
		END { flush() }
	' "$table")
	local rule wire pairs name tags tag script asserts
	while IFS=$'\t' read -r rule wire; do
		case $wire in
		wire*)
			pairs=$(grep -oE '``rpcrdma2-[a-z0-9-]+``( *#[a-z0-9-]+)+' <<<"$wire" || true)
			if [ -z "$pairs" ]; then
				echo "docs-check: $table: row \"$rule\": wire, but no \`\`rpcrdma2-TEST\`\` #tag names an assertion" >&2
				bad=1
				continue
			fi
			while read -r name tags; do
				name=${name//\`/}
				script=$integ/$name.sh
				[ -f "$script" ] || { echo "docs-check: $table: row \"$rule\": no $script" >&2; bad=1; continue; }
				# The assertions of the script and of the lib/*.sh it sources.
				# shellcheck disable=SC2046
				asserts=$(cat "$script" $(grep -oE 'lib/[a-z0-9-]+\.sh' "$script" | sort -u |
					sed "s#^#$integ/#" | while read -r l; do [ -f "$l" ] && echo "$l"; done) |
					grep 'tb_die' | grep -o '# conformance:.*' || true)
				for tag in $tags; do
					tag=${tag#\#}
					grep -qE "^# conformance:( [a-z0-9-]+)* $tag( |\$)" <<<"$asserts" ||
						{ echo "docs-check: $table: row \"$rule\": $name asserts nothing tagged $tag" >&2; bad=1; }
				done
			done <<<"$(sed -E 's/``(rpcrdma2-[a-z0-9-]+)``/\1/' <<<"$pairs")"
			;;
		host:*[a-z]*) ;;
		*)
			echo "docs-check: $table: row \"$rule\": the Wire cell is neither \"wire: \`\`rpcrdma2-TEST\`\` #tag\" nor \"host: reason\": $wire" >&2
			bad=1
			;;
		esac
	done <<<"$rows"
	return $bad
}
conformance_wire_check || die "documentation check failed: the conformance tables' Wire column"
echo "docs-check: every wire claim of the conformance tables names a tagged assertion"

# ---- The host tests the tables name assert something ---------------------
# tools/testing/conformance_asserts.py: each conformance:, responder:,
# selftest:, ... NAME is a function whose body holds an assertion (or
# calls only helpers that do); its self-test first proves it fails on a
# planted test that asserts nothing.
python3 -B "$here/conformance_asserts.py" --selftest ||
	die "documentation check failed: conformance_asserts.py's self-test"
python3 -B "$here/conformance_asserts.py" "$RPCRDMA2_TOP" ||
	die "documentation check failed: a host test the conformance tables name asserts nothing"
echo "docs-check: every host test the conformance tables name asserts something"
