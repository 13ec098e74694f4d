#!/usr/bin/python3
"""incsim against public nccl-tests tables of real machines (docs/hardware.md).

For every table in docs/measurements/ it runs incsim on the table's machine,
collective, GPU count and launch mode, at the table's sizes, and writes per
size the error of incsim's time (incsim / measured - 1), per table the
geometric mean of |error| from 64 KiB up and below (as ASTRA-sim's validation
page reports its own), a CSV, a plot per table and the Markdown table of
docs/hardware.md. Nothing here is fitted: the tables only check the models.

  scripts/hardware-validation.py                      # every table, docs/figures/
  scripts/hardware-validation.py --tables a100_8gpu_allreduce_default_mpi8_thanos --sizes 64K,1M --out /tmp/v

Sizes up to --packet-max (256 MiB) run at packet level, in one incsim run per
table; the larger ones as flows, with the largest packet-level size again,
whose difference from packet level the script prints.
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = os.path.join(REPO, "docs", "measurements")

# Each table's machine as incsim builds it, and how the table was run:
# NCCL's own choice per size (--algorithm nccl) where the table did not force
# an algorithm; "nccl": what NCCL was told (NCCL_ALGO=Ring as
# nccl.algorithms=ring, -R 2 as nccl.symmetric=true), which only
# --algorithm nccl reads.
TABLES = {
    "a100_8gpu_allreduce_default_mpi8_thanos": {
        "machine": "8x A100 SXM4, mpirun -np 8",
        "args": ["--platform", "hgx-a100", "-c", "nccl.launch=process"]},
    "a100_8gpu_allreduce_default_singleproc_thanos": {
        "machine": "8x A100 SXM4, one process -g 8",
        "args": ["--platform", "hgx-a100", "-c", "nccl.launch=thread"]},
    "b200_8gpu_allreduce_default_i333": {
        # The table does not say how it was launched; one process per GPU is nccl-tests' advice. Its
        # thread advised -R 2 (symmetric windows), and its rows have their shape: 3.1 us at 8 B, under
        # any other kernel's base, and a step from 32 to 64 KiB where NCCL's symmetric model moves
        # from the LL kernel to the multimem one (docs/hardware.md).
        "machine": "8x B200, symmetric buffers (-R 2)",
        "args": ["--platform", "hgx-b200", "-c", "nccl.launch=process"], "nccl": ["-c", "nccl.symmetric=true"]},
    "gb200_4gpu_allreduce_ring_azure_ndgb200v6_aibench": {
        # One NVL72 tray: 4 GPUs of the rack, each with its 18 links to the rack's switch chips.
        "machine": "4x GB200 (an NVL72 tray), one process -g 4, NCCL_ALGO=Ring",
        "args": ["--platform", "nvl72", "--gpus", "4", "-c", "nccl.launch=thread"],
        "nccl": ["-c", "nccl.algorithms=ring"]},  # NCCL_ALGO=Ring
}
SMALL = 64 * 1024  # the line between the two targets: 10% from 64 KiB up, 20% below


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def read_table(name):
    """The table's rows: size -> measured time, us (out of place; else from
    in-place busbw, nccl-tests' all-reduce busbw = algbw x 2(n-1)/n)."""
    path = os.path.join(MEASUREMENTS, name + ".csv")
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    gpus = int(name.split("_")[1].replace("gpu", ""))
    rows = {}
    for r in csv.DictReader(lines):
        size = int(r["size_bytes"])
        if r["time_us"]:
            rows[size] = float(r["time_us"])
        elif r["inplace_busbw_GBps"] and float(r["inplace_busbw_GBps"]) > 0:
            busbw = float(r["inplace_busbw_GBps"])
            rows[size] = size * 2 * (gpus - 1) / gpus / busbw / 1e3
    return rows


def run_incsim(incsim, algorithm, args, sizes):
    """size -> (incsim's time, us; NCCL's choice as its note names it)."""
    cmd = [incsim, "--collective", "allreduce", "--dtype", "float", "--quiet",
           "--sizes", ",".join(str(s) for s in sizes), "--json", "-"] + algorithm + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if p.returncode != 0:
        sys.exit("hardware-validation: incsim failed (%s): %s" % (" ".join(cmd), p.stderr.strip()))
    rows = json.loads(p.stdout)["rows"]
    return {int(r["size_bytes"]): (float(r["time_us"]), r.get("choice", "")) for r in rows}


def geomean(errors):
    errors = [max(abs(e), 1e-6) for e in errors]
    return math.exp(sum(math.log(e) for e in errors) / len(errors)) if errors else float("nan")


def plot(name, rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = [r["size_bytes"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    top.loglog(sizes, [r["measured_us"] for r in rows], "o-", label="measured (nccl-tests)")
    top.loglog(sizes, [r["incsim_us"] for r in rows], "s--", label="incsim")
    top.set_ylabel("time (us)")
    top.set_title("%s: %s" % (TABLES[name]["machine"], "all-reduce"))
    top.legend()
    bottom.semilogx(sizes, [100 * r["error"] for r in rows], "d-", color="C2")
    bottom.axhline(0, color="grey", lw=0.5)
    for y in (-10, 10):
        bottom.axhline(y, color="grey", lw=0.5, ls=":")
    bottom.set_ylabel("error (%)")
    bottom.set_xlabel("size (B)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "hardware-" + name + ".png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", help="comma-separated table names (default: every table)")
    ap.add_argument("--sizes", help="only these sizes of each table, e.g. 64K,1M")
    ap.add_argument("--min-size", default="1K", help="smallest size run (default 1K)")
    ap.add_argument("--max-size", default="16G", help="largest size run (default 16G)")
    ap.add_argument("--packet-max", default="256M",
                    help="largest size run at packet level (default 256M); larger ones run as flows")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "figures"), help="folder of the CSV and plots")
    ap.add_argument("--incsim", default=os.environ.get("INCSIM", os.path.join(REPO, "build", "incsim")))
    ap.add_argument("--algorithm", default="nccl", help="incsim's algorithm (default nccl: NCCL's choice)")
    ap.add_argument("--extra", default="", help="more incsim arguments, e.g. '-c nccl.launch=none'")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args()
    names = a.tables.split(",") if a.tables else sorted(TABLES)
    for n in names:
        if n not in TABLES:
            sys.exit("hardware-validation: unknown table '%s'; the tables are %s" % (n, ", ".join(sorted(TABLES))))
    try:
        only = {parse_size(s) for s in a.sizes.split(",")} if a.sizes else None
        lo, hi, packet_max = parse_size(a.min_size), parse_size(a.max_size), parse_size(a.packet_max)
    except (ValueError, IndexError):
        sys.exit("hardware-validation: a size is a number of bytes with K, M or G, such as 64K")
    os.makedirs(a.out, exist_ok=True)
    out_rows, summary = [], []
    for name in names:
        measured = read_table(name)
        sizes = sorted(s for s in measured if lo <= s <= hi and (only is None or s in only))
        if not sizes:
            sys.exit("hardware-validation: table %s has no size in the range asked" % name)
        args = TABLES[name]["args"] + a.extra.split()
        # How NCCL was told to run (NCCL_ALGO, -R 2): only NCCL's choice reads it.
        told = TABLES[name].get("nccl", []) if a.algorithm == "nccl" else []
        packet = [s for s in sizes if s <= packet_max]
        flows = [s for s in sizes if s > packet_max]
        sim = run_incsim(a.incsim, ["--algorithm", a.algorithm], args + told, packet) if packet else {}
        fidelity = {s: "packet" for s in packet}
        if flows:
            last = packet[-1:]
            flow = run_incsim(a.incsim, ["--algorithm", a.algorithm, "--fidelity", "flow"], args + told, last + flows)
            if last:
                print("%s: above %d B as flows; flows at %d B: %+.1f%% from packet level" %
                      (name, last[0], last[0], 100 * (flow[last[0]][0] / sim[last[0]][0] - 1)))
            for s in flows:
                sim[s] = flow[s]
                fidelity[s] = "flow"
        rows = []
        for s in sizes:
            t, choice = sim[s]
            rows.append({"table": name, "size_bytes": s, "measured_us": measured[s], "incsim_us": t,
                         "error": t / measured[s] - 1, "choice": choice, "fidelity": fidelity[s]})
        out_rows += rows
        big = [r["error"] for r in rows if r["size_bytes"] >= SMALL]
        small = [r["error"] for r in rows if r["size_bytes"] < SMALL]
        summary.append((name, geomean(big) if big else None, max((abs(e) for e in big), default=None),
                        geomean(small) if small else None, max((abs(e) for e in small), default=None)))
        if not a.no_plot:
            plot(name, rows, a.out)
    with open(os.path.join(a.out, "hardware-validation.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["table", "size_bytes", "measured_us", "incsim_us", "error", "choice",
                                          "fidelity"])
        w.writeheader()
        for r in out_rows:
            w.writerow(dict(r, error="%.4f" % r["error"], incsim_us="%.2f" % r["incsim_us"],
                            measured_us="%.2f" % r["measured_us"]))
    with open(os.path.join(a.out, "hardware-validation-summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["table", "geomean_error_from_64K", "worst_from_64K", "geomean_error_below_64K", "worst_below_64K"])
        for row in summary:
            w.writerow([row[0]] + ["" if v is None else "%.4f" % v for v in row[1:]])
    pct = lambda v: "-" if v is None else "%.1f%%" % (100 * v)
    print("| table | machine | geomean error >= 64 KiB | worst >= 64 KiB | geomean error < 64 KiB | worst < 64 KiB |")
    print("|---|---|---|---|---|---|")
    for name, gb, wb, gs, ws in summary:
        print("| %s | %s | %s | %s | %s | %s |" % (name, TABLES[name]["machine"], pct(gb), pct(wb), pct(gs), pct(ws)))


if __name__ == "__main__":
    main()
