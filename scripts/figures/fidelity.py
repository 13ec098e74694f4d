#!/usr/bin/python3
"""docs/fidelity.md's tables: every figure and table of the four papers,
what the paper reports (scripts/figures/reference/*.csv, each number with
its quote), incsim's value (read from the CSV under docs/figures that the
figure's script regenerates), their ratio, and a status.

  scripts/figures/fidelity.py          rewrite docs/fidelity.md below its
                                       marker and docs/figures/fidelity.csv
  scripts/figures/fidelity.py --check  exit 1 if either differs from what
                                       the CSVs give (ctest: scripts.tools)

What is compared with what is scripts/figures/fidelity.csv, one row per
comparison (or per figure with nothing to compare):

  paper, figure   the paper's short name and the figure or table
  key             a reference key (its value and quote); empty for a
                  figure with no number to compare
  ours            what incsim's value is, in a few words
  csv             a CSV under docs/figures
  where           col=value&col!=value selects rows; "A / B" divides the
                  value of selection A by that of B
  column, reduce  the column, and one | max | min | mean | geomean |
                  cut_geomean (1 - geomean(1 - x): a geometric-mean time cut)
  scale           multiplies ours (e.g. 0.01 for a percentage)
  paper_add       added to the paper's number (1 makes a gain a speed ratio)
  explained       for a number outside 15%: the mechanism and where it is
                  measured ("open: ..." if it is not yet); "calibrated: ..."
                  for a number that is an input; for a row without a key,
                  the figure's status

Within 15% needs no explanation; outside it, a row without one is refused.
"""

import argparse
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MAP = os.path.join(HERE, "fidelity.csv")
REFERENCE = os.path.join(HERE, "reference")
FIGURES = os.path.join(REPO, "docs", "figures")
DOC = os.path.join(REPO, "docs", "fidelity.md")
TABLE = os.path.join(FIGURES, "fidelity.csv")
MARKER = ("<!-- Everything below is written by scripts/figures/fidelity.py "
          "from scripts/figures/fidelity.csv; edit those, not this. -->")
TOLERANCE = 0.15
PAPERS = {
    "klenk": "Klenk et al., ISCA 2020: in-network reductions on NVSwitch",
    "multitree": "MultiTree, ISCA 2021: schedule tables in the NIC",
    "blink": "Blink, MLSys 2020: packed spanning trees",
    "netreduce": "NetReduce, ASPLOS 2023: an FPGA aggregator on Ethernet",
}


class FidelityError(Exception):
    pass


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise FidelityError("cannot read %s: %s" % (os.path.relpath(path, REPO), e.strerror))


def reference():
    refs = {}
    for name in sorted(os.listdir(REFERENCE)):
        if name.endswith(".csv"):
            for r in read_csv(os.path.join(REFERENCE, name)):
                refs[r["key"]] = (float(r["value"]), r["source"], name[:-4])
    return refs


def _matches(row, where):
    for cond in where.split("&"):
        col, _, want = cond.partition("=")
        negate = col.endswith("!")
        col = col.rstrip("!").strip()
        if col not in row:
            raise FidelityError("no column %s" % col)
        if _equal(row[col], want.strip()) == negate:
            return False
    return True


def _equal(have, want):
    if have == want:
        return True
    try:
        return float(have) == float(want)
    except ValueError:
        return False


def _reduce(values, how):
    if how == "one":
        if len(values) != 1:
            raise FidelityError("%d rows where one was meant" % len(values))
        return values[0]
    if not values:
        raise FidelityError("no rows")
    if how == "max":
        return max(values)
    if how == "min":
        return min(values)
    if how == "mean":
        return sum(values) / len(values)
    if how == "geomean":
        return math.exp(sum(math.log(v) for v in values) / len(values))
    if how == "cut_geomean":
        return 1 - math.exp(sum(math.log(1 - v) for v in values) / len(values))
    raise FidelityError("unknown reduce %s" % how)


def ours(m, figures):
    rows = read_csv(os.path.join(figures, m["csv"]))
    parts = [p.strip() for p in m["where"].split(" / ")]
    vals = []
    for where in parts:
        sel = [r for r in rows if _matches(r, where)] if where else rows
        try:
            vals.append(_reduce([float(r[m["column"]]) for r in sel], m["reduce"]))
        except (KeyError, ValueError) as e:
            raise FidelityError("column %s: %s" % (m["column"], e))
        except FidelityError as e:
            raise FidelityError("%s where %s: %s" % (m["csv"], where, e))
    value = vals[0] / vals[1] if len(vals) == 2 else vals[0]
    return value * float(m["scale"] or 1)


def fmt(v):
    if v == 0:
        return "0"
    return ("%.3g" % v) if abs(v) < 1000 else ("%.0f" % v)


def build(figures):
    """[(paper, [table rows])] and the CSV rows, in fidelity.csv's order."""
    refs = reference()
    papers, flat = {}, []
    for n, m in enumerate(read_csv(MAP), 2):
        where = "scripts/figures/fidelity.csv line %d" % n
        if m["paper"] not in PAPERS:
            raise FidelityError("%s: unknown paper %s" % (where, m["paper"]))
        row = {"paper": m["paper"], "figure": m["figure"], "key": m["key"],
               "paper_value": "", "ours": m["ours"], "incsim_value": "",
               "ratio": "", "status": "", "explained": m["explained"],
               "quote": "", "csv": m["csv"]}
        if not m["key"]:
            if not m["explained"]:
                raise FidelityError("%s: a figure without a number needs its status" % where)
            row["status"] = "no number"
        else:
            if m["key"] not in refs:
                raise FidelityError("%s: no reference number %s" % (where, m["key"]))
            value, quote, _ = refs[m["key"]]
            value += float(m["paper_add"] or 0)
            try:
                mine = ours(m, figures)
            except FidelityError as e:
                raise FidelityError("%s: %s" % (where, e))
            ratio = mine / value
            if m["explained"].startswith("calibrated:"):
                status = "calibrated"
            elif abs(ratio - 1) <= TOLERANCE:
                status = "within 15%"
            elif not m["explained"]:
                raise FidelityError("%s: %s is %.2fx the paper's with no explanation"
                                    % (where, m["key"], ratio))
            elif m["explained"].startswith("open:"):
                status = "outside, open"
            else:
                status = "outside, explained"
            row.update(paper_value=fmt(value), incsim_value=fmt(mine),
                       ratio="%.2f" % ratio, status=status, quote=quote)
        papers.setdefault(m["paper"], []).append(row)
        flat.append(row)
    return papers, flat


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(papers, flat):
    counts = {}
    for r in flat:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    numbers = sum(v for k, v in counts.items() if k != "no number")
    out = [MARKER, "",
           "%d numbers compared: %s. %d figures or tables with no number to compare."
           % (numbers, ", ".join("%d %s" % (counts.get(k, 0), k) for k in
                                 ("within 15%", "outside, explained", "outside, open",
                                  "calibrated")), counts.get("no number", 0)), ""]
    for paper in PAPERS:
        if paper not in papers:
            continue
        out += ["## " + PAPERS[paper], "",
                "| figure | the paper says | paper | incsim | ours / paper | status |",
                "|---|---|---:|---:|---:|---|"]
        for r in papers[paper]:
            if r["key"]:
                why = r["explained"].split(":", 1)[1].strip() if r["status"] in (
                    "outside, open", "calibrated") else r["explained"]
                status = r["status"] + (": " + why if why else "")
                mine = "%s (%s, `%s`)" % (r["incsim_value"], r["ours"], r["csv"])
                out.append("| %s | %s | %s | %s | %s | %s |" % (
                    _cell(r["figure"]), _cell(r["quote"]), r["paper_value"],
                    _cell(mine), r["ratio"], _cell(status)))
            else:
                out.append("| %s | | | | | %s |" % (_cell(r["figure"]), _cell(r["explained"])))
        out.append("")
    return "\n".join(out)


def table_csv(flat):
    cols = ["paper", "figure", "key", "paper_value", "ours", "incsim_value",
            "ratio", "status", "csv"]
    lines = [",".join(cols)]
    for r in flat:
        lines.append(",".join('"%s"' % r[c].replace('"', '""') if ("," in r[c] or '"' in r[c])
                              else r[c] for c in cols))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="compare docs/fidelity.md and docs/figures/fidelity.csv with the CSVs")
    ap.add_argument("--figures", default=FIGURES, help=argparse.SUPPRESS)
    ap.add_argument("--doc", default=DOC, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        papers, flat = build(args.figures)
        try:
            with open(args.doc) as f:
                text = f.read()
        except OSError as e:
            raise FidelityError("cannot read %s: %s" % (args.doc, e.strerror))
        if MARKER not in text:
            raise FidelityError("%s has no marker line for the generated tables" % args.doc)
        doc = text[:text.index(MARKER)] + markdown(papers, flat)
        table = table_csv(flat)
    except FidelityError as e:
        print("fidelity: %s" % e, file=sys.stderr)
        return 2
    table_path = os.path.join(args.figures, "fidelity.csv")
    if args.check:
        stale = [p for p, want in ((args.doc, doc), (table_path, table))
                 if not os.path.exists(p) or open(p).read() != want]
        for p in stale:
            print("fidelity: %s does not say what the CSVs give; run "
                  "scripts/figures/fidelity.py" % os.path.relpath(p, REPO), file=sys.stderr)
        return 1 if stale else 0
    for p, want in ((args.doc, doc), (table_path, table)):
        with open(p, "w") as f:
            f.write(want)
        print("wrote %s" % os.path.relpath(p, REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
