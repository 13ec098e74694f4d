#!/usr/bin/python3
"""NCCL's all-to-all on HGX H100 clusters with PXN on and off
(docs/modern-machines.md, "PXN"): each (nodes, oversubscription, size) run
alone, with cluster.pxn=1 and =0, its time, busbw, fraction of the bound,
the bytes on the leaves' up-links to the spines, #wrong and CPU time.
Writes docs/figures/cluster-pxn.csv and prints the rows as a Markdown table.

  scripts/figures/cluster-pxn.py [--nodes 2,4] [--oversubscription 1,2,4] [--sizes 64K,1M,16M]
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(incsim, nodes, over, size, pxn):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([incsim, "--platform", "cluster", "--nodes", str(nodes), "--collective", "alltoall",
                        "--sizes", size, "--quiet", "--json", f.name, "-c", f"cluster.pxn={pxn}",
                        "-c", f"cluster.oversubscription={over}",
                        # the hardware alone, as docs/modern-machines.md measures it
                        "-c", "nccl.launch=none", "-c", "net.max_payload_bytes=256"], check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        row = json.load(open(f.name))["rows"][0]
    # Bytes on the wire (payload and headers) up the leaves' links to the spines.
    spine = sum(l["bytes"] for l in row["links"] if l["from"].startswith("leaf") and l["to"].startswith("spine"))
    return {"nodes": nodes, "oversubscription": over, "size": size, "pxn": pxn, "time_us": row["time_us"],
            "busbw_GBps": row["busbw_GBps"], "bound": row["bound_fraction"], "spine_up_bytes": spine,
            "wrong": row["wrong"], "network_busiest": row["network_busiest"], "nvlink_busiest": row["nvlink_busiest"],
            "cpu_s": after.ru_utime - before.ru_utime}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="2,4")
    ap.add_argument("--oversubscription", default="1,2,4")
    ap.add_argument("--sizes", default="64K,1M,16M")
    ap.add_argument("--incsim", default=os.path.join(ROOT, "build", "incsim"))
    ap.add_argument("--csv", default=os.path.join(ROOT, "docs", "figures", "cluster-pxn.csv"))
    a = ap.parse_args()
    rows = []
    for nodes in map(int, a.nodes.split(",")):
        for over in map(int, a.oversubscription.split(",")):
            for size in a.sizes.split(","):
                pair = [run(a.incsim, nodes, over, size, pxn) for pxn in (1, 0)]
                rows += pair
                on, off = pair
                print(f"| {nodes} | {over} | {size} | {on['time_us']:.2f} us, {on['busbw_GBps']:.1f} "
                      f"({100 * on['bound']:.1f}%), {on['spine_up_bytes']} B | {off['time_us']:.2f} us, "
                      f"{off['busbw_GBps']:.1f} ({100 * off['bound']:.1f}%), {off['spine_up_bytes']} B | "
                      f"{off['time_us'] / on['time_us']:.2f} | {on['cpu_s']:.0f} + {off['cpu_s']:.0f} s |", flush=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
