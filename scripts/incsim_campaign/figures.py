"""Shared pieces of the figure scripts (scripts/figures/*-plot.py): reading
merged campaign CSVs, averaging seeds into curves, checking #wrong, writing
the CSVs and PNGs. Runs on Debian's /usr/bin/python3 with matplotlib."""

import argparse
import csv
import glob
import os
import sys

from .plot import PlotError, _plt, _size_axis, draw_reference, read_reference  # noqa: F401

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(REPO, "scripts", "figures", "reference")


class FigError(Exception):
    pass


# --------------------------------------------------------------------------
# the papers' numbers

def paper(prefix):
    """{key: value} of every scripts/figures/reference/<prefix>-*.csv: the
    numbers a paper states, each with its source in the CSV."""
    values = {}
    for path in sorted(glob.glob(os.path.join(REFERENCE, prefix + "-*.csv"))):
        try:
            rows = read_reference(path)
        except PlotError as e:
            raise FigError(str(e))
        for r in rows:
            if r["key"] in values:
                raise FigError("%s: %s given twice" % (path, r["key"]))
            values[r["key"]] = r["value"]
    if not values:
        raise FigError("no reference numbers in %s/%s-*.csv" % (REFERENCE, prefix))
    return values


# --------------------------------------------------------------------------
# rows

def _num(text):
    for conv in (int, float):
        try:
            return conv(text)
        except (TypeError, ValueError):
            pass
    return text


def read_rows(paths, setting_only=()):
    """Rows of every CSV (columns unioned), numbers parsed; a column in
    setting_only that only some CSVs have goes with the settings."""
    rows, columns = [], []
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                for c in reader.fieldnames or []:
                    if c in columns:
                        continue
                    # a setting only one campaign has goes with the settings
                    if "size_bytes" in columns and c in setting_only:
                        columns.insert(columns.index("size_bytes"), c)
                    else:
                        columns.append(c)
                for r in reader:
                    rows.append({k: _num(v) for k, v in r.items()})
        except OSError as e:
            raise FigError("cannot read %s: %s" % (path, e.strerror))
    if not rows:
        raise FigError("no simulated rows in %s" % ", ".join(paths))
    return rows, columns


def write_rows(path, rows, columns):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([r.get(c, "") for c in columns])
    print("wrote %s (%d rows)" % (os.path.relpath(path, REPO), len(rows)))


def write_table(path, header, table):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for row in table:
            w.writerow([("%.4g" % v) if isinstance(v, float) else v
                        for v in row])
    print("wrote %s" % os.path.relpath(path, REPO))


def check_wrong(rows):
    """Print every row with wrong elements; return how many there are."""
    bad = [r for r in rows if r.get("wrong") not in (0, "0")]
    for r in bad:
        print("WRONG: point %s %s size %s: %s wrong elements" % (
            r.get("point"), r.get("algorithm"), r.get("size_bytes"),
            r.get("wrong")))
    print("checked %d rows: %d with wrong elements" % (len(rows), len(bad)))
    return len(bad)


def series(rows, key):
    """{series: {size: {"time_us", "algbw_GBps", "latency_ns", "seeds",
    "rows"}}} with seeds averaged; key(row) names a row's series."""
    out = {}
    for r in rows:
        out.setdefault(key(r), {}).setdefault(r["size_bytes"], []).append(r)
    res = {}
    for name, by_size in out.items():
        res[name] = {}
        for size, rs in sorted(by_size.items()):
            t = sum(r["time_us"] for r in rs) / len(rs)
            lat = [r["avg_packet_latency_ns"] for r in rs
                   if isinstance(r.get("avg_packet_latency_ns"), (int, float))]
            res[name][size] = {
                "time_us": t, "algbw_GBps": size / t / 1e3,
                "latency_ns": sum(lat) / len(lat) if lat else None,
                "seeds": len(rs), "rows": rs}
    return res


def pct(ours, paper):
    return 100.0 * (ours - paper) / paper


def claim(what, ours, paper, unit=""):
    print("  %-58s ours %8.3g%s  paper %8.3g%s  (%+.0f %%)" % (
        what, ours, unit, paper, unit, pct(ours, paper)))


def peak(curve):
    """(size, algbw) of a curve's highest bandwidth."""
    size = max(curve, key=lambda s: curve[s]["algbw_GBps"])
    return size, curve[size]["algbw_GBps"]


def bound_GBps(rows):
    """The in-network algbw bound of the runs: size / bound_us."""
    vals = {round(r["size_bytes"] / r["bound_us"] / 1e3, 1) for r in rows
            if isinstance(r.get("bound_us"), (int, float)) and r["bound_us"]}
    return max(vals) if vals else None


def algbw_axes(ax, sizes, title):
    _size_axis(ax, sorted(sizes))
    ax.set_ylabel("algorithm bandwidth (GB/s)")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


def draw(ax, curve, **kw):
    sizes = sorted(curve)
    kw.setdefault("marker", ".")
    ax.plot(sizes, [curve[s]["algbw_GBps"] for s in sizes], **kw)


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("wrote %s" % os.path.relpath(path, REPO))


def figure_main(doc, prefix, figs, argv=None, setting_only=(), add_args=None,
                rows_csv=True):
    """The command line every figure script shares: FIGURE --csv ... --out;
    writes <out>/<prefix>-<figure>.csv (every row; not with rows_csv=False,
    for figures that write their own tables), checks #wrong, then calls
    figs[figure](rows, out, args). Exit 2 on a FigError, 1 when a row has
    wrong elements. Missing CSVs are skipped while one is left."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("figure", choices=sorted(figs))
    ap.add_argument("--csv", action="append", required=True,
                    help="campaign CSV (scripts/sweep collect); repeatable")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "figures"),
                    help="folder for the CSV and PNG (default docs/figures)")
    if add_args:
        add_args(ap)
    args = ap.parse_args(argv)
    try:
        rows, columns = read_rows([c for c in args.csv if os.path.exists(c)] or args.csv, setting_only)
        os.makedirs(args.out, exist_ok=True)
        if rows_csv:
            write_rows(os.path.join(args.out, "%s-%s.csv" % (prefix, args.figure)), rows, columns)
        nwrong = check_wrong(rows)
        figs[args.figure](rows, args.out, args)
    except FigError as e:
        sys.stderr.write("%s-plot: error: %s\n" % (prefix, e))
        return 2
    return 1 if nwrong else 0
