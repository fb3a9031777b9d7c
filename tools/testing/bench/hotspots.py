#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where inside rpcrdma2 a --profile bench run's CPU time went: per function,
per source line and per instruction, on the host.

perf in the client guest cannot resolve the module (the guest's /lib is the
host's read-only tree), so guest.sh keeps, per profiled fio run with rpcrdma2
loaded, the raw call chains (BASE.perf-ips.gz: `perf script -F ip,sym,dso`)
and where the module's sections were loaded (BASE.perf-module.txt: its
/sys/module/rpcrdma2/sections/ and /proc/modules line), and copies the very
rpcrdma2.ko it loaded beside them.  This maps every sample address in the
module to (section, offset) of that .ko and reads it with objdump and
addr2line (binutils).  Source lines need a module built with debug info
(make modules KRUSTFLAGS=-Cdebuginfo=1 KCFLAGS=-g; the code is the same);
without it the lists stop at functions and instructions.

usage: hotspots.py [--top N] [--annotate N] RESULTS_DIR [OUT]
  RESULTS_DIR  a bench results directory (or its testbed/client/bench/)
  OUT          default RESULTS_DIR/hotspots.txt
"""

import argparse
import bisect
import collections
import glob
import gzip
import json
import os
import re
import subprocess
import sys

import folded

OWN = re.compile(r"(?:^|/)((?:rpcrdma|xdr)/.*)$")
HASH = re.compile(r"\[[0-9a-f]{16}\]")
# what compact() shortens in a name
COMPACT_RENAMES = (("rpcrdma2::", ""), ("core::", ""), ("kernel::", "k::"))


def demangle(names):
    """Demangled names (c++filt understands Rust v0), crate hashes dropped."""
    names = list(names)
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return {n: HASH.sub("", d) for n, d in zip(names, out)}


def short_path(path):
    m = OWN.search(path)
    if m and "/rust/kernel/" not in path:
        return m.group(1)
    for marker in ("/rust/library/", "/rust/kernel/"):
        i = path.find(marker)
        if i >= 0:
            return path[i + 1:]
    return os.path.basename(path)


class Module:
    """One rpcrdma2.ko: its sections, instructions and source locations."""

    def __init__(self, ko):
        self.ko = ko
        self.sizes = {}
        for line in subprocess.run(["readelf", "-SW", ko], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+PROGBITS\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
            if m and "text" in m.group(1):
                self.sizes[m.group(1)] = int(m.group(2), 16)
        # instructions: {section: {offset: text}}, functions: {section: [(start, name)]}
        self.insns = collections.defaultdict(dict)
        self.funcs = collections.defaultdict(list)
        sec = None
        last = None
        relocs = set()
        cmd = ["objdump", "-d", "-r", "--no-show-raw-insn"]
        for s in self.sizes:
            cmd += ["-j", s]
        for line in subprocess.run(cmd + [ko], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            m = re.match(r"Disassembly of section (\S+):", line)
            if m:
                sec = m.group(1)
                continue
            m = re.match(r"([0-9a-f]+) <(.+)>:$", line)
            if m and sec:
                self.funcs[sec].append((int(m.group(1), 16), m.group(2)))
                continue
            m = re.match(r"\s+([0-9a-f]+):\s+(R_\S+)\s+(\S+)", line)
            if m and sec and last is not None:
                # a relocation: what the instruction before it calls or loads
                tgt = re.sub(r"[-+]0x[0-9a-f]+$", "", m.group(3))
                ins = self.insns[sec][last]
                if re.match(r"(call|jmp)\b", ins):
                    ins = ins.split()[0] + " "
                else:
                    ins += " "
                self.insns[sec][last] = ins + "<" + tgt + ">"
                relocs.add(tgt)
                continue
            m = re.match(r"\s+([0-9a-f]+):\s+(.*)$", line)
            if m and sec:
                last = int(m.group(1), 16)
                ins = re.sub(r"\s+", " ", m.group(2).strip())
                # a branch within a function: its offset is enough
                self.insns[sec][last] = re.sub(r"<\S+\+(0x[0-9a-f]+)>$", r"<+\1>", ins)
        for s in self.funcs:
            self.funcs[s].sort()
        names = {n for fl in self.funcs.values() for _, n in fl}
        self.dem = demangle(names | relocs)
        for sec, ins in self.insns.items():
            for o, t in ins.items():
                m = re.search(r"<(\S+)>$", t)
                if m and m.group(1) in self.dem:
                    ins[o] = t[:m.start()] + "<" + compact(self.dem[m.group(1)]) + ">"
        self.starts = {s: [a for a, _ in fl] for s, fl in self.funcs.items()}
        self._sorted = {}
        self.lines = {}  # (sec, off) -> [(function, file:line)] innermost first
        self.has_lines = False

    def sorted_insns(self, sec):
        if sec not in self._sorted:
            self._sorted[sec] = sorted(self.insns[sec])
        return self._sorted[sec]

    def function(self, sec, off):
        st = self.starts.get(sec, [])
        i = bisect.bisect_right(st, off) - 1
        if i < 0:
            return f"{sec}+{off:#x}"
        return self.dem.get(self.funcs[sec][i][1], self.funcs[sec][i][1])

    def resolve(self, addrs):
        """Source locations (addr2line -i) of (section, offset) pairs."""
        by_sec = collections.defaultdict(set)
        for s, o in addrs:
            if (s, o) not in self.lines:
                by_sec[s].add(o)
        for s, offs in by_sec.items():
            offs = sorted(offs)
            res = subprocess.run(["addr2line", "-e", self.ko, "-j", s, "-a", "-f", "-i"],
                                 input="".join(f"{o:#x}\n" for o in offs), capture_output=True,
                                 text=True).stdout.splitlines()
            cur = None
            pend = None
            frames = {}
            for line in res:
                if re.match(r"0x[0-9a-f]+$", line):
                    cur = int(line, 16)
                    frames[cur] = []
                    pend = None
                elif cur is not None and pend is None:
                    pend = line
                elif cur is not None:
                    frames[cur].append((pend, line))
                    pend = None
            names = demangle({f for fr in frames.values() for f, _ in fr if f != "??"})
            for o in offs:
                fr = []
                for f, loc in frames.get(o, []):
                    path, _, ln = loc.rpartition(":")
                    ln = ln.split(" ")[0]
                    if path and path != "??" and ln not in ("0", "?"):
                        self.has_lines = True
                        fr.append((names.get(f, f), f"{short_path(path)}:{ln}"))
                    elif path and path != "??":
                        fr.append((names.get(f, f), f"{short_path(path)}:?"))
                self.lines[(s, o)] = fr

    def own(self, key):
        """The innermost frame in the project's own source, and the innermost frame."""
        fr = self.lines.get(key) or []
        inner = fr[0] if fr else None
        for f in fr:
            if OWN.match(f[1]) or f[1].startswith(("rpcrdma/", "xdr/")):
                return f, inner
        return inner, inner


def read_samples(path):
    """[(frames)] with frames [(address, sym, dso)], leaf first."""
    out = []
    cur = []
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                if cur:
                    out.append(cur)
                cur = []
                continue
            m = re.match(r"([0-9a-f]+)\s+(.*?)\s*\(([^()]*)\)$", line)
            if m:
                cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    if cur:
        out.append(cur)
    return out


def read_module_txt(path):
    info = {"sections": {}}
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) >= 2 and w[0] == "ko":
                info["ko"] = w[1]
            elif len(w) >= 3 and w[0] == "section":
                info["sections"][w[1]] = int(w[2], 16)
            elif len(w) >= 7 and w[0] == "proc_modules":
                info["base"] = int(w[6], 16)
    return info


def is_mod(dso):
    return dso.strip("[]") == "rpcrdma2"


def locate(mod, info, vals):
    """A function (section, offset) | None for module frame values: perf gives a module's
    frames either as kernel addresses or relative to the module's map (its /proc/modules
    address); of the readings, the one whose leaf addresses land on instruction starts."""
    secs = [(a, s) for s, a in info["sections"].items() if s in mod.sizes]

    def to_sec(a):
        for base, s in secs:
            if base <= a < base + mod.sizes[s]:
                return (s, a - base)
        return None
    cands = [("kernel address", lambda v: v)]
    if "base" in info:
        cands.append(("relative to /proc/modules", lambda v: info["base"] + v))
    if ".text" in info["sections"]:
        cands.append(("relative to .text", lambda v: info["sections"][".text"] + v))
    best = None
    for name, f in cands:
        hits = 0
        mapped = 0
        for v in vals:
            k = to_sec(f(v))
            if k:
                mapped += 1
                hits += k[1] in mod.insns[k[0]]
        if best is None or hits > best[1]:
            best = (name, hits, mapped, f)
    name, hits, mapped, f = best
    return name, hits, mapped, (lambda v: to_sec(f(v)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=30, help="rows per list (default 30)")
    ap.add_argument("--annotate", type=int, default=6,
                    help="functions (by self time) whose hot instructions are listed (default 6)")
    ap.add_argument("results")
    ap.add_argument("out", nargs="?")
    a = ap.parse_args()
    bench = a.results
    if os.path.isdir(os.path.join(bench, "testbed/client/bench")):
        bench = os.path.join(bench, "testbed/client/bench")
    out_path = a.out or os.path.join(a.results, "hotspots.txt")
    nproc = 1
    env = os.path.join(bench, "environment.txt")
    if os.path.exists(env):
        m = re.search(r"nproc (\d+)", open(env).read())
        if m:
            nproc = int(m.group(1))
    groups = collections.defaultdict(list)
    for p in sorted(glob.glob(os.path.join(bench, "fio.*.perf-ips.gz"))):
        base = p[:-len(".perf-ips.gz")]
        m = re.match(r"fio\.([^.]+)\.([^.]+)\.(\d+)$", os.path.basename(base))
        if not m or not os.path.exists(base + ".perf-module.txt"):
            continue
        info = read_module_txt(base + ".perf-module.txt")
        groups[(m.group(1), m.group(2), info.get("ko", "?"))].append((base, info))
    if not groups:
        print(f"hotspots.py: no profiled rpcrdma2 runs (fio.*.perf-ips.gz) in {bench}", file=sys.stderr)
        return 1
    out = ["rpcrdma2 hot spots of the --profile runs (tools/testing/bench/hotspots.py)", ""]
    modules = {}
    by_ko = {}
    for (cfg, job, ko), runs in sorted(groups.items()):
        kopath = os.path.join(bench, ko)
        if not os.path.exists(kopath):
            out.append(f"{cfg} {job}: no {ko} beside the results: skipped")
            continue
        mod = modules.get(kopath) or modules.setdefault(kopath, Module(kopath))
        self_c = collections.Counter()      # (sec, off) leaf -> weight (µs per I/O)
        incl_f = collections.Counter()      # function -> weight, once per sample
        incl_l = collections.Counter()      # own line key -> weight, once per sample
        callee = collections.defaultdict(collections.Counter)  # own line key -> leaf outside
        nself = nincl = ntot = 0
        wsum_self = wsum_incl = 0.0
        checks = []
        pending = []
        per_run = []  # the module's self µs per I/O of each run
        calls = collections.Counter()  # (sec, off) inside a call instruction -> weight
        for base, info in runs:
            try:
                iops = json.load(open(base + ".json"))["jobs"][0]["read"]["iops"]
            except (OSError, ValueError, KeyError, IndexError):
                iops = 0
            samples = read_samples(base + ".perf-ips.gz")
            if not samples or not iops:
                checks.append(f"{os.path.basename(base)}: no samples or no IOPS: skipped")
                continue
            leafs = [s[0][0] for s in samples if is_mod(s[0][2])]
            how, hits, mapped, loc = locate(mod, info, leafs)
            checks.append(f"{os.path.basename(base)}: {len(samples)} samples, {iops:.0f} IOPS; module addresses "
                          f"{how}: {mapped}/{len(leafs)} leaf addresses in the .ko's sections, {hits} on an "
                          "instruction start")
            w = nproc * 1e6 / (len(samples) * iops) / len(runs)
            per_run.append(sum(1 for s in samples if is_mod(s[0][2])) * w * len(runs))
            ntot += len(samples)
            for s in samples:
                keys = []
                for i, (v, sym, dso) in enumerate(s):
                    if not is_mod(dso):
                        continue
                    k = loc(v if i == 0 else v - 1)  # a return address: its call
                    if k:
                        keys.append((i, k))
                        if i:
                            calls[k] += w
                if not keys:
                    continue
                nincl += 1
                wsum_incl += w
                if keys[0][0] == 0:
                    nself += 1
                    wsum_self += w
                    self_c[keys[0][1]] += w
                leaf = s[0][1] or "?"
                if not is_mod(s[0][2]):
                    leaf = re.sub(r"\+0x[0-9a-f]+$", "", leaf) or s[0][2]
                else:
                    leaf = None
                pending.append((w, [k for _, k in keys], leaf))
        # source locations of every module address met
        mod.resolve({k for _, ks, _ in pending for k in ks})
        for w, ks, leaf in pending:
            fs = {mod.function(*k) for k in ks}
            for f in fs:
                incl_f[f] += w
            ls = set()
            for k in ks:
                o, _ = mod.own(k)
                ls.add((mod.function(*k), o[1] if o else f"{k[0]}+{k[1]:#x}"))
            for lk in ls:
                incl_l[lk] += w
                if leaf:
                    callee[lk][leaf] += w
        # what each call site called: the instruction the return address follows
        called = collections.defaultdict(collections.Counter)
        for k, w in calls.items():
            offs = mod.sorted_insns(k[0])
            j = bisect.bisect_right(offs, k[1]) - 1
            if j < 0:
                continue
            o, _ = mod.own(k)
            lk = (mod.function(*k), o[1] if o else f"{k[0]}+{k[1]:#x}")
            t = mod.insns[k[0]][offs[j]]
            m = re.search(r"<(.*)>$", t)
            if not t.startswith("call"):
                # not a return address: the frame an interrupt arrived in
                called[lk]["(an interrupt)"] += w
            else:
                called[lk][m.group(1) if m and not m.group(1).startswith("+") else t] += w
        self_f = collections.Counter()
        by_ko[(cfg, job, ko)] = self_f
        self_l = collections.Counter()
        self_l_inner = collections.defaultdict(collections.Counter)
        for k, w in self_c.items():
            f = mod.function(*k)
            self_f[f] += w
            o, inner = mod.own(k)
            lk = (f, o[1] if o else f"{k[0]}+{k[1]:#x}")
            self_l[lk] += w
            if inner and o and inner != o:
                self_l_inner[lk][f"{inner[1]} ({short_fn(inner[0])})"] += w
        title = f"{cfg} {job}, {ko}: {len(runs)} runs"
        out += [title, "=" * len(title)]
        out += checks
        out.append(f"samples {ntot}; in rpcrdma2's own code (self): {nself} = {wsum_self:.1f} µs per I/O "
                   f"(per run: {', '.join(f'{v:.1f}' for v in per_run)}); "
                   f"with rpcrdma2 on the stack (inclusive): {nincl} = {wsum_incl:.1f} µs per I/O")
        if not mod.has_lines:
            out.append("(no source lines: the .ko has no debug info; build it with "
                       "make modules KRUSTFLAGS=-Cdebuginfo=1 KCFLAGS=-g)")
        out.append("")
        tot = wsum_self or 1

        def table(head, rows, extra=None, cumulative=True):
            out.append(head)
            cum = 0.0
            for key, w in rows:
                cum += w
                name = key if isinstance(key, str) else f"{key[1]:<34} {short_fn(key[0])}"
                c = f"{100 * cum / tot:5.1f}%" if cumulative else ""
                out.append(f"  {w:6.2f} {100 * w / tot:5.1f}% {c:>6}  {name}")
                if extra:
                    for e in extra(key, w):
                        out.append(f"  {'':6} {'':6} {'':6}    {e}")
            out.append("")
        table("self time by function: µs per I/O, % of the module's self time, cumulative %",
              self_f.most_common(a.top))
        table("self time by source line (the innermost line in rpcrdma/ or xdr/; 'in': the inlined\n"
              "library code the time was in, when not that line itself)",
              self_l.most_common(a.top * 2),
              lambda k, w: [f"in {n}: {100 * v / w:.0f}%" for n, v in self_l_inner[k].most_common(2)
                            if v >= 0.1 * w])
        out.append("inclusive time (samples with it on the stack, each counted once): µs per I/O, and % of\n"
                   "the module's self time (so it can exceed 100%)")
        table("  by function:", incl_f.most_common(a.top), cumulative=False)
        leafs = collections.Counter()
        leaf_site = collections.defaultdict(collections.Counter)
        for w, ks, leaf in pending:
            if leaf:
                n = compact(demangle_one(mod, leaf))
                leafs[n] += w
                o, _ = mod.own(ks[0])
                leaf_site[n][f"{o[1] if o else '?'} ({compact(mod.function(*ks[0]))})"] += w
        table("  outside the module, under it: the leaf symbol (rxe, the kernel, the kernel crate's\n"
              "  out-of-line lock and allocator glue); 'from': the innermost call site in the module",
              leafs.most_common(a.top),
              lambda k, w: ["from " + ", ".join(f"{n} {100 * v / w:.0f}%" for n, v in
                                                leaf_site[k].most_common(4) if v >= 0.05 * w)],
              cumulative=False)
        table("  by source line (the call site, for a frame that called out; 'leaf': where the samples\n"
              "  under that line were, outside rpcrdma2)",
              incl_l.most_common(a.top * 2),
              lambda k, w: (["calls " + ", ".join(f"{n} {100 * v / w:.0f}%" for n, v in
                                                  called[k].most_common(3) if v >= 0.05 * w)]
                            if called[k] else []) +
              (["leaf " + ", ".join(f"{n} {100 * v / w:.0f}%" for n, v in
                                    callee[k].most_common(4) if v >= 0.05 * w)]
               if callee[k] else []), cumulative=False)
        # the innermost source file: the module's own files, and the library code
        # inlined into them (lock guards, mem::replace, iterators, ...)
        files = collections.Counter()
        for k, w in self_c.items():
            _, inner = mod.own(k)
            files[inner[1].rsplit(":", 1)[0] if inner else "?"] += w
        table("self time by the innermost source file (inlined library code apart from the line\n"
              "that inlined it)", files.most_common(a.top // 2))
        # string instructions: the struct copies and fills the compiler emitted inline
        rep = collections.Counter()
        for k, w in self_c.items():
            if re.match(r"(rep[a-z]* )?(movs|stos)", mod.insns[k[0]].get(k[1], "")):
                o, _ = mod.own(k)
                rep[(mod.function(*k), o[1] if o else f"{k[0]}+{k[1]:#x}")] += w
        table(f"self time on rep movs/stos (inline struct copies and fills): {sum(rep.values()):.2f} µs per I/O",
              rep.most_common(a.top // 2))
        # hot instructions of the hottest functions
        out.append(f"hot instructions of the {a.annotate} functions with the most self time (instructions\n"
                   "with >= 1% of the function's self time, with the one before; % of the function's)")
        by_fn = collections.defaultdict(dict)
        for k, w in self_c.items():
            by_fn[mod.function(*k)][k] = w
        for f, fw in self_f.most_common(a.annotate):
            out.append(f"  {short_fn(f)}: {fw:.2f} µs per I/O")
            shown = set()
            keys = sorted(by_fn[f])
            sec = keys[0][0] if keys else None
            insn_offs = sorted(mod.insns[sec]) if sec else []
            idx = {o: i for i, o in enumerate(insn_offs)}
            for k in keys:
                w = by_fn[f][k]
                if w < 0.01 * fw:
                    continue
                i = idx.get(k[1])
                around = [insn_offs[i - 1]] if i else []
                for o in around + [k[1]]:
                    if o in shown:
                        continue
                    shown.add(o)
                    ww = by_fn[f].get((sec, o), 0)
                    ol, _ = mod.own((sec, o)) if (sec, o) in mod.lines else (None, None)
                    pct = f"{100 * ww / fw:5.1f}%" if ww else "      "
                    out.append(f"    {pct} {o:6x}  {mod.insns[sec].get(o, '?')[:72]:<72} "
                               f"{ol[1] if ol else ''}")
            out.append("")
    # --module-baseline: the functions whose self time moved most between the two builds
    for (cfg, job, ko), f0 in sorted(by_ko.items()):
        if ko != "rpcrdma2-baseline.ko":
            continue
        for (cfg1, job1, ko1), f1 in sorted(by_ko.items()):
            if job1 != job or ko1 != "rpcrdma2.ko":
                continue
            title = f"{job}: self time by function, {cfg1} ({ko1}) against {cfg} ({ko}), µs per I/O"
            out += [title, "=" * len(title)]
            out.append(f"  {'change':>7} {'this':>6} {'base':>6}")
            out.append(f"  {sum(f1.values()) - sum(f0.values()):+7.2f} {sum(f1.values()):6.2f} "
                       f"{sum(f0.values()):6.2f}  (all of the module)")
            rows = sorted(set(f0) | set(f1), key=lambda n: -abs(f1[n] - f0[n]))
            for n in rows[:a.top // 2]:
                out.append(f"  {f1[n] - f0[n]:+7.2f} {f1[n]:6.2f} {f0[n]:6.2f}  {short_fn(n)}")
            out.append("")
    with open(out_path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"hot spots: {out_path}")
    return 0


def demangle_one(mod, name):
    """A leaf symbol from perf, demangled once (kernel-crate Rust names are mangled)."""
    if not name.startswith("_R"):
        return name
    if name not in mod.dem:
        mod.dem.update(demangle([name]))
    return mod.dem[name]


def compact(name):
    """A demangled name without generic arguments or trait qualifiers (for
    call targets); the core and kernel crates' prefixes shortened, a
    function's turbofish kept."""
    return folded.plain_name(name, COMPACT_RENAMES, keep_turbofish=True)


def short_fn(name):
    """A demangled Rust path without the crate prefix, generic arguments shortened."""
    n = name.replace("rpcrdma2::", "").replace("core::", "").replace("kernel::", "k::")
    return n if len(n) <= 110 else n[:107] + "..."


if __name__ == "__main__":
    sys.exit(main())
