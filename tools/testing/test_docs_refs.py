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


def load_admin():
    spec = importlib.util.spec_from_file_location("docs_admin_check", os.path.join(HERE, "docs_admin_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


DAC = load_admin()


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

    def assert_each_fails(self, texts, needle):
        """Each of texts, alone in bad.rst, fails the check, saying needle."""
        for text in texts:
            rc, out = self.run_on("bad.rst", text)
            self.assertEqual(rc, 1, text)
            self.assertIn(needle, out, text)

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
        self.assert_each_fails(("Run ``make frobnicate``.\n",
                     "Run ``make\nfrobnicate`` (across a line).\n",
                     "Then::\n\n    make -s KDIR=/x frobnicate\n"), "frobnicate")

    def test_unknown_make_target_in_markdown_fails(self):
        rc, out = self.run_on("bad.md", "Run `make frobnicate`.\n\n    make other-thing\n")
        self.assertEqual(rc, 1)
        self.assertIn("frobnicate", out)
        self.assertIn("other-thing", out)

    def test_organisation_words_fail(self):
        self.assert_each_fails([f"As {word} says.\n" for word in
                                ("session 21", "Issue 13", "issues 9", "DESIGN.md", "shared/reference")],
                               "organised")

    def test_missing_section_fails(self):
        self.assert_each_fails(('See :doc:`testing`, "Timings".\n',
                     'See ``Documentation/testing.rst``, "Timings".\n',
                     'See Documentation/testing.rst, "No\nSuch Section".\n'), "has no section")

    def test_existing_sections_pass(self):
        # a title, a title's leading words before ':' or ' (', a
        # definition list's term
        rc, out = self.run_on("good.rst", """See :doc:`testing`, "Durations", :doc:`testing`,
"The next kernel", Documentation/testing.rst, "The CPU" and
:doc:`design-proto`, "Error recovery".
""")
        self.assertEqual(rc, 0, out)

    def test_dates_outside_a_table_title_fail(self):
        self.assert_each_fails(("Measured on 2026-11-23, it was faster.\n",
                     "As of 27 November 2026 the build takes longer.\n",
                     "Since November 28, 2026 it does.\n"), "a date")

    def test_dates_in_a_table_title_or_header_pass(self):
        rc, out = self.run_on("good.rst", """Results
=======

.. table:: fio, mean of 5 repeats; ratios of means against the C client
   at the same sizes (2026-11-23)
   :name: t1

   =====  =====
   a      b
   =====  =====
   1      2
   =====  =====

=========================  =====
per RPC (2026-11-28)       4 KiB
=========================  =====
locks                      29.16
=========================  =====
""")
        self.assertEqual(rc, 0, out)

    def test_code_and_scripts_are_checked(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.sh")
            with open(path, "w", encoding="utf-8") as f:
                f.write("""# The split keeps make check in budget (Documentation/testing.rst,
# "Timings"); issue 13 asked for it; measured on 27 November 2026;
# see shared/reference/rpcrdma-v2-00.x.
# Fine: Documentation/testing.rst, "The debug
# kernel".
""")
            cwd = os.getcwd()
            os.chdir(TOP)
            try:
                out = DR.check_code([path])
            finally:
                os.chdir(cwd)
        text = "\n".join(out)
        self.assertEqual(len(out), 4, text)
        self.assertIn('no section "Timings"', text)
        self.assertIn("'issue 13'", text)
        self.assertIn("'shared/reference'", text)
        self.assertIn("a date in code", text)

    def test_missing_path_in_code_fails(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.h")
            with open(path, "w", encoding="utf-8") as f:
                f.write("/* why a connection ends (see rpcrdma/conn/why.rs) */\n"
                        "/* fine: rpcrdma/why.rs, the kernel's Documentation/fault-injection/,\n"
                        " * tools/testing/integration/rpcrdma2-NAME.sh */\n")
            cwd = os.getcwd()
            os.chdir(TOP)
            try:
                out = DR.check_code([path])
            finally:
                os.chdir(cwd)
        self.assertEqual(len(out), 1, out)
        self.assertIn("rpcrdma/conn/why.rs", out[0])

    def test_code_files_cover_the_tree(self):
        cwd = os.getcwd()
        os.chdir(TOP)
        try:
            files = DR.code_files()
        finally:
            os.chdir(cwd)
        for p in ("Makefile", "rpcrdma/shim.c", "tools/testing/check.sh", "xdr/src/lib.rs",
                  "tools/responder/src/main.rs"):
            self.assertIn(p, files)

    def test_admin_checks_catch_planted_errors(self):
        # docs_admin_check.py's self-test: the tree passes, and each
        # planted mismatch (a reply class trace.h's comment leaves out,
        # a parameter, a field, a switch, a target, the install
        # directory) fails its check
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ok = DAC.selftest(TOP)
        self.assertTrue(ok, out.getvalue())
        for name in ("a reply class missing from trace.h's comment",
                     "a parameter's documented default differs from shim.c's",
                     "rpcrdma2.NAME= of no parameter in testing.rst",
                     "README.md shows a field its event lacks",
                     "a responder default that differs from --help's"):
            self.assertIn(f"selftest ok: {name}", out.getvalue())

    def test_reply_classes_mismatch_fails(self):
        with tempfile.TemporaryDirectory() as d:
            for f in ("rpcrdma/conn/reply.rs", "rpcrdma/trace.h", "Documentation/admin-guide.rst"):
                os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
                with open(os.path.join(TOP, f), encoding="utf-8") as src:
                    text = src.read()
                if f == "rpcrdma/conn/reply.rs":
                    text += '\nfn planted() { let _ = (c"frobnicated", 0, 0); }\n'
                with open(os.path.join(d, f), "w", encoding="utf-8") as dst:
                    dst.write(text)
            errs = DAC.check_reply_classes(d)
        self.assertTrue(any("frobnicated" in e for e in errs), errs)
        self.assertTrue(any("classes; reply.rs emits" in e for e in errs), errs)

    def test_trace_mention_of_a_missing_field_fails(self):
        with tempfile.TemporaryDirectory() as d:
            for f in ("rpcrdma/conn/reply.rs", "rpcrdma/trace.h", "README.md"):
                os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
                with open(os.path.join(TOP, f), encoding="utf-8") as src, \
                        open(os.path.join(d, f), "w", encoding="utf-8") as dst:
                    dst.write(src.read())
            os.makedirs(os.path.join(d, "Documentation"))
            with open(os.path.join(d, "Documentation", "admin-guide.rst"), "w", encoding="utf-8") as f:
                f.write("Guide\n=====\n")
            with open(os.path.join(d, "Documentation", "x.rst"), "w", encoding="utf-8") as f:
                f.write("Good: ``rpcrdma2_mr_inv how=remote``, ``rpcrdma2_reply class=stale``;\n"
                        "bad: ``rpcrdma2_marshal read_segs=2``, ``rpcrdma2_reply class=gone``.\n")
            errs = DAC.check_trace_mentions(d)
        self.assertEqual(len(errs), 2, errs)
        self.assertIn("no field read_segs", errs[0])
        self.assertIn("no class gone", errs[1])

    def test_missing_branch_fails(self):
        self.assert_each_fails(("Merged from branch ``credit-v3``.\n",
                     "The ``bench-next`` branch has it.\n",
                     "Run ``git checkout reqlife-old`` first.\n",
                     "See origin/frobnicate.\n"), "no branch or tag")
        # a branch the repository has passes
        self.assertEqual(DR.check_branches("x", "branch ``docs2``", {"docs2"}), [])

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
