# SPDX-License-Identifier: GPL-2.0
#
# folded.py: call stacks in the folded format that flamegraph.pl
# (FlameGraph) and inferno-flamegraph read, one line per distinct stack:
#
#   COMM;ROOT_FRAME;...;LEAF_FRAME COUNT
#
# root first, frames separated by ';', the sample count after the last
# space; a frame is "SYMBOL (DSO)" (the DSO reduced to its file name).
# perf-fold.py writes such files from `perf script`; report.py and
# rpc-profile-report.py read them back with parse_line. plain_name
# shortens a frame's demangled Rust name for the reports (counts-report.py,
# hotspots.py).
import collections
import os
import re

# The deepest frames kept of a chain (its leaf end: a chain cut at the
# root still says where the CPU was).
MAX_FRAMES = 48
FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")


def frame_name(sym, dso):
    """One frame as written: "sym (dso)" with the symbol's offset removed
    and ';' (which separates frames; Rust array types have it) made ','."""
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym).replace(";", ",")
    if dso.startswith("/"):
        dso = os.path.basename(dso)
    return f"{sym} ({dso.replace(';', ',')})"


def fold(lines):
    """Counter {(comm, (leaf frame, ..., root frame)): samples} of the
    output of `perf script -F comm,tid,ip,sym,dso` (a recording with call
    graphs): a sample is a "COMM TID" line followed by indented
    "ADDRESS SYMBOL (DSO)" lines, leaf first, and a blank line."""
    counts = collections.Counter()
    comm, frames = None, []

    def flush():
        if comm is not None:
            counts[(comm, tuple(frames[:MAX_FRAMES]))] += 1

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if not line[0].isspace():
            flush()
            # "COMM TID " (COMM may contain spaces)
            parts = line.rstrip().rsplit(None, 1)
            comm, frames = (parts[0] if len(parts) == 2 else line.strip()), []
            continue
        m = FRAME.match(line)
        if m and comm is not None:
            frames.append(frame_name(m.group(1), m.group(2)))
    flush()
    return counts


def format_line(comm, leaf_first, count):
    """The folded line of one stack: COMM;root;...;leaf COUNT."""
    return ";".join([comm.replace(";", ",")] + list(reversed(leaf_first))) + f" {count}"


def parse_line(line):
    """(count, comm, [leaf frame, ..., root frame]) of a folded line, or
    None for a line that is not one."""
    stack, sep, n = line.rstrip("\n").rpartition(" ")
    if not sep or not n.isdigit() or not stack:
        return None
    parts = stack.split(";")
    return int(n), parts[0], list(reversed(parts[1:]))


def _until_fixed(pattern, repl, s):
    """s with pattern replaced by repl until nothing changes (the
    innermost <...> first, then the ones that held it)."""
    prev = None
    while prev != s:
        prev = s
        s = re.sub(pattern, repl, s)
    return s


def plain_name(name, renames=(("rpcrdma2::", ""),), keep_turbofish=False):
    """A demangled Rust name without generic arguments and trait
    qualifiers: <a::B<T> as c::D>::f -> a::B::f. renames: (old, new)
    pairs replaced first (by default the crate's own prefix is dropped);
    keep_turbofish keeps a function's explicit arguments (f::<T>, which
    tell its instances apart) instead of dropping them."""
    n = name
    for old, new in renames:
        n = n.replace(old, new)
    # a type's generic arguments: B<T> -> B
    n = _until_fixed(r"(\w)<[^<>]*>", r"\1", n)
    # a qualified path: <B as D> -> B (a turbofish ::<T> is not one)
    n = _until_fixed(r"(?<!:)<([^<>]*?)(?: as [^<>]*)?>", r"\1", n)
    if not keep_turbofish:
        n = _until_fixed(r"::<[^<>]*>", "", n)
    return n
