#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# docs_admin_check.py [TOP]: the administrator-facing documentation matches
# the code (run by docs-check.sh, so by make check's host phase):
#
#   params     the module parameters documented in admin-guide.rst's
#              "Parameters" section are exactly those rpcrdma/shim.c
#              declares with module_param(), with its type, default and
#              writability (mode) as shim.c has them; every rpcrdma2.NAME=,
#              /sys/module/rpcrdma2/parameters/NAME and "options rpcrdma2
#              NAME=" that README.md, Documentation/*.rst or the
#              modprobe.d sample mentions is one of them
#   trace      every event of rpcrdma/trace.h prints its fields under
#              their own names (NAME=, what a filter names); each row of
#              admin-guide.rst's tracepoint table names (as ``NAME=``)
#              every field of its event and no other; every field of an
#              example trace line or of a -f filter in admin-guide.rst
#              exists in its event; the classes of rpcrdma2_reply that
#              rpcrdma/conn/reply.rs emits, the ones trace.h's comment
#              lists (and counts) and the ones admin-guide.rst's row
#              names are the same; every ``rpcrdma2_EVENT NAME=VALUE``
#              literal of README.md or Documentation/*.rst names an event,
#              its fields and (class=) a reply class that exist
#   responder  the switches tools/responder/src/main.rs parses, the ones
#              its --help text (USAGE) lists and the ones the switch
#              table of Documentation/responder.rst documents are the
#              same, and so is a default that both state
#   installdir the directory the module is installed in is the same in the
#              Makefile (INSTALL_MOD_DIR), dkms.conf, install-check.sh and
#              every /lib/modules/.../DIR/ the documentation names
#   make       every target the Makefile's comment header (make help)
#              documents is a rule of the Makefile, every .PHONY target is
#              documented there, and every ``make TARGET`` the
#              documentation names exists
#
#   docs_admin_check.py --selftest   plants one error of each kind in a
#              copy of the tree and fails unless each is caught (and the
#              unmodified copy passes)

import os
import re
import shutil
import sys
import tempfile

FILES = [
    "Makefile",
    "README.md",
    "dkms.conf",
    "samples/modprobe.d/rpcrdma2.conf",
    "tools/testing/install-check.sh",
    "rpcrdma/shim.c",
    "rpcrdma/trace.h",
    "rpcrdma/conn/reply.rs",
    "tools/responder/src/main.rs",
]


def read(top, path):
    with open(os.path.join(top, path), encoding="utf-8") as f:
        return f.read()


def section(text, title):
    """The body of the reST section TITLE (underlined with '='), up to the
    next section of that level."""
    m = re.search(r"^" + re.escape(title) + r"\n=+\n(.*?)(?=^[^\n]+\n=+\n|\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


# --- module parameters ---------------------------------------------------

def check_params(top):
    errs = []
    src = set(re.findall(r"^module_param\((\w+),", read(top, "rpcrdma/shim.c"), re.M))
    guide = read(top, "Documentation/admin-guide.rst")
    doc = set(re.findall(r"^``(\w+)`` \(", section(guide, "Parameters"), re.M))
    if not src:
        errs.append("params: no module_param() found in rpcrdma/shim.c")
    for p in sorted(doc - src):
        errs.append(f"params: admin-guide.rst documents parameter {p}, which rpcrdma/shim.c does not declare")
    for p in sorted(src - doc):
        errs.append(f"params: parameter {p} (rpcrdma/shim.c) is not documented in admin-guide.rst, \"Parameters\"")
    # type, default and writability: "``NAME`` (TYPE, default ``V``[, writable...])"
    shim = read(top, "rpcrdma/shim.c")
    for name in sorted(src & doc):
        m = re.search(r"^``%s`` \((\w+), default ``([^`]*)``(, writable)?" % name,
                      section(guide, "Parameters"), re.M)
        perm = re.search(r"^module_param\(%s,\s*(\w+),\s*(0[0-7]+)\)" % name, shim, re.M)
        init = re.search(r"^static (?:bool|unsigned int|int) %s(?: = ([^;]+))?;" % name, shim, re.M)
        if not m or not perm:
            errs.append(f"params: admin-guide.rst does not give {name} as \"``{name}`` (TYPE, default ``V``, ...)\"")
            continue
        dtype, ddefault, dwritable = m.groups()
        ctype, cperm = perm.groups()
        if dtype != ctype:
            errs.append(f"params: admin-guide.rst gives {name} type {dtype}, rpcrdma/shim.c {ctype}")
        writable = int(cperm, 8) & 0o222 != 0
        if writable != bool(dwritable):
            errs.append(f"params: admin-guide.rst says {name} is {'' if dwritable else 'not '}writable,"
                        f" rpcrdma/shim.c gives it mode {cperm}")
        if init:
            v = (init.group(1) or ("false" if ctype == "bool" else "0")).strip()
            if ctype == "bool":
                v = "Y" if v in ("true", "1") else "N"
            if v != ddefault:
                errs.append(f"params: admin-guide.rst gives {name} default {ddefault}, rpcrdma/shim.c {v}")
    docs = ["README.md", "samples/modprobe.d/rpcrdma2.conf"] + sorted(
        os.path.join("Documentation", f) for f in os.listdir(os.path.join(top, "Documentation"))
        if f.endswith(".rst"))
    for path in docs:
        text = read(top, path)
        named = set(re.findall(r"\brpcrdma2\.(\w+)=", text))
        named |= set(re.findall(r"/sys/module/rpcrdma2/parameters/(\w+)", text))
        named |= {w for opts in re.findall(r"^\s*options rpcrdma2 (.*)$", text, re.M)
                  for w in re.findall(r"(\w+)=", opts)}
        for p in sorted(named):
            if p not in src:
                errs.append(f"params: {path} names rpcrdma2 parameter {p}, which is no module parameter")
    return errs


# --- tracepoints -----------------------------------------------------------

def trace_events(top):
    """({event: fields}, {event or class: print labels}) of trace.h."""
    h = read(top, "rpcrdma/trace.h")
    h = re.sub(r"/\*.*?\*/", "", h, flags=re.S)
    fields, labels, classes = {}, {}, {}
    for m in re.finditer(r"^(TRACE_EVENT|DECLARE_EVENT_CLASS)\((\w+),(.*?)^\);", h, re.M | re.S):
        kind, name, body = m.groups()
        f = re.findall(r"__(?:field|string|array|dynamic_array)\([^,]+,\s*(\w+)", body)
        p = re.search(r"TP_printk\(\"([^\"]*)\"", body)
        labels[name] = re.findall(r"(\w+)=", p.group(1)) if p else []
        (fields if kind == "TRACE_EVENT" else classes)[name] = f
    for cls, name in re.findall(r"^DEFINE_EVENT\((\w+),\s*(\w+),", h, re.M):
        fields[name] = classes.get(cls, [])
        labels[name] = labels.get(cls, [])
    return fields, labels


def table_rows(text, first_col_re):
    """{key: row text} of the simple reST tables in TEXT whose first column
    matches FIRST_COL_RE (group 1: the key); continuation lines (first
    column blank) belong to the row above."""
    rows, cur = {}, None
    for line in text.splitlines():
        if re.match(r"^=+\s+=+\s*$", line):
            cur = None
            continue
        m = re.match(first_col_re, line)
        if m:
            cur = m.group(1)
            rows[cur] = rows.get(cur, "") + line[m.end():] + "\n"
        elif cur is not None and line.startswith(" ") and line.strip():
            rows[cur] += line + "\n"
        elif not line.strip():
            cur = None
    return rows


def check_trace(top):
    errs = []
    fields, labels = trace_events(top)
    if not fields:
        return ["trace: no events found in rpcrdma/trace.h"]
    for ev, lab in sorted(labels.items()):
        known = fields.get(ev)
        if known is None:  # an event class: check against its own fields
            continue
        for label in lab:
            if label not in known:
                errs.append(f"trace: rpcrdma/trace.h: {ev} prints {label}=, but has no field {label} (filters name the fields)")
    guide = read(top, "Documentation/admin-guide.rst")
    tp = section(guide, "Tracepoints")
    rows = table_rows(tp, r"^``(rpcrdma2_\w+)``\s")
    for ev in sorted(fields):
        if ev not in rows:
            errs.append(f"trace: event {ev} is not in admin-guide.rst's tracepoint table")
    for ev, text in sorted(rows.items()):
        if ev not in fields:
            errs.append(f"trace: admin-guide.rst's tracepoint table has {ev}, which trace.h does not define")
            continue
        # A field is named ``NAME=`` or ``NAME=value`` (a lowercase value,
        # as ``dir=sent``); ``reply_min=N`` is a value placeholder.
        named = set(re.findall(r"``(\w+)=(?:[a-z][\w-]*)?``", text))
        for f in sorted(named - set(fields[ev])):
            errs.append(f"trace: admin-guide.rst names field {f}= of {ev}, which has no such field in trace.h")
        # conn, xid and task: common to most events, introduced once above
        # the table.
        for f in sorted(set(fields[ev]) - named - {"conn", "xid", "task"}):
            errs.append(f"trace: admin-guide.rst's row of {ev} does not name its field ``{f}=``")
    all_fields = {f for fs in fields.values() for f in fs}
    common = {"common_pid", "common_flags", "common_preempt_count", "common_type"}
    for path in ("Documentation/admin-guide.rst",):
        text = read(top, path)
        # example output lines: "    rpcrdma2_EVENT: k=v k=v"
        for ev, rest in re.findall(r"^\s+(rpcrdma2_\w+): (.*)$", text, re.M):
            if ev not in fields:
                errs.append(f"trace: {path}: example line of unknown event {ev}")
                continue
            for k in re.findall(r"(?:^|\s)(\w+)=", rest):
                if k not in fields[ev]:
                    errs.append(f"trace: {path}: example line of {ev} shows {k}=, which is no field of it")
        # filters: trace-cmd record -e EVENT... -f 'EXPR'
        for cmd in re.findall(r"trace-cmd record((?:[^\n]|\\\n)*)", text):
            evs = re.findall(r"-e\s+'?rpcrdma2:(rpcrdma2_\w+)(?![\w*])", cmd)
            globs = re.findall(r"-e\s+'?rpcrdma2:(rpcrdma2_\w*\*)'?", cmd)
            for expr in re.findall(r"-f\s+'([^']*)'", cmd):
                expr = re.sub(r'"[^"]*"', "", expr)
                for k in re.findall(r"\b([a-z_]\w*)\s*(?:==|!=|<=|>=|<|>|~|&)", expr):
                    if k in common:
                        continue
                    if evs:
                        scope = evs
                    elif globs:
                        scope = [e for e in fields if any(re.fullmatch(g.replace("*", ".*"), e) for g in globs)]
                    else:
                        scope = list(fields)
                    if not any(k in fields.get(e, []) for e in scope):
                        errs.append(f"trace: {path}: filter field {k} is no field of {', '.join(scope) if evs or globs else 'any rpcrdma2 event'}")
                    elif not evs and not globs and k not in all_fields:
                        errs.append(f"trace: {path}: filter field {k} is no field of any event")
    return errs


def reply_classes(top):
    """(classes reply.rs emits, classes and count trace.h's comment gives,
    classes admin-guide.rst's row of rpcrdma2_reply names)"""
    rs = read(top, "rpcrdma/conn/reply.rs")
    emitted = set(re.findall(r"\(c\"([a-z_]+)\",", rs)) | set(re.findall(r"\{ c\"([a-z_]+)\" \}", rs))
    h = read(top, "rpcrdma/trace.h")
    m = re.search(r"/\* A received message, classified \(class, one of (\d+);(.*?)\*/", h, re.S)
    listed, count = set(), None
    if m:
        count = int(m.group(1))
        listed = set(re.findall(r"^ \*   ([a-z_]+)\s{2,}", m.group(2), re.M))
    row = table_rows(section(read(top, "Documentation/admin-guide.rst"), "Tracepoints"),
                     r"^``(rpcrdma2_\w+)``\s").get("rpcrdma2_reply", "")
    row = row.split("``class=``", 1)[1] if "``class=``" in row else ""
    documented = set(re.findall(r"``([a-z_]+)``", row))
    return emitted, listed, count, documented


def check_reply_classes(top):
    errs = []
    emitted, listed, count, documented = reply_classes(top)
    if not emitted:
        return ["trace: no rpcrdma2_reply classes found in rpcrdma/conn/reply.rs"]
    if count is None:
        errs.append("trace: rpcrdma/trace.h has no comment \"A received message, classified (class, one of N; ...\"")
    elif count != len(emitted):
        errs.append(f"trace: rpcrdma/trace.h says rpcrdma2_reply has {count} classes; reply.rs emits {len(emitted)}")
    for what, names in (("rpcrdma/trace.h's comment", listed), ("admin-guide.rst's row of rpcrdma2_reply", documented)):
        for c in sorted(emitted - names):
            errs.append(f"trace: reply.rs emits rpcrdma2_reply class={c}, which {what} does not list")
        for c in sorted(names - emitted):
            errs.append(f"trace: {what} lists rpcrdma2_reply class={c}, which reply.rs does not emit")
    return errs


def check_trace_mentions(top):
    """every ``rpcrdma2_EVENT NAME=VALUE`` an inline literal of README.md or
    Documentation/*.rst shows names an event of trace.h and fields of it
    (and, for rpcrdma2_reply's class=, a class reply.rs emits)"""
    errs = []
    fields, _ = trace_events(top)
    emitted = reply_classes(top)[0]
    docs = ["README.md"] + sorted(
        os.path.join("Documentation", f) for f in os.listdir(os.path.join(top, "Documentation"))
        if f.endswith(".rst"))
    for path in docs:
        text = read(top, path)
        for lit in re.findall(r"``(.+?)``|(?<!`)`([^`\n]+)`(?!`)", text, re.S):
            lit = " ".join((lit[0] or lit[1]).split())
            m = re.match(r"(?:rpcrdma2:)?(rpcrdma2_\w+)((?: \w+=\S*)+)$", lit)
            if not m:
                continue
            ev = m.group(1)
            if ev not in fields:
                errs.append(f"trace: {path} shows ``{lit}``: trace.h defines no event {ev}")
                continue
            for k, v in re.findall(r" (\w+)=(\S*)", m.group(2)):
                if k not in fields[ev]:
                    errs.append(f"trace: {path} shows ``{lit}``: {ev} has no field {k}")
                elif ev == "rpcrdma2_reply" and k == "class" and v and v not in emitted:
                    errs.append(f"trace: {path} shows ``{lit}``: reply.rs emits no class {v}")
    return errs


# --- responder switches ---------------------------------------------------

def responder_switches(top):
    """(switches the parser matches, switches USAGE lists)."""
    src = read(top, "tools/responder/src/main.rs")
    m = re.search(r"fn parse\(\).*?^}", src, re.M | re.S)
    parsed = set()
    for line in (m.group(0) if m else "").splitlines():
        if "=>" in line:
            parsed.update(re.findall(r"\"(-{1,2}[a-z0-9][a-z0-9-]*)\"", line.split("=>")[0]))
    u = re.search(r"const USAGE: &str = \"(.*?)\";", src, re.S)
    usage = set()
    for line in (u.group(1) if u else "").splitlines():
        mm = re.match(r"^  (-[a-z], )?(--[a-z0-9-]+)", line)
        if mm:
            usage.add(mm.group(2))
            if mm.group(1):
                usage.add(mm.group(1)[:2])
    return parsed, usage


def check_responder(top):
    errs = []
    parsed, usage = responder_switches(top)
    if not parsed or not usage:
        return ["responder: could not find the switches of tools/responder/src/main.rs (parse() or USAGE)"]
    rst = read(top, "Documentation/responder.rst")
    rows = table_rows(section(rst, "Switches"), r"^(``-.*?)\s{2,}")
    doc = set()
    for key in rows:
        doc.update(re.findall(r"``(-{1,2}[a-z0-9][a-z0-9-]*)", key))
    if not doc:
        errs.append("responder: Documentation/responder.rst has no switch table (section \"Switches\")")
    for s in sorted(parsed - usage):
        errs.append(f"responder: main.rs parses {s}, which --help (USAGE) does not list")
    for s in sorted(usage - parsed):
        errs.append(f"responder: --help (USAGE) lists {s}, which main.rs does not parse")
    for s in sorted(parsed - doc):
        errs.append(f"responder: switch {s} is missing from Documentation/responder.rst, \"Switches\"")
    for s in sorted(doc - parsed):
        errs.append(f"responder: Documentation/responder.rst documents {s}, which the responder does not have")
    # a default both state ("(default N)" in --help, "default N" or
    # "default: advertise N" in the table) is the same
    helps = usage_entries(top)
    for key, text in rows.items():
        sw = re.findall(r"``(--[a-z0-9][a-z0-9-]*)", key)
        if not sw or sw[0] not in helps:
            continue
        want = re.findall(r"\(default:? (?:advertise )?([\w.:]+(?: MiB)?)", " ".join(helps[sw[0]].split()))
        have = re.findall(r"default:? (?:advertise )?`{0,2}([\w.:]+(?: MiB)?)", " ".join(text.split()))
        if want and have and want[0] != have[0]:
            errs.append(f"responder: {sw[0]}: --help says default {want[0]},"
                        f" Documentation/responder.rst default {have[0]}")
    return errs


def usage_entries(top):
    """{switch: its --help text} of USAGE"""
    src = read(top, "tools/responder/src/main.rs")
    u = re.search(r"const USAGE: &str = \"(.*?)\";", src, re.S)
    out, cur = {}, None
    for line in (u.group(1) if u else "").splitlines():
        m = re.match(r"^  (?:-[a-z], )?(--[a-z0-9-]+)(.*)", line)
        if m:
            cur = m.group(1)
            out[cur] = m.group(2)
        elif cur and line.startswith("   "):
            out[cur] += " " + line.strip()
        else:
            cur = None
    return out


# --- make targets ----------------------------------------------------------

def make_targets(top):
    """(documented targets of the header, rule targets, .PHONY targets)."""
    mk = read(top, "Makefile")
    header = []
    for line in mk.splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    documented = set()
    for line in header:
        m = re.match(r"^#   make(?: ([a-z][a-z0-9-]*))?(?:\s|$)", line)
        if m:
            documented.add(m.group(1) or "all")
    joined = re.sub(r"\\\n", " ", mk)
    rules = set()
    for line in joined.splitlines():
        m = re.match(r"^([a-z][a-z0-9 -]*):(?!=)", line)
        if m:
            rules.update(m.group(1).split())
    phony = set()
    for m in re.finditer(r"^\.PHONY:(.*)$", joined, re.M):
        phony.update(m.group(1).split())
    return documented, rules, phony


def check_make(top):
    errs = []
    documented, rules, phony = make_targets(top)
    if not documented:
        return ["make: the Makefile's comment header documents no target"]
    for t in sorted(documented - rules):
        errs.append(f"make: the Makefile's header documents 'make {t}', which is no rule")
    for t in sorted(phony - documented):
        errs.append(f"make: .PHONY target {t} is not documented in the Makefile's header (make help)")
    for t in sorted(phony - rules):
        errs.append(f"make: .PHONY names {t}, which is no rule")
    docs = ["README.md"] + sorted(
        os.path.join("Documentation", f) for f in os.listdir(os.path.join(top, "Documentation"))
        if f.endswith(".rst"))
    for path in docs:
        for t in sorted(set(re.findall(r"(?:``|`)make ([a-z][a-z0-9-]*)", read(top, path)))):
            if t not in rules:
                errs.append(f"make: {path} names 'make {t}', which is no target of the Makefile")
    return errs


# --- installation directory --------------------------------------------------

def check_installdir(top):
    errs = []
    m = re.search(r"^INSTALL_MOD_DIR \?= (\S+)", read(top, "Makefile"), re.M)
    want = m.group(1) if m else None
    if not want:
        return ["installdir: the Makefile sets no INSTALL_MOD_DIR"]
    m = re.search(r'^DEST_MODULE_LOCATION\[0\]="/?([^"]*)"', read(top, "dkms.conf"), re.M)
    if not m or m.group(1) != want:
        errs.append(f"installdir: dkms.conf's DEST_MODULE_LOCATION is not /{want}")
    if f"/{want}/rpcrdma2.ko" not in read(top, "tools/testing/install-check.sh"):
        errs.append(f"installdir: install-check.sh does not look for {want}/rpcrdma2.ko")
    for path in ("README.md", "Documentation/admin-guide.rst", "samples/modprobe.d/rpcrdma2.conf"):
        for d in re.findall(r"/lib/modules/[^/\n]+?/([a-z]+)/", read(top, path)):
            if d != want:
                errs.append(f"installdir: {path} names /lib/modules/.../{d}/, the module goes to {want}/")
    return errs


CHECKS = {"installdir": check_installdir, "params": check_params, "trace": check_trace,
          "reply_classes": check_reply_classes, "trace_mentions": check_trace_mentions, "responder": check_responder, "make": check_make}


def run(top):
    errs = []
    for check in CHECKS.values():
        errs.extend(check(top))
    return errs


# --- self-test ---------------------------------------------------------------

def plant(top, path, old, new):
    p = os.path.join(top, path)
    with open(p, encoding="utf-8") as f:
        text = f.read()
    if old not in text:
        raise SystemExit(f"selftest: cannot plant an error: {old!r} not in {path}")
    with open(p, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))


def append(top, path, text):
    with open(os.path.join(top, path), "a", encoding="utf-8") as f:
        f.write(text)


# (name, check that must fail, how to plant the error)
PLANTED = [
    ("documented parameter not in the source", "params",
     lambda t: plant(t, "Documentation/admin-guide.rst", "``ddp`` (bool", "``ddp_v2`` (bool")),
    ("source parameter not documented", "params",
     lambda t: append(t, "rpcrdma/shim.c", "\nmodule_param(debug, bool, 0644);\n")),
    ("rpcrdma2.NAME= of no parameter in README.md", "params",
     lambda t: append(t, "README.md", "\nBoot with rpcrdma2.debug=1.\n")),
    ("a parameter's documented default differs from shim.c's", "params",
     lambda t: plant(t, "Documentation/admin-guide.rst", "``cont_reply_pieces`` (uint, default ``128``",
                     "``cont_reply_pieces`` (uint, default ``64``")),
    ("a parameter's documented type differs from shim.c's", "params",
     lambda t: plant(t, "Documentation/admin-guide.rst", "``ddp`` (bool, default ``Y``", "``ddp`` (uint, default ``Y``")),
    ("a read-only parameter documented as writable", "params",
     lambda t: plant(t, "rpcrdma/shim.c", "module_param(frwr, bool, 0644);", "module_param(frwr, bool, 0444);")),
    ("rpcrdma2.NAME= of no parameter in testing.rst", "params",
     lambda t: append(t, "Documentation/testing.rst", "\nBoot with ``rpcrdma2.debug=1``.\n")),
    ("options rpcrdma2 NAME= of no parameter in the modprobe.d sample", "params",
     lambda t: append(t, "samples/modprobe.d/rpcrdma2.conf", "\noptions rpcrdma2 debug=1\n")),
    ("trace.h prints a label that is no field", "trace",
     lambda t: plant(t, "rpcrdma/trace.h", "nread=%u", "read_segs=%u")),
    ("documented tracepoint field not in trace.h", "trace",
     lambda t: plant(t, "Documentation/admin-guide.rst", "``nread=``", "``read_segs=``")),
    ("filter on a field the event lacks", "trace",
     lambda t: plant(t, "Documentation/admin-guide.rst", "-f 'signaled == 0'", "-f 'signalled == 0'")),
    ("example trace line with no such field", "trace",
     lambda t: plant(t, "Documentation/admin-guide.rst", "len=180 outcome=queued", "len=180 result=queued")),
    ("a reply class missing from trace.h's comment", "reply_classes",
     lambda t: plant(t, "rpcrdma/trace.h", " *   reverse_error ", " *   reverse_errors ")),
    ("trace.h miscounts the reply classes", "reply_classes",
     lambda t: plant(t, "rpcrdma/trace.h", "(class, one of 17;", "(class, one of 16;")),
    ("a reply class the admin guide does not name", "reply_classes",
     lambda t: plant(t, "Documentation/admin-guide.rst", "``reverse_error`` (a", "``reverse_err`` (a")),
    ("testing.rst shows a reply class reply.rs does not emit", "trace_mentions",
     lambda t: append(t, "Documentation/testing.rst", "\nSee ``rpcrdma2_reply class=frobnicated``.\n")),
    ("README.md shows a field its event lacks", "trace_mentions",
     lambda t: append(t, "README.md", "\nSee ``rpcrdma2_marshal read_segs=2``.\n")),
    ("responder switch not documented", "responder",
     lambda t: plant(t, "Documentation/responder.rst", "``--port N``", "``--portx N``")),
    ("responder switch documented but absent", "responder",
     lambda t: plant(t, "Documentation/responder.rst", "``--list-malformed``  ", "``--list-malformd``  ")),
    ("a responder default that differs from --help's", "responder",
     lambda t: plant(t, "Documentation/responder.rst", "high half;\n                                default 32)",
                     "high half;\n                                default 16)")),
    ("responder switch parsed but not in --help", "responder",
     lambda t: plant(t, "tools/responder/src/main.rs", "\"--v1-only\" =>", "\"--v1-only\" | \"--v1\" =>")),
    ("the admin guide installs into extra/", "installdir",
     lambda t: plant(t, "Documentation/admin-guide.rst", "$(uname -r)/updates/", "$(uname -r)/extra/")),
    ("dkms.conf installs elsewhere", "installdir",
     lambda t: plant(t, "dkms.conf", 'DEST_MODULE_LOCATION[0]="/updates"', 'DEST_MODULE_LOCATION[0]="/extra"')),
    ("make help documents a target that is no rule", "make",
     lambda t: plant(t, "Makefile", "#   make demo ", "#   make demos ")),
    ("a .PHONY target not in make help", "make",
     lambda t: plant(t, "Makefile", "#   make soak ", "#   the soak ")),
    ("documentation names a target that does not exist", "make",
     lambda t: append(t, "README.md", "\nRun ``make check-all``.\n")),
]


def selftest(top):
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        def fresh():
            d = os.path.join(tmp, "tree")
            shutil.rmtree(d, ignore_errors=True)
            for f in FILES:
                os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
                shutil.copy(os.path.join(top, f), os.path.join(d, f))
            shutil.copytree(os.path.join(top, "Documentation"), os.path.join(d, "Documentation"))
            return d
        errs = run(fresh())
        if errs:
            print("selftest: the unmodified copy fails:", *errs, sep="\n  ")
            failures += 1
        for name, check, how in PLANTED:
            d = fresh()
            how(d)
            errs = CHECKS[check](d)
            if errs:
                print(f"selftest ok: {name}: caught ({errs[0]})")
            else:
                print(f"selftest FAILED: {name}: the {check} check did not catch it")
                failures += 1
    print(f"docs_admin_check selftest: {len(PLANTED) + 1 - failures} passed, {failures} failed")
    return failures == 0


def main():
    args = sys.argv[1:]
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    if args and args[0] == "--selftest":
        sys.exit(0 if selftest(args[1] if len(args) > 1 else top) else 1)
    if args:
        top = args[0]
    errs = run(top)
    for e in errs:
        print(f"docs-check: {e}", file=sys.stderr)
    if errs:
        sys.exit(1)
    print("docs-check: the install directory, module parameters, tracepoint fields and reply classes,"
          " responder switches and make targets match the documentation")


if __name__ == "__main__":
    main()
