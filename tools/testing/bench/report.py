#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Report of `make bench` (tools/testing/bench/run.sh): reads the raw fio
# JSON and perftest outputs of one run (RESULTS/testbed/client/bench/, one
# line per run in runs.tsv) and writes RESULTS/bench.txt (the table, also
# printed), bench.json, bench.csv (one line per configuration and job),
# bench-runs.csv (one line per run) and bench.png.
#
# Honesty rules: a job with any failed run gets no number (its status says
# why); rpcrdma2 at the default rsize/wsize that fails for want of chunks
# is "unsupported (ERRNO)"; every row states its mount options as the
# client kernel reported them in /proc/mounts.
#
#   report.py RESULTS_DIR

import csv
import json
import math
import os
import re
import statistics
import sys

CONFIGS = {  # name: (label, transport)
    "tcp": ("NFS/TCP", "TCP (sunrpc xprtsock)"),
    "c": ("C client", "rpcrdma.ko (stock C client)"),
    "c-1k": ("C client 1k", "rpcrdma.ko (stock C client)"),
    "r2-1k": ("rpcrdma2 1k", "rpcrdma2.ko"),
    "r2": ("rpcrdma2", "rpcrdma2.ko"),
    "raw": ("raw rxe", "perftest verbs, rdma_cm"),
}
ORDER = ["r2-1k", "c-1k", "r2", "c", "tcp", "raw"]
JOBS = {  # fio job: (title, unit, perftest counterpart)
    "randread-4k": ("4 KiB random read, iodepth 32", "IOPS", "ib_send_lat"),
    "seqread-1m": ("1 MiB sequential read, iodepth 4", "MiB/s", "ib_read_bw"),
    "seqwrite-1m": ("1 MiB sequential write, iodepth 4", "MiB/s", "ib_write_bw"),
}
PERF_UNITS = {"ib_write_bw": "MiB/s", "ib_read_bw": "MiB/s", "ib_send_lat": "usec"}
KEEP_OPTS = ("vers", "rsize", "wsize", "proto", "port")


def short_opts(opts):
    if not opts or opts == "-":
        return "-"
    kv = dict(o.split("=", 1) if "=" in o else (o, "") for o in opts.split(","))
    return ",".join(f"{k}={kv[k]}" for k in KEEP_OPTS if k in kv)


def fio_value(path, job):
    """(value, clat_mean_us) of a fio JSON run, or None if it did no I/O."""
    with open(path) as f:
        text = f.read()
    text = text[text.index("{"):]  # fio may put notes before the JSON
    j = json.loads(text)["jobs"][0]
    if j.get("error", 0):
        return None
    side = j["write"] if job.startswith("seqwrite") else j["read"]
    if side["io_bytes"] <= 0:
        return None
    clat = side.get("clat_ns", {}).get("mean", 0) / 1000.0
    if JOBS[job][1] == "IOPS":
        return side["iops"], clat
    return side["bw_bytes"] / 1048576.0, clat


def perftest_value(path, name):
    """The average of a perftest client output (BW average[MiB/sec], t_avg[usec])."""
    want = "t_avg" if name.endswith("_lat") else "BW average"
    with open(path) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#bytes") and want in line:
            heads = re.findall(r"[#\w%.]+(?:\s\w+)?\[[^\]]*\]|#\w+", line)
            col = next(k for k, h in enumerate(heads) if h.startswith(want))
            for data in lines[i + 1:]:
                fields = data.split()
                if fields and re.fullmatch(r"\d+", fields[0]):
                    return float(fields[col])
    return None


def failure_reason(bench, cfg, base, status):
    """A short reason for a failed fio run, from its exit status, stderr and kernel log."""
    txt = ""
    for ext in (".err", ".dmesg"):
        p = os.path.join(bench, base + ext)
        if os.path.exists(p):
            with open(p, errors="replace") as f:
                txt += f.read()
    errs = []
    for needle, name in (("Message too long", "EMSGSIZE"), ("Input/output error", "EIO"),
                         ("Unknown error 512", "ERESTARTSYS (512) leaked to user space")):
        if needle in txt:
            errs.append(name)
    rc = status.partition(":")[2]
    hung = rc in ("124", "137")
    if hung:
        errs.append("hung: fio killed by the job time limit")
    what = ", ".join(errs) or f"exit {rc}, see {base}.err"
    return f"failed ({what})"


def stats(vals):
    m = statistics.mean(vals)
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    return {"mean": m, "sd": sd, "min": min(vals), "max": max(vals),
            "cv_pct": 100.0 * sd / m if m else 0.0}


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "IOPS":
        return f"{v:.0f}"
    return f"{v:.1f}"


def main(res):
    bench = os.path.join(res, "testbed", "client", "bench")
    if not os.path.isdir(bench):  # also accept the testbed dir itself
        bench = os.path.join(res, "client", "bench")
    runs_tsv = os.path.join(bench, "runs.tsv")
    settings = {}
    env_txt = os.path.join(bench, "environment.txt")
    env_lines = []
    if os.path.exists(env_txt):
        with open(env_txt, errors="replace") as f:
            env_lines = f.read().splitlines()
        for line in env_lines:
            if line.startswith("repeats "):
                w = line.split()
                settings = dict(zip(w[0::2], w[1::2]))
    host_load = []
    hl = os.path.join(res, "host-load.txt")
    if os.path.exists(hl):
        with open(hl) as f:
            host_load = f.read().splitlines()

    runs = []
    with open(runs_tsv) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            r["value"] = None
            r["clat_us"] = None
            r["reason"] = ""
            if r["status"] == "ok":
                p = os.path.join(bench, r["file"])
                try:
                    if r["kind"] == "fio":
                        v = fio_value(p, r["job"])
                        if v is not None:
                            r["value"], r["clat_us"] = v
                    else:
                        r["value"] = perftest_value(p, r["job"])
                except (OSError, ValueError, KeyError, StopIteration, IndexError) as e:
                    r["reason"] = f"unparsable output: {e}"
                if r["value"] is None:
                    r["status"] = "failed:no-result"
                    r["reason"] = r["reason"] or "no I/O or no result in output"
            elif r["kind"] == "fio" and r["status"].startswith("failed"):
                r["reason"] = failure_reason(bench, r["config"], os.path.splitext(r["file"])[0], r["status"])
            else:
                r["reason"] = r["status"]
            runs.append(r)

    # One row per (config, job).
    rows = {}
    for r in runs:
        key = (r["config"], r["job"])
        row = rows.setdefault(key, {"config": r["config"], "job": r["job"], "kind": r["kind"],
                                    "label": CONFIGS[r["config"]][0],
                                    "transport": CONFIGS[r["config"]][1],
                                    "mount_options": "", "values": [], "clat_us": [],
                                    "failures": []})
        if r["mount_options"] not in ("", "-"):
            row["mount_options"] = r["mount_options"]
        if r["value"] is not None:
            row["values"].append(r["value"])
            if r["clat_us"] is not None:
                row["clat_us"].append(r["clat_us"])
        else:
            row["failures"].append(r["reason"] or r["status"])
    for row in rows.values():
        row["unit"] = JOBS[row["job"]][1] if row["kind"] == "fio" else PERF_UNITS[row["job"]]
        row["runs"] = len(row["values"]) + len(row["failures"])
        if row["failures"]:
            # never a number for a job that failed, even partly
            reasons = sorted(set(row["failures"]))
            row["status"] = "; ".join(reasons)
            if len(row["failures"]) < row["runs"]:
                row["status"] += f" ({len(row['failures'])} of {row['runs']} runs)"
            row["stats"] = None
        else:
            row["status"] = "ok"
            row["stats"] = stats(row["values"])
            if row["clat_us"]:
                row["stats"]["clat_mean_us"] = statistics.mean(row["clat_us"])
        if row["kind"] == "perftest":
            row["mount_options"] = "perftest " + (row["mount_options"] or "")

    def mean_of(cfg, job):
        row = rows.get((cfg, job))
        return row["stats"] if row and row["stats"] else None

    def ratio(a, b):
        if not a or not b or not b["mean"]:
            return None
        r = a["mean"] / b["mean"]
        return {"ratio": r, "sd": r * math.hypot(a["cv_pct"] / 100, b["cv_pct"] / 100)}

    ratios = []
    for job, (title, unit, perf) in JOBS.items():
        raw = mean_of("raw", perf) if unit == "MiB/s" else None
        entry = {"job": job,
                 "rpcrdma2_1k/C_1k": ratio(mean_of("r2-1k", job), mean_of("c-1k", job)),
                 "rpcrdma2_1k/C_default": ratio(mean_of("r2-1k", job), mean_of("c", job)),
                 "rpcrdma2_default/C_default": ratio(mean_of("r2", job), mean_of("c", job)),
                 "rpcrdma2_1k/raw": ratio(mean_of("r2-1k", job), raw),
                 "rpcrdma2_default/raw": ratio(mean_of("r2", job), raw),
                 "C_default/raw": ratio(mean_of("c", job), raw),
                 "raw_counterpart": perf if unit == "MiB/s" else None}
        ratios.append(entry)

    # --- the table ---
    out = []
    s = settings
    out.append(f"rpcrdma2 bench: NFSv4.1, direct I/O, fio {s.get('runtime', '?')} s measured "
               f"(+{s.get('ramp', '?')} s ramp) per run, {s.get('repeats', '?')} repeats, "
               f"file {s.get('size', '?')}; mean ± sd (min-max); no number where any run failed")
    out.append("")
    hdr = f"{'job':<12} {'configuration':<13} {'mount options (/proc/mounts) / perftest args':<58} {'n':>2} {'mean':>9} {'± sd':>7} {'min-max':>17}  status"
    out.append(hdr)
    out.append("-" * len(hdr))

    def line(job_label, row):
        st = row["stats"]
        opts = short_opts(row["mount_options"]) if row["kind"] == "fio" else row["mount_options"]
        if st:
            mm = f"{fmt(st['min'], row['unit'])}-{fmt(st['max'], row['unit'])}"
            return (f"{job_label:<12} {row['label']:<13} {opts:<58} {len(row['values']):>2} "
                    f"{fmt(st['mean'], row['unit']):>9} {fmt(st['sd'], row['unit']):>7} {mm:>17}  "
                    f"{row['unit']} ok")
        return (f"{job_label:<12} {row['label']:<13} {opts:<58} {row['runs']:>2} {'-':>9} {'-':>7} "
                f"{'-':>17}  {row['status']}")

    for job, (title, unit, perf) in JOBS.items():
        for cfg in ORDER:
            key = ("raw", perf) if cfg == "raw" else (cfg, job)
            if key in rows:
                out.append(line(job if cfg != "raw" else perf, rows[key]))
        out.append("")
    out.append("Ratios of means (± propagated relative sd); n/a where a side has no number:")
    rh = (f"{'job':<12} {'r2 dflt / C dflt':>17} {'r2 1k / C 1k':>14} {'r2 dflt / raw':>14} "
          f"{'C dflt / raw':>13} {'r2 1k / C dflt':>15}  raw counterpart")
    out.append(rh)
    out.append("-" * len(rh))

    def rf(r):
        return f"{r['ratio']:.2f}±{r['sd']:.2f}" if r else "n/a"
    for e in ratios:
        out.append(f"{e['job']:<12} {rf(e['rpcrdma2_default/C_default']):>17} {rf(e['rpcrdma2_1k/C_1k']):>14} "
                   f"{rf(e['rpcrdma2_default/raw']):>14} {rf(e['C_default/raw']):>13} "
                   f"{rf(e['rpcrdma2_1k/C_default']):>15}  {e['raw_counterpart'] or 'none (ib_send_lat is a latency)'}")
    out.append("")
    out.append("Full mount options per configuration (client /proc/mounts):")
    seen = set()
    for cfg in ORDER:
        for (c, j), row in rows.items():
            if c == cfg and row["kind"] == "fio" and row["mount_options"] and cfg not in seen:
                seen.add(cfg)
                out.append(f"  {row['label']:<12} {row['mount_options']}")
    bi = os.path.join(res, "build-info.txt")
    if os.path.exists(bi):
        with open(bi) as f:
            build_info = f.read().splitlines()
        host_sha = next((l.split()[2] for l in build_info if l.startswith("rpcrdma2.ko sha256")), None)
        guest_sha = next((l.split()[2] for l in env_lines if l.startswith("rpcrdma2.ko sha256")), None)
        out.append("")
        out.extend(build_info)
        if host_sha and guest_sha and host_sha != guest_sha:
            out.append(f"WARNING: the guest measured rpcrdma2.ko {guest_sha[:16]}..., not the one "
                       f"present when the run started ({host_sha[:16]}...): rebuilt meanwhile")
    if host_load:
        loads = [float(x.split()[1]) for x in host_load if len(x.split()) > 1]
        qs = [int(x.rsplit("qemu=", 1)[1] or 0) for x in host_load if "qemu=" in x] or [0]
        out.append("")
        out.append(f"Host load average (1 min) during the run: min {min(loads):.2f}, "
                   f"max {max(loads):.2f}, {len(loads)} samples; QEMU processes on the host (this run's 2 "
                   f"included) {min(qs)}-{max(qs)} (host-load.txt)")
    text = "\n".join(out) + "\n"
    with open(os.path.join(res, "bench.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)

    # --- machine-readable ---
    rowlist = [rows[k] for k in sorted(rows, key=lambda k: (k[1], ORDER.index(k[0])))]
    with open(os.path.join(res, "bench.json"), "w") as f:
        json.dump({"settings": settings, "environment": env_lines, "host_load": host_load,
                   "rows": rowlist, "ratios": ratios,
                   "runs": [{k: r[k] for k in ("kind", "config", "job", "repeat", "status",
                                               "value", "clat_us", "reason", "mount_options", "file")}
                            for r in runs]}, f, indent=1)
    with open(os.path.join(res, "bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "config", "transport", "mount_options", "unit", "runs_ok", "runs",
                    "mean", "sd", "min", "max", "status"])
        for row in rowlist:
            st = row["stats"] or {}
            w.writerow([row["job"], row["config"], row["transport"], row["mount_options"], row["unit"],
                        len(row["values"]), row["runs"], st.get("mean", ""), st.get("sd", ""),
                        st.get("min", ""), st.get("max", ""), row["status"]])
    with open(os.path.join(res, "bench-runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "config", "job", "repeat", "status", "value", "clat_us", "reason", "mount_options"])
        for r in runs:
            w.writerow([r["kind"], r["config"], r["job"], r["repeat"], r["status"],
                        "" if r["value"] is None else r["value"],
                        "" if r["clat_us"] is None else r["clat_us"], r["reason"], r["mount_options"]])

    # --- chart ---
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2))
    colors = {"r2-1k": "#d62728", "c-1k": "#1f77b4", "r2": "#ff9896", "c": "#aec7e8",
              "tcp": "#7f7f7f", "raw": "#2ca02c"}
    for ax, (job, (title, unit, perf)) in zip(axes, JOBS.items()):
        cfgs = [c for c in ORDER if (c, job) in rows or (c == "raw" and unit == "MiB/s" and ("raw", perf) in rows)]
        for i, cfg in enumerate(cfgs):
            row = rows[("raw", perf)] if cfg == "raw" else rows[(cfg, job)]
            st = row["stats"]
            if st:
                ax.bar(i, st["mean"], yerr=st["sd"], color=colors[cfg], capsize=4)
                ax.plot([i] * len(row["values"]), row["values"], "k.", ms=4)
                ax.text(i, st["mean"], fmt(st["mean"], unit), ha="center", va="bottom", fontsize=8)
            else:
                short = row["status"].split(";")[0].split(":")[0].split("(")[0].strip()
                ax.text(i, 0.03, short + "\n(no number)", ha="center", va="bottom", fontsize=7,
                        rotation=90, color="#a00000", transform=ax.get_xaxis_transform())
        ax.set_xticks(range(len(cfgs)))
        ax.set_xticklabels([CONFIGS[c][0] + ("\n" + perf if c == "raw" else "") for c in cfgs],
                           rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(unit + " (log scale)")
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"rpcrdma2 bench (NFSv4.1, direct I/O, two TCG guests, soft-RoCE; "
                 f"mean ± sd of {settings.get('repeats', '?')} × {settings.get('runtime', '?')} s; "
                 f"'1k' = rsize=wsize=1024)", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(res, "bench.png"), dpi=110)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RESULTS_DIR")
    sys.exit(main(sys.argv[1]))
