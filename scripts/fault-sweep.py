#!/usr/bin/python3
"""Fault sweep (issue 14): every all-reduce algorithm on every Ethernet
platform, under link loss and corruption from 1e-4 to 0.1, at sizes around
the 170-packet message boundary, over many seeds. Each run checks every
element (#wrong); the summary counts runs, wrong elements, and runs that did
not exit 0 (crash, stall, error), by exit status.

  /usr/bin/python3 scripts/fault-sweep.py [--seeds 20] [--jobs 2] [--binary build/incsim]

Exit status 0 only if every run exited 0 with #wrong 0. Failing command
lines are printed, so that each can be rerun alone.
"""
import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys
import time

# One 170-packet message is 170 KiB of payload at 1 KiB per packet: just
# under, at and over one and two messages, and a short second message.
SIZES = "169K,170K,171K,200K,252K,340K,341K"

# Small shapes keep the sweep quick; each still has a ring of 3+ ranks.
COMBOS = [
    ("rack", "--hosts 4", ["netreduce", "ring"]),
    ("spineleaf", "--racks 2 --hosts-per-rack 2", ["netreduce", "ring"]),
    ("multigpu", "--machines 3 --gpus-per-machine 4", ["pnetreduce", "tencent", "flatring"]),
]

# (loss, corruption): each alone over four decades, and both at once.
FAULTS = [(p, 0.0) for p in (1e-4, 1e-3, 1e-2, 1e-1)] + [(0.0, p) for p in (1e-4, 1e-3, 1e-2, 1e-1)] + [
    (1e-2, 1e-2),
    (1e-1, 5e-2),
]


def run_one(binary, platform, shape, algorithm, loss, corruption, seed, timeout, stall_us):
    cmd = [binary, "--platform", platform] + shape.split() + [
        "--algorithm", algorithm, "--sizes", SIZES, "--dtype", "int32", "--seed", str(seed), "--quiet",
        "-c", "link.loss=%g" % loss, "-c", "link.corruption=%g" % corruption]
    if stall_us:
        cmd += ["-c", "sim.stall_timeout_us=%g" % stall_us]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        status, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        status, out, err = "timeout", "", ""
    wrong, rows = 0, 0
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():  # size count type redop time algbw busbw #wrong ...
            rows += 1
            wrong += int(f[7])
    msg = next((l for l in err.splitlines() if "error" in l), "")
    return cmd, status, wrong, rows, msg, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                     "incsim"))
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run before it counts as hung")
    # incsim's default stall timeout grows with the fault rates (issue 14,
    # part 2), so a slow run under heavy faults is no longer taken for a stall.
    ap.add_argument("--stall-us", type=float, default=0,
                    help="sim.stall_timeout_us for each run; 0: incsim's default")
    a = ap.parse_args()
    if a.seeds < 1 or a.jobs < 1:
        sys.exit("fault-sweep: --seeds and --jobs must be at least 1")
    if not os.access(a.binary, os.X_OK):
        sys.exit("fault-sweep: no incsim at %s; build first (sh scripts/build.sh)" % a.binary)

    work = [(plat, shape, alg, loss, corr, seed)
            for plat, shape, algs in COMBOS for alg in algs for loss, corr in FAULTS
            for seed in range(1, a.seeds + 1)]
    t0 = time.monotonic()
    # (platform, algorithm) -> [runs, rows, wrong, not-ok runs]
    table = collections.OrderedDict()
    statuses = collections.Counter()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {ex.submit(run_one, a.binary, plat, shape, alg, loss, corr, seed, a.timeout, a.stall_us): (plat, alg)
                for plat, shape, alg, loss, corr, seed in work}
        done = 0
        for fut in concurrent.futures.as_completed(futs):
            key = futs[fut]
            cmd, status, wrong, rows, msg, _ = fut.result()
            t = table.setdefault(key, [0, 0, 0, 0])
            t[0] += 1
            t[1] += rows
            t[2] += wrong
            statuses[status] += 1
            if status != 0 or wrong:
                t[3] += 1
                failures.append((status, wrong, " ".join(cmd), msg))
            done += 1
            if done % 100 == 0:
                print("# %d of %d runs, %.0f s" % (done, len(work), time.monotonic() - t0), file=sys.stderr)
    elapsed = time.monotonic() - t0

    print("# fault sweep: sizes %s, %d seeds, %d fault settings (loss, corruption): %s; sim.stall_timeout_us %s" %
          (SIZES, a.seeds, len(FAULTS), ", ".join("(%g, %g)" % f for f in FAULTS),
           "%g" % a.stall_us if a.stall_us else "default"))
    print("%-10s %-11s %6s %7s %8s %7s" % ("platform", "algorithm", "runs", "rows", "#wrong", "failed"))
    for (plat, alg), (runs, rows, wrong, bad) in sorted(table.items(), key=lambda kv: [c[0] for c in COMBOS].index(kv[0][0])):
        print("%-10s %-11s %6d %7d %8d %7d" % (plat, alg, runs, rows, wrong, bad))
    total = [sum(v[i] for v in table.values()) for i in range(4)]
    print("%-22s %6d %7d %8d %7d" % ("total", *total))
    print("# exit status: %s; %.0f s wall with %d jobs" %
          (", ".join("%s: %d" % (k, v) for k, v in sorted(statuses.items(), key=str)), elapsed, a.jobs))
    for status, wrong, cmd, msg in failures[:50]:
        print("FAILED (exit %s, #wrong %d): %s  %s" % (status, wrong, cmd, msg))
    sys.exit(0 if not failures else 1)


if __name__ == "__main__":
    main()
