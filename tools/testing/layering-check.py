#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The module's import rules (Documentation/design.rst, "Unsafe code" and
"Finding your way"), checked on the source: the safe abstractions
rpcrdma/sunrpc/ and rpcrdma/ib/ name no module of the transport and not
each other (what both pass around is in rpcrdma/net.rs and
rpcrdma/mem.rs); connect.rs and backchannel.rs do not use conn/ or
transport.rs.

A path counts wherever it is written (use lines, grouped imports such as
``crate::{a, b::c}``, paths in expressions and in doc links). Exit status
1 with one line per breach.

Usage: layering-check.py [ROOT]      (default: the repository's rpcrdma/)
       layering-check.py --selftest  (the rules catch planted breaches)
"""

import os
import re
import sys
import tempfile

TRANSPORT = {"conn", "connect", "backchannel", "transport", "proto", "trace", "why", "fault"}

# (files or directories under rpcrdma/, crate-level modules they must not name)
RULES = [
    ("sunrpc", TRANSPORT | {"ib"}),
    ("ib", TRANSPORT | {"sunrpc"}),
    ("connect.rs", {"conn", "transport"}),
    ("backchannel.rs", {"conn", "transport"}),
]

PATH = re.compile(r"\bcrate::(\w+)")
GROUP = re.compile(r"\bcrate::\{")


def top_names(text, start):
    """The first segment of each path in the group opened at text[start] ('{')."""
    depth, i, names, cur, at_top = 0, start, [], "", True
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
            at_top = depth == 1
            cur = ""
        elif c == "}":
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and (c.isalnum() or c == "_"):
            if at_top:
                cur += c
        elif depth == 1 and c == ",":
            at_top = True
            cur = ""
        elif depth == 1 and cur:
            names.append(cur)
            cur = ""
            at_top = False
        i += 1
    if cur:
        names.append(cur)
    return names


def names_in(text):
    out = set(PATH.findall(text))
    for m in GROUP.finditer(text):
        out.update(top_names(text, m.end() - 1))
    return out


def rust_files(path):
    if os.path.isfile(path):
        yield path
        return
    for d, _, fs in os.walk(path):
        for f in sorted(fs):
            if f.endswith(".rs"):
                yield os.path.join(d, f)


def check(root):
    bad = []
    for where, forbidden in RULES:
        p = os.path.join(root, where)
        if not os.path.exists(p):
            bad.append(f"{p}: missing (the rules name it)")
            continue
        for f in rust_files(p):
            with open(f, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    hit = names_in(line) & forbidden
                    for name in sorted(hit):
                        bad.append(f"{f}:{n}: names crate::{name}: {line.strip()}")
    return bad


def selftest():
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "sunrpc"))
        os.makedirs(os.path.join(t, "ib"))
        files = {
            "sunrpc/a.rs": "use crate::net::Net;\nuse crate::{bindings, ib::mr::Mr};\n",
            "ib/b.rs": "fn f() { crate::proto::x(); }\n//! [`crate::mem::PageSeg`]\n",
            "connect.rs": "use crate::{why::{Why}, conn};\n",
            "backchannel.rs": "use crate::sunrpc::bc;\n",
        }
        for name, text in files.items():
            with open(os.path.join(t, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        got = sorted(re.search(r"names (crate::\w+)", b).group(1) for b in check(t))
        want = ["crate::conn", "crate::ib", "crate::proto"]
        if got != want:
            print(f"layering-check selftest: found {got}, expected {want}", file=sys.stderr)
            return 1
    print("layering-check selftest: planted breaches found, allowed paths passed")
    return 0


def main(argv):
    if argv[1:] == ["--selftest"]:
        return selftest()
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "rpcrdma")
    bad = check(root)
    for b in bad:
        print(b, file=sys.stderr)
    if bad:
        print(f"layering-check: {len(bad)} import(s) against the rules (Documentation/design.rst)",
              file=sys.stderr)
        return 1
    print("layering-check: sunrpc/ and ib/ name neither each other nor the transport; "
          "connect.rs and backchannel.rs do not use conn/ or transport.rs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
