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
#      "DESIGN.md", "shared/reference";
#   4. a reference to a section that the named document does not have:
#      Documentation/NAME.rst, "Title" or :doc:`NAME`, "Title";
#   5. a date (2026-11-23, 27 November 2026) outside a results table's
#      title (a ``.. table::`` directive's) or header row;
#   6. a branch (branch ``NAME``, the ``NAME`` branch, git checkout/switch/
#      merge NAME, origin/NAME) that the repository has neither as a
#      branch, a remote branch nor a tag.
#
# The code and scripts (every tracked text file under rpcrdma/, tools/,
# samples/, fuzz/, xdr/ and .ci/, and the top-level build files) are held
# to 1 and 3-6 as well, with no date allowed; in them 1 leaves out the
# kernel tree's own paths that the comments name (KERNEL_PATHS).
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
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.|…|[/-][A-Z][A-Z0-9_]*(?:[./]|$)")
# Paths of a kernel tree (or of tracefs) that the code's comments name and
# that share a top-level name with this repository's.
KERNEL_PATHS = ("Documentation/fault-injection/", "tools/testing/kunit/kunit.py",
                "rpcrdma/xprtrdma_")
ORG_RE = re.compile(r"\b(sessions? [0-9]+|issues? [0-9]+|DESIGN\.md|shared/reference)", re.I)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
DATE_RE = re.compile(r"\b(20[0-9]{2}-[01][0-9]-[0-3][0-9]|[0-3]?[0-9] (?:%s) 20[0-9]{2}|(?:%s) [0-3]?[0-9],? 20[0-9]{2})\b"
                     % (MONTHS, MONTHS))
# Line breaks inside a quoted title, with a comment's leader (#, //!,
# ///, //, *) on the next line.
TITLE_BREAK = re.compile(r"\s*\n\s*(?:#+|//[/!]?|\*)?\s*")
SECTION_REF = re.compile(
    r"(?:(?<![\w/])(?:Documentation/)?([a-z][a-z0-9-]*)\.rst`{0,2}|:doc:`([a-z][a-z0-9-]*)`),?[ \t]*"
    r"(?:\n\s*(?:#+|//[/!]?|\*)?\s*)?\"([^\"]{1,120}?)\"")
BRANCH_RE = re.compile(
    r"\bbranch(?:es)?\s+`{1,2}([\w./-]+)`{1,2}|`{1,2}([\w./-]+)`{1,2}\s+branch\b"
    r"|\bgit\s+(?:checkout|switch|merge|rebase)\s+(?:-\w+\s+)*([A-Za-z][\w./-]*)"
    r"|\borigin/([A-Za-z][\w./-]*)")


def refs():
    """the branch, remote branch and tag names of the repository"""
    names = set()
    for r in git_lines("for-each-ref", "--format=%(refname)"):
        for prefix in ("refs/heads/", "refs/tags/"):
            if r.startswith(prefix):
                names.add(r[len(prefix):])
        if r.startswith("refs/remotes/"):
            names.add(r.split("/", 3)[3])
    return names


def check_branches(path, text, known=None):
    out = []
    known = refs() if known is None else known
    for m in BRANCH_RE.finditer(text):
        name = next(g for g in m.groups() if g).rstrip(".,;:")
        if PLACEHOLDER.search(name) or name.isupper():
            continue
        if name not in known:
            n = text.count("\n", 0, m.start()) + 1
            out.append(f"{path}:{n}: no branch or tag {name} in the repository")
    return out


CODE_DIRS = ("rpcrdma/", "tools/", "samples/", "fuzz/", "xdr/", ".ci/")
CODE_TOP = {"Makefile", "Kbuild", "Kconfig", "dkms.conf"}
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


def section_titles(path):
    """The section titles of the reST document PATH (whitespace folded)"""
    titles = set()
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError:
        return None
    for a, b in zip(lines, lines[1:]):
        if a.strip() and re.fullmatch(r"([=\-~^\"'`#*+])\1+", b) and len(b) >= len(a.rstrip()):
            titles.add(" ".join(a.split()))
        # a definition list's term, and a list item's bold lead
        # (**"Title".** or **Title.**): named paragraphs a reference may
        # point to as well
        elif a.strip() and not a.startswith(" ") and b.startswith(" ") and b.strip():
            titles.add(" ".join(a.split()))
    for m in re.finditer(r"\*\*\"?([^*\"]+?)\"?\.?\*\*", "\n".join(lines)):
        titles.add(" ".join(m.group(1).split()))
    return titles


def section_refs(text):
    """(line number, document, title) of every reference to a section of
    one of Documentation/'s documents in TEXT"""
    for m in SECTION_REF.finditer(text):
        doc = m.group(1) or m.group(2)
        title = " ".join(TITLE_BREAK.sub(" ", m.group(3)).split())
        if title.count("\n") or not title[:1].isupper():
            continue
        yield text.count("\n", 0, m.start()) + 1, doc, title


def check_sections(path, text):
    """findings for the section references of TEXT (the file PATH)"""
    out = []
    for n, doc, title in section_refs(text):
        titles = section_titles(os.path.join("Documentation", doc + ".rst"))
        if titles is None:
            continue  # not a document of Documentation/ (check 1 sees a missing path)
        if not any(t == title or t.startswith((title + ":", title + " (")) for t in titles):
            out.append(f"{path}:{n}: {doc}.rst has no section \"{title}\"")
    return out


BORDER = re.compile(r"^\s*=+(\s+=+)+\s*$")


def allowed_date_lines(text):
    """line numbers of an rst TEXT where a date may stand: a ``.. table::``
    directive's title and a simple table's header row"""
    ok = set()
    lines = text.split("\n")
    in_title = False
    for i, line in enumerate(lines, 1):
        if re.match(r"\s*\.\. table::", line):
            in_title = True
            ok.add(i)
            continue
        if in_title:
            if line.strip() and not line.strip().startswith(":"):
                ok.add(i)
                continue
            in_title = False
        if 1 < i < len(lines) and BORDER.match(lines[i - 2]) and BORDER.match(lines[i]):
            ok.add(i)  # a simple table's row between two borders: its header
    return ok


def check_dates(path, text, docs):
    out = []
    ok = allowed_date_lines(text) if docs and path.endswith(".rst") else set()
    for n, line in enumerate(text.split("\n"), 1):
        for m in DATE_RE.finditer(line):
            if n in ok:
                continue
            where = "outside a results table's title or header" if docs else "in code or a script"
            out.append(f"{path}:{n}: a date {where}: {m.group(1)!r} (history belongs in git)")
    return out


def code_files():
    """the tracked text files of code and scripts held to checks 3-5"""
    files = []
    for p in sorted(TRACKED):
        if not (p.startswith(CODE_DIRS) or p in CODE_TOP):
            continue
        if p.endswith((".lock", ".x", ".txt", ".png", ".svg")) or "/corpus/" in p or "/seeds/" in p:
            continue
        if p == "tools/testing/docs-refs.py" or p == "tools/testing/test_docs_refs.py":
            continue  # they name what they look for
        files.append(p)
    return files


def check_code(files):
    """findings of checks 3-5 in code and scripts"""
    out = []
    known = refs()
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if "\0" in text:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            for m in ORG_RE.finditer(line):
                out.append(f"{path}:{n}: mentions how the work was organised: {m.group(1)!r}")
            for m in PATH_RE.finditer(line):
                p = m.group(1)
                if PLACEHOLDER.search(p) or PLACEHOLDER.search(line[m.end():m.end() + 1]) \
                        or p.startswith(KERNEL_PATHS):
                    continue
                why = check_path(p)
                if why:
                    out.append(f"{path}:{n}: {why}")
        out.extend(check_sections(path, text))
        out.extend(check_dates(path, text, False))
        out.extend(check_branches(path, text, known))
    return out


def main(files, code=None):
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
        for finding in check_sections(path, text) + check_dates(path, text, True) + check_branches(path, text):
            print(finding)
            bad += 1
    for finding in check_code(code or []):
        print(finding)
        bad += 1
    for path, what in sorted(PENDING - pending_seen):
        if path in files:
            print(f"docs-refs.py: note: PENDING ({path}, {what!r}) no longer occurs: remove it",
                  file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    code = None
    if not args:
        args = ["README.md"] + sorted(
            os.path.join("Documentation", f) for f in os.listdir("Documentation") if f.endswith(".rst"))
        code = code_files()
    sys.exit(main(args, code))
