#!/usr/bin/python3
"""A stand-in for build/incsim that follows its command-line contract, for
testing the campaign tools without the simulator:

  --version                 "incsim 0.13.0 (commit abc1234)"
  [run flags] [-c k=v] --list-params
                            one line per parameter this run reads: key, type,
                            value, default, source, description (tab-
                            separated); exit 2 with one `incsim: error:` line
                            if a flag or key is unknown, unused by the run,
                            or a value is bad (the same checks as a run)
  --json FILE|-             {"incsim": {...}, "config": {...},
                             "columns": [{name, unit, kind}], "rows": [...]}
  --csv FILE|-              the rows' scalar columns, in "columns" order
  --traffic PATTERN --load L,...
                            a traffic run: rows keyed by "offered"

Test-only knobs:
  -c fake.crash=true      exit 3 with an error line
  -c fake.segv=true       die by SIGSEGV with no error line
  -c fake.sleep=SECONDS   sleep before writing the result
  $FAKE_INCSIM_LOG        append one line per run (the argv) to this file
                          (runs only, not --list-params or --version)
"""
import csv
import difflib
import json
import os
import signal
import sys
import time

VERSION = "0.13.0"
COMMIT = "abc1234"


def _always(opts):
    return True


def _algorithm(*names):
    return lambda opts: opts["algorithm"] in names


def _collective(opts):
    return not opts["traffic"]


# key, type, default, description, read by the runs for which this is true
PARAMS = [
    ("ring.channels", "int", "12", "channels of the ring algorithm",
     _collective),
    ("link.bandwidth_GBps", "float", "25", "per-port bandwidth", _always),
    ("switch.latency_ns", "float", "150", "switch pipeline latency",
     _always),
    ("switch.in_network", "bool", "false", "reduce in the switches",
     _collective),
    # Only in-network algorithms on a platform with switches read the
    # reduction tables (push and pull), as in incsim.
    ("switch.reduction_table.bytes", "int", "65536",
     "bytes of one port's reduction table",
     lambda o: o["algorithm"] in ("push", "pull") and
     o["platform"] in ("star", "dgx2")),
    ("tree.arity", "int", "2", "children per tree node", _algorithm("tree")),
    ("netreduce.window", "int", "64", "packets in flight per host",
     _algorithm("netreduce")),
    ("traffic.hotspot.fraction", "float", "0.1",
     "share of packets to the hot spot",
     lambda o: o["traffic"] == "hotspot"),
    ("fake.crash", "bool", "false", "fail with an error line", _always),
    ("fake.segv", "bool", "false", "die by a signal", _always),
    ("fake.sleep", "float", "0", "seconds to sleep", _always),
]
BY_KEY = {row[0]: row for row in PARAMS}
CHOICES = {"platform": ("dgx2", "star"), "collective": ("allreduce",),
           "algorithm": ("ring", "tree", "push", "pull", "netreduce"),
           "dtype": ("float", "int32"), "redop": ("sum", "min", "max"),
           "traffic": ("uniform", "hotspot")}
# Flags that take a value; --quiet, --list-params and --version take none.
FLAGS = ("platform", "collective", "algorithm", "gpus", "sizes", "dtype",
         "redop", "seed", "config", "json", "csv", "vcd", "traffic", "load")


def die(msg, status=2):
    sys.stderr.write("incsim: error: %s\n" % msg)
    sys.exit(status)


def size(text):
    mul = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    t = text.strip().upper()
    if t and t[-1] in mul:
        return int(t[:-1]) * mul[t[-1]]
    return int(t)


def sizes(spec):
    try:
        if ":" in spec:
            lo, hi = (size(x) for x in spec.split(":"))
            out = []
            while lo <= hi:
                out.append(lo)
                lo *= 2
            return out
        return [size(x) for x in spec.split(",")]
    except ValueError:
        die("bad value '%s' for --sizes: not a list of sizes" % spec)


def check_value(key, typ, text):
    try:
        if typ == "int":
            int(text, 0)
        elif typ == "float":
            float(text)
        elif typ == "bool" and text not in ("true", "false"):
            raise ValueError(text)
    except ValueError:
        die("bad value '%s' for key '%s': not a%s %s" % (
            text, key, "n" if typ == "int" else "", typ))


def parse(argv):
    """One options path for every mode: flags, --config, -c (later wins)."""
    opts = dict.fromkeys(FLAGS)
    opts.update({"dtype": "float", "redop": "sum", "seed": "1"})
    params, sources = {}, {}
    modes = {"quiet": False, "list": False, "version": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--list-params":
            modes["list"] = True
        elif a == "--version":
            modes["version"] = True
        elif a == "--quiet":
            modes["quiet"] = True
        elif a == "-c":
            i += 1
            if i >= len(argv) or "=" not in argv[i]:
                die("-c needs key=value")
            k, v = argv[i].split("=", 1)
            params[k], sources[k] = v, "-c"
        elif a.startswith("--") and a[2:] in FLAGS:
            i += 1
            if i >= len(argv):
                die("%s needs a value" % a)
            opts[a[2:]] = argv[i]
        else:
            close = difflib.get_close_matches(
                a, ["--" + f for f in FLAGS] + ["--list-params", "--version",
                                                 "--quiet"], 1, 0.75)
            die("unknown option '%s'%s" % (
                a, "; did you mean '%s'?" % close[0] if close else ""))
        i += 1
    if opts["config"]:
        try:
            import yaml
            with open(opts["config"]) as f:
                data = yaml.safe_load(f) or {}
        except (OSError, ValueError) as e:
            die("cannot read config file %s: %s" % (opts["config"], e))
        for k, v in data.items():
            if k in FLAGS:
                opts[k] = str(v)
            elif k not in sources:          # -c wins over the file
                params[k] = str(v).lower() if isinstance(v, bool) else str(v)
                sources[k] = opts["config"]
    return opts, params, sources, modes


def check(opts, params):
    for flag, choices in CHOICES.items():
        v = opts[flag]
        if v is None or v in choices:
            continue
        if flag == "platform" and os.path.isfile(v):
            continue
        die("unknown %s '%s'; choose one of %s" % (flag, v,
                                                   ", ".join(choices)))
    if opts["gpus"] is not None:
        try:
            int(opts["gpus"])
        except ValueError:
            die("bad value '%s' for --gpus: not an int" % opts["gpus"])
    if opts["sizes"] is not None:
        sizes(opts["sizes"])
    for k, v in params.items():
        if k not in BY_KEY:
            close = difflib.get_close_matches(k, list(BY_KEY), 1, 0.6)
            die("unknown key '%s'%s" % (
                k, "; did you mean '%s'?" % close[0] if close else ""))
        _, typ, _, _, used = BY_KEY[k]
        if not used(opts):
            die("key '%s' is not read by this run (%s)" % (k, " ".join(
                "--%s %s" % (f, opts[f]) for f in ("platform", "algorithm",
                                                   "traffic") if opts[f])))
        check_value(k, typ, v)


def columns(opts):
    cols = []
    if opts["traffic"]:
        cols.append(("offered", "", "setting"))
    else:
        cols += [("size_bytes", "B", "setting"),
                 ("count", "elements", "setting"), ("type", "", "setting"),
                 ("redop", "", "setting")]
    cols += [("time_us", "us", "measurement"),
             ("algbw_GBps", "GB/s", "measurement"),
             ("busbw_GBps", "GB/s", "measurement"),
             ("wrong", "elements", "measurement"),
             ("bound_us", "us", "measurement"),
             ("bound_fraction", "", "measurement"),
             ("packets", "packets", "measurement"),
             ("avg_packet_latency_ns", "ns", "measurement")]
    if opts["algorithm"] == "netreduce":
        cols += [("goodput_Gbps", "Gb/s", "measurement"),
                 ("lost", "packets", "measurement"),
                 ("retransmitted", "packets", "measurement")]
    return [{"name": n, "unit": u, "kind": k} for n, u, k in cols]


def rows(opts, params):
    n = int(opts["gpus"] or (16 if opts["platform"] == "dgx2" else 8))
    ch = int(params.get("ring.channels", "12"))
    seed = int(opts["seed"])
    bw = float(params.get("link.bandwidth_GBps", "25")) * 6
    if opts["traffic"]:
        loads = [float(x) for x in (opts["load"] or "0.1").split(",")]
        points = [(None, load) for load in loads]
    else:
        points = [(s, None) for s in sizes(opts["sizes"])]
    out = []
    for s, load in points:
        s_ = s if s is not None else int(load * 1e6)
        bound = 2.0 * (n - 1) / n * s_ / (bw * 1e3)
        t = bound * (1.0 + 12.0 / ch * 0.05) + 5.0 + 0.01 * seed
        algbw = s_ / t / 1e3
        r = {"offered": load} if load is not None else {
            "size_bytes": s, "count": s // 4, "type": opts["dtype"],
            "redop": opts["redop"]}
        packets = max(1, s_ // 4096) * n
        r.update({"time_us": round(t, 6), "algbw_GBps": round(algbw, 6),
                  "busbw_GBps": round(algbw * 2 * (n - 1) / n, 6),
                  "wrong": 0, "bound_us": round(bound, 6),
                  "bound_fraction": round(bound / t, 6),
                  "packets": packets,
                  "avg_packet_latency_ns": round(1e3 * t / packets + 150.0 +
                                                 seed, 3),
                  "links": [{"link": "gpu0-sw0", "bytes": s_}],
                  "reduction_tables": {"sw0.port0": {"hits": s_ // 64,
                                                     "evictions": 0}}})
        if opts["algorithm"] == "netreduce":
            r.update({"goodput_Gbps": round(8 * algbw, 6), "lost": 0,
                      "retransmitted": seed - 1})
        out.append(r)
    return out


def _open(path):
    return sys.stdout if path == "-" else open(path, "w", newline="")


def main(argv):
    opts, params, sources, modes = parse(argv)
    if modes["version"]:
        print("incsim %s (commit %s)" % (VERSION, COMMIT))
        return 0
    check(opts, params)
    if modes["list"]:
        for key, typ, default, desc, used in PARAMS:
            if used(opts):
                print("\t".join((key, typ, params.get(key, default), default,
                                 sources.get(key, "default"), desc)))
        return 0
    if opts["platform"] is None:
        die("--platform is required")
    if not opts["sizes"] and not opts["traffic"]:
        die("--sizes is required")
    if os.environ.get("FAKE_INCSIM_LOG"):
        with open(os.environ["FAKE_INCSIM_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    if not modes["quiet"]:
        sys.stderr.write("incsim: running\n")
    if params.get("fake.crash") == "true":
        die("crash requested by fake.crash", 3)
    if params.get("fake.segv") == "true":
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(float(params.get("fake.sleep", "0")))
    cols = columns(opts)
    result_rows = rows(opts, params)
    config = {"platform": opts["platform"],
              "collective": opts["collective"],
              "algorithm": opts["algorithm"],
              "gpus": int(opts["gpus"] or (16 if opts["platform"] == "dgx2"
                                           else 8)),
              "dtype": opts["dtype"], "redop": opts["redop"],
              "seed": int(opts["seed"]),
              "sizes": opts["sizes"], "traffic": opts["traffic"],
              "params": dict(sorted(params.items()))}
    out = {"incsim": {"version": VERSION, "commit": COMMIT},
           "config": config, "columns": cols, "rows": result_rows}
    if opts["json"]:
        f = _open(opts["json"])
        json.dump(out, f, indent=2)
        f.write("\n")
        if f is not sys.stdout:
            f.close()
    if opts["csv"]:
        f = _open(opts["csv"])
        w = csv.writer(f, lineterminator="\n")
        w.writerow([c["name"] for c in cols])
        for r in result_rows:
            w.writerow(["" if r.get(c["name"]) is None else r[c["name"]]
                        for c in cols])
        if f is not sys.stdout:
            f.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
