# SPDX-License-Identifier: GPL-2.0
#
# The bench-chart directive: draws the chart of `make bench` from the
# results tables of the document, at build time, with the drawing code of
# tools/testing/bench/report.py (report.chart), so that the tables are the
# one source of both the figures in the text and the chart; no image is
# committed.
#
#   .. table:: fio ... of 5 repeats ...
#      :name: bench-fio
#      ...
#   .. bench-chart::
#      :fio: bench-fio
#      :metadata: bench-metadata
#      :operations: bench-operations
#      :runtime: 10
#
#      Caption.
#
# The tables must come before the directive in the same document. It reads
# the columns report.py's text report has (see benchmarks.rst's tables):
# fio by job and configuration, throughput and client CPU "mean ± sd", the
# ratios "speed / C" and "CPU per I/O / C"; metadata phases by
# configuration, elapsed seconds and, in the "(CPU)" row below a phase,
# client CPU per RPC; per NFS operation, RPCs per run and p50 RTT by
# configuration. Configurations are named by report.py's labels (a
# parenthesis at the end of a header is ignored). A ratio column that does
# not agree with the means beside it (within their rounding), an unknown
# job, configuration or phase, or a cell that is not "mean ± sd" is an
# error, and so fails the documentation build.

import copy
import os
import re
import sys

from docutils import nodes
from docutils.parsers.rst import Directive, directives

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "..", "..", "tools", "testing", "bench"))
sys.path.insert(0, BENCH)
import report  # noqa: E402  (tools/testing/bench/report.py)

# The job column of the fio table: report.JOBS's jobs and perftest's runs.
FIO_JOBS = {"4 KiB randread": "randread-4k", "1 MiB seq read": "seqread-1m",
            "1 MiB seq write": "seqwrite-1m", "ib_read_bw": "ib_read_bw",
            "ib_write_bw": "ib_write_bw", "ib_send_lat": "ib_send_lat"}
# The ratio columns of the fio table: configuration -> its base, the
# report.fio_ratios keys of speed / C and CPU per I/O / C.
FIO_RATIOS = {"r2": ("c", "rpcrdma2_default/C_default", "cpu_per_op:rpcrdma2_default/C_default"),
              "r2-1k": ("c-1k", "rpcrdma2_1k/C_1k", "cpu_per_op:rpcrdma2_1k/C_1k"),
              "tcp": ("c", "TCP/C_default", "cpu_per_op:TCP/C_default")}
NUMBER = re.compile(r"^(\d+(?:\.(\d+))?) ± (\d+(?:\.\d+)?)\b")


class ChartError(Exception):
    pass


def label(text):
    """A header or label without a parenthesis at its end."""
    return re.sub(r"\s*\([^)]*\)$", "", text).strip()


def cell_text(entry):
    """The text of a table cell, footnote references left out, on one line."""
    entry = copy.deepcopy(entry)
    for ref in list(entry.traverse(nodes.footnote_reference)):
        ref.parent.remove(ref)
    return " ".join(entry.astext().split())


def table_cells(table):
    """(header, body) of a table node: lists of rows of cell texts."""
    header, body = [], []
    for part, out in ((nodes.thead, header), (nodes.tbody, body)):
        for group in table.traverse(part):
            for row in group.traverse(nodes.row):
                out.append([cell_text(e) for e in row.traverse(nodes.entry)])
    if len(header) != 1 or not body:
        raise ChartError("a results table needs one header row and a body")
    return header[0], body


def stat(text, where):
    """'mean ± sd ...' as report.stats's mean, sd, cv_pct, and half the unit
    of the mean's last digit (its rounding); None for an empty cell."""
    if text in ("", "n/a", "-"):
        return None
    m = NUMBER.match(text)
    if not m:
        raise ChartError(f"{where}: '{text}' is not 'mean ± sd'")
    mean, sd = float(m.group(1)), float(m.group(3))
    return {"mean": mean, "sd": sd, "cv_pct": 100.0 * sd / mean if mean else 0.0,
            "half_ulp": 0.5 * 10 ** -len(m.group(2) or "")}


def column(header, name, where):
    for i, h in enumerate(header):
        if h.startswith(name):
            return i
    raise ChartError(f"{where}: no column '{name}' (header: {header})")


def fio_table(table):
    """rows and the ratio columns of the fio table."""
    header, body = table_cells(table)
    where = "fio table"
    cj, cc, ct, ccpu, cspeed, cratio = (column(header, n, where) for n in
                                        ("job", "config", "throughput", "client CPU", "speed / C",
                                         "CPU per I/O / C"))
    configs = {lab: cfg for cfg, (lab, _) in report.CONFIGS.items()}
    rows, shown = {}, {}
    for r in body:
        job, cfg = FIO_JOBS.get(r[cj]), configs.get(r[cc])
        if not job or not cfg:
            raise ChartError(f"{where}: unknown job '{r[cj]}' or configuration '{r[cc]}'")
        w = f"{where}, {r[cj]} {r[cc]}"
        st = stat(r[ct], w)
        rows[(cfg, job)] = {"stats": st, "cpu": stat(r[ccpu], w), "values": [],
                            "status": "ok" if st else "no number in the table"}
        if cfg in FIO_RATIOS:
            base, speed, cpu = FIO_RATIOS[cfg]
            shown[(job, speed)] = (stat(r[cspeed], w), w, cfg, base, "stats")
            shown[(job, cpu)] = (stat(r[cratio], w), w, cfg, base, "cpu")
    return rows, shown


def meta_table(table, rows):
    """The metadata phases table into rows[(m-CONFIG, phase)]."""
    header, body = table_cells(table)
    where = "metadata table"
    configs = {label(lab): cfg for cfg, (lab, _) in report.META_CONFIGS.items()}
    cols = {i: configs[label(h)] for i, h in enumerate(header) if label(h) in configs}
    if "m-c" not in cols.values():
        raise ChartError(f"{where}: no C client column (header: {header})")
    phase = None
    for r in body:
        if r[0] == "(CPU)":
            if not phase:
                raise ChartError(f"{where}: a (CPU) row before any phase")
            for i, cfg in cols.items():
                rows[(cfg, phase)]["cpu"] = stat(r[i], f"{where}, {phase} CPU {header[i]}")
            continue
        if r[0] not in report.META_PHASES:
            raise ChartError(f"{where}: unknown phase '{r[0]}'")
        phase = r[0]
        for i, cfg in cols.items():
            st = stat(r[i], f"{where}, {phase} {header[i]}")
            rows[(cfg, phase)] = {"stats": st, "cpu": None, "values": [],
                                  "status": "ok" if st else "no number in the table"}
    return [c for c in report.META_ORDER if c in cols.values()]


def ops_table(table):
    """The per-operation table into ops_rows[(m-CONFIG, op)]."""
    header, body = table_cells(table)
    where = "operations table"
    configs = {label(lab): cfg for cfg, (lab, _) in report.META_CONFIGS.items()}
    cols = {i: configs[label(h)] for i, h in enumerate(header) if label(h) in configs}
    cper = column(header, "per run", where)
    ops_rows = {}
    for r in body:
        for i, cfg in cols.items():
            ops_rows[(cfg, r[0])] = {"ops_per_run": float(r[cper]),
                                     "p50": stat(r[i], f"{where}, {r[0]} {header[i]}")}
    return ops_rows


def check_ratios(rows, ratios, shown):
    """Each ratio the fio table shows is the ratio of the means beside it,
    within their rounding and its own; the chart then shows the table's
    (and, where the table shows none, the ratio of the means)."""
    by_job = {e["job"]: e for e in ratios}
    for (job, key), (st, where, cfg, base, field) in shown.items():
        calc = by_job[job][key]
        if st is None:  # not shown: the chart has the ratio of the means
            continue
        if calc is None:
            raise ChartError(f"{where}: ratio {key}: the table shows {st['mean']}, "
                             "but not both means")
        a, b = rows[(cfg, job)][field], rows[(base, job)][field]
        tol = calc["ratio"] * (a["half_ulp"] / a["mean"] + b["half_ulp"] / b["mean"]) + st["half_ulp"]
        if abs(st["mean"] - calc["ratio"]) > tol:
            raise ChartError(f"{where}: ratio {key} {st['mean']}: the means beside it give "
                             f"{calc['ratio']:.3f}")
        by_job[job][key] = {"ratio": st["mean"], "sd": st["sd"]}


def draw(path, fio, meta, ops, runtime):
    rows, shown = fio_table(fio)
    meta_cfgs = meta_table(meta, rows)
    ops_rows = ops_table(ops)
    m = re.search(r"of (\d+) repeats", fio.traverse(nodes.title)[0].astext()
                  if fio.traverse(nodes.title) else "")
    if not m:
        raise ChartError("fio table: its title does not say 'of N repeats'")
    ratios = [report.fio_ratios(rows, job) for job in report.JOBS]
    check_ratios(rows, ratios, shown)
    meta_ratios, v2v1 = report.metadata_ratios(rows, ops_rows, meta_cfgs)
    settings = {"repeats": int(m.group(1)), "runtime": runtime, "meta_vers": "4.1"}
    report.chart(path, settings, rows, ratios, meta_cfgs, meta_ratios, ops_rows, v2v1)


class BenchChart(Directive):
    has_content = True
    option_spec = {"fio": directives.unchanged_required,
                   "metadata": directives.unchanged_required,
                   "operations": directives.unchanged_required,
                   "runtime": directives.positive_int}

    def run(self):
        env = self.state.document.settings.env
        doc = self.state.document
        tables = []
        for opt in ("fio", "metadata", "operations"):
            name = self.options.get(opt)
            node = doc.ids.get(doc.nameids.get(name)) if name else None
            if not isinstance(node, nodes.table):
                raise self.error(f"bench-chart: :{opt}: names no table before it ({name})")
            tables.append(node)
        outdir = os.path.join(env.app.doctreedir, "bench-chart")
        os.makedirs(outdir, exist_ok=True)
        path = os.path.join(outdir, f"{env.docname.replace('/', '-')}-{self.lineno}.png")
        try:
            draw(path, *tables, self.options.get("runtime", 10))
        except ChartError as e:
            raise self.error(f"bench-chart: {e}")
        env.note_dependency(os.path.join(BENCH, "report.py"))
        docdir = os.path.dirname(env.doc2path(env.docname))
        image = nodes.image(uri=os.path.relpath(path, docdir), alt="make bench chart",
                            width="100%")
        figure = nodes.figure("", image)
        if self.content:
            text = " ".join(self.content)
            caption_nodes, messages = self.state.inline_text(text, self.lineno)
            figure += nodes.caption(text, "", *caption_nodes)
            figure += messages
        return [figure]


def setup(app):
    app.add_directive("bench-chart", BenchChart)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
