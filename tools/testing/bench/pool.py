#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Pools several `make bench` runs (tools/testing/bench/run.sh): for each
# run, the ratio of means of a configuration over a base measured in the
# same boot, then the mean of those ratios over the runs with its standard
# deviation and standard error. One run's ratio moves with the host by
# more than the differences worth knowing (Documentation/benchmarks.rst,
# "Reading the output"); the runs' mean is the estimate to quote.
#
#   pool.py [--base C] [--meta-base M] RUN[:CONFIG] ...
#
# RUN is a results directory (its bench-runs.csv, written by report.py).
# CONFIG is the configuration to compare (default c-resp); its metadata
# counterpart is m-CONFIG (m-c-resp), compared with --meta-base (default
# m-c). fio jobs: CONFIG's throughput over the base's (above 1: faster).
# Metadata phases: the base's elapsed time over CONFIG's (above 1:
# faster). Only runs that measured both sides of a job or phase count for
# it; failed runs (status other than ok) count for nothing.

import argparse
import csv
import os
import statistics
import sys

from report import JOBS, META_PHASES


def load(run):
    """{(kind, config, job): [values of the ok runs]} of one results dir."""
    path = os.path.join(run, "bench-runs.csv")
    vals = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok" or not r["value"]:
                continue
            vals.setdefault((r["kind"], r["config"], r["job"]), []).append(float(r["value"]))
    return vals


def ratio(vals, kind, num, den):
    """mean(num) / mean(den), or None where a side has no run."""
    a, b = vals.get((kind,) + num), vals.get((kind,) + den)
    if not a or not b or statistics.mean(b) == 0:
        return None
    return statistics.mean(a) / statistics.mean(b)


COLS = [("fio", j) for j in JOBS] + [("meta", p) for p in META_PHASES]


def pool(runs, base, meta_base):
    """Each run's ratios and every column's ratios over the runs.

    runs: [(name, config, load()'s values)]. Returns (COLS, rows, per):
    rows [(name, config, [ratio or None per column])], per {column:
    [the runs' ratios]}.
    """
    per = {c: [] for c in COLS}
    rows = []
    for name, cfg, vals in runs:
        row = []
        for kind, job in COLS:
            if kind == "fio":
                x = ratio(vals, "fio", (cfg, job), (base, job))
            else:
                # elapsed time: the base's over the configuration's
                x = ratio(vals, "meta", (meta_base, job), ("m-" + cfg, job))
            if x is not None:
                per[(kind, job)].append(x)
            row.append(x)
        rows.append((name, cfg, row))
    return COLS, rows, per


def main():
    ap = argparse.ArgumentParser(description="pool the ratios of several make bench runs")
    ap.add_argument("--base", default="c", help="fio base configuration (default c)")
    ap.add_argument("--meta-base", default="m-c", help="metadata base (default m-c)")
    ap.add_argument("runs", nargs="+", metavar="RUN[:CONFIG]")
    args = ap.parse_args()

    runs = []
    for spec in args.runs:
        run, _, cfg = spec.partition(":")
        try:
            runs.append((os.path.basename(os.path.normpath(run)), cfg or "c-resp", load(run)))
        except OSError as e:
            sys.exit(f"pool.py: {run}: {e.strerror}")
    cols, rows, per = pool(runs, args.base, args.meta_base)

    used = [i for i, c in enumerate(cols) if per[c]]
    if not used:
        sys.exit("pool.py: no job or phase measured on both sides in any run")
    names = [cols[i][1] for i in used]
    w = max(len("runs: mean"), *(len(r[0]) + len(r[1]) + 1 for r in rows))
    print(f"{'run:config':<{w}} " + " ".join(f"{n:>11}" for n in names))
    for name, cfg, row in rows:
        cells = ["-" if row[i] is None else f"{row[i]:.2f}" for i in used]
        print(f"{name + ':' + cfg:<{w}} " + " ".join(f"{c:>11}" for c in cells))
    stats = {"n": [], "mean": [], "sd": [], "se": [], "min-max": []}
    for i in used:
        x = per[cols[i]]
        sd = statistics.stdev(x) if len(x) > 1 else float("nan")
        stats["n"].append(str(len(x)))
        stats["mean"].append(f"{statistics.mean(x):.3f}")
        stats["sd"].append(f"{sd:.3f}")
        stats["se"].append(f"{sd / len(x) ** 0.5:.3f}")
        stats["min-max"].append(f"{min(x):.2f}-{max(x):.2f}")
    for k, cells in stats.items():
        print(f"{'runs: ' + k:<{w}} " + " ".join(f"{c:>11}" for c in cells))
    print(f"fio: throughput over {args.base}'s; metadata: {args.meta_base}'s elapsed time over"
          " the configuration's; each run's ratio of its means, then over the runs"
          " (sd, se: of the runs' ratios)")


if __name__ == "__main__":
    main()
