#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Report of make bench's exact per-RPC event counts (configurations n-r2,
# n-c, n-r2-1k, n-c-1k; tools/testing/bench/counts.sh): one table, rows =
# event kinds, columns = rpcrdma2 and the C client for the 4 KiB random
# read at the default sizes and at rsize=wsize=1024, every count divided
# by the RPCs of its run's measured interval; the mean over the repeats
# and, in parentheses, the largest deviation of a repeat from that mean.
#
#   counts-report.py DIR
#
# DIR is run.sh's results directory (DIR/testbed/client/bench/counts.tsv
# and counts/CONFIG.REPEAT/; the kernel each guest ran, uname -r, from
# the client's environment.txt and DIR/testbed/server/bench-kernel.txt,
# heads the table). Writes DIR/counts.txt, DIR/counts.json and
# DIR/counts-functions.txt (calls per RPC of every traceable function of
# the transport's module) and prints the table. Exit status 3 if a
# configuration has a run without numbers: a failed run, a hist table
# that dropped entries or was read incompletely, or no RPC in the
# interval.
# See Documentation/benchmarks.rst, "Exact per-RPC counts".

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import folded

# column order: (config, job label, transport label)
CONFIGS = [("n-r2", "4 KiB", "rpcrdma2"), ("n-c", "4 KiB", "C client"),
           ("n-r2-1k", "1 KiB", "rpcrdma2"), ("n-c-1k", "1 KiB", "C client")]
MODULES = {"n-r2": "rpcrdma2", "n-c": "rpcrdma", "n-r2-1k": "rpcrdma2", "n-c-1k": "rpcrdma"}
# the transport's own lock glue, not a lock site: the kernel crate's and
# the core library's code instantiated in the module
GLUE = re.compile(r"^<?(kernel|core|alloc)::")
HASH = re.compile(r"\[[0-9a-f]{1,16}\]")
# where a stack leaves the context that took the lock: an interrupt's
# entry, or softirqs run on an interrupt's exit or at local_bh_enable();
# the frames after it (older) are the interrupted code's
BOUNDARY = re.compile(r"^(asm_common_interrupt|asm_sysvec_\w+|handle_softirqs|__do_softirq)$")
# where a whole stack ends (a 16-frame stack that ends here was not cut)
ROOTS = {"ret_from_fork_asm", "ret_from_fork", "entry_SYSCALL_64_after_hwframe",
         "common_startup_64", "secondary_startup_64_no_verify", "x86_64_start_kernel"}
# a %pS frame: name+off/size [module]
FRAME = re.compile(r"^\s*(\S+?)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[(\S+)\])?\s*$")
# mountstats xprt: rdma fields, by position after "rdma" (transport.c
# xprt_rdma_print_stats; rpcrdma2's print_stats has the same layout)
XPRT = {"sends": 5, "recvs": 6, "bad_xids": 7, "read_chunks": 10, "write_chunks": 11,
        "reply_chunks": 12, "rdma_request": 13, "rdma_reply": 14, "pullup": 15, "fixup": 16,
        "hardway": 17, "mrs_allocated": 23, "local_inv": 24, "empty_sendq": 25,
        # rpcrdma2's only (Documentation/admin-guide.rst, Statistics)
        "remote_inv": 27}
SOFTIRQS = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]
# functions of the profile reported on their own rows (label, names: the
# first one found counts; the profile prints at most 30 characters)
FUNCS = [
    ("xprt_lookup_rqst (SUNRPC XID lookup)", ["xprt_lookup_rqst"]),
    ("xprt_complete_rqst (replies completed)", ["xprt_complete_rqst"]),
    ("xprt_request_transmit (transmissions)", ["xprt_request_transmit"]),
    ("ib_cq_poll_work (CQ work-item runs)", ["ib_cq_poll_work"]),
    ("__ib_process_cq (CQ poll loops)", ["__ib_process_cq"]),
    ("rxe_post_send (Send doorbells)", ["rxe_post_send"]),
    ("rxe_post_recv (Receive doorbells)", ["rxe_post_recv"]),
    ("rxe_sched_task (rxe work scheduled)", ["rxe_sched_task"]),
    ("rxe_requester runs", ["rxe_requester"]),
    ("rxe_completer runs", ["rxe_completer"]),
    ("rxe_receiver runs", ["rxe_receiver"]),
    ("rxe_xmit_packet (packets sent)", ["rxe_xmit_packet"]),
    ("rxe_rcv (packets received)", ["rxe_rcv"]),
]


def parse_hist(text):
    """(entries, totals) of a hist file: entries [(key, hitcount)], the key
    a tuple of (function, module) frames for a stack key, else the key's
    text; totals {"Hits", "Entries", "Dropped"}."""
    entries, totals = [], {}
    stack, key = None, None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        s = line.strip()
        m = re.match(r"^(Hits|Entries|Dropped):\s+(\d+)$", s)
        if m:
            totals[m.group(1)] = int(m.group(2))
            continue
        if s.startswith("{ common_stacktrace:") or s.startswith("{ stacktrace:"):
            stack = []
            continue
        if stack is not None:
            m = re.match(r"^\}\s+hitcount:\s+(\d+)", s)
            if m:
                entries.append((tuple(stack), int(m.group(1))))
                stack = None
                continue
            f = FRAME.match(line)
            stack.append((f.group(1), f.group(2) or "") if f else (s, ""))
            continue
        m = re.match(r"^\{ (\w+): (.*?)\s*\}\s+hitcount:\s+(\d+)", s)
        if m:
            key = m.group(2).strip()
            # .sym keys: "[address] name"
            key = re.sub(r"^\[[0-9a-f]+\]\s*", "", key)
            entries.append((key, int(m.group(3))))
    return entries, totals


def parse_profile(text):
    """{function: hits} of a trace_stat/function* file."""
    out = {}
    seen_rule = False
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "--------":
            seen_rule = True
            continue
        if seen_rule and len(w) >= 2 and w[1].isdigit():
            out[w[0]] = out.get(w[0], 0) + int(w[1])
    return out


def parse_kprobe_profile(text):
    """{event: (hits, missed)} of kprobe_profile."""
    out = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) == 3 and w[1].isdigit() and w[2].isdigit():
            out[w[0]] = (int(w[1]), int(w[2]))
    return out


def parse_mountstats(text, mnt="/mnt/bench"):
    """(per-op {op: ops}, xprt fields [int]) of the mount on mnt."""
    ops, xprt, on = {}, None, False
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "device":
            on = len(w) > 4 and w[4] == mnt
            continue
        if not on:
            continue
        if w[0] == "xprt:" and len(w) > 2 and w[1] == "rdma":
            xprt = [int(x) for x in w[2:]]
        elif re.match(r"^[A-Z_0-9]+:$", w[0]) and len(w) >= 9 and w[1].isdigit():
            ops[w[0][:-1]] = int(w[1])
    return ops, xprt


def demangle(names):
    """Demangled names (c++filt reads Rust v0); unchanged without c++filt."""
    names = sorted(set(names))
    mangled = [n for n in names if n.startswith("_R")]
    out = {n: n for n in names}
    if mangled and shutil.which("c++filt"):
        r = subprocess.run(["c++filt"], input="\n".join(mangled) + "\n",
                           capture_output=True, text=True, check=False)
        if r.returncode == 0:
            for n, d in zip(mangled, r.stdout.splitlines()):
                out[n] = HASH.sub("", d)
    return out


def fold_stacks(stacks, module, dem):
    """Events of one run counted by stack (lock acquisitions, allocations),
    folded: {"all", "transport", "full_other", "sites": {site: n}, "kinds":
    {event: n}} from stacks {event: [(frames, hits)]}. A stack is the
    transport's if a frame of module is on it before any BOUNDARY (an
    interrupt that came while the transport ran is not the transport's);
    its site is the innermost such frame that is not the kernel crate's
    or the core library's code (the lock glue, KVec's growth, ...).
    "full_other": the other stacks that filled all 16 frames without
    reaching a boundary or a thread's root: a transport frame may have
    been further down. "takers": the transport's by who called the event's
    function (the frame after it; the first frame if it is not on the
    stack): "own" (the module, or a rust_helper_ the module's Rust code
    calls), else the caller's module ("kernel" for vmlinux: SUNRPC,
    workqueues, the scheduler)."""
    out = {"all": 0, "transport": 0, "full_other": 0, "sites": {}, "own_sites": {}, "kinds": {},
           "takers": {}}
    for fn, entries in stacks.items():
        for frames, n in entries:
            out["all"] += n
            b = next((i for i, (f, _) in enumerate(frames) if BOUNDARY.match(f)), len(frames))
            own = [f for f, m in frames[:b] if m == module]
            if not own:
                if len(frames) >= 16 and b == len(frames) and frames[-1][0] not in ROOTS:
                    out["full_other"] += n
                continue
            out["transport"] += n
            out["kinds"][fn] = out["kinds"].get(fn, 0) + n
            i = next((i + 1 for i, (f, _) in enumerate(frames) if f == fn), 0)
            caller, cmod = frames[i] if i < len(frames) else ("", "")
            taker = "own" if cmod == module or caller.startswith("rust_helper_") else (cmod or "kernel")
            out["takers"][taker] = out["takers"].get(taker, 0) + n
            site = next((f for f in own if not GLUE.match(dem.get(f, f))), own[0])
            site = folded.plain_name(dem.get(site, site))
            out["sites"][site] = out["sites"].get(site, 0) + n
            if taker == "own":
                out["own_sites"][site] = out["own_sites"].get(site, 0) + n
    return out


def cq_split(entries):
    """(send, recv, other) completions rxe_cq_post generated, by whether
    rxe_completer (the Send queue's) or rxe_receiver (the Receive
    queue's) is on its stack."""
    send = recv = other = 0
    for frames, n in entries:
        names = {f for f, _ in frames}
        if "rxe_completer" in names:
            send += n
        elif "rxe_receiver" in names:
            recv += n
        else:
            other += n
    return send, recv, other


def read_file(path):
    with open(path, errors="replace") as f:
        return f.read()


def measure(rundir, module):
    """{row: value per RPC, ...} of one run directory; raises ValueError
    when the run cannot give numbers."""
    def p(name):
        return os.path.join(rundir, name)

    # run.txt: "key value" pairs
    w = read_file(p("run.txt")).split()
    run = dict(zip(w[0::2], w[1::2]))
    ops0, x0 = parse_mountstats(read_file(p("ms0")))
    ops1, x1 = parse_mountstats(read_file(p("ms1")))
    if x0 is None or x1 is None:
        raise ValueError("no rdma xprt line in mountstats")
    rpcs = sum(ops1.values()) - sum(ops0.values())
    if rpcs <= 0:
        raise ValueError("no RPC in the measured interval")
    reads = ops1.get("READ", 0) - ops0.get("READ", 0)
    xd = {k: x1[i] - x0[i] for k, i in XPRT.items() if i < len(x0) and i < len(x1)}

    hists = {}
    for f in sorted(os.listdir(rundir)):
        if f.endswith(".hist"):
            entries, totals = parse_hist(read_file(p(f)))
            if totals.get("Dropped", 0):
                raise ValueError(f"{f}: the hist table dropped {totals['Dropped']} entries (a bigger size= is needed)")
            if "Hits" not in totals:
                raise ValueError(f"{f}: no totals (incomplete read)")
            hists[f[:-len(".hist")]] = entries
    kp = parse_kprobe_profile(read_file(p("kprobe_profile")))
    prof = {}
    for f in os.listdir(rundir):
        if f.startswith("profile.function"):
            for k, v in parse_profile(read_file(p(f))).items():
                prof[k] = prof.get(k, 0) + v
    setup = read_file(p("setup.txt")).splitlines() if os.path.exists(p("setup.txt")) else []

    stacks = {k[len("counts.lk_"):]: v for k, v in hists.items() if k.startswith("counts.lk_")}
    if "_raw_spin_lock" not in stacks:
        raise ValueError("no _raw_spin_lock counts")
    dem = demangle(f for es in stacks.values() for fr, _ in es for f, m in fr if m == module)
    locks = fold_stacks(stacks, module, dem)

    v = {"rpcs": rpcs, "reads": reads, "ios": int(run.get("ios", "0")),
         "rpcs_per_io": int(run.get("rpcs_per_io", "1")),
         "elapsed_s": float(run.get("elapsed_s", "nan"))}
    per = {}
    per["locks: transport"] = locks["transport"] / rpcs
    per["locks: system-wide"] = locks["all"] / rpcs
    per["locks: other stacks cut at 16 frames"] = locks["full_other"] / rpcs
    # hits of a lock probe while another probe's handler ran on the CPU
    # (an interrupt in the handler): not in the hist; kprobe_profile
    # counts them from the probes' placing to their removal
    per["locks: probe hits missed"] = sum(m for e, (_, m) in kp.items() if e.startswith("counts/lk_")) / rpcs
    v["lock_sites"] = {s: n / rpcs for s, n in locks["sites"].items()}
    v["lock_sites_own"] = {s: n / rpcs for s, n in locks["own_sites"].items()}
    v["lock_kinds"] = {s: n / rpcs for s, n in locks["kinds"].items()}
    v["lock_takers"] = {s: n / rpcs for s, n in locks["takers"].items()}
    for label, names in FUNCS:
        # the first of names the profiler had (placed, or hit)
        name = next((n for n in names if "func " + n in setup or n[:30] in prof), None)
        if name is not None:
            per[label] = prof.get(name[:30], 0) / rpcs
    # the transport module's own functions (available_filter_functions'
    # lines "name [module]")
    mine = set()
    if os.path.exists(p("module-functions.txt")):
        for line in read_file(p("module-functions.txt")).splitlines():
            w = line.split()
            if len(w) >= 2 and w[1] == f"[{module}]":
                mine.add(w[0][:30])
    v["module_functions"] = {f: n / rpcs for f, n in prof.items() if f in mine}
    mod_calls = sum(n for f, n in prof.items() if f in mine)
    if "counts.st_rxe_cq_post" in hists:
        send, recv, other = cq_split(hists["counts.st_rxe_cq_post"])
        per["completions (rxe_cq_post)"] = (send + recv + other) / rpcs
        per["  Receive completions"] = recv / rpcs
        per["  signalled Send completions"] = send / rpcs
    # every Send-queue WQE (Send, REG_MR, LOCAL_INV; signalled or not) is
    # retired by the completer's do_complete
    dc = [e for k, es in hists.items() if k.startswith("counts.st_do_complete_") for e in es]
    if dc:
        per["Send-queue WRs (rxe completer's do_complete)"] = cq_split(dc)[0] / rpcs
        if other:
            per["  other completions (flushes)"] = other / rpcs
    wq = {}
    for key, n in hists.get("workqueue.workqueue_execute_start", []):
        wq[key] = wq.get(key, 0) + n / rpcs
    per["work items run"] = sum(wq.values())
    v["work"] = wq
    sw = hists.get("sched.sched_switch", [])
    per["context switches"] = sum(n for _, n in sw) / rpcs
    soft = {}
    for key, n in hists.get("irq.softirq_entry", []):
        name = SOFTIRQS[int(key)] if key.isdigit() and int(key) < len(SOFTIRQS) else key
        soft[name] = soft.get(name, 0) + n / rpcs
    per["softirqs"] = sum(soft.values())
    v["softirqs"] = soft
    per["hardirqs"] = sum(n for _, n in hists.get("irq.irq_handler_entry", [])) / rpcs
    allocs = {k: hists[k] for k in ("kmem.kmalloc", "kmem.kmem_cache_alloc") if k in hists}
    if allocs:
        dem.update(demangle(f for es in allocs.values() for fr, _ in es for f, m in fr if m == module))
        a = fold_stacks(allocs, module, dem)
        per["allocations: the transport's"] = a["transport"] / rpcs
        per["allocations: system-wide"] = a["all"] / rpcs
        v["alloc_sites"] = {s: n / rpcs for s, n in a["sites"].items()}
    for k in ("pullup", "fixup"):
        if k in xd:
            per[f"bytes copied: {k}"] = xd[k] / rpcs
    for k in ("read_chunks", "write_chunks", "reply_chunks", "mrs_allocated", "local_inv", "remote_inv"):
        if k in xd:
            per[k] = xd[k] / rpcs
    per["xprt sends"] = xd.get("sends", 0) / rpcs
    v["per_rpc"] = per
    v["module_calls"] = mod_calls / rpcs
    return v


def kernels(res):
    """{"client": release, "server": release}: the kernel (uname -r) each
    guest ran, from its 'kernel RELEASE' line (the client's
    environment.txt, the server's bench-kernel.txt); None when unknown."""
    tb = os.path.join(res, "testbed")
    if not os.path.isdir(tb):
        tb = res
    out = {}
    for guest, path in (("client", os.path.join(tb, "client", "bench", "environment.txt")),
                        ("server", os.path.join(tb, "server", "bench-kernel.txt"))):
        out[guest] = None
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    if line.startswith("kernel "):
                        out[guest] = line.split()[1]
                        break
        except (OSError, IndexError):
            pass
    return out


def load(res):
    """{config: [run values]} and [(config, repeat, reason)] failures."""
    bench = os.path.join(res, "testbed", "client", "bench")
    if not os.path.isdir(bench):
        bench = os.path.join(res, "client", "bench")
    runs, failed = {}, []
    with open(os.path.join(bench, "counts.tsv"), newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            cfg = r["config"]
            if r["status"] != "ok":
                failed.append((cfg, r["repeat"], r["status"]))
                continue
            try:
                v = measure(os.path.join(bench, r["dir"]), MODULES[cfg])
            except (OSError, ValueError, KeyError, IndexError) as e:
                failed.append((cfg, r["repeat"], f"no numbers: {e}"))
                continue
            v["repeat"] = r["repeat"]
            v["mount_options"] = r["mount_options"]
            runs.setdefault(cfg, []).append(v)
    return runs, failed


def cell(vals):
    """mean (largest deviation of a run from it, %)"""
    if not vals:
        return "-"
    m = statistics.mean(vals)
    s = f"{m:.2f}" if m < 100 else f"{m:.0f}"
    if len(vals) > 1 and m:
        s += f" ({max(abs(x - m) for x in vals) / m * 100:.1f}%)"
    return s


def table(runs, min_site=0.05):
    """The table's lines."""
    cols = [c for c, _, _ in CONFIGS if c in runs]
    heads = [f"{j} {t}" for c, j, t in CONFIGS if c in runs]

    def col_vals(c, get):
        out = []
        for v in runs[c]:
            x = get(v)
            if x is not None:
                out.append(x)
        return out

    rows = []

    def add(label, get, only=None):
        cells = [cell(col_vals(c, get)) if only is None or MODULES[c] == only else "-" for c in cols]
        if any(x != "-" for x in cells):
            rows.append((label, cells))

    add("RPCs in the measured interval", lambda v: v["rpcs"])
    add("READs / I/Os", lambda v: v["reads"] / v["ios"] if v["ios"] else None)
    add("RPCs per second under the probes", lambda v: v["rpcs"] / v["elapsed_s"])
    per_keys = []
    for c in cols:
        for v in runs[c]:
            for k in v["per_rpc"]:
                if k not in per_keys:
                    per_keys.append(k)
    add("lock acquisitions: the transport's", lambda v: v["per_rpc"].get("locks: transport"))
    takers = sorted({k for c in cols for v in runs[c] for k in v["lock_takers"]},
                    key=lambda k: (k != "own", k != "kernel", k))
    for k in takers:
        label = {"own": "the module's own code", "kernel": "the kernel it calls (SUNRPC, workqueues, ...)"}.get(
            k, f"{k} it calls")
        add(f"  taken by {label}", lambda v, k=k: v["lock_takers"].get(k, 0.0))
    # by site, rpcrdma2's then the C client's: every acquisition under the
    # site, then those the module's own code took there
    for key, what in (("lock_sites", ""), ("lock_sites_own", " own")):
        for mod, tag in (("rpcrdma2", "r2"), ("rpcrdma", "C")):
            sites = {}
            for c in cols:
                if MODULES[c] != mod:
                    continue
                for v in runs[c]:
                    for s, n in v.get(key, {}).items():
                        sites[s] = max(sites.get(s, 0), n)
            big = sorted((s for s, n in sites.items() if n >= min_site), key=lambda s: -sites[s])
            for s in big:
                add(f"  {tag}{what}: {s}", lambda v, s=s, key=key: v.get(key, {}).get(s, 0.0), only=mod)
            if len(big) < len(sites):
                add(f"  {tag}{what}: other sites (< {min_site} each)",
                    lambda v, big=set(big), key=key: sum(n for s, n in v.get(key, {}).items() if s not in big),
                    only=mod)
    kinds = sorted({k for c in cols for v in runs[c] for k in v["lock_kinds"]})
    for k in kinds:
        add(f"  by lock function: {k}", lambda v, k=k: v["lock_kinds"].get(k, 0.0))
    add("lock acquisitions: system-wide", lambda v: v["per_rpc"].get("locks: system-wide"))
    add("  not the transport's, stack cut at 16 frames",
        lambda v: v["per_rpc"].get("locks: other stacks cut at 16 frames"))
    add("  probe hits missed (not counted; upper bound)",
        lambda v: v["per_rpc"].get("locks: probe hits missed"))
    for k in per_keys:
        if k.startswith("locks: "):
            continue
        add(k, lambda v, k=k: v["per_rpc"].get(k))
        if k == "work items run":
            fns = {}
            for c in cols:
                for v in runs[c]:
                    for f, n in v["work"].items():
                        fns[f] = max(fns.get(f, 0), n)
            for f in sorted((f for f, n in fns.items() if n >= min_site), key=lambda f: -fns[f]):
                add(f"  {f}", lambda v, f=f: v["work"].get(f, 0.0))
        if k == "allocations: the transport's":
            sites = {}
            for c in cols:
                for v in runs[c]:
                    for s, n in v.get("alloc_sites", {}).items():
                        sites[s] = max(sites.get(s, 0), n)
            for s in sorted((s for s, n in sites.items() if n >= min_site), key=lambda s: -sites[s]):
                add(f"  {s}", lambda v, s=s: v.get("alloc_sites", {}).get(s, 0.0))
        if k == "softirqs":
            for s in SOFTIRQS:
                if any(v["softirqs"].get(s, 0) >= min_site for c in cols for v in runs[c]):
                    add(f"  {s}", lambda v, s=s: v["softirqs"].get(s, 0.0))
    w = max(len(r[0]) for r in rows) + 2
    cw = max([max(len(x) for x in cs) for _, cs in rows] + [len(h) for h in heads]) + 2
    lines = [f"{'per RPC':{w}}" + "".join(f"{h:>{cw}}" for h in heads)]
    for label, cs in rows:
        lines.append(f"{label:{w}}" + "".join(f"{x:>{cw}}" for x in cs))
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: counts-report.py DIR")
    res = sys.argv[1]
    runs, failed = load(res)
    kern = kernels(res)
    lines = ["Exact per-RPC counts, client guest (samples/fio/randread-4k.fio, fixed READ count;",
             "mean over the repeats (largest deviation of a repeat from the mean)):",
             f"kernel (uname -r): client {kern['client'] or '?'}, server {kern['server'] or '?'}", ""]
    lines += table(runs) if runs else ["(no run with numbers)"]
    lines.append("")
    lines.append("runs: " + ", ".join(f"{c} {len(runs.get(c, []))}" for c, _, _ in CONFIGS))
    for cfg, rep, why in failed:
        lines.append(f"FAILED: {cfg} repeat {rep}: {why}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(res, "counts.txt"), "w") as f:
        f.write(text)
    # every traced function of each transport module, calls per RPC
    with open(os.path.join(res, "counts-functions.txt"), "w") as f:
        f.write("Calls per RPC of the transport module's traceable functions (mean over the repeats;\n"
                "the function profiler cuts names at 30 characters)\n")
        for cfg, job, tr in CONFIGS:
            if cfg not in runs:
                continue
            f.write(f"\n{cfg} ({job}, {tr}):\n")
            fns = {fn for v in runs[cfg] for fn in v["module_functions"]}
            mean = {fn: statistics.mean(v["module_functions"].get(fn, 0.0) for v in runs[cfg]) for fn in fns}
            for fn in sorted(fns, key=lambda x: (-mean[x], x)):
                f.write(f"  {mean[fn]:10.3f}  {fn}\n")
    with open(os.path.join(res, "counts.json"), "w") as f:
        json.dump({"kernel": kern, "runs": runs, "failed": failed}, f, indent=1, sort_keys=True)
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
