#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# conformance_asserts.py - every host test that Documentation/conformance.rst
# names asserts something (run by docs-check.sh): the body of the named
# function contains an assertion (assert!, assert_eq!, assert_ne!, or the
# self-tests' check!), or it only calls helpers `name()?` / `name();` of the
# same file that do (one level deep, as the self-tests group their cases).
# A test that exists but checks nothing proves no rule.
#
# Usage: conformance_asserts.py [TOP]   check the tree at TOP (default .)
#        conformance_asserts.py --selftest   the check fails on a planted
#                                            test without an assertion

import glob
import os
import re
import sys

REF = re.compile(
    r"``((?:selftest|chunks|model|backchannel|continuation|recovery|conformance|responder|xdr-neg|xdr-rt):[a-z0-9_]+)``"
)
ASSERTION = re.compile(r"\b(?:assert|assert_eq|assert_ne|check)!")
CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\(\)\s*[?;]")


def files_of(top):
    """The source files each kind of test name is looked up in."""
    t = "rpcrdma/proto/tests/"
    kinds = {k: [t + k + ".rs"] for k in ("chunks", "model", "backchannel", "continuation", "recovery", "conformance")}
    kinds["responder"] = ["tools/responder/tests/proto.rs"]
    kinds["xdr-neg"] = ["xdr/tests/negative.rs"]
    kinds["xdr-rt"] = ["xdr/tests/roundtrip.rs"]
    kinds["selftest"] = sorted(
        os.path.relpath(p, top) for p in glob.glob(os.path.join(top, "rpcrdma/proto/**/selftest.rs"), recursive=True)
    )
    return kinds


def body_of(src, name):
    """The body of `fn name` in src (up to the closing brace at its
    indentation), or None."""
    m = re.search(r"^([ \t]*)(?:pub(?:\([a-z]+\))? )?fn " + name + r"\b[^{;]*\{", src, re.M)
    if not m:
        return None
    end = re.compile("^" + m.group(1) + r"\}", re.M).search(src, m.end())
    return src[m.end() : end.start() if end else len(src)]


def asserts(src, name, depth=1):
    body = body_of(src, name)
    if body is None:
        return False
    if ASSERTION.search(body):
        return True
    if depth == 0:
        return False
    callees = [c for c in CALL.findall(body) if c != name and body_of(src, c) is not None]
    return bool(callees) and all(asserts(src, c, depth - 1) for c in callees)


def check(table_text, read, kinds):
    """The problems: one line per named test that is missing or asserts
    nothing. `read(path)` returns a file's text."""
    bad = []
    for ref in sorted(set(REF.findall(table_text))):
        kind, name = ref.split(":", 1)
        found = False
        for path in kinds.get(kind, []):
            src = read(path)
            if body_of(src, name) is None:
                continue
            found = True
            if not asserts(src, name):
                bad.append(f"conformance.rst names {ref} ({path}), which asserts nothing")
            break
        if not found:
            bad.append(f"conformance.rst names {ref}, which does not exist")
    return bad


def selftest():
    kinds = {"conformance": ["c.rs"], "selftest": ["s.rs"]}
    files = {
        "c.rs": "#[test]\nfn good() {\n    assert_eq!(1, 1);\n}\n\n#[test]\nfn empty() {\n    let _ = 1;\n}\n",
        "s.rs": "fn group() -> TestResult {\n    one()?;\n    two()?;\n    Ok(())\n}\n\n"
        "fn one() -> TestResult {\n    check!(true);\n    Ok(())\n}\n\n"
        "fn two() -> TestResult {\n    Ok(())\n}\n\nfn fine() -> TestResult {\n    one()?;\n    Ok(())\n}\n",
    }
    cases = [
        ("``conformance:good``", []),
        ("``conformance:empty``", ["empty"]),
        ("``conformance:nowhere``", ["does not exist"]),
        ("``selftest:fine``", []),
        ("``selftest:group``", ["group"]),
    ]
    ok = True
    for table, want in cases:
        got = check(table, files.__getitem__, kinds)
        if len(got) != len(want) or not all(w in g for w, g in zip(want, got)):
            print(f"conformance_asserts selftest: {table}: {got}", file=sys.stderr)
            ok = False
    return ok


def main(argv):
    if argv[1:] == ["--selftest"]:
        return 0 if selftest() else 1
    top = argv[1] if len(argv) > 1 else "."

    def read(path):
        with open(os.path.join(top, path), encoding="utf-8") as f:
            return f.read()

    bad = check(read("Documentation/conformance.rst"), read, files_of(top))
    for line in bad:
        print("docs-check: " + line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
