#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# docs-refs.py - what the documentation refers to exists (run by
# docs-check.sh, so by `make check`'s host phase). For README.md and
# Documentation/*.rst (or the FILEs given), fail on:
#
#   1. a repository path (one starting with a top-level directory or file
#      of the repository: tools/..., rpcrdma/..., Documentation/...,
#      Makefile, ...) that is neither tracked by git nor a path git ignores
#      (build outputs such as fuzz/work/ or build/kunit/ are described, not
#      committed); paths with placeholders or globs (<x>, NAME, *, {a,b},
#      $VAR, ...) are not checked;
#   2. a `make TARGET` in inline literals or literal blocks whose TARGET
#      the top-level Makefile does not define;
#   3. a mention of how the work was organised: "session N", "issue N",
#      "DESIGN.md".
#
#   docs-refs.py [FILE...]      (from the repository's top directory)
#
# Exit status 1 with one line per finding (FILE:LINE: ...), else 0.

import os
import re
import subprocess
import sys


def git_lines(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True,
                          text=True).stdout.splitlines()


TRACKED = set(git_lines("ls-files"))
DIRS = {os.path.dirname(p) for p in TRACKED}
for d in list(DIRS):
    while d:
        DIRS.add(d)
        d = os.path.dirname(d)
TOP = sorted({p.split("/")[0] for p in TRACKED}, key=len, reverse=True)


def ignored(path):
    """git ignores PATH (a build output), whether or not it exists now"""
    return any(subprocess.run(["git", "check-ignore", "-q", "--no-index", p]).returncode == 0
               for p in (path, path.rstrip("/") + "/"))


def makefile_targets(path="Makefile"):
    targets = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.-][A-Za-z0-9_. -]*):(?!=)", line)
            if m and not m.group(1).startswith("."):
                targets.update(m.group(1).split())
    return targets


# A repository path: a top-level name, then (for directories) /more. Not
# preceded by a path character (so /src/tools/... in a guest, or
# linux's net/sunrpc, are not taken).
PATH_RE = re.compile(r"(?<![\w./$~-])((?:%s)(?:/[\w.+-]*)*)" %
                     "|".join(re.escape(t) for t in TOP))
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.|…|/[A-Z][A-Z0-9_]*(?:[./]|$)")
ORG_RE = re.compile(r"\b(sessions? [0-9]+|issues? [0-9]+|DESIGN\.md)", re.I)
# Mentions of the kind above that are known and being removed by a change
# of their own, as (file, mention): reported on every run, not counted as
# failures. Empty this list when they are gone (a stale entry is
# reported too).
PENDING = set()


def check_path(p):
    """None if P is fine, else why not"""
    p = p.rstrip(".,;:")
    p = re.sub(r":[0-9]+(-[0-9]+)?$", "", p)  # file:LINE
    if p in TOP and "/" not in p:
        return None  # a bare top-level name (also an English word: tools)
    if p.rstrip("/") in TRACKED or p.rstrip("/") in DIRS or ignored(p):
        return None
    return f"no such file or directory in the repository: {p}"


def literal_spans(path, text):
    """(line number, text) of every inline literal and literal-block line"""
    spans = []
    tick = "``" if path.endswith(".rst") else "`"
    # inline literals, also across a line break
    pat = re.compile(re.escape(tick) + r"(.+?)" + re.escape(tick), re.S)
    for m in pat.finditer(text):
        spans.append((text.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    # literal blocks: rst after a paragraph ending in '::', markdown
    # indented by 4 spaces after a blank line
    lines = text.split("\n")
    block_indent = None
    prev_literal_marker = False
    prev_blank = True
    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if block_indent is not None:
            if stripped and indent < block_indent:
                block_indent = None
            elif stripped:
                spans.append((i, stripped))
                continue
            else:
                continue
        if path.endswith(".rst"):
            if prev_literal_marker and stripped:
                if indent > 0:
                    block_indent = indent
                    spans.append((i, stripped))
                prev_literal_marker = False
            if stripped.endswith("::") and not stripped.startswith(".. "):
                prev_literal_marker = True
        elif indent >= 4 and prev_blank and stripped and not stripped.startswith(("-", "*")):
            block_indent = 4
            spans.append((i, stripped))
        prev_blank = not stripped
    return spans


# Targets of a kernel tree's own Makefile that the documents tell a reader
# to run there (not this repository's).
KERNEL_TREE_TARGETS = {"rustavailable", "modules_install", "olddefconfig", "menuconfig"}


def make_targets_in(s):
    """targets named by the make commands in S (a literal)"""
    found = []
    for m in re.finditer(r"(?:^|(?<=[\s;&|(]))make(?=\s|$)", s):
        # "apt-get install make git": the package, not a make command
        if re.search(r"\binstall\s+(?:\S+\s+)*$", s[:m.start()]):
            continue
        words = s[m.end():].split()
        i = 0
        while i < len(words):
            w = words[i]
            if w in ("-C", "-f", "-j", "-o", "-W"):
                i += 2
                continue
            if w.startswith("-") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
                i += 1
                continue
            break
        if i < len(words):
            t = words[i].rstrip(".,;:)`'\"")
            if re.fullmatch(r"[a-z][a-z0-9_-]*", t) and t not in KERNEL_TREE_TARGETS:
                found.append(t)
    return found


def main(files):
    targets = makefile_targets()
    bad = 0
    pending_seen = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in enumerate(text.split("\n"), 1):
            for m in ORG_RE.finditer(line):
                if (path, m.group(1).lower()) in PENDING:
                    pending_seen.add((path, m.group(1).lower()))
                    print(f"{path}:{n}: note: mentions how the work was organised: {m.group(1)!r}"
                          " (known, in PENDING: to be removed)", file=sys.stderr)
                    continue
                print(f"{path}:{n}: mentions how the work was organised: {m.group(1)!r}")
                bad += 1
        for n, lit in literal_spans(path, text):
            for t in make_targets_in(lit):
                if t not in targets:
                    print(f"{path}:{n}: 'make {t}': the Makefile defines no target {t}")
                    bad += 1
        for n, line in enumerate(text.split("\n"), 1):
            for m in PATH_RE.finditer(line):
                p = m.group(1)
                if PLACEHOLDER.search(p) or PLACEHOLDER.search(line[m.end():m.end() + 1]):
                    continue
                why = check_path(p)
                if why:
                    print(f"{path}:{n}: {why}")
                    bad += 1
    for path, what in sorted(PENDING - pending_seen):
        if path in files:
            print(f"docs-refs.py: note: PENDING ({path}, {what!r}) no longer occurs: remove it",
                  file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        args = ["README.md"] + sorted(
            os.path.join("Documentation", f) for f in os.listdir("Documentation") if f.endswith(".rst"))
    sys.exit(main(args))
