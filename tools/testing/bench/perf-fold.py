#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# perf-fold.py: fold `perf script -F comm,tid,ip,sym,dso` output (a
# recording with call graphs, -g) read from stdin into one line per
# distinct call chain, most frequent first:
#   COUNT<TAB>COMM<TAB>LEAF_SYM (DSO);CALLER_SYM (DSO);...
# (leaf first, at most 48 frames, the DSO reduced to its file name).
# make bench --profile runs it in the server guest (bench/server.sh) and
# report.py classifies the chains; the folded file is a few hundred KiB
# where perf's data is tens of MiB.
import collections
import os
import re
import sys

FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")
MAX_FRAMES = 48


def main():
    counts = collections.Counter()
    comm, frames = None, []

    def flush():
        if comm is not None:
            counts[(comm, ";".join(frames[:MAX_FRAMES]))] += 1

    for line in sys.stdin:
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
            sym, dso = m.group(1), m.group(2)
            # "name+0x1f" when symoff is printed; perf's own "[unknown]"
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            if dso.startswith("/"):
                dso = os.path.basename(dso)
            frames.append(f"{sym} ({dso})")
    flush()
    out = sys.stdout
    for (c, chain), n in counts.most_common():
        out.write(f"{n}\t{c}\t{chain}\n")


if __name__ == "__main__":
    main()
