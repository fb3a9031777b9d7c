#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Unit tests of counts-report.py (run by tools/testing/host-check.sh):
#   python3 -m unittest discover -s tools/testing/bench -p 'test_*.py'

import importlib.util
import io
import os
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("counts_report", os.path.join(HERE, "counts-report.py"))
cr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cr)


def hist(entries, dropped=0, head="hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:size=2048"):
    """A hist file as the kernel prints it: entries [(frames or key, n)],
    frames [(name, module)], key "field: text"."""
    out = ["# event histogram", "#", f"# trigger info: {head} [paused]", "#", ""]
    for key, n in entries:
        if isinstance(key, list):
            out.append("{ common_stacktrace:")
            for name, mod in key:
                out.append(f"         {name}+0x1c/0x60" + (f" [{mod}]" if mod else ""))
            out.append(f"}} hitcount:{n:>11}")
        else:
            out.append(f"{{ {key} }} hitcount:{n:>11}")
    hits = sum(n for _, n in entries)
    out += ["", "Totals:", f"    Hits: {hits + dropped}", f"    Entries: {len(entries)}",
            f"    Dropped: {dropped}", ""]
    return "\n".join(out)


def mountstats(reads, other, sends, pullup, fixup, mnt="/mnt/bench"):
    xprt = [0, 1, 1, 0, 0, sends, sends, 0, 5, 0, 0, reads, 0, 4096 * reads, 4096 * reads,
            pullup, fixup, 0, 0, 0, 0, 0, 0, 32, reads, 0, 0]
    return "\n".join([
        "device rootfs mounted on / with fstype rootfs",
        f"device 192.168.100.1:/export mounted on {mnt} with fstype nfs4 statvers=1.1",
        "\topts:\trw,vers=4.1,rsize=1048576",
        "\txprt:\trdma " + " ".join(map(str, xprt)),
        "\tper-op statistics",
        f"\t        NULL: 0 0 0 0 0 0 0 0 0",
        f"\t        READ: {reads} {reads} 0 1000 5000 10 200 220 0",
        f"\t    SEQUENCE: {other} {other} 0 100 100 1 20 22 0",
        "",
    ])


# one lock stack of each kind, under rpcrdma2: a site behind the kernel
# crate's lock glue (2 per RPC), a site with the lock taken by rxe under it
# (1 per RPC), and stacks without the module (5 per RPC, one of them a
# full 16-frame stack)
R2_SITE = "_RNvMNtCs1_8rpcrdma24connNtB2_7QpState7end_rpc"
R2_GLUE = "_RNvMNtNtCs2_6kernel4sync4lockINtB2_4LockpE4lock"
STACKS = {
    "_raw_spin_lock": [
        ([("kprobe_ftrace_handler", ""), ("0xffffffffa00b40c8", ""), ("_raw_spin_lock", ""),
          ("rust_helper_spin_lock", ""), (R2_GLUE, "rpcrdma2"), (R2_SITE, "rpcrdma2"),
          ("__ib_process_cq", "ib_core")], 200),
        ([("__queue_work", ""), ("worker_thread", "")], 300),
        ([(f"f{i}", "") for i in range(16)], 100),
        # a whole 16-frame stack (ends at a thread's root): not cut
        ([(f"f{i}", "") for i in range(15)] + [("ret_from_fork_asm", "")], 10),
        # an interrupt that came while rpcrdma2 ran: not the transport's
        ([("handle_irq_event", ""), ("asm_common_interrupt", ""), (R2_SITE, "rpcrdma2")], 20),
        # softirqs run at local_bh_enable() in rpcrdma2: neither
        ([("rxe_rcv", "rdma_rxe"), ("handle_softirqs", ""), ("__local_bh_enable_ip", ""),
          (R2_SITE, "rpcrdma2")], 70),
    ],
    "_raw_spin_lock_irqsave": [
        ([("_raw_spin_lock_irqsave", ""), ("rxe_post_send", "rdma_rxe"),
          ("rpcrdma2_shim_post_send", "rpcrdma2"), ("ib_cq_poll_work", "ib_core")], 100),
        ([("try_to_wake_up", "")], 100),
    ],
}
DEMANGLED = {R2_SITE: "<rpcrdma2::conn::QpState>::end_rpc",
             R2_GLUE: "<kernel::sync::lock::Lock<T, B>>::lock"}


def fake_demangle(names):
    return {n: DEMANGLED.get(n, n) for n in names}


def write_run(d, cfg, rep, rpcs=100, reads=96, dropped=0, missed=0, stacks=None, module="rpcrdma2"):
    run = os.path.join(d, "testbed", "client", "bench", "counts", f"{cfg}.{rep}")
    os.makedirs(run)

    def w(name, text):
        with open(os.path.join(run, name), "w") as f:
            f.write(text)

    w("run.txt", f"ios {reads} rpcs_per_io 1\nelapsed_s 10.0\n")
    w("setup.txt", "module rpcrdma2\nlock _raw_spin_lock\nfunc xprt_lookup_rqst\nfunc ib_cq_poll_work\n"
      "stack rxe_cq_post\n")
    w("ms0", mountstats(1000, 10, 1010, 50000, 60000))
    w("ms1", mountstats(1000 + reads, 10 + rpcs - reads, 1010 + rpcs, 50000 + 200 * rpcs, 60000 + 4200 * rpcs))
    for fn, entries in (stacks or STACKS).items():
        w(f"counts.lk_{fn}.hist", hist(entries, dropped if fn == "_raw_spin_lock" else 0))
    # completions: 100 under the completer (Send), 100 under the receiver
    w("counts.st_rxe_cq_post.hist", hist([
        ([("rxe_cq_post", "rdma_rxe"), ("rxe_completer", "rdma_rxe")], 100),
        ([("rxe_cq_post", "rdma_rxe"), ("do_complete", "rdma_rxe"), ("rxe_receiver", "rdma_rxe")], 100)]))
    w("counts.st_do_complete_1.hist", hist([([("do_complete", "rdma_rxe"), ("rxe_completer", "rdma_rxe")], 120)]))
    w("counts.st_do_complete_2.hist", hist([([("do_complete", "rdma_rxe"), ("rxe_receiver", "rdma_rxe")], 200)]))
    w("workqueue.workqueue_execute_start.hist", hist(
        [("function: [ffffffff81a0b0c0] ib_cq_poll_work", 150), ("function: [ffffffffc0123000] do_work", 250)],
        head="hist:keys=function.sym:vals=hitcount"))
    w("sched.sched_switch.hist", hist([("next_comm: kworker/0:1H", 300), ("next_comm: fio", 100)]))
    w("irq.softirq_entry.hist", hist([("vec:          3", 100), ("vec:          1", 20)]))
    w("irq.irq_handler_entry.hist", hist([("name: virtio0-input.0", 50)]))
    # allocations: 50 under the module (behind KVec's growth), 150 not
    w("kmem.kmalloc.hist", hist([
        ([("__kmalloc_noprof", ""), ("krealloc_noprof", ""), (R2_GLUE, "rpcrdma2"), (R2_SITE, "rpcrdma2")], 50),
        ([("__kmalloc_noprof", ""), ("alloc_skb", "")], 100)]))
    w("kmem.kmem_cache_alloc.hist", hist([([("kmem_cache_alloc_noprof", ""), ("rpc_new_task", "sunrpc")], 50)]))
    prof = "  Function                               Hit\n  --------                               ---\n"
    w("profile.function0", prof + "  xprt_lookup_rqst                      60\n  ib_cq_poll_work  90\n"
      "  rpcrdma2_shim_post_send  100\n")
    w("profile.function1", prof + "  xprt_lookup_rqst                      40\n  ib_cq_poll_work  60\n")
    w("module-functions.txt", f"rpcrdma2_shim_post_send [{module}]\n")
    w("kprobe_profile", f"  counts/lk__raw_spin_lock     12345 {missed}\n  counts/st_rxe_cq_post   200 0\n")
    return f"counts/{cfg}.{rep}"


def write_tsv(d, rows):
    path = os.path.join(d, "testbed", "client", "bench", "counts.tsv")
    with open(path, "w") as f:
        f.write("config\trepeat\tstatus\tdir\tmount_options\n")
        for cfg, rep, status, rdir in rows:
            f.write(f"{cfg}\t{rep}\t{status}\t{rdir}\trw,vers=4.1\n")


class ParseTest(unittest.TestCase):
    def test_hist_stack_and_plain_keys(self):
        e, t = cr.parse_hist(hist([([("a", ""), ("b", "rpcrdma")], 7), ([("c", "")], 2)], dropped=3))
        self.assertEqual(e, [((("a", ""), ("b", "rpcrdma")), 7), ((("c", ""),), 2)])
        self.assertEqual(t, {"Hits": 12, "Entries": 2, "Dropped": 3})
        e, _ = cr.parse_hist(hist([("function: [ffffffff81000000] ib_cq_poll_work", 5),
                                   ("next_comm: kworker/1:1H", 4), ("vec:          3", 2)]))
        self.assertEqual(e, [("ib_cq_poll_work", 5), ("kworker/1:1H", 4), ("3", 2)])

    def test_profile_sums_rows_after_the_rule(self):
        text = ("  Function                               Hit    Time            Avg             s^2\n"
                "  --------                               ---    ----            ---             ---\n"
                "  xprt_lookup_rqst                        12    3.1 us          0.2 us          0.1 us\n"
                "  rxe_post_send                            4    1 us\n")
        self.assertEqual(cr.parse_profile(text), {"xprt_lookup_rqst": 12, "rxe_post_send": 4})

    def test_mountstats_of_the_bench_mount_only(self):
        ops, x = cr.parse_mountstats(mountstats(5, 2, 7, 100, 200) + mountstats(50, 20, 70, 1, 2, mnt="/mnt/other"))
        self.assertEqual(ops, {"NULL": 0, "READ": 5, "SEQUENCE": 2})
        self.assertEqual((x[5], x[15], x[16]), (7, 100, 200))


class FoldTest(unittest.TestCase):
    def test_transport_sites_skip_the_lock_glue(self):
        f = cr.fold_stacks({k: [(tuple(fr), n) for fr, n in v] for k, v in STACKS.items()},
                          "rpcrdma2", DEMANGLED)
        self.assertEqual(f["all"], 900)
        self.assertEqual(f["transport"], 300)
        self.assertEqual(f["full_other"], 100)
        self.assertEqual(f["sites"], {"conn::QpState::end_rpc": 200, "rpcrdma2_shim_post_send": 100})
        self.assertEqual(f["kinds"], {"_raw_spin_lock": 200, "_raw_spin_lock_irqsave": 100})
        # the spin lock through rust_helper_spin_lock: the module's own;
        # the irqsave one called by rxe_post_send
        self.assertEqual(f["takers"], {"own": 200, "rdma_rxe": 100})
        # by site, only what the module's own code took
        self.assertEqual(f["own_sites"], {"conn::QpState::end_rpc": 200})

    def test_other_module_is_not_the_transport(self):
        f = cr.fold_stacks({k: [(tuple(fr), n) for fr, n in v] for k, v in STACKS.items()},
                          "rpcrdma", DEMANGLED)
        self.assertEqual(f["transport"], 0)

    def test_cq_split_by_the_posting_rxe_task(self):
        s = cr.cq_split([((("rxe_cq_post", ""), ("rxe_completer", "")), 3),
                         ((("rxe_cq_post", ""), ("rxe_receiver", "")), 5),
                         ((("rxe_cq_post", ""), ("flush_send_queue", "")), 1)])
        self.assertEqual(s, (3, 5, 1))


class ReportTest(unittest.TestCase):
    def test_per_rpc_values_of_one_run(self):
        with tempfile.TemporaryDirectory() as d:
            write_tsv(d, [("n-r2", 1, "ok", write_run(d, "n-r2", 1))])
            with mock.patch.object(cr, "demangle", fake_demangle):
                runs, failed = cr.load(d)
        self.assertEqual(failed, [])
        (v,) = runs["n-r2"]
        p = v["per_rpc"]
        self.assertEqual((v["rpcs"], v["reads"]), (100, 96))
        self.assertAlmostEqual(p["locks: transport"], 3.0)
        self.assertAlmostEqual(p["locks: system-wide"], 9.0)
        self.assertAlmostEqual(v["lock_sites"]["conn::QpState::end_rpc"], 2.0)
        self.assertAlmostEqual(v["lock_sites_own"]["conn::QpState::end_rpc"], 2.0)
        self.assertAlmostEqual(p["xprt_lookup_rqst (SUNRPC XID lookup)"], 1.0)
        self.assertAlmostEqual(p["ib_cq_poll_work (CQ work-item runs)"], 1.5)
        # the completer's do_complete (120), not the responder's (200)
        self.assertAlmostEqual(p["Send-queue WRs (rxe completer's do_complete)"], 1.2)
        self.assertAlmostEqual(p["completions (rxe_cq_post)"], 2.0)
        self.assertAlmostEqual(p["  signalled Send completions"], 1.0)
        self.assertAlmostEqual(p["  Receive completions"], 1.0)
        self.assertAlmostEqual(p["work items run"], 4.0)
        self.assertAlmostEqual(v["work"]["do_work"], 2.5)
        self.assertAlmostEqual(p["context switches"], 4.0)
        self.assertAlmostEqual(v["softirqs"]["NET_RX"], 1.0)
        self.assertAlmostEqual(p["allocations: the transport's"], 0.5)
        self.assertAlmostEqual(p["allocations: system-wide"], 2.0)
        self.assertEqual(v["alloc_sites"], {"conn::QpState::end_rpc": 0.5})
        self.assertAlmostEqual(p["bytes copied: pullup"], 200)
        self.assertAlmostEqual(p["bytes copied: fixup"], 4200)
        self.assertAlmostEqual(p["write_chunks"], 0.96)
        self.assertAlmostEqual(v["module_calls"], 1.0)  # only [rpcrdma2] functions
        self.assertAlmostEqual(p["locks: probe hits missed"], 0.0)

    def test_missed_probe_hits_are_reported(self):
        with tempfile.TemporaryDirectory() as d:
            write_tsv(d, [("n-c", 1, "ok", write_run(d, "n-c", 1, module="rpcrdma", missed=30))])
            runs, failed = cr.load(d)
        self.assertEqual(failed, [])
        self.assertAlmostEqual(runs["n-c"][0]["per_rpc"]["locks: probe hits missed"], 0.3)

    def test_incomplete_counts_fail_the_run(self):
        for kw in ({"dropped": 1}, {"rpcs": 0, "reads": 0}):
            with tempfile.TemporaryDirectory() as d:
                write_tsv(d, [("n-c", 1, "ok", write_run(d, "n-c", 1, module="rpcrdma", **kw)),
                              ("n-c", 2, "failed:1", "counts/n-c.2")])
                runs, failed = cr.load(d)
            self.assertEqual(runs, {}, kw)
            self.assertEqual([f[1] for f in failed], ["1", "2"], kw)

    def test_table_and_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            write_tsv(d, [("n-r2", 1, "ok", write_run(d, "n-r2", 1)),
                          ("n-r2", 2, "ok", write_run(d, "n-r2", 2, rpcs=200, reads=192)),
                          ("n-c-1k", 1, "mount-failed", "-")])
            with open(os.path.join(d, "testbed", "client", "bench", "environment.txt"), "w") as f:
                f.write("kernel 7.3.4-rpcrdma2\nrepeats 2\n")
            out = io.StringIO()
            with mock.patch.object(cr, "demangle", fake_demangle), \
                    mock.patch("sys.argv", ["counts-report.py", d]), redirect_stdout(out):
                rc = cr.main()
            self.assertTrue(os.path.exists(os.path.join(d, "counts.json")))
        self.assertEqual(rc, 3)
        text = out.getvalue()
        self.assertIn("FAILED: n-c-1k repeat 1: mount-failed", text)
        # the kernel the guests ran heads the table (the server's unknown here)
        self.assertIn("kernel (uname -r): client 7.3.4-rpcrdma2, server ?", text)
        # twice the RPCs with the same events: half per RPC in repeat 2,
        # mean 2.25, each repeat 33 % off it
        line = next(x for x in text.splitlines() if x.startswith("lock acquisitions: the transport's"))
        self.assertIn("2.25 (33.3%)", line)
        self.assertIn("r2: conn::QpState::end_rpc", text)


if __name__ == "__main__":
    unittest.main()
