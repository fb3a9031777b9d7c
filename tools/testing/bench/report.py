#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Report of `make bench` (tools/testing/bench/run.sh): reads the raw fio
# JSON, perftest outputs and metadata-phase snapshots (mountstats, trace,
# /proc/stat) of one run (RESULTS/testbed/client/bench/, one line per run
# in runs.tsv), the server guest's /proc/stat samples
# (RESULTS/testbed/server/cpu-samples.txt; runs from before it existed
# report "n/a" for the server's CPU) and writes RESULTS/bench.txt (the tables, also printed),
# bench.json, bench.csv (one line per configuration and job or phase),
# bench-ops.csv (one line per configuration and NFS operation),
# bench-runs.csv (one line per run) and bench.png.
#
# Honesty rules: a job with any failed run gets no number (its status says
# why); every row states its mount options as the client kernel reported
# them in /proc/mounts; a selected configuration with a failed or missing
# run is listed under FAILED and the exit status is 3 (after writing
# everything).
#
#   report.py RESULTS_DIR

import csv
import json
import math
import os
import re
import statistics
import sys

import folded

CONFIGS = {  # name: (label, transport)
    "tcp": ("NFS/TCP", "TCP (sunrpc xprtsock)"),
    "c": ("C client", "rpcrdma.ko (stock C client)"),
    "c-1k": ("C client 1k", "rpcrdma.ko (stock C client)"),
    "r2-1k": ("rpcrdma2 1k", "rpcrdma2.ko"),
    "r2": ("rpcrdma2", "rpcrdma2.ko"),
    "r2-0": ("rpcrdma2 base", "rpcrdma2.ko, --module-baseline build"),
    "raw": ("raw rxe", "perftest verbs, rdma_cm"),
    "v2": ("r2 v2 (resp.)", "rpcrdma2.ko, RPC-over-RDMA v2, responder port 20050"),
    "v2-inl": ("r2 v2 frwr=N", "rpcrdma2.ko frwr=N (Message Continuation), v2, responder"),
    "c-resp": ("C (resp.)", "rpcrdma.ko (stock C client), v1, responder --v1-only port 20051"),
    "c-resp0": ("C resp. base", "rpcrdma.ko, v1, --responder-baseline build, port 20052"),
}
ORDER = ["r2-1k", "c-1k", "r2", "r2-0", "c", "c-resp", "c-resp0", "tcp", "raw", "v2", "v2-inl"]
META_CONFIGS = {  # name: (label, transport)
    "m-v2": ("r2 v2 (resp.)", "rpcrdma2.ko, RPC-over-RDMA v2, responder port 20050"),
    "m-v1": ("r2 v1 (resp.)", "rpcrdma2.ko, RPC-over-RDMA v1, responder --v1-only port 20051"),
    "m-r2": ("rpcrdma2", "rpcrdma2.ko to svcrdma (v1)"),
    "m-c": ("C client", "rpcrdma.ko to svcrdma (v1)"),
    "m-c-resp": ("C (resp.)", "rpcrdma.ko, v1, responder --v1-only port 20051"),
    "m-c-resp0": ("C resp. base", "rpcrdma.ko, v1, --responder-baseline build, port 20052"),
    "m-tcp": ("NFS/TCP", "TCP (sunrpc xprtsock)"),
}
META_ORDER = ["m-v2", "m-v1", "m-c-resp", "m-c-resp0", "m-r2", "m-c", "m-tcp"]
META_PHASES = {  # phase: description
    "stat": "stat of every file, cold",
    "restat": "stat again, attributes expired",
    "ls": "ls -l of every directory, cold",
    "create": "create small files",
    "remove": "rm -r of them",
    "untar": "tar -x of a kernel subtree",
    "rmtree": "rm -rf of the untarred tree",
}
# operations that carry file data (chunks expected at the default sizes)
# run.sh's 'counts': reported by counts-report.py, not here.
COUNTS_CONFIGS = {"n-r2", "n-c", "n-r2-1k", "n-c-1k"}
DATA_OPS = {"READ", "WRITE"}
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
    """(value, clat_mean_us, iops) of a fio JSON run, or None if it did no I/O."""
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
        return side["iops"], clat, side["iops"]
    return side["bw_bytes"] / 1048576.0, clat, side["iops"]


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


def meta_label(cfg):
    """Label of a metadata configuration name (m-v2, or m-v2.nfs3 for NFSv3)."""
    base, _, vers = cfg.partition(".nfs")
    return META_CONFIGS[base][0] + (f" NFSv{vers}" if vers else "")


def meta_base(cfg):
    return cfg.partition(".nfs")[0]


def meta_suffix(cfg):
    s = cfg.partition(".nfs")[2]
    return f".nfs{s}" if s else ""


def cpu_window(path, user_hz):
    """(seconds, busy CPU seconds, utilisation) between the two /proc/stat
    samples of a .cpu file: "EPOCHREALTIME cpu user nice system idle iowait
    irq softirq steal ...".  Busy = user + nice + system + irq + softirq;
    utilisation = busy / all ticks of the window (of all CPUs: the
    testbed's guests have one)."""
    with open(path) as f:
        samples = [l.split() for l in f if l.startswith(tuple("0123456789"))]
    if len(samples) < 2:
        return None
    (t0, _, *a), (t1, _, *b) = samples[0], samples[-1]
    a = [int(x) for x in a[:8]]
    b = [int(x) for x in b[:8]]
    d = [y - x for x, y in zip(a, b)]
    busy = d[0] + d[1] + d[2] + d[5] + d[6]
    total = sum(d)
    secs = float(t1) - float(t0)
    if secs <= 0 or total <= 0:
        return None
    return secs, busy / user_hz, busy / total


def server_samples(res):
    """The server guest's /proc/stat samples (bench/server.sh, cpu_sampler):
    {NAME: [(client_t or None, server_t, sampler_ticks, [user nice system
    idle iowait irq softirq steal])]} and the server's USER_HZ (None if not
    stated); ({}, None) for a run without the file (older runs).  A
    malformed line (a guest stopped mid-write) is skipped."""
    for p in (os.path.join(res, "testbed", "server", "cpu-samples.txt"),
              os.path.join(res, "server", "cpu-samples.txt")):
        if os.path.exists(p):
            break
    else:
        return {}, None
    samples, hz = {}, None
    with open(p, errors="replace") as f:
        for line in f:
            w = line.split()
            if line.startswith("#"):
                if "user_hz" in w[:-1]:
                    try:
                        hz = int(w[w.index("user_hz") + 1])
                    except ValueError:
                        pass
                continue
            if len(w) < 13 or w[4] != "cpu":
                continue
            try:
                samples.setdefault(w[0], []).append(
                    (None if w[1] == "-" else float(w[1]), float(w[2]), int(w[3]),
                     [int(x) for x in w[5:13]]))
            except ValueError:
                continue
    return samples, hz


def server_window(samples, base, user_hz):
    """The server's CPU between its samples BASE.0 and BASE.1 (taken on the
    client's request at the start and end of a measured interval): a dict
    of the window's seconds (server clock), busy CPU seconds (user + nice +
    system + irq + softirq), utilisation (busy / all ticks), the sampler's
    own CPU seconds in it, and each sample's lag behind the client's
    request (server clock minus client clock: includes the guests' clock
    offset); None if a sample is missing."""
    a, b = samples.get(base + ".0"), samples.get(base + ".1")
    if not a or not b:
        return None
    (c0, t0, s0, x), (c1, t1, s1, y) = a[0], b[-1]
    d = [q - p for p, q in zip(x, y)]
    busy = d[0] + d[1] + d[2] + d[5] + d[6]
    total = sum(d)
    secs = t1 - t0
    if secs <= 0 or total <= 0:
        return None
    return {"secs": secs, "busy_s": busy / user_hz, "util": busy / total,
            "self_s": (s1 - s0) / user_hz,
            "lag_s": [t - c for c, t in ((c0, t0), (c1, t1)) if c is not None]}


def mountstats_block(path, mnt="/mnt/bench"):
    """Per-op counters {OP: [ops, trans, timeouts, bytes_sent, bytes_recv,
    queue_ms, rtt_ms, execute_ms, errors]} and the xprt line's fields
    (fields[0] is the transport name) of the mount on MNT (the last one)."""
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    ops, xprt, cur, found = {}, [], False, False
    for line in lines:
        if line.startswith("device "):
            w = line.split()
            cur = len(w) > 4 and w[4] == mnt
            if cur:
                ops, xprt, found = {}, [], True
            continue
        if not cur:
            continue
        t = line.strip()
        if t.startswith("xprt:"):
            xprt = t.split()[1:]
            continue
        m = re.match(r"([A-Z_0-9]+):\s+([\d\s]+)$", t)
        if m:
            ops[m.group(1)] = [int(x) for x in m.group(2).split()]
    return (ops, xprt) if found else None


TRACE_LAT = re.compile(r" rpc_stats_latency: task:(\w+)@(\w+) xid=0x(\w+) (\S+)v(\d+) (\S+) "
                       r"backlog=(\d+) rtt=(\d+) execute=(\d+)")
TRACE_R2_MARSHAL = re.compile(r" rpcrdma2_marshal: .*?xid=0x(\w+) .*?call=(\S+) reply=(\S+)")
TRACE_R2_MR = re.compile(r" rpcrdma2_mr_reg: conn=\d+ xid=0x(\w+)")
TRACE_C_MARSHAL = re.compile(r" xprtrdma_marshal: task:(\w+)@(\w+) xid=0x(\w+) ")
TRACE_C_MR = re.compile(r" xprtrdma_mr_fastreg: task:(\w+)@(\w+) ")


def parse_trace(path):
    """From a phase's trace buffer: per-op RTT samples (us), per-op counts of
    RPCs that used a chunk and of memory registrations, and whether events
    were lost (entries-in-buffer < entries-written)."""
    lat, by_xid, by_task = {}, {}, {}
    chunked_x, chunked_t, mr_x, mr_t = [], [], [], []
    lost = False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                m = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)", line)
                if m and m.group(1) != m.group(2):
                    lost = True
                continue
            m = TRACE_LAT.search(line)
            if m:
                proc = m.group(6)
                lat.setdefault(proc, []).append(int(m.group(8)))
                by_xid[m.group(3).lower()] = proc
                by_task.setdefault((m.group(1), m.group(2)), proc)
                continue
            m = TRACE_R2_MARSHAL.search(line)
            if m:
                chunked_x.append(m.group(1).lower())
                continue
            m = TRACE_R2_MR.search(line)
            if m:
                mr_x.append(m.group(1).lower())
                continue
            m = TRACE_C_MARSHAL.search(line)
            if m:
                chunked_x.append(m.group(3).lower())
                continue
            m = TRACE_C_MR.search(line)
            if m:
                mr_t.append((m.group(1), m.group(2)))
    chunked, mrs = {}, {}
    for x in chunked_x:
        op = by_xid.get(x, "?")
        chunked[op] = chunked.get(op, 0) + 1
    for x in mr_x:
        op = by_xid.get(x, "?")
        mrs[op] = mrs.get(op, 0) + 1
    for t in mr_t:
        op = by_task.get(t, "?")
        mrs[op] = mrs.get(op, 0) + 1
    return {"lat_us": lat, "chunked": chunked, "mrs": mrs, "lost": lost}


def meta_values(bench, base, user_hz):
    """Everything measured in one metadata phase run."""
    cw = cpu_window(os.path.join(bench, base + ".cpu"), user_hz)
    m0 = mountstats_block(os.path.join(bench, base + ".ms0"))
    m1 = mountstats_block(os.path.join(bench, base + ".ms1"))
    if cw is None or m1 is None:
        return None
    ops0, x0 = m0 if m0 else ({}, [])
    ops1, x1 = m1
    ops = {}
    for op, v1 in ops1.items():
        v0 = ops0.get(op, [0] * len(v1))
        d = [b - a for a, b in zip(v0, v1)]
        if d[0] > 0:
            ops[op] = {"ops": d[0], "rtt_ms": d[6], "exec_ms": d[7],
                       "errors": d[8] if len(d) > 8 else 0}
    rpcs = sum(o["ops"] for o in ops.values())
    xd = {}
    if x1 and x1[0] == "rdma" and len(x0) == len(x1):
        # admin-guide.rst: field k of the xprt line is x[k] (x[0] = "rdma")
        names = {11: "read_chunk_segs", 12: "write_chunk_segs", 13: "reply_chunk_segs",
                 6: "sends", 7: "receives", 21: "nomsg_calls", 25: "local_inv", 28: "remote_inv"}
        for k, n in names.items():
            if k < len(x1):
                xd[n] = int(x1[k]) - int(x0[k])
    tr = parse_trace(os.path.join(bench, base + ".trace"))
    secs, cpu_s, util = cw
    return {"elapsed_s": secs, "cpu_s": cpu_s, "util": util, "rpcs": rpcs,
            "cpu_us_per_rpc": cpu_s * 1e6 / rpcs if rpcs else None,
            "ops": ops, "xprt": xd, "trace": tr}


IDLE_SYMS = ("default_idle", "native_safe_halt", "pv_native_safe_halt", "acpi_safe_halt")


def profile_shares(base):
    """Self time by module of a --profile run (BASE.perf-dso.txt): {dso: share of all samples},
    with the kernel's idle loop (BASE.perf-self.txt) apart as "idle"."""
    path = base + ".perf-dso.txt"
    if not os.path.exists(path):
        return None
    shares = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s+([\d.]+)%\s+(\S+)", line)
            if m:
                shares[m.group(2)] = float(m.group(1)) / 100
    if not shares:
        return None
    idle = 0.0
    if os.path.exists(base + ".perf-self.txt"):
        with open(base + ".perf-self.txt", errors="replace") as f:
            for line in f:
                m = re.match(r"\s+([\d.]+)%\s+\[kernel\.kallsyms\]\s+\[k\]\s+(\S+)\s*$", line)
                if m and m.group(2) in IDLE_SYMS:
                    idle += float(m.group(1)) / 100
    shares["idle"] = idle
    shares["[kernel.kallsyms]"] = shares.get("[kernel.kallsyms]", 0.0) - idle
    return shares


# --profile, the server guest (bench/server.sh srv_perf_report): each
# sample's call chain classified into the components below (report order).
# The responder is single-threaded: its command name is the binary's name
# cut to 15 characters.
RESPONDER_COMM = "rpcrdma-respond"
SRV_COMPONENTS = [
    ("resp.user.own", "responder, user space: its own code"),
    ("resp.user.ibverbs", "responder, user space: libibverbs"),
    ("resp.user.rxe", "responder, user space: librxe (rdma-core)"),
    ("resp.user.libc", "responder, user space: libc"),
    ("resp.user.other", "responder, user space: other"),
    ("resp.sys.tcp_send", "responder, kernel: TCP send to nfsd"),
    ("resp.sys.tcp_recv", "responder, kernel: TCP receive from nfsd"),
    ("resp.sys.poll", "responder, kernel: poll"),
    ("resp.sys.verbs", "responder, kernel: verbs (ib_uverbs, rxe)"),
    ("resp.sys.other", "responder, kernel: other system calls"),
    ("resp.sys.none", "responder, kernel: not in a system call"),
    ("nfsd.svcrdma", "nfsd threads: svcrdma"),
    ("nfsd.rxe", "nfsd threads: rxe (called by svcrdma)"),
    ("nfsd.tcp", "nfsd threads: TCP (sunrpc's socket transport)"),
    ("nfsd.other", "nfsd threads: the rest (NFS, sunrpc, VFS)"),
    ("rxe", "other contexts: rxe (its workqueue, softirq)"),
    ("svcrdma", "other contexts: svcrdma (its workqueue)"),
    ("kernel", "other contexts: the rest of the kernel"),
    ("tools", "perf, the CPU sampler, other user space"),
]
SRV_GROUPS = [("responder, user space", "resp.user."), ("responder, kernel", "resp.sys."),
              ("nfsd threads", "nfsd."), ("other contexts", ("rxe", "svcrdma", "kernel")),
              ("perf, sampler, other", ("tools",))]


def srv_kdso(dso):
    """Whether DSO is the kernel or one of its modules ("[kernel.kallsyms]",
    "[rdma_rxe]", or the module file perf found: "rdma_rxe.ko")."""
    return (dso.startswith("[") and dso != "[unknown]") or re.search(r"\.ko(\.\w+)?$", dso) is not None


def srv_has(frames, prefixes, dsos=()):
    """Whether a frame's symbol starts with one of PREFIXES or its module is one of DSOS."""
    return any(s.startswith(prefixes) or re.sub(r"\.ko(\.\w+)?$|^\[|\]$", "", d) in dsos for s, d in frames)


RXE = (("rxe_", "ib_uverbs", "ib_post_", "ib_poll_cq"), ("rdma_rxe", "ib_uverbs"))
SVCRDMA = (("svc_rdma", "svcrdma"), ("rpcrdma",))


def srv_classify(comm, frames):
    """The component (SRV_COMPONENTS) of one server sample: COMM, FRAMES
    [(sym, dso)] leaf first; "idle" for the idle loop.  Kernel time goes
    by what its call chain is doing (inclusive: rxe's work called from a
    system call or from svcrdma counts as rxe's)."""
    leaf_sym, leaf_dso = frames[0] if frames else ("[unknown]", "[unknown]")
    in_kernel = srv_kdso(leaf_dso)
    if in_kernel and leaf_sym in IDLE_SYMS:
        return "idle"
    if comm == RESPONDER_COMM:
        if not in_kernel:
            if leaf_dso.startswith("rpcrdma-respond"):
                return "resp.user.own"
            if leaf_dso.startswith("libibverbs"):
                return "resp.user.ibverbs"
            if leaf_dso.startswith("librxe"):
                return "resp.user.rxe"
            if leaf_dso.startswith("libc."):
                return "resp.user.libc"
            return "resp.user.other"
        if srv_has(frames, *RXE):
            return "resp.sys.verbs"
        if srv_has(frames, ("tcp_sendmsg", "sock_write_iter", "sock_sendmsg", "__sys_sendto", "__sys_sendmsg")):
            return "resp.sys.tcp_send"
        if srv_has(frames, ("tcp_recvmsg", "sock_read_iter", "sock_recvmsg", "__sys_recvfrom", "__sys_recvmsg")):
            return "resp.sys.tcp_recv"
        if srv_has(frames, ("do_sys_poll", "__x64_sys_poll", "__x64_sys_ppoll", "do_epoll_wait", "ep_poll")):
            return "resp.sys.poll"
        if srv_has(frames, ("do_syscall_64",)):
            return "resp.sys.other"
        return "resp.sys.none"
    if comm.startswith("nfsd"):
        if srv_has(frames, *RXE):
            return "nfsd.rxe"
        if srv_has(frames, *SVCRDMA):
            return "nfsd.svcrdma"
        if srv_has(frames, ("svc_tcp_", "tcp_", "sock_")):
            return "nfsd.tcp"
        return "nfsd.other"
    if not in_kernel or comm.startswith("perf") or comm in ("bash", "sleep"):
        return "tools"
    if srv_has(frames, *RXE):
        return "rxe"
    if srv_has(frames, *SVCRDMA):
        return "svcrdma"
    return "kernel"


def srv_profile(res, base):
    """The server's profile of fio run BASE (--profile): ({component:
    share of all samples}, {responder user-space function "sym (dso)":
    share}, the server's CPU count), or None without one."""
    p = os.path.join(res, "testbed", "server", "bench", base + ".srv-folded.txt")
    if not os.path.exists(p):
        return None
    comp, fn, total = {}, {}, 0
    with open(p, errors="replace") as f:
        for line in f:
            row = folded.parse_line(line)
            if row is None:
                continue
            n, comm, chain = row
            frames = []
            for fr in chain:
                m = re.match(r"(.*) \((.*)\)$", fr)
                frames.append((m.group(1), m.group(2)) if m else (fr, "[unknown]"))
            frames = frames or [("[unknown]", "[unknown]")]
            c = srv_classify(comm, frames)
            comp[c] = comp.get(c, 0) + n
            if c.startswith("resp.user."):
                k = f"{frames[0][0]} ({frames[0][1]})"
                fn[k] = fn.get(k, 0) + n
            total += n
    if not total:
        return None
    nproc = 1
    sp = os.path.join(res, "testbed", "server", "cpu-samples.txt")
    if os.path.exists(sp):
        with open(sp, errors="replace") as f:
            w = f.readline().split()
        if "nproc" in w[:-1] and w[w.index("nproc") + 1].isdigit():
            nproc = int(w[w.index("nproc") + 1])
    return ({k: v / total for k, v in comp.items()}, {k: v / total for k, v in fn.items()}, nproc)


def srv_profile_table(sprof, rows):
    """The --profile server tables: {(cfg, job): [runs]} -> lines."""
    out = ["--profile, the server guest: CPU µs per I/O by component (perf cpu-clock, whole guest, over the",
           "same interval as the client's; a sample's component from its command and call chain: the",
           "responder's user-space time by the library its sampled function is in, its kernel time by the",
           "system call it is in; 'busy' is all samples but the idle loop's, 'srv µs/op' the same from",
           "/proc/stat (the reference: perf's samples are a share of it); mean ± sd over the runs;",
           "testbed/server/bench/fio.*.srv-perf-self.txt name the symbols)."]
    keys = [(c, j) for j in JOBS for c in ORDER if (c, j) in sprof]
    w = 16
    hdr = f"{'component':<50}" + "".join(f"{(CONFIGS[c][0] + ' ' + j)[:w]:>{w}}" for c, j in keys)
    out.extend([hdr, "-" * len(hdr)])

    def cell(vals):
        st = stats(vals)
        return f"{st['mean']:>7.1f} ± {st['sd']:<5.1f}"[:w].rjust(w)

    def line(label, f):
        vals = [[f(r) for r in sprof[k]] for k in keys]
        if all(max(v) < 0.05 for v in vals):
            return None
        return f"{label:<50}" + "".join(cell(v) for v in vals)
    for key, label in SRV_COMPONENTS:
        ln = line(label, lambda r, key=key: r["srv_profile_us_op"].get(key, 0.0))
        if ln:
            out.append(ln)
    out.append("-" * len(hdr))
    for label, pre in SRV_GROUPS:
        def grp(r, pre=pre):
            d = r["srv_profile_us_op"]
            if isinstance(pre, tuple):
                return sum(d.get(x, 0.0) for x in pre)
            return sum(v for k, v in d.items() if k.startswith(pre))
        ln = line("total: " + label, grp)
        if ln:
            out.append(ln)
    out.append(line("busy (all but idle)", lambda r: sum(v for k, v in r["srv_profile_us_op"].items() if k != "idle")))
    srv = [f"{'srv µs/op (/proc/stat)':<50}"]
    for k in keys:
        vals = [r["srv_cpu_us_op"] for r in sprof[k] if r["srv_cpu_us_op"] is not None]
        srv.append(cell(vals) if vals else f"{'n/a':>{w}}")
    out.append("".join(srv))
    out.append("")
    # the responder's user-space functions (self time), over all its runs
    for k in keys:
        fns = {}
        for r in sprof[k]:
            for fn, v in (r["srv_profile_fn_us_op"] or {}).items():
                fns[fn] = fns.get(fn, 0.0) + v / len(sprof[k])
        if not fns:
            continue
        out.append(f"responder user-space functions, {CONFIGS[k[0]][0]} {k[1]}: µs per I/O (self, mean over "
                   f"{len(sprof[k])} runs), the top 15 of {sum(fns.values()):.1f}:")
        for fn, v in sorted(fns.items(), key=lambda x: -x[1])[:15]:
            out.append(f"  {v:>7.2f}  {fn}")
        out.append("")
    return out


def row_stat(rows, cfg, job, key="stats"):
    """Statistics of a configuration's job or phase, rows[(cfg, job)]: key
    "stats" the figure itself, "cpu" the client's CPU per operation, "srv"
    the server's; None if it has no number."""
    row = rows.get((cfg, job))
    return row.get(key) if row and row["stats"] else None


def ratio(a, b):
    """a / b of two statistics as a ratio of means, with the relative
    standard deviations added in quadrature; None if either is missing."""
    if not a or not b or not b["mean"]:
        return None
    r = a["mean"] / b["mean"]
    return {"ratio": r, "sd": r * math.hypot(a["cv_pct"] / 100, b["cv_pct"] / 100)}


def fio_ratios(rows, job):
    """The ratios of means of one fio job between configurations."""
    _, unit, perf = JOBS[job]

    def mean_of(cfg, j=job):
        return row_stat(rows, cfg, j)

    def cpu_of(cfg):
        return row_stat(rows, cfg, job, "cpu")

    def srv_of(cfg):
        return row_stat(rows, cfg, job, "srv")

    raw = mean_of("raw", perf) if unit == "MiB/s" else None
    return {"job": job,
            "rpcrdma2_1k/C_1k": ratio(mean_of("r2-1k"), mean_of("c-1k")),
            "rpcrdma2_1k/C_default": ratio(mean_of("r2-1k"), mean_of("c")),
            "rpcrdma2_default/C_default": ratio(mean_of("r2"), mean_of("c")),
            "TCP/C_default": ratio(mean_of("tcp"), mean_of("c")),
            "rpcrdma2_1k/raw": ratio(mean_of("r2-1k"), raw),
            "rpcrdma2_default/raw": ratio(mean_of("r2"), raw),
            "C_default/raw": ratio(mean_of("c"), raw),
            "cpu_per_op:rpcrdma2_default/C_default": ratio(cpu_of("r2"), cpu_of("c")),
            "cpu_per_op:rpcrdma2_1k/C_1k": ratio(cpu_of("r2-1k"), cpu_of("c-1k")),
            "cpu_per_op:TCP/C_default": ratio(cpu_of("tcp"), cpu_of("c")),
            "srv_cpu_per_op:rpcrdma2_default/C_default": ratio(srv_of("r2"), srv_of("c")),
            "srv_cpu_per_op:rpcrdma2_1k/C_1k": ratio(srv_of("r2-1k"), srv_of("c-1k")),
            "srv_cpu_per_op:TCP/C_default": ratio(srv_of("tcp"), srv_of("c")),
            "v2_continuation/v2_chunks": ratio(mean_of("v2-inl"), mean_of("v2")),
            "cpu_per_op:v2_continuation/v2_chunks": ratio(cpu_of("v2-inl"), cpu_of("v2")),
            "C_responder/C_svcrdma": ratio(mean_of("c-resp"), mean_of("c")),
            "cpu_per_op:C_responder/C_svcrdma": ratio(cpu_of("c-resp"), cpu_of("c")),
            "C_responder_baseline/C_svcrdma": ratio(mean_of("c-resp0"), mean_of("c")),
            "rpcrdma2_default/module_baseline": ratio(mean_of("r2"), mean_of("r2-0")),
            "cpu_per_op:rpcrdma2_default/module_baseline": ratio(cpu_of("r2"), cpu_of("r2-0")),
            "srv_cpu_per_op:rpcrdma2_default/module_baseline": ratio(srv_of("r2"), srv_of("r2-0")),
            "module_baseline/C_default": ratio(mean_of("r2-0"), mean_of("c"))}


def metadata_ratios(rows, ops_rows, meta_cfgs):
    """Per metadata configuration and phase: elapsed C client / configuration
    and CPU per RPC configuration / C client; version 1 over version 2 of
    the phases and of the operations' RTTs."""
    def mean_of(cfg, job):
        return row_stat(rows, cfg, job)

    def cpu_of(cfg, job):
        return row_stat(rows, cfg, job, "cpu")

    def op_stat(cfg, op, what):
        row = ops_rows.get((cfg, op))
        return row.get(what) if row else None

    meta_ratios = []  # per (cfg, phase): C/cfg elapsed, cfg/C cpu; v1/v2
    for cfg in meta_cfgs:
        cref = "m-c" + meta_suffix(cfg)
        for ph in META_PHASES:
            if (cfg, ph) not in rows:
                continue
            meta_ratios.append({"config": cfg, "phase": ph,
                                "speedup_vs_C": ratio(mean_of(cref, ph), mean_of(cfg, ph)),
                                "cpu_per_rpc_vs_C": ratio(cpu_of(cfg, ph), cpu_of(cref, ph))})
    v2v1 = []
    for suffix in sorted({meta_suffix(c) for c in meta_cfgs}):
        v2, v1 = "m-v2" + suffix, "m-v1" + suffix
        if v2 not in meta_cfgs or v1 not in meta_cfgs:
            continue
        for ph in META_PHASES:
            v2v1.append({"what": f"phase {ph}", "nfs": suffix or ".nfs4.1",
                         "elapsed_v1/v2": ratio(mean_of(v1, ph), mean_of(v2, ph)),
                         "cpu_per_rpc_v2/v1": ratio(cpu_of(v2, ph), cpu_of(v1, ph))})
        ops = sorted({op for (c, op) in ops_rows if c in (v1, v2)},
                     key=lambda op: -(op_stat(v2, op, "ops_per_run") or 0))
        for op in ops:
            v2v1.append({"what": f"op {op}", "nfs": suffix or ".nfs4.1",
                         "p50_v1/v2": ratio(op_stat(v1, op, "p50"), op_stat(v2, op, "p50")),
                         "mean_rtt_v1/v2": ratio(op_stat(v1, op, "rtt"), op_stat(v2, op, "rtt"))})
    return meta_ratios, v2v1


def percentile(vals, q):
    v = sorted(vals)
    if not v:
        return None
    k = (len(v) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def failure_reason(bench, cfg, base, status):
    """A short reason for a failed fio or metadata run, from its exit status, stderr and kernel log."""
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
        errs.append("hung: killed by the job time limit")
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
            if line.startswith(("repeats ", "meta_vers ", "user_hz ")):
                w = line.split()
                settings.update(dict(zip(w[0::2], w[1::2])))
            elif line.startswith("configs "):
                settings["configs"] = line.split()[1:]
    host_load = []
    hl = os.path.join(res, "host-load.txt")
    if os.path.exists(hl):
        with open(hl) as f:
            host_load = f.read().splitlines()

    user_hz = int(settings.get("user_hz", 100))
    nproc = int(settings.get("nproc", 1))
    srv_samples, srv_hz = server_samples(res)
    srv_hz = srv_hz or user_hz
    runs = []
    with open(runs_tsv) as f:
        for r in csv.DictReader(f, delimiter="\t"):
            r["value"] = None
            r["clat_us"] = None
            r["reason"] = ""
            r["cpu_us_op"] = None
            r["util"] = None
            r["meta"] = None
            r["srv_cpu_us_op"] = None  # the server guest's CPU per I/O or RPC
            r["srv_util"] = None
            r["srv_window"] = None
            r["profile_us_op"] = None  # --profile: CPU µs per I/O by module
            r["srv_profile_us_op"] = None  # --profile: the server's, by component
            r["srv_profile_fn_us_op"] = None  # and the responder's functions
            if r["status"] == "ok":
                p = os.path.join(bench, r["file"])
                try:
                    if r["kind"] == "fio":
                        v = fio_value(p, r["job"])
                        if v is not None:
                            r["value"], r["clat_us"], iops = v
                            ps = profile_shares(os.path.splitext(p)[0])
                            if ps and iops:
                                # share of the guest's CPUs' samples -> µs of CPU per I/O
                                r["profile_us_op"] = {d: v * nproc * 1e6 / iops for d, v in ps.items()}
                            sp = srv_profile(res, os.path.splitext(r["file"])[0])
                            if sp and iops:
                                r["srv_profile_us_op"] = {c: v * sp[2] * 1e6 / iops for c, v in sp[0].items()}
                                r["srv_profile_fn_us_op"] = {c: v * sp[2] * 1e6 / iops for c, v in sp[1].items()}
                            cw = cpu_window(os.path.splitext(p)[0] + ".cpu", user_hz)
                            if cw and iops:
                                # busy CPU seconds per second / I/Os per second
                                r["util"] = cw[2]
                                r["cpu_us_op"] = cw[1] / cw[0] * 1e6 / iops
                            sw = server_window(srv_samples, os.path.splitext(r["file"])[0], srv_hz)
                            if sw and iops:
                                # the same, of the server's window
                                sw["client_secs"] = cw[0] if cw else None
                                r["srv_window"] = sw
                                r["srv_util"] = sw["util"]
                                r["srv_cpu_us_op"] = sw["busy_s"] / sw["secs"] * 1e6 / iops
                    elif r["kind"] == "meta":
                        mv = meta_values(bench, r["file"], user_hz)
                        if mv is not None:
                            r["meta"] = mv
                            r["value"] = mv["elapsed_s"]
                            r["cpu_us_op"] = mv["cpu_us_per_rpc"]
                            r["util"] = mv["util"]
                            sw = server_window(srv_samples, r["file"], srv_hz)
                            if sw and mv["rpcs"]:
                                # busy seconds of a window around the phase / its RPCs
                                sw["client_secs"] = mv["elapsed_s"]
                                r["srv_window"] = sw
                                r["srv_util"] = sw["util"]
                                r["srv_cpu_us_op"] = sw["busy_s"] * 1e6 / mv["rpcs"]
                    else:
                        r["value"] = perftest_value(p, r["job"])
                except (OSError, ValueError, KeyError, StopIteration, IndexError) as e:
                    r["reason"] = f"unparsable output: {e}"
                if r["value"] is None:
                    r["status"] = "failed:no-result"
                    r["reason"] = r["reason"] or "no I/O or no result in output"
            elif r["kind"] in ("fio", "meta") and r["status"].startswith("failed"):
                r["reason"] = failure_reason(bench, r["config"], os.path.splitext(r["file"])[0], r["status"])
            else:
                r["reason"] = r["status"]
            runs.append(r)

    # One row per (config, job).
    rows = {}
    for r in runs:
        key = (r["config"], r["job"])
        if r["kind"] == "meta":
            label, transport = meta_label(r["config"]), META_CONFIGS[meta_base(r["config"])][1]
        else:
            label, transport = CONFIGS[r["config"]]
        row = rows.setdefault(key, {"config": r["config"], "job": r["job"], "kind": r["kind"],
                                    "label": label, "transport": transport,
                                    "mount_options": "", "values": [], "clat_us": [],
                                    "cpu_us_op": [], "util": [], "srv_cpu_us_op": [], "srv_util": [],
                                    "failures": []})
        if r["mount_options"] not in ("", "-"):
            row["mount_options"] = r["mount_options"]
        if r["value"] is not None:
            row["values"].append(r["value"])
            if r["clat_us"] is not None:
                row["clat_us"].append(r["clat_us"])
            if r["cpu_us_op"] is not None:
                row["cpu_us_op"].append(r["cpu_us_op"])
                row["util"].append(r["util"])
            if r["srv_cpu_us_op"] is not None:
                row["srv_cpu_us_op"].append(r["srv_cpu_us_op"])
                row["srv_util"].append(r["srv_util"])
        else:
            row["failures"].append(r["reason"] or r["status"])
    for row in rows.values():
        row["unit"] = {"fio": lambda: JOBS[row["job"]][1], "meta": lambda: "s"}.get(
            row["kind"], lambda: PERF_UNITS[row["job"]])()
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
            # CPU per operation only when every run has it (else: None, said so)
            if row["kind"] in ("fio", "meta") and len(row["cpu_us_op"]) == len(row["values"]):
                row["cpu"] = stats(row["cpu_us_op"])
                row["cpu"]["util_mean"] = statistics.mean(row["util"])
                row["cpu"]["util_sd"] = stats(row["util"])["sd"]
            # the server's likewise (None for runs from before its samples)
            if row["kind"] in ("fio", "meta") and len(row["srv_cpu_us_op"]) == len(row["values"]):
                row["srv"] = stats(row["srv_cpu_us_op"])
                row["srv"]["util_mean"] = statistics.mean(row["srv_util"])
                row["srv"]["util_sd"] = stats(row["srv_util"])["sd"]
        row.setdefault("cpu", None)
        row.setdefault("srv", None)
        if row["kind"] == "perftest":
            row["mount_options"] = "perftest " + (row["mount_options"] or "")

    def rf(r):
        return f"{r['ratio']:.2f}±{r['sd']:.2f}" if r else "n/a"

    def paired(a, b, job, key):
        """Mean ± sd of the per-repeat ratios A/B of run field KEY (A and B run
        next to each other in every repeat); None unless both have it in every
        repeat (at least two)."""
        va, vb = ({r["repeat"]: r[key] for r in runs
                   if r["kind"] == "fio" and r["config"] == c and r["job"] == job and r["status"] == "ok"}
                  for c in (a, b))
        if len(va) < 2 or set(va) != set(vb) or any(not v for v in list(va.values()) + list(vb.values())):
            return None
        st = stats([va[k] / vb[k] for k in sorted(va)])
        return {"ratio": st["mean"], "sd": st["sd"], "n": len(va)}

    ratios = []
    for job, (title, unit, perf) in JOBS.items():
        entry = fio_ratios(rows, job)
        entry.update({
            "paired:rpcrdma2_default/module_baseline": paired("r2", "r2-0", job, "value"),
            "paired:cpu_per_op:rpcrdma2_default/module_baseline": paired("r2", "r2-0", job, "cpu_us_op"),
            "paired:srv_cpu_per_op:rpcrdma2_default/module_baseline": paired("r2", "r2-0", job,
                                                                             "srv_cpu_us_op"),
            "raw_counterpart": perf if unit == "MiB/s" else None})
        ratios.append(entry)

    # --- metadata: per-op aggregation over the phases of each repeat ---
    meta_cfgs = sorted({r["config"] for r in runs if r["kind"] == "meta"},
                       key=lambda c: (meta_suffix(c), META_ORDER.index(meta_base(c))))
    per_rep = {}  # (cfg, repeat) -> op -> accumulators
    phase_extra = {}  # (cfg, phase) -> lists per run
    lost_events = set()
    for r in runs:
        if r["kind"] != "meta" or not r["meta"]:
            continue
        mv = r["meta"]
        acc = per_rep.setdefault((r["config"], r["repeat"]), {})
        for op, o in mv["ops"].items():
            a = acc.setdefault(op, {"ops": 0, "rtt_ms": 0, "lat": [], "chunked": 0, "mrs": 0})
            a["ops"] += o["ops"]
            a["rtt_ms"] += o["rtt_ms"]
        tr = mv["trace"]
        for op, v in tr["lat_us"].items():
            acc.setdefault(op, {"ops": 0, "rtt_ms": 0, "lat": [], "chunked": 0, "mrs": 0})["lat"].extend(v)
        for key in ("chunked", "mrs"):
            for op, n in tr[key].items():
                acc.setdefault(op, {"ops": 0, "rtt_ms": 0, "lat": [], "chunked": 0, "mrs": 0})[key] += n
        if tr["lost"]:
            lost_events.add((r["config"], r["job"], r["repeat"]))
        pe = phase_extra.setdefault((r["config"], r["job"]), {"rpcs": [], "segs": [], "mrs": [],
                                                               "chunked": [], "chunked_meta": [],
                                                               "chunked_ops": {}})
        pe["rpcs"].append(mv["rpcs"])
        x = mv["xprt"]
        if x:
            pe["segs"].append((x.get("read_chunk_segs", 0), x.get("write_chunk_segs", 0),
                               x.get("reply_chunk_segs", 0)))
        if meta_base(r["config"]) != "m-tcp":
            pe["mrs"].append(sum(tr["mrs"].values()))
            pe["chunked"].append(sum(tr["chunked"].values()))
            pe["chunked_meta"].append(sum(n for op, n in tr["chunked"].items() if op not in DATA_OPS))
            for op, n in tr["chunked"].items():
                pe["chunked_ops"][op] = pe["chunked_ops"].get(op, 0) + n

    ops_rows = {}  # (cfg, op) -> row
    for (cfg, rep), acc in per_rep.items():
        for op, a in acc.items():
            row = ops_rows.setdefault((cfg, op), {"config": cfg, "op": op, "label": meta_label(cfg),
                                                  "ops": [], "rtt_mean_us": [], "p50_us": [],
                                                  "lat_all": [], "chunked": [], "mrs": []})
            row["ops"].append(a["ops"])
            if a["ops"]:
                row["rtt_mean_us"].append(a["rtt_ms"] * 1000.0 / a["ops"])
            if a["lat"]:
                row["p50_us"].append(percentile(a["lat"], 0.5))
                row["lat_all"].extend(a["lat"])
            row["chunked"].append(a["chunked"])
            row["mrs"].append(a["mrs"])
    for row in ops_rows.values():
        row["ops_per_run"] = statistics.mean(row["ops"])
        row["rtt"] = stats(row["rtt_mean_us"]) if row["rtt_mean_us"] else None
        row["p50"] = stats(row["p50_us"]) if row["p50_us"] else None
        row["p90_pooled_us"] = percentile(row["lat_all"], 0.9)
        row["trace_samples"] = len(row["lat_all"])
        row["chunked_per_run"] = statistics.mean(row["chunked"])
        row["mrs_per_run"] = statistics.mean(row["mrs"])
        del row["lat_all"]

    def op_stat(cfg, op, what):
        row = ops_rows.get((cfg, op))
        return row[what] if row else None

    meta_ratios, v2v1 = metadata_ratios(rows, ops_rows, meta_cfgs)

    # --- failures: loud ---
    failed = []
    # The exact-count configurations have their own report
    # (counts-report.py, counts.txt), which fails on a missing run.
    selected = [c for c in settings.get("configs", []) if c not in COUNTS_CONFIGS]
    present = {r["config"].partition(".nfs")[0] for r in runs}
    for c in selected:
        if c not in present:
            failed.append(f"{c}: selected but no run recorded (the guest did not get to it; see testbed/run.log)")
    for row in sorted(rows.values(), key=lambda r: (r["config"], r["job"])):
        if row["failures"]:
            failed.append(f"{row['config']} {row['job']}: {row['status']}")
    for c, ph, rep in sorted(lost_events):
        failed.append(f"{c} {ph} repeat {rep}: trace events lost (buffer full): p50 and chunk counts incomplete")

    # --- the table ---
    out = []
    s = settings
    out.append(f"rpcrdma2 bench: NFSv4.1, direct I/O, fio {s.get('runtime', '?')} s measured "
               f"(+{s.get('ramp', '?')} s ramp) per run, {s.get('repeats', '?')} repeats, "
               f"file {s.get('size', '?')}; mean ± sd (min-max); no number where any run failed")
    # the kernel measured on (uname -r in the client guest)
    kernel = next((l.split()[1] for l in env_lines if l.startswith("kernel ") and len(l.split()) > 1), "?")
    out.append(f"kernel (uname -r of the client guest): {kernel}")
    if failed:
        out.append("")
        out.append(f"FAILED: {len(failed)} configuration/job(s) without a (complete) number:")
        out.extend("  " + x for x in failed)
    out.append("")

    def cpu_cells(row):
        c = row.get("cpu")
        if not c:
            return f"{'-':>12} {'-':>5}"
        return f"{c['mean']:>7.0f}±{c['sd']:<4.0f} {100 * c['util_mean']:>5.0f}"

    def srv_cells(row, w=12):
        c = row.get("srv")
        if not c:
            return f"{'n/a':>{w}} {'n/a':>7}"
        return f"{c['mean']:>{w - 5}.0f}±{c['sd']:<4.0f} {100 * c['util_mean']:>3.0f}±{100 * c['util_sd']:<3.0f}"

    # the server's sampling, over every run that has it (for the notes)
    wins = [r["srv_window"] for r in runs if r["srv_window"]]
    srv_note = []
    if wins:
        dw = [abs(w["secs"] - w["client_secs"]) for r in runs if r["kind"] == "fio" and (w := r["srv_window"])
              and w["client_secs"]]
        lags = [x for w in wins for x in w["lag_s"]]
        own = [w["self_s"] / w["secs"] for w in wins]
        if dw:
            srv_note.append(f"fio: the server's window differs in length from the client's by "
                            f"{1000 * statistics.mean(dw):.0f} ms on average (max {1000 * max(dw):.0f} ms);")
        if lags:
            srv_note.append(f"server sample time - client request time: median {1000 * percentile(lags, 0.5):.0f} ms "
                            f"({1000 * min(lags):.0f} to {1000 * max(lags):.0f}; the guests' clock offset, up to "
                            f"1 s, included);")
        srv_note.append(f"the sampler's own CPU: {100 * statistics.mean(own):.2f} % of the server's vCPU on average "
                        f"(max {100 * max(own):.2f} %), included in srv%.")
    else:
        srv_note.append("this run has no server CPU samples (testbed/server/cpu-samples.txt): n/a.")

    def line(job_label, row):
        st = row["stats"]
        opts = short_opts(row["mount_options"]) if row["kind"] == "fio" else row["mount_options"]
        if st:
            mm = f"{fmt(st['min'], row['unit'])}-{fmt(st['max'], row['unit'])}"
            return (f"{job_label:<12} {row['label']:<13} {opts:<58} {len(row['values']):>2} "
                    f"{fmt(st['mean'], row['unit']):>9} {fmt(st['sd'], row['unit']):>7} {mm:>17}  "
                    f"{row['unit']:<5} {cpu_cells(row)} {srv(row)}  ok")
        return (f"{job_label:<12} {row['label']:<13} {opts:<58} {row['runs']:>2} {'-':>9} {'-':>7} "
                f"{'-':>17}  {row['unit']:<5} {cpu_cells(row)} {srv(row)}  {row['status']}")

    def srv(row):
        if row["kind"] == "perftest":
            return f"{'-':>12} {'-':>7}"
        return srv_cells(row)

    has_fio = any(r["kind"] in ("fio", "perftest") for r in runs)
    if has_fio:
        hdr = (f"{'job':<12} {'configuration':<13} {'mount options (/proc/mounts) / perftest args':<58} "
               f"{'n':>2} {'mean':>9} {'± sd':>7} {'min-max':>17}  {'unit':<5} {'CPU µs/op':>12} {'CPU%':>5} "
               f"{'srv µs/op':>12} {'srv%':>7}  status")
        out.append(hdr)
        out.append("-" * len(hdr))
        for job, (title, unit, perf) in JOBS.items():
            for cfg in ORDER:
                key = ("raw", perf) if cfg == "raw" else (cfg, job)
                if key in rows:
                    out.append(line(job if cfg != "raw" else perf, rows[key]))
            out.append("")
        out.append("CPU µs/op: client guest CPU time (user+nice+system+irq+softirq, /proc/stat) per fio I/O,")
        out.append("sampled inside the measured interval; CPU%: the client's one vCPU busy.")
        out.append("srv µs/op, srv%: the same of the server guest (its one vCPU: nfsd, svcrdma, rxe), from its")
        out.append("/proc/stat read on the client's request right before and after the client's samples;")
        out.append("srv% is mean ± sd over the runs. n/a: no server samples (a run from before they existed).")
        out.extend(srv_note)
        out.append("")
        out.append("Ratios of means (± propagated relative sd); n/a where a side has no number:")
        rh = (f"{'job':<12} {'r2 dflt / C dflt':>17} {'r2 1k / C 1k':>14} {'TCP / C dflt':>13} {'r2 dflt / raw':>14} "
              f"{'C dflt / raw':>13} {'r2 1k / C dflt':>15}  raw counterpart")
        out.append(rh)
        out.append("-" * len(rh))
        for e in ratios:
            out.append(f"{e['job']:<12} {rf(e['rpcrdma2_default/C_default']):>17} {rf(e['rpcrdma2_1k/C_1k']):>14} "
                       f"{rf(e['TCP/C_default']):>13} {rf(e['rpcrdma2_default/raw']):>14} {rf(e['C_default/raw']):>13} "
                       f"{rf(e['rpcrdma2_1k/C_default']):>15}  "
                       f"{e['raw_counterpart'] or 'none (ib_send_lat is a latency)'}")
        out.append("")
        def ratio_table(titles, cols):
            """TITLES, then a row per job of the ratios COLS names: (heading, key, width)."""
            out.extend(titles)
            rh = f"{'job':<12} " + " ".join(f"{h:>{w}}" for h, _, w in cols)
            out.append(rh)
            out.append("-" * len(rh))
            for e in ratios:
                out.append(f"{e['job']:<12} " + " ".join(f"{rf(e[k]):>{w}}" for _, k, w in cols))
            out.append("")

        ratio_table(["Client CPU per I/O, ratios of means (below 1: less CPU than the C client):"],
                    [("r2 dflt / C dflt", "cpu_per_op:rpcrdma2_default/C_default", 17),
                     ("r2 1k / C 1k", "cpu_per_op:rpcrdma2_1k/C_1k", 14),
                     ("TCP / C dflt", "cpu_per_op:TCP/C_default", 13)])
        ratio_table(["Server CPU per I/O, ratios of means (below 1: the server spends less per I/O than for",
                     "the C client):"],
                    [("r2 dflt / C dflt", "srv_cpu_per_op:rpcrdma2_default/C_default", 17),
                     ("r2 1k / C 1k", "srv_cpu_per_op:rpcrdma2_1k/C_1k", 14),
                     ("TCP / C dflt", "srv_cpu_per_op:TCP/C_default", 13)])
        if any(e["C_responder/C_svcrdma"] for e in ratios):
            ratio_table(["The stock C client through the responder (v1) against the C client to svcrdma,",
                         "ratios of means (speed, goal >= 0.8; CPU per I/O):"],
                        [("C resp. / C", "C_responder/C_svcrdma", 17),
                         ("CPU/op", "cpu_per_op:C_responder/C_svcrdma", 14),
                         ("C resp. base / C", "C_responder_baseline/C_svcrdma", 17)])
        if any(c == "r2-0" for c, _ in rows):
            ratio_table(["rpcrdma2 against its --module-baseline build (r2-0), ratios of means (speed: above 1",
                         "faster; CPU per I/O: below 1 less); the baseline against the C client; then the",
                         "same paired: mean ± sd of the per-repeat ratios (the two run next to each other in",
                         "every repeat, in alternating order):"],
                        [("r2 / r2 base", "rpcrdma2_default/module_baseline", 14),
                         ("CPU/op", "cpu_per_op:rpcrdma2_default/module_baseline", 11),
                         ("srv CPU/op", "srv_cpu_per_op:rpcrdma2_default/module_baseline", 11),
                         ("r2 base / C", "module_baseline/C_default", 12),
                         ("paired", "paired:rpcrdma2_default/module_baseline", 11),
                         ("CPU/op", "paired:cpu_per_op:rpcrdma2_default/module_baseline", 11),
                         ("srv CPU/op", "paired:srv_cpu_per_op:rpcrdma2_default/module_baseline", 11)])
        if any(e["v2_continuation/v2_chunks"] for e in ratios):
            ratio_table(["Version 2 through the responder: Message Continuation (frwr=N) against chunks with FRWR,",
                         "ratios of means (speed; CPU per I/O):"],
                        [("v2 frwr=N / v2", "v2_continuation/v2_chunks", 17),
                         ("CPU/op", "cpu_per_op:v2_continuation/v2_chunks", 14)])
        prof = {}
        for r in runs:
            if r.get("profile_us_op"):
                prof.setdefault((r["config"], r["job"]), []).append(r["profile_us_op"])
        if prof:
            out.extend([
                "--profile: client CPU µs per I/O by where it ran (perf cpu-clock self time over the CPU",
                "sampling interval, mean ± sd over the runs): 'transport' is the rpcrdma2 or the C client's",
                "rpcrdma module's own code, 'kernel' the rest of the kernel but its idle loop (NFS, SUNRPC, the",
                "network); 'transport / rxe': the transport's time over soft-RoCE's, whose work per I/O is the",
                "nearly the same for every client, so that ratio does not move with the host's speed as µs do;",
                "fio.*.perf-*.txt name the symbols."])
            ph = (f"{'job':<12} {'configuration':<13} {'n':>2} {'transport':>14} {'rdma_rxe':>14} "
                  f"{'user space':>14} {'kernel':>14} {'transport / rxe':>16}")
            out.extend([ph, "-" * len(ph)])

            def cell(v, f):
                st = stats([f(x) for x in v])
                return f"{st['mean']:>7.1f} ± {st['sd']:<4.1f}"
            for cfg, job in [(c, j) for j in JOBS for c in ORDER if (c, j) in prof]:
                v = prof[(cfg, job)]
                mod = cell(v, lambda x: x.get("[rpcrdma2]", 0) + x.get("[rpcrdma]", 0))
                rxe = cell(v, lambda x: x.get("[rdma_rxe]", 0))
                user = cell(v, lambda x: sum(u for d, u in x.items() if not d.startswith("[") and d != "idle"))
                kern = cell(v, lambda x: x.get("[kernel.kallsyms]", 0))
                norm = stats([(x.get("[rpcrdma2]", 0) + x.get("[rpcrdma]", 0)) / x["[rdma_rxe]"]
                              for x in v if x.get("[rdma_rxe]")] or [0.0])
                out.append(f"{job:<12} {CONFIGS[cfg][0]:<13} {len(v):>2} {mod:>14} {rxe:>14} {user:>14} {kern:>14} "
                           f"{norm['mean']:>8.3f} ± {norm['sd']:<5.3f}")
            out.append("")
        sprof = {}
        for r in runs:
            if r.get("srv_profile_us_op"):
                sprof.setdefault((r["config"], r["job"]), []).append(r)
        if sprof:
            out.extend(srv_profile_table(sprof, rows))

    if meta_cfgs:
        out.append(f"Metadata workloads (tools/testing/bench/meta.sh): {s.get('meta_files', '?')} files of "
                   f"100 bytes in directories of {s.get('meta_dirsize', '?')}, create/remove "
                   f"{s.get('meta_create', '?')} files, untar (build-info below); every phase on a fresh mount")
        out.append("after drop_caches (restat: same mount, 4 s later). Elapsed s mean ± sd (min-max); RPCs per run")
        out.append("(mountstats); CPU µs/RPC: client CPU (as above) over the phase / its RPCs; chunk segs: Read/"
                   "Write/Reply")
        out.append("chunk segments per run (mountstats xprt fields 11-13); MRs: registrations per run "
                   "(rpcrdma2_mr_reg / xprtrdma_mr_fastreg);")
        out.append("chunked: RPCs per run that used a chunk (marshal tracepoints), 'meta' = other than READ/WRITE.")
        out.append("srv µs/RPC, srv%: the server guest's CPU (as the client's) between its samples taken right before")
        out.append("and after the phase (waited for: the window exceeds the phase by the sampler's lag); n/a: none.")
        out.append("")
        hdr = (f"{'phase':<7} {'configuration':<16} {'n':>2} {'elapsed s':>8} {'± sd':>6} {'min-max':>13} "
               f"{'RPCs':>6} {'RPC/s':>6} {'CPU µs/RPC':>11} {'CPU%':>5} {'srv µs/RPC':>11} {'srv%':>7} "
               f"{'chunk segs r/w/reply':>20} "
               f"{'MRs':>6} {'chunked (meta)':>15}  status")
        out.append(hdr)
        out.append("-" * len(hdr))
        for ph in META_PHASES:
            for cfg in meta_cfgs:
                row = rows.get((cfg, ph))
                if not row:
                    continue
                pe = phase_extra.get((cfg, ph), {})
                st = row["stats"]
                n = len(row["values"]) if st else row["runs"]
                if pe.get("rpcs"):
                    rpcs = statistics.mean(pe["rpcs"])
                    rpcs_s = f"{rpcs:>6.0f}"
                else:
                    rpcs, rpcs_s = None, f"{'-':>6}"
                if pe.get("segs"):
                    segs = "/".join(f"{statistics.mean(x[i] for x in pe['segs']):.0f}" for i in range(3))
                else:
                    segs = "-"
                mrs = f"{statistics.mean(pe['mrs']):.0f}" if pe.get("mrs") else "-"
                ch = (f"{statistics.mean(pe['chunked']):.0f} ({statistics.mean(pe['chunked_meta']):.0f})"
                      if pe.get("chunked") else "-")
                if st:
                    rate = f"{rpcs / st['mean']:>6.0f}" if rpcs else f"{'-':>6}"
                    c = row.get("cpu")
                    cpu = f"{c['mean']:>6.0f}±{c['sd']:<4.0f} {100 * c['util_mean']:>5.0f}" if c else f"{'-':>11} {'-':>5}"
                    out.append(f"{ph:<7} {row['label']:<16} {n:>2} {st['mean']:>8.2f} {st['sd']:>6.2f} "
                               f"{st['min']:>6.2f}-{st['max']:<6.2f} {rpcs_s} {rate} {cpu} {srv_cells(row, 11)} "
                               f"{segs:>20} {mrs:>6} {ch:>15}  ok")
                else:
                    out.append(f"{ph:<7} {row['label']:<16} {n:>2} {'-':>8} {'-':>6} {'-':>13} {rpcs_s} "
                               f"{'-':>6} {'-':>11} {'-':>5} {srv_cells(row, 11)} {segs:>20} {mrs:>6} {ch:>15}  "
                               f"{row['status']}")
            out.append("")
        chunk_notes = []
        for (cfg, ph), pe in sorted(phase_extra.items()):
            meta_ops = {op: n for op, n in pe["chunked_ops"].items() if op not in DATA_OPS}
            if meta_ops:
                runs_n = len(pe["chunked"])
                chunk_notes.append(f"  {meta_label(cfg):<16} {ph:<7} " + ", ".join(
                    f"{op} {n / runs_n:.0f}" for op, n in sorted(meta_ops.items(), key=lambda kv: -kv[1])))
        out.append("Metadata RPCs (not READ/WRITE) that used a chunk, per run, by operation:")
        out.extend(chunk_notes or ["  none"])
        out.append("")

        out.append("Per-operation round trip (all phases of a repeat together): RPCs per run; mean RTT from")
        out.append("mountstats (cumulative rtt / ops); p50 RTT from sunrpc:rpc_stats_latency (per repeat, then mean ± sd")
        out.append("over repeats); p90 of all samples pooled; µs. RTT: from transmission to the reply's arrival.")
        hdr = (f"{'op':<14} {'configuration':<16} {'RPCs/run':>9} {'mean RTT':>13} {'p50 RTT':>13} {'p90':>7} "
               f"{'chunked/run':>11} {'MRs/run':>8}")
        out.append(hdr)
        out.append("-" * len(hdr))
        all_ops = sorted({op for (c, op) in ops_rows},
                         key=lambda op: -max(ops_rows[(c, o)]["ops_per_run"] for (c, o) in ops_rows if o == op))
        for op in all_ops:
            for cfg in meta_cfgs:
                row = ops_rows.get((cfg, op))
                if not row or row["ops_per_run"] < 1:
                    continue
                rt = f"{row['rtt']['mean']:.0f}±{row['rtt']['sd']:.0f}" if row["rtt"] else "-"
                p5 = f"{row['p50']['mean']:.0f}±{row['p50']['sd']:.0f}" if row["p50"] else "-"
                p9 = f"{row['p90_pooled_us']:.0f}" if row["p90_pooled_us"] is not None else "-"
                tcp = meta_base(cfg) == "m-tcp"
                out.append(f"{op:<14} {row['label']:<16} {row['ops_per_run']:>9.0f} {rt:>13} {p5:>13} {p9:>7} "
                           f"{'-' if tcp else format(row['chunked_per_run'], '.0f'):>11} "
                           f"{'-' if tcp else format(row['mrs_per_run'], '.0f'):>8}")
            out.append("")

        out.append("Metadata against the C client to svcrdma: elapsed C / config (above 1: faster than C), "
                   "CPU per RPC config / C (below 1: less CPU):")
        hdr = f"{'phase':<7} " + " ".join(f"{meta_label(c):>24}" for c in meta_cfgs)
        out.append(hdr)
        out.append("-" * len(hdr))
        for ph in META_PHASES:
            cells = []
            for cfg in meta_cfgs:
                e = next((m for m in meta_ratios if m["config"] == cfg and m["phase"] == ph), None)
                cells.append(f"{rf(e['speedup_vs_C']) if e else 'n/a':>11} / {rf(e['cpu_per_rpc_vs_C']) if e else 'n/a':<10}")
            out.append(f"{ph:<7} " + " ".join(f"{c:>24}" for c in cells))
        out.append("")
        cresp = [c for c in meta_cfgs if meta_base(c) in ("m-c-resp", "m-c-resp0")]
        if cresp:
            out.append("The C client through the responder (v1) against the C client to svcrdma, per operation:")
            out.append("p50 and mean RTT of C to svcrdma / C through the responder (above 0.8: the goal)")
            hdr = f"{'op':<14} {'NFS':<8} {'p50 C / C resp.':>16} {'mean C / C resp.':>17}"
            out.append(hdr)
            out.append("-" * len(hdr))
            for cfg in cresp:
                cref = "m-c" + meta_suffix(cfg)
                out.append(f"  {meta_label(cfg)}:")
                ops = sorted({op for (c, op) in ops_rows if c == cfg},
                             key=lambda op: -(op_stat(cfg, op, "ops_per_run") or 0))
                for op in ops:
                    if (op_stat(cfg, op, "ops_per_run") or 0) < 1:
                        continue
                    out.append(f"{op:<14} {(meta_suffix(cfg) or '.nfs4.1')[4:]:<8} "
                               f"{rf(ratio(op_stat(cref, op, 'p50'), op_stat(cfg, op, 'p50'))):>16} "
                               f"{rf(ratio(op_stat(cref, op, 'rtt'), op_stat(cfg, op, 'rtt'))):>17}")
            out.append("")
        if v2v1:
            out.append("RPC-over-RDMA version 2 against version 1 (rpcrdma2, same responder): v1 / v2 of elapsed "
                       "time and of p50 and mean RTT (above 1: v2 faster; goal for GETATTR, LOOKUP: ≥ 1.2)")
            hdr = f"{'what':<22} {'NFS':<8} {'v1 / v2':>12} {'mean RTT v1/v2':>15} {'CPU/RPC v2/v1':>14}"
            out.append(hdr)
            out.append("-" * len(hdr))
            for e in v2v1:
                if e["what"].startswith("phase"):
                    out.append(f"{e['what']:<22} {e['nfs'][4:]:<8} {rf(e['elapsed_v1/v2']):>12} {'':>15} "
                               f"{rf(e['cpu_per_rpc_v2/v1']):>14}")
                else:
                    out.append(f"{e['what'] + ' p50':<22} {e['nfs'][4:]:<8} {rf(e['p50_v1/v2']):>12} "
                               f"{rf(e['mean_rtt_v1/v2']):>15}")
            out.append("")

    out.append("Full mount options per configuration (client /proc/mounts):")
    seen = set()
    for cfg in ORDER + meta_cfgs:
        for (c, j), row in rows.items():
            if c == cfg and row["kind"] in ("fio", "meta") and row["mount_options"] and cfg not in seen:
                seen.add(cfg)
                out.append(f"  {row['label']:<16} {row['mount_options']}")
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
    def order_key(k):
        cfg, job = k
        if cfg in ORDER:
            return (0, job, ORDER.index(cfg), "")
        return (1, list(META_PHASES).index(job) if job in META_PHASES else 99,
                META_ORDER.index(meta_base(cfg)), meta_suffix(cfg))
    rowlist = [rows[k] for k in sorted(rows, key=order_key)]
    with open(os.path.join(res, "bench.json"), "w") as f:
        json.dump({"settings": settings, "environment": env_lines, "host_load": host_load,
                   "failed": failed, "rows": rowlist, "ratios": ratios,
                   "meta_phase_extra": {f"{c} {p}": v for (c, p), v in phase_extra.items()},
                   "meta_ops": list(ops_rows.values()), "meta_ratios": meta_ratios, "v2_vs_v1": v2v1,
                   "runs": [{k: r[k] for k in ("kind", "config", "job", "repeat", "status", "value",
                                               "clat_us", "cpu_us_op", "util", "srv_cpu_us_op", "srv_util",
                                               "srv_window", "profile_us_op", "srv_profile_us_op", "reason", "mount_options",
                                               "file")}
                            | ({"meta": {k: v for k, v in r["meta"].items() if k != "trace"}
                                | {"chunked": r["meta"]["trace"]["chunked"], "mrs": r["meta"]["trace"]["mrs"],
                                   "trace_lost": r["meta"]["trace"]["lost"]}} if r["meta"] else {})
                            for r in runs]}, f, indent=1)
    with open(os.path.join(res, "bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "config", "transport", "mount_options", "unit", "runs_ok", "runs",
                    "mean", "sd", "min", "max", "cpu_us_per_op", "cpu_us_per_op_sd", "cpu_util",
                    "rpcs_per_run", "status", "cpu_util_sd", "srv_cpu_us_per_op", "srv_cpu_us_per_op_sd",
                    "srv_cpu_util", "srv_cpu_util_sd"])
        for row in rowlist:
            st = row["stats"] or {}
            c = row.get("cpu") or {}
            sv = row.get("srv") or {}
            pe = phase_extra.get((row["config"], row["job"]), {})
            w.writerow([row["job"], row["config"], row["transport"], row["mount_options"], row["unit"],
                        len(row["values"]), row["runs"], st.get("mean", ""), st.get("sd", ""),
                        st.get("min", ""), st.get("max", ""), c.get("mean", ""), c.get("sd", ""),
                        c.get("util_mean", ""),
                        statistics.mean(pe["rpcs"]) if pe.get("rpcs") else "", row["status"],
                        c.get("util_sd", ""), sv.get("mean", ""), sv.get("sd", ""), sv.get("util_mean", ""),
                        sv.get("util_sd", "")])
    with open(os.path.join(res, "bench-ops.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "op", "rpcs_per_run", "mean_rtt_us", "mean_rtt_sd", "p50_rtt_us", "p50_rtt_sd",
                    "p90_rtt_us_pooled", "trace_samples", "chunked_per_run", "mrs_per_run"])
        for row in sorted(ops_rows.values(), key=lambda r: (r["config"], r["op"])):
            w.writerow([row["config"], row["op"], row["ops_per_run"],
                        row["rtt"]["mean"] if row["rtt"] else "", row["rtt"]["sd"] if row["rtt"] else "",
                        row["p50"]["mean"] if row["p50"] else "", row["p50"]["sd"] if row["p50"] else "",
                        "" if row["p90_pooled_us"] is None else row["p90_pooled_us"], row["trace_samples"],
                        row["chunked_per_run"], row["mrs_per_run"]])
    with open(os.path.join(res, "bench-runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "config", "job", "repeat", "status", "value", "clat_us", "cpu_us_per_op",
                    "cpu_util", "rpcs", "reason", "mount_options", "srv_cpu_us_per_op", "srv_cpu_util"])
        for r in runs:
            w.writerow([r["kind"], r["config"], r["job"], r["repeat"], r["status"],
                        "" if r["value"] is None else r["value"],
                        "" if r["clat_us"] is None else r["clat_us"],
                        "" if r["cpu_us_op"] is None else r["cpu_us_op"],
                        "" if r["util"] is None else r["util"],
                        r["meta"]["rpcs"] if r["meta"] else "", r["reason"], r["mount_options"],
                        "" if r["srv_cpu_us_op"] is None else r["srv_cpu_us_op"],
                        "" if r["srv_util"] is None else r["srv_util"]])

    chart(os.path.join(res, "bench.png"), settings, rows, ratios, meta_cfgs, meta_ratios, ops_rows, v2v1)
    return 3 if failed else 0


def chart(path, settings, rows, ratios, meta_cfgs, meta_ratios, ops_rows, v2v1):
    """Draw the chart (PNG) to path. Also drawn by the documentation build
    (Documentation/sphinx/benchchart.py) from the results tables of
    Documentation/benchmarks.rst: rows without the "values" of their runs,
    ops_rows with only "ops_per_run" and "p50"."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 3, figsize=(16, 15))
    colors = {"r2-1k": "#d62728", "c-1k": "#1f77b4", "r2": "#ff9896", "c": "#aec7e8",
              "tcp": "#7f7f7f", "raw": "#2ca02c", "v2": "#9467bd", "v2-inl": "#c5b0d5",
              "m-v2": "#d62728", "m-v1": "#ff9896", "m-r2": "#9467bd", "m-c": "#1f77b4", "m-tcp": "#7f7f7f",
              "c-resp": "#17becf", "m-c-resp": "#17becf",
              "c-resp0": "#bcbd22", "m-c-resp0": "#bcbd22", "r2-0": "#8c564b"}

    def nodata(ax, title):
        ax.set_title(title, fontsize=10)
        ax.text(0.5, 0.5, "not measured in this run", ha="center", va="center", transform=ax.transAxes,
                color="#777777")
        ax.set_xticks([])
        ax.set_yticks([])

    def bars(ax, groups, series, title, ylabel, ref=1.0, target=None):
        """grouped bars: groups (x labels), series [(label, color, [ratio dict or None per group])]"""
        if not groups or not any(r for _, _, rs in series for r in rs):
            nodata(ax, title)
            return
        width = 0.8 / max(1, len(series))
        for k, (label, color, rs) in enumerate(series):
            for i, r in enumerate(rs):
                x = i - 0.4 + width * (k + 0.5)
                if r:
                    ax.bar(x, r["ratio"], width, yerr=r["sd"], color=color, capsize=2,
                           label=label if i == next(j for j, q in enumerate(rs) if q) else None)
                    ax.text(x, r["ratio"], f"{r['ratio']:.2f}", ha="center", va="bottom", fontsize=6,
                            rotation=90)
        ax.axhline(ref, color="k", lw=0.8)
        if target:
            ax.axhline(target, color="#2ca02c", lw=0.8, ls="--", label=f"goal {target}")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)

    # row 0: fio absolute numbers
    for ax, (job, (title, unit, perf)) in zip(axes[0], JOBS.items()):
        cfgs = [c for c in ORDER if (c, job) in rows or (c == "raw" and unit == "MiB/s" and ("raw", perf) in rows)]
        if not cfgs:
            nodata(ax, title)
            continue
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
        ax.set_title("fio: " + title, fontsize=10)
        ax.set_ylabel(unit + " (log scale)")
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)

    # row 1: fio ratios against the C client, metadata speed against the C client
    jobs = [e["job"] for e in ratios]
    bars(axes[1][0], jobs,
         [("rpcrdma2 / C", colors["r2"], [e["rpcrdma2_default/C_default"] for e in ratios]),
          ("rpcrdma2 1k / C 1k", colors["r2-1k"], [e["rpcrdma2_1k/C_1k"] for e in ratios]),
          ("TCP / C", colors["tcp"], [e["TCP/C_default"] for e in ratios])],
         "fio throughput against the C client (above 1: faster)", "ratio of means")
    bars(axes[1][1], jobs,
         [("rpcrdma2 / C", colors["r2"], [e["cpu_per_op:rpcrdma2_default/C_default"] for e in ratios]),
          ("rpcrdma2 1k / C 1k", colors["r2-1k"], [e["cpu_per_op:rpcrdma2_1k/C_1k"] for e in ratios]),
          ("TCP / C", colors["tcp"], [e["cpu_per_op:TCP/C_default"] for e in ratios])],
         "fio client CPU per I/O against the C client (below 1: less CPU)", "ratio of means")
    others = [c for c in meta_cfgs if meta_base(c) != "m-c"]

    def mr(cfg, ph, key):
        e = next((m for m in meta_ratios if m["config"] == cfg and m["phase"] == ph), None)
        return e[key] if e else None
    bars(axes[1][2], list(META_PHASES),
         [(meta_label(c), colors[meta_base(c)], [mr(c, ph, "speedup_vs_C") for ph in META_PHASES])
          for c in others],
         "metadata: elapsed C client / config (above 1: faster than C)", "ratio of means")
    # row 2: metadata CPU, per-op p50, v2 vs v1
    bars(axes[2][0], list(META_PHASES),
         [(meta_label(c), colors[meta_base(c)], [mr(c, ph, "cpu_per_rpc_vs_C") for ph in META_PHASES])
          for c in others],
         "metadata: client CPU per RPC, config / C client (below 1: less)", "ratio of means")
    ax = axes[2][1]
    top = sorted({op for (c, op) in ops_rows},
                 key=lambda op: -max(r["ops_per_run"] for (c, o), r in ops_rows.items() if o == op))[:8]
    if top:
        width = 0.8 / max(1, len(meta_cfgs))
        for k, cfg in enumerate(meta_cfgs):
            for i, op in enumerate(top):
                r = ops_rows.get((cfg, op))
                if r and r["p50"]:
                    ax.bar(i - 0.4 + width * (k + 0.5), r["p50"]["mean"], width, yerr=r["p50"]["sd"],
                           color=colors[meta_base(cfg)], capsize=2,
                           label=meta_label(cfg) if i == next(j for j, o in enumerate(top)
                                                               if ops_rows.get((cfg, o)) and ops_rows[(cfg, o)]["p50"]) else None)
        ax.set_xticks(range(len(top)))
        ax.set_xticklabels(top, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("µs (log scale)", fontsize=8)
        ax.set_title("metadata: p50 RTT per NFS operation", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    else:
        nodata(ax, "metadata: p50 RTT per NFS operation")
    sel = [e for e in v2v1 if e["what"].startswith("phase")] + \
        [e for e in v2v1 if e["what"].startswith("op") and e["p50_v1/v2"]][:8]
    bars(axes[2][2], [e["what"].replace("phase ", "t ").replace("op ", "p50 ") + e["nfs"].replace(".nfs4.1", "")
                      for e in sel],
         [("v1 / v2", colors["m-v2"], [e.get("elapsed_v1/v2") or e.get("p50_v1/v2") for e in sel])],
         "RPC-over-RDMA v2 against v1 (rpcrdma2, responder): v1 / v2", "ratio (above 1: v2 faster)",
         target=1.2)
    fig.suptitle(f"rpcrdma2 bench (two TCG guests, soft-RoCE; mean ± sd of {settings.get('repeats', '?')} "
                 f"repeats; fio {settings.get('runtime', '?')} s per run, '1k' = rsize=wsize=1024; "
                 f"metadata: NFS {settings.get('meta_vers', '4.1')})", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RESULTS_DIR")
    sys.exit(main(sys.argv[1]))
