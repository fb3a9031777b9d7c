#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# perf-fold.py: fold `perf script -F comm,tid,ip,sym,dso` output (a
# recording with call graphs, -g) read from stdin into one line per
# distinct call chain, most frequent first, in the format flamegraph.pl
# and inferno-flamegraph read (folded.py):
#   COMM;ROOT_SYM (DSO);...;LEAF_SYM (DSO) COUNT
# (root first, at most the 48 frames nearest the leaf, the DSO reduced to
# its file name), so that `flamegraph.pl FILE > FILE.svg` draws it.
# make bench --profile runs it in the server guest (bench/server.sh) and
# report.py classifies the chains; the folded file is a few hundred KiB
# where perf's data is tens of MiB.
import sys

import folded


def main():
    counts = folded.fold(sys.stdin)
    out = sys.stdout
    for (comm, chain), n in counts.most_common():
        out.write(folded.format_line(comm, chain, n) + "\n")


if __name__ == "__main__":
    main()
