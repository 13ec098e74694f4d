#!/usr/bin/python3
"""A stand-in for build/incsim that follows the command-line contract
(--list-params, --json, `incsim: error:` lines, determinism), for testing
the campaign tools without the simulator. Test-only knobs:
  -c fake.crash=true      exit 3 with an error line
  -c fake.segv=true       die by SIGSEGV with no error line
  -c fake.sleep=SECONDS   sleep before writing the result
  $FAKE_INCSIM_LOG        append one line per run (the argv) to this file
"""
import json
import os
import signal
import sys
import time

PARAMS = [
    ("ring.channels", "int", "12", "channels of the ring algorithm"),
    ("link.bandwidth_GBps", "float", "25", "per-port bandwidth"),
    ("switch.in_network", "bool", "false", "reduce in the switches"),
    ("fake.crash", "bool", "false", "fail with an error line"),
    ("fake.segv", "bool", "false", "die by a signal"),
    ("fake.sleep", "float", "0", "seconds to sleep"),
]
# Parameters only runs of one algorithm accept (and list), as incsim's push
# and pull have wave parameters that ring has not.
ALGORITHM_PARAMS = {
    "tree": [("tree.arity", "int", "2", "children per tree node")],
}
TYPES = {k: t for k, t, _, _ in PARAMS}
for _rows in ALGORITHM_PARAMS.values():
    TYPES.update({k: t for k, t, _, _ in _rows})


def die(msg):
    sys.stderr.write("incsim: error: %s\n" % msg)
    sys.exit(2)


def size(text):
    mul = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    t = text.strip().upper()
    if t and t[-1] in mul:
        return int(t[:-1]) * mul[t[-1]]
    return int(t)


def sizes(spec):
    if ":" in spec:
        lo, hi = (size(x) for x in spec.split(":"))
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return out
    return [size(x) for x in spec.split(",")]


def main(argv):
    opts = {"platform": None, "collective": None, "algorithm": None,
            "gpus": None, "sizes": None, "dtype": "float", "redop": "sum", "seed": "1",
            "config": None, "json": None, "vcd": None}
    params, quiet, listp, listc = {}, False, False, False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--list-params":
            listp = True
        elif a == "--list-choices":
            listc = True
        elif a == "--quiet":
            quiet = True
        elif a == "-c":
            i += 1
            if i >= len(argv) or "=" not in argv[i]:
                die("-c needs key=value")
            k, v = argv[i].split("=", 1)
            if k not in TYPES:
                die("unknown parameter '%s'" % k)
            params[k] = v
        elif a.startswith("--") and a[2:] in opts:
            i += 1
            if i >= len(argv):
                die("%s needs a value" % a)
            opts[a[2:]] = argv[i]
        else:
            die("unknown option '%s'" % a)
        i += 1
    accepted = PARAMS + ALGORITHM_PARAMS.get(opts["algorithm"], [])
    if listp:
        for row in accepted:
            print("\t".join(row))
        return 0
    for k in params:
        if k not in [row[0] for row in accepted]:
            die("unknown parameter '%s' for algorithm %s" % (
                k, opts["algorithm"]))
    if listc:
        print("platform\tdgx2, star, FILE.yaml\ncollective\tallreduce\n"
              "algorithm\tring, tree\ndtype\tfloat, int32\nredop\tsum, min, max")
        return 0
    if opts["platform"] not in ("dgx2", "star") and not (
            opts["platform"] and os.path.isfile(opts["platform"])):
        die("unknown platform '%s'" % opts["platform"])
    if not opts["sizes"]:
        die("--sizes is required")
    if os.environ.get("FAKE_INCSIM_LOG"):
        with open(os.environ["FAKE_INCSIM_LOG"], "a") as f:
            f.write(" ".join(argv) + "\n")
    if not quiet:
        sys.stderr.write("incsim: running\n")
    if params.get("fake.crash") == "true":
        die("crash requested by fake.crash")
    if params.get("fake.segv") == "true":
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(float(params.get("fake.sleep", "0")))
    n = int(opts["gpus"] or (16 if opts["platform"] == "dgx2" else 8))
    ch = int(params.get("ring.channels", "12"))
    seed = int(opts["seed"])
    bw = float(params.get("link.bandwidth_GBps", "25")) * 6
    rows = []
    for s in sizes(opts["sizes"]):
        bound = 2.0 * (n - 1) / n * s / (bw * 1e3)
        t = bound * (1.0 + 12.0 / ch * 0.05) + 5.0 + 0.01 * seed
        algbw = s / t / 1e3
        rows.append({"size_bytes": s, "count": s // 4,
                     "type": opts["dtype"], "redop": "sum",
                     "time_us": round(t, 6), "algbw_GBps": round(algbw, 6),
                     "busbw_GBps": round(algbw * 2 * (n - 1) / n, 6),
                     "wrong": 0, "bound_us": round(bound, 6),
                     "bound_fraction": round(bound / t, 6),
                     "links": [{"link": "gpu0-sw0", "bytes": s}]})
    out = {"config": {"platform": opts["platform"],
                      "collective": opts["collective"],
                      "algorithm": opts["algorithm"], "gpus": n,
                      "dtype": opts["dtype"], "seed": seed,
                      "params": dict(sorted(params.items()))},
           "rows": rows}
    if opts["json"]:
        with open(opts["json"], "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
