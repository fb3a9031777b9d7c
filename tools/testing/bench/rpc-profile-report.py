#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Report of tools/testing/bench/rpc-profile.sh: the server guest's CPU per
# RPC, in microseconds, by thread kind and by the kernel and responder
# functions that differ between svcrdma and the responder, mean over the
# repeats of each port (± sd where there are several).
#
#   rpc-profile-report.py DIR
#
# DIR is run.sh's results directory: DIR/ctl/rpc-profile.tsv (RPCs and RTT
# per run) and DIR/ctl/prof-PORT-REPEAT.folded (perf-fold.py's call
# chains, one sample = 1 ms of the server's one vCPU). A function's time is
# inclusive: every sample with it anywhere in the chain. The idle task's
# samples outside its idle loop are interrupts and softirqs that came
# while the vCPU was idle (virtio-net, rxe's receive); "other" is every
# other thread (the probe's own request loop, perf, timers).

import csv
import os
import statistics
import sys

import folded

PORT_NAMES = {"20049": "svcrdma", "20050": "responder (v2)", "20051": "responder (v1)"}
# thread kinds, by the command name's start
KINDS = [
    ("nfsd", "nfsd"),
    ("kworker (rxe, CQ work)", "kworker"),
    ("ksoftirqd", "ksoftirqd"),
    ("responder", "rpcrdma-respond"),
    ("interrupts while idle (packets in)", "swapper"),
]
# leaf functions of the idle loop itself (the vCPU halted)
IDLE = {"default_idle", "default_idle_call", "do_idle", "cpu_idle_poll",
        "native_safe_halt", "pv_native_safe_halt", "acpi_safe_halt"}
# functions, (label, command prefix, function); the responder's system
# calls by their entry, so each includes its own entry and exit. Its
# write of the counters file (twice a second, on 9p) counts under write
# too: no sample of it in the run benchmarks.rst reports (its 9p samples,
# opens and renames, were 1.4 us per RPC, under "system calls" only).
FUNCS = [
    ("nfsd: svc_process (the NFS work)", "nfsd", "svc_process"),
    ("nfsd: nfsd4_proc_compound", "nfsd", "nfsd4_proc_compound"),
    ("nfsd: fh_verify", "nfsd", "fh_verify"),
    ("nfsd: receive (svc_*_recvfrom)", "nfsd", ("svc_tcp_recvfrom", "svc_rdma_recvfrom")),
    ("nfsd: send (svc_*_sendto)", "nfsd", ("svc_tcp_sendto", "svc_rdma_sendto")),
    ("nfsd: schedule", "nfsd", "schedule"),
    ("responder: system calls", "rpcrdma-respond", "do_syscall_64"),
    ("responder: poll", "rpcrdma-respond", "__x64_sys_poll"),
    ("responder: ioctl (CQ re-arm)", "rpcrdma-respond", "__x64_sys_ioctl"),
    ("responder: write (post_send)", "rpcrdma-respond", "ksys_write"),
    ("responder: read (CQ event)", "rpcrdma-respond", "ksys_read"),
    ("responder: sendmsg (to nfsd)", "rpcrdma-respond", "__x64_sys_sendmsg"),
    ("responder: recvfrom (from nfsd)", "rpcrdma-respond", "__x64_sys_recvfrom"),
]


def frames(chain):
    """The function names of a folded chain (leaf first)."""
    out = []
    for f in chain.split(";"):
        i = f.rfind(" (")
        out.append(f[:i] if i >= 0 else f)
    return out


def load_folded(path):
    """[(count, comm, frames)] of one folded profile (folded.py's format,
    frames here leaf first)."""
    rows = []
    with open(path) as f:
        for line in f:
            row = folded.parse_line(line)
            if row is not None:
                n, comm, chain = row
                rows.append((n, comm, frames(";".join(chain))))
    return rows


def measure(rows):
    """{label: samples} of one profile: busy, kinds, other and FUNCS."""
    m = {"busy": 0, "other": 0}
    for label, _ in KINDS:
        m[label] = 0
    for label, _, _ in FUNCS:
        m[label] = 0
    for n, comm, fr in rows:
        if comm.startswith("swapper") and fr and fr[0] in IDLE:
            continue
        m["busy"] += n
        for label, prefix in KINDS:
            if comm.startswith(prefix):
                m[label] += n
                break
        else:
            m["other"] += n
        names = set(fr)
        for label, prefix, fn in FUNCS:
            want = fn if isinstance(fn, tuple) else (fn,)
            if comm.startswith(prefix) and names.intersection(want):
                m[label] += n
    return m


def fmt(vals):
    if not vals:
        return "n/a"
    if len(vals) == 1:
        return f"{vals[0]:.0f}"
    return f"{statistics.mean(vals):.0f} ± {statistics.stdev(vals):.0f}"


def per_rpc(results):
    """{port: [{label: µs per RPC, "RTT": µs, "RPCs/s": rate}, one per
    repeat]} of a results directory; exits if a run's profile is missing
    or the run sent no RPC."""
    ctl = os.path.join(results, "ctl")
    tsv = os.path.join(ctl, "rpc-profile.tsv")
    per_port = {}
    with open(tsv, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            path = os.path.join(ctl, f"prof-{r['port']}-{r['repeat']}.folded")
            rpcs = int(r["rpcs"])
            if rpcs <= 0 or not os.path.exists(path):
                sys.exit(f"{path}: missing, or no RPCs in its run")
            m = measure(load_folded(path))
            # one sample is 1 ms: µs per RPC = samples * 1000 / RPCs
            us = {k: v * 1000.0 / rpcs for k, v in m.items()}
            us["RTT"] = float(r["rtt_ms"]) * 1000.0 / rpcs
            us["RPCs/s"] = rpcs * 1000.0 / float(r["elapsed_ms"])
            per_port.setdefault(r["port"], []).append(us)
    return per_port


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: rpc-profile-report.py DIR")
    per_port = per_rpc(sys.argv[1])
    ports = sorted(per_port)
    labels = ["RPCs/s", "RTT", "busy"] + [k for k, _ in KINDS] + ["other"] + [k for k, _, _ in FUNCS]
    names = {"RPCs/s": "RPCs per second", "RTT": "mean RTT (mountstats), µs",
             "busy": "server CPU per RPC, µs (all but idle)"}
    w = max(len(names.get(x, x)) for x in labels) + 2
    print("Server CPU per RPC (µs; mean ± sd over repeats), GETATTRs one at a time:")
    print(f"{'':{w}}" + "".join(f"{PORT_NAMES.get(p, p):>20}" for p in ports))
    for x in labels:
        print(f"{names.get(x, x):{w}}" + "".join(
            f"{fmt([u[x] for u in per_port[p]]):>20}" for p in ports))
    print("repeats: " + ", ".join(f"{PORT_NAMES.get(p, p)} {len(per_port[p])}" for p in ports))


if __name__ == "__main__":
    main()
