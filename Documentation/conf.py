# SPDX-License-Identifier: GPL-2.0
#
# Sphinx configuration of Documentation/ (tools/testing/docs-check.sh builds
# it with warnings as errors): Sphinx's defaults, and the local extension
# in sphinx/ that draws the chart of benchmarks.rst from its results tables
# (Debian python3-matplotlib).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sphinx"))
# The build writes nothing into the source tree (no __pycache__ beside the
# extension or the bench tools it imports).
sys.dont_write_bytecode = True

extensions = ["benchchart"]
exclude_patterns = ["sphinx"]
