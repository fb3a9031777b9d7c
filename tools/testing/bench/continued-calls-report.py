#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summary of a continued-calls.sh run: per configuration and write size,
IOPS (median, min-max over the repeats) and completion latency (mean of
the repeats' means, the worst p99), and the ratio cont/frwr of the median
IOPS; then the mountstats counters that show which path the Calls took
(read_chunk_count, field 11; continued_calls, field 39 after "rdma").

usage: continued-calls-report.py RESULTS_DIR
"""
import glob
import json
import os
import re
import statistics
import sys


def main():
    d = sys.argv[1]
    runs = {}
    for f in glob.glob(os.path.join(d, "cc-*-*-*.json")):
        m = re.match(r"cc-(frwr|cont)-(\d+k)-(\d+)\.json$", os.path.basename(f))
        if not m:
            continue
        with open(f) as fh:
            text = fh.read()
        # fio may print notes before the JSON object; a run cut short
        # leaves none
        if "{" not in text:
            print(f"{os.path.basename(f)}: no fio result", file=sys.stderr)
            continue
        w = json.loads(text[text.index("{"):])["jobs"][0]["write"]
        runs.setdefault((m[1], m[2]), []).append(
            (w["iops"], w["clat_ns"]["mean"] / 1000,
             w["clat_ns"].get("percentile", {}).get("99.000000", 0) / 1000))
    if not runs:
        sys.exit(f"no fio results in {d}")
    sizes = sorted({k[1] for k in runs}, key=lambda s: int(s[:-1]))
    print(f"{'bs':>4} {'cfg':>4} {'n':>2} {'IOPS med':>9} {'min-max':>13} "
          f"{'lat us':>8} {'p99 us':>8} {'cont/frwr':>9}")
    for bs in sizes:
        med = {}
        for cfg in ("frwr", "cont"):
            r = runs.get((cfg, bs), [])
            if not r:
                continue
            iops = [x[0] for x in r]
            med[cfg] = statistics.median(iops)
            ratio = f"{med['cont'] / med['frwr']:.2f}" if cfg == "cont" and "frwr" in med else ""
            print(f"{bs:>4} {cfg:>4} {len(r):>2} {med[cfg]:>9.1f} "
                  f"{min(iops):>6.1f}-{max(iops):<6.1f} "
                  f"{statistics.mean(x[1] for x in r):>8.0f} "
                  f"{max(x[2] for x in r):>8.0f} {ratio:>9}")
    for f in sorted(glob.glob(os.path.join(d, "cc-*.xprt"))):
        with open(f) as fh:
            t = fh.read().split()
        if len(t) > 40 and t[1] == "rdma":
            print(f"{os.path.basename(f)}: read_chunk_count {t[12]}, continued_calls {t[40]}")


if __name__ == "__main__":
    main()
