#!/usr/bin/python3
"""The flow column of the cross-check, rerun (flow-vs-packet.sh FLOW_ONLY=1).

flow-rerun.py BIN CASES CSV: runs every case of CASES (a label, then
incsim's options; flow-vs-packet-cases.txt) that CSV has, as flows at the
sizes CSV has for it, and rewrites its flow_us and error in place;
packet level's columns, and the CPU columns of the runs that measured both,
stay as they were. Prints every point that moved and each case's flow CPU
seconds then and now. A change to the flow model reruns its 174 points in
about half a minute this way, where packet level's take hours."""

import csv
import os
import resource
import subprocess
import sys
import tempfile

bin_, cases_file, path = sys.argv[1:4]
cases = {}
for line in open(cases_file):
    if line.strip() and not line.startswith("#"):
        label, opts = line.split(None, 1)
        cases[label] = opts.split()
with open(path) as f:
    reader = csv.DictReader(f)
    fields, rows = reader.fieldnames, list(reader)
missing = sorted({r["case"] for r in rows} - cases.keys())
if missing:
    sys.exit(f"flow-rerun: {cases_file} has no options for {', '.join(missing)}")
env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
moved = 0
with tempfile.TemporaryDirectory() as tmp:
    for label in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == label]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        subprocess.run([bin_, *cases[label], "--sizes", ",".join(r["size_bytes"] for r in mine), "--fidelity", "flow",
                        "--quiet", "--csv", f"{tmp}/flow.csv"], env=env, check=True, stdout=subprocess.DEVNULL)
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
        got = {r["size_bytes"]: float(r["time_us"]) for r in csv.DictReader(open(f"{tmp}/flow.csv"))}
        print(f"{label:<30} flow CPU {float(mine[0]['flow_cpu_s']):.2f} -> {cpu:.2f} s")
        for r in mine:
            old, new, packet = float(r["flow_us"]), got[r["size_bytes"]], float(r["packet_us"])
            if f"{new:.3f}" == r["flow_us"]:
                continue  # its error stays the one the exact packet time gave
            moved += 1
            print(f"{label:<30} {r['size_bytes']:>10} {old:12.3f} -> {new:12.3f} ({100 * (new / old - 1):+.2f}%), "
                  f"against packet level {100 * float(r['error']):+.1f}% -> {100 * (new / packet - 1):+.1f}%")
            r["flow_us"], r["error"] = f"{new:.3f}", f"{new / packet - 1:.4f}"
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
print(f"{moved} of {len(rows)} flow points moved; {path} rewritten")
