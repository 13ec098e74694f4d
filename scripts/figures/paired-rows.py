#!/usr/bin/python3
"""One case's two runs side by side (flow-vs-packet.sh, flow-classes.sh).

paired-rows.py LABEL DIR OUT A B: DIR holds A.csv, B.csv (incsim --csv, the
same sizes in order) and A.cpu, B.cpu (/usr/bin/time -f %U); prints each
size's time both ways, B's difference from A and the CPU seconds of each
run, and appends case,size_bytes,A_us,B_us,difference,A_cpu_s,B_cpu_s
rows to OUT."""

import csv
import sys

label, tmp, out, a, b = sys.argv[1:6]
rows = {x: list(csv.DictReader(open(f"{tmp}/{x}.csv"))) for x in (a, b)}
cpu = {x: float(open(f"{tmp}/{x}.cpu").read().split()[-1]) for x in (a, b)}
with open(out, "a") as o:
    for p, q in zip(rows[a], rows[b]):
        ta, tb = float(p["time_us"]), float(q["time_us"])
        d = tb / ta - 1
        print(f"{label:<30} {p['size_bytes']:>12} {ta:12.2f} {tb:12.2f} {100 * d:+8.2f}% {cpu[a]:9.2f} {cpu[b]:9.2f}")
        o.write(f"{label},{p['size_bytes']},{ta:.3f},{tb:.3f},{d:.4f},{cpu[a]:.2f},{cpu[b]:.2f}\n")
