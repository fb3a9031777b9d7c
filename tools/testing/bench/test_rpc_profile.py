#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Unit tests of rpc-profile-report.py (run by tools/testing/host-check.sh):
#   python3 -m unittest discover -s tools/testing/bench -p 'test_*.py'

import importlib.util
import os
import tempfile
import unittest

import folded

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "rpc_profile_report", os.path.join(HERE, "rpc-profile-report.py"))
rpr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rpr)

K = "[kernel.kallsyms]"


def chain(*names):
    return ";".join(f"{n} ({K})" for n in names)


# one profile: 1000 samples idle, 50 interrupt samples while idle, nfsd
# 30 (20 in svc_process, 6 in svc_tcp_sendto), responder 40 (25 in
# system calls, 10 of them poll), 5 of another thread
FOLDED = [
    (1000, "swapper", chain("default_idle", "default_idle_call", "do_idle")),
    (50, "swapper", chain("rxe_rcv", "handle_softirqs", "default_idle", "do_idle")),
    (20, "nfsd", chain("fh_verify", "nfsd4_proc_compound", "svc_process", "svc_recv")),
    (6, "nfsd", chain("tcp_sendmsg", "svc_tcp_sendto", "svc_send", "svc_recv")),
    (4, "nfsd", chain("schedule", "svc_recv")),
    (10, "rpcrdma-respond", chain("do_sys_poll", "__x64_sys_poll", "do_syscall_64")),
    (15, "rpcrdma-respond", chain("tcp_sendmsg", "__x64_sys_sendmsg", "do_syscall_64")),
    (15, "rpcrdma-respond", "Server::run (rpcrdma-responder)"),
    (5, "bash", chain("do_idle_not", "x")),
]


def write_results(d, runs):
    """runs: [(repeat, port, rpcs, rtt_ms, elapsed_ms, folded rows or None)]"""
    ctl = os.path.join(d, "ctl")
    os.makedirs(ctl)
    with open(os.path.join(ctl, "rpc-profile.tsv"), "w") as f:
        f.write("repeat\tport\trpcs\trtt_ms\telapsed_ms\n")
        for rep, port, rpcs, rtt, ms, rows in runs:
            f.write(f"{rep}\t{port}\t{rpcs}\t{rtt}\t{ms}\n")
            if rows is not None:
                with open(os.path.join(ctl, f"prof-{port}-{rep}.folded"), "w") as g:
                    for n, comm, c in rows:
                        g.write(folded.format_line(comm, c.split(";") if c else [], n) + "\n")


class RpcProfileTest(unittest.TestCase):
    def test_samples_per_rpc_by_thread_and_function(self):
        with tempfile.TemporaryDirectory() as t:
            write_results(t, [(1, "20051", 100, 150, 10000, FOLDED)])
            (u,) = rpr.per_rpc(t)["20051"]
        # one sample is 1 ms: 1000 µs / 100 RPCs = 10 µs per sample
        self.assertAlmostEqual(u["busy"], 1250)  # idle excluded, the rest all
        self.assertAlmostEqual(u["interrupts while idle (packets in)"], 500)
        self.assertAlmostEqual(u["nfsd"], 300)
        self.assertAlmostEqual(u["nfsd: svc_process (the NFS work)"], 200)
        self.assertAlmostEqual(u["nfsd: fh_verify"], 200)
        self.assertAlmostEqual(u["nfsd: send (svc_*_sendto)"], 60)
        self.assertAlmostEqual(u["responder"], 400)
        self.assertAlmostEqual(u["responder: system calls"], 250)
        self.assertAlmostEqual(u["responder: poll"], 100)
        self.assertAlmostEqual(u["responder: sendmsg (to nfsd)"], 150)
        self.assertAlmostEqual(u["other"], 50)
        self.assertAlmostEqual(u["RTT"], 1500)
        self.assertAlmostEqual(u["RPCs/s"], 10)

    def test_repeats_kept_apart_per_port(self):
        with tempfile.TemporaryDirectory() as t:
            write_results(t, [(1, "20049", 100, 100, 10000, FOLDED),
                              (1, "20051", 50, 100, 10000, FOLDED),
                              (2, "20051", 200, 100, 10000, FOLDED)])
            r = rpr.per_rpc(t)
        self.assertEqual(len(r["20049"]), 1)
        self.assertEqual([u["nfsd"] for u in r["20051"]], [600, 150])

    def test_a_missing_profile_or_no_rpcs_fails(self):
        with tempfile.TemporaryDirectory() as t:
            write_results(t, [(1, "20049", 100, 100, 10000, None)])
            with self.assertRaises(SystemExit):
                rpr.per_rpc(t)
        with tempfile.TemporaryDirectory() as t:
            write_results(t, [(1, "20049", 0, 0, 10000, FOLDED)])
            with self.assertRaises(SystemExit):
                rpr.per_rpc(t)


if __name__ == "__main__":
    unittest.main()
