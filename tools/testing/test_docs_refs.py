#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Unit tests of docs-refs.py (run by `make check`'s host phase): each of its
# checks fails on a planted bad reference and passes on good ones.

import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def load():
    cwd = os.getcwd()
    os.chdir(TOP)  # docs-refs.py reads git's file list of the current tree
    try:
        spec = importlib.util.spec_from_file_location("docs_refs", os.path.join(HERE, "docs-refs.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        os.chdir(cwd)


DR = load()


class DocsRefs(unittest.TestCase):
    def run_on(self, name, text):
        """docs-refs.py's exit status and output on one document"""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            out = io.StringIO()
            cwd = os.getcwd()
            os.chdir(TOP)
            try:
                with contextlib.redirect_stdout(out):
                    rc = DR.main([path])
            finally:
                os.chdir(cwd)
        return rc, out.getvalue()

    def test_good_references_pass(self):
        rc, out = self.run_on("good.rst", """Good
====

See ``tools/testing/docs-check.sh``, Documentation/testing.rst, the
``samples/fio/`` jobs, ``rpcrdma/proto/tests/`` and the build outputs
``fuzz/work/summary.txt`` and ``build/kunit/rpcrdma2.ko``; placeholders
such as ``$RPCRDMA2_CACHE/kernel/<version>/`` and
``tools/testing/integration/rpcrdma2-*.sh`` are not checked. ``make
check``, ``make -s KDIR=/x modules`` and::

    make bench BENCH_ARGS='--repeats 5'
    make KDIR=/path/to/linux/build LLVM=1
""")
        self.assertEqual(rc, 0, out)

    def test_missing_path_fails(self):
        rc, out = self.run_on("bad.rst", "See ``tools/testing/no-such-script.sh``.\n")
        self.assertEqual(rc, 1)
        self.assertIn("tools/testing/no-such-script.sh", out)

    def test_missing_path_with_line_fails(self):
        rc, out = self.run_on("bad.md", "In rpcrdma/conn/no-such-file.rs:12, see.\n")
        self.assertEqual(rc, 1)
        self.assertIn("rpcrdma/conn/no-such-file.rs", out)

    def test_unknown_make_target_fails(self):
        for text in ("Run ``make frobnicate``.\n",
                     "Run ``make\nfrobnicate`` (across a line).\n",
                     "Then::\n\n    make -s KDIR=/x frobnicate\n"):
            rc, out = self.run_on("bad.rst", text)
            self.assertEqual(rc, 1, text)
            self.assertIn("frobnicate", out)

    def test_unknown_make_target_in_markdown_fails(self):
        rc, out = self.run_on("bad.md", "Run `make frobnicate`.\n\n    make other-thing\n")
        self.assertEqual(rc, 1)
        self.assertIn("frobnicate", out)
        self.assertIn("other-thing", out)

    def test_organisation_words_fail(self):
        for word in ("session 21", "Issue 13", "issues 9", "DESIGN.md"):
            rc, out = self.run_on("bad.rst", f"As {word} says.\n")
            self.assertEqual(rc, 1, word)
            self.assertIn("organised", out)

    def test_make_commands_only(self):
        # a package named make, and a kernel tree's own target, are not
        # targets of this repository's Makefile; a make command is
        self.assertEqual(DR.make_targets_in("apt-get install make git"), [])
        self.assertEqual(DR.make_targets_in("make LLVM=1 rustavailable"), [])
        self.assertEqual(DR.make_targets_in("make -C dir frobnicate"), ["frobnicate"])
        self.assertEqual(DR.make_targets_in("cd x && make check"), ["check"])

    def test_makefile_targets(self):
        cwd = os.getcwd()
        os.chdir(TOP)
        try:
            targets = DR.makefile_targets()
        finally:
            os.chdir(cwd)
        for t in ("check", "check-long", "check-debug", "bench", "demo", "kernel", "soak", "fuzz"):
            self.assertIn(t, targets)
        self.assertNotIn("frobnicate", targets)


if __name__ == "__main__":
    unittest.main()
