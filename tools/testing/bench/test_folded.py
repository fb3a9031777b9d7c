# SPDX-License-Identifier: GPL-2.0
#
# Unit tests of folded.py and perf-fold.py: the folded stacks are root
# first, "COMM;root;...;leaf COUNT", as flamegraph.pl and inferno read
# them, and parse back leaf first; plain_name shortens demangled names
# as counts-report.py and hotspots.py show them.
# Run: python3 -m unittest discover -s tools/testing/bench -p 'test_*.py'
import os
import subprocess
import sys
import unittest

import folded

HERE = os.path.dirname(os.path.abspath(__file__))

# Two samples of one chain and one of another, as `perf script -F
# comm,tid,ip,sym,dso` prints them (leaf first).
PERF_SCRIPT = """\
nfsd 123 
\tffffffff81001234 fh_verify+0x1f ([kernel.kallsyms])
\tffffffff81005678 nfsd4_proc_compound+0x80 ([kernel.kallsyms])
\tffffffff81009abc svc_recv ([kernel.kallsyms])

nfsd 124 
\tffffffff81001234 fh_verify+0x1f ([kernel.kallsyms])
\tffffffff81005678 nfsd4_proc_compound+0x80 ([kernel.kallsyms])
\tffffffff81009abc svc_recv ([kernel.kallsyms])

rpcrdma-respond 200 
\t55d0c0 core::ptr::drop_in_place<[u8; 4]> (/usr/bin/rpcrdma-responder)
\t55d0d0 main (/usr/bin/rpcrdma-responder)

"""


class FoldedTest(unittest.TestCase):
    def test_perf_fold_writes_root_first_with_count_last(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "perf-fold.py")],
                             input=PERF_SCRIPT, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.splitlines(), [
            "nfsd;svc_recv ([kernel.kallsyms]);nfsd4_proc_compound ([kernel.kallsyms]);"
            "fh_verify ([kernel.kallsyms]) 2",
            "rpcrdma-respond;main (rpcrdma-responder);"
            "core::ptr::drop_in_place<[u8, 4]> (rpcrdma-responder) 1",
        ])

    def test_every_line_is_what_flamegraph_pl_parses(self):
        # flamegraph.pl: my ($stack, $samples) = (/^(.*)\s+?(\d+(?:\.\d*)?)$/)
        # and the frames are split on ';' (none may contain one).
        import re
        out = subprocess.run([sys.executable, os.path.join(HERE, "perf-fold.py")],
                             input=PERF_SCRIPT, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.match(r"^(.*)\s+?(\d+(?:\.\d*)?)$", line)
            self.assertIsNotNone(m, line)
            self.assertTrue(all(f for f in m.group(1).split(";")), line)

    def test_parse_line_gives_leaf_first(self):
        self.assertEqual(folded.parse_line("nfsd;svc_recv (k);fh_verify (k) 7\n"),
                         (7, "nfsd", ["fh_verify (k)", "svc_recv (k)"]))
        self.assertEqual(folded.parse_line("swapper 3"), (3, "swapper", []))
        self.assertIsNone(folded.parse_line("7\tnfsd\tfh_verify (k)"))
        self.assertIsNone(folded.parse_line(""))

    def test_round_trip(self):
        counts = folded.fold(PERF_SCRIPT.splitlines(True))
        for (comm, chain), n in counts.items():
            self.assertEqual(folded.parse_line(folded.format_line(comm, chain, n)),
                             (n, comm, list(chain)))

    def test_deep_chains_keep_the_leaf_end(self):
        deep = "x 1 \n" + "".join(f"\t{i:x} f{i} (k)\n" for i in range(60)) + "\n"
        ((comm, chain), n), = folded.fold(deep.splitlines(True)).items()
        self.assertEqual(len(chain), folded.MAX_FRAMES)
        self.assertEqual(chain[0], "f0 (k)")


if __name__ == "__main__":
    unittest.main()


class PlainNameTest(unittest.TestCase):
    def test_turbofish_and_trait_qualifiers_dropped(self):
        # counts-report.py's lock and allocation sites
        self.assertEqual(folded.plain_name("rpcrdma2::ib::qp::send_done::<rpcrdma2::conn::ConnQp>"),
                         "ib::qp::send_done")
        self.assertEqual(folded.plain_name("<kernel::sync::lock::Lock<T, B> as core::ops::Drop>::drop"),
                         "kernel::sync::lock::Lock::drop")

    def test_nested_arguments_go_whole(self):
        self.assertEqual(folded.plain_name("rpcrdma2::conn::Conn<kernel::alloc::KVec<u8>>::post"),
                         "conn::Conn::post")
        self.assertEqual(folded.plain_name("rpcrdma2::send::<alloc::vec::Vec<u8>>"), "send")
        self.assertEqual(folded.plain_name("f::<g::<T>>"), "f")

    def test_renames_and_kept_turbofish(self):
        # hotspots.py's call targets: its own renames, the instance kept
        renames = (("rpcrdma2::", ""), ("core::", ""), ("kernel::", "k::"))
        self.assertEqual(folded.plain_name("<kernel::sync::lock::Lock<T, B> as core::ops::Drop>::drop",
                                           renames, keep_turbofish=True),
                         "k::sync::lock::Lock::drop")
        self.assertEqual(folded.plain_name("rpcrdma2::ib::qp::send_done::<rpcrdma2::conn::ConnQp>",
                                           renames, keep_turbofish=True),
                         "ib::qp::send_done::<conn::ConnQp>")

    def test_plain_names_are_unchanged(self):
        for n in ("fh_verify", "rpcrdma2_xprt_send", "k::sync::Arc::drop"):
            self.assertEqual(folded.plain_name(n), n)
