#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Unit tests of pool.py (run by tools/testing/host-check.sh):
#   python3 -m unittest discover -s tools/testing/bench -p 'test_*.py'

import csv
import os
import tempfile
import unittest

import pool

FIELDS = ["kind", "config", "job", "repeat", "status", "value"]


def write_run(d, rows):
    os.makedirs(d)
    with open(os.path.join(d, "bench-runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(zip(FIELDS, r)))


class PoolTest(unittest.TestCase):
    def test_ratio_of_means_per_run_then_mean_over_runs(self):
        with tempfile.TemporaryDirectory() as t:
            a, b = os.path.join(t, "a"), os.path.join(t, "b")
            write_run(a, [
                ("fio", "c", "seqwrite-1m", 1, "ok", 40),
                ("fio", "c", "seqwrite-1m", 2, "ok", 60),
                ("fio", "c-resp", "seqwrite-1m", 1, "ok", 30),
                ("fio", "c-resp", "seqwrite-1m", 2, "ok", 50),
                # a failed run counts for nothing
                ("fio", "c-resp", "seqwrite-1m", 3, "failed", 1),
                # metadata: elapsed seconds, the base's over the config's
                ("meta", "m-c", "stat", 1, "ok", 3),
                ("meta", "m-c-resp", "stat", 1, "ok", 4),
            ])
            write_run(b, [
                ("fio", "c", "seqwrite-1m", 1, "ok", 10),
                ("fio", "c-resp0", "seqwrite-1m", 1, "ok", 6),
                # no base: this job does not count for run b
                ("fio", "c-resp0", "randread-4k", 1, "ok", 6),
            ])
            runs = [("a", "c-resp", pool.load(a)), ("b", "c-resp0", pool.load(b))]
            cols, rows, per = pool.pool(runs, "c", "m-c")
        w = cols.index(("fio", "seqwrite-1m"))
        self.assertAlmostEqual(rows[0][2][w], 40 / 50)
        self.assertAlmostEqual(rows[1][2][w], 0.6)
        self.assertEqual(len(per[("fio", "seqwrite-1m")]), 2)
        self.assertEqual(per[("fio", "randread-4k")], [])
        self.assertIsNone(rows[1][2][cols.index(("fio", "randread-4k"))])
        self.assertAlmostEqual(per[("meta", "stat")][0], 0.75)


if __name__ == "__main__":
    unittest.main()
