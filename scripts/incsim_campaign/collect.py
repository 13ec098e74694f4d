"""Merging point results into one CSV: one row per point and result row
(message size, offered load, ...), every setting of the campaign a column,
and beside it <name>.columns.json saying which columns are settings and
which are measurements, with their units (see docs/campaigns.md)."""

import csv
import json
import os
import sys

from .campaign import FLAGS, value_text
from .runner import failed_path, points_dir, result_path

# Columns every point has, from the campaign or else the run's JSON
# "config": settings, all of them.
CONFIG_COLUMNS = ("platform", "collective", "algorithm", "gpus", "dtype",
                  "seed")
# Nested row values left out of the CSV (the others are written as JSON).
SKIP_ROW_KEYS = ("links",)
# Only for results written before incsim described its rows ("columns"):
# the row keys that are settings; every other one is a measurement.
LEGACY_ROW_SETTINGS = ("size_bytes", "count", "type", "redop", "offered")

SIDECAR_FORMAT = "incsim-campaign-columns/1"


def columns_path(csv_path):
    """The sidecar describing a CSV's columns: results.csv ->
    results.columns.json."""
    base = csv_path[:-4] if csv_path.lower().endswith(".csv") else csv_path
    return base + ".columns.json"


def row_columns(data):
    """[(name, unit, kind)] of a result's scalar row values: incsim's own
    "columns" list, else (older results) inferred from the rows."""
    described = data.get("columns")
    if isinstance(described, list):
        out = []
        for c in described:
            if isinstance(c, dict) and c.get("name"):
                kind = c.get("kind")
                out.append((str(c["name"]), str(c.get("unit") or ""),
                            kind if kind in ("setting", "measurement")
                            else "measurement"))
        return out
    out, seen = [], set()
    for r in data["rows"]:
        for k, v in r.items():
            if k not in seen and not isinstance(v, (list, dict)):
                seen.add(k)
                out.append((k, "", "setting" if k in LEGACY_ROW_SETTINGS
                            else "measurement"))
    return out


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return str(v)


def _sidecar_text(side):
    """The sidecar as JSON with one column per line (easy to read and to
    diff)."""
    head = {k: v for k, v in side.items() if k != "columns"}
    text = json.dumps(head, separators=(", ", ": "))[:-1]
    cols = ",\n".join("  " + json.dumps(c, separators=(", ", ": "))
                      for c in side["columns"])
    return text + ',\n "columns": [\n' + cols + "\n ]}\n"


def collect(campaign, csv_path=None, stream=sys.stderr):
    """Write the CSV and its sidecar (columns_path); return (csv_path,
    nrows, done, failed, missing) where failed is a list of (point, error
    line) and missing a list of points."""
    points = campaign.points()
    names = campaign.settings_names()
    extra_flags = [n for n in names if n in FLAGS and n not in CONFIG_COLUMNS
                   and n != "sizes"]
    params = [n for n in names if n not in FLAGS]
    setting_cols = list(CONFIG_COLUMNS) + extra_flags + params

    results, failed, missing = [], [], []
    row_cols = {}           # name -> {"unit", "kind", "point"}, in order
    unlisted, nested = set(), set()
    builds = []
    for p in points:
        path = result_path(campaign.output, p.hash)
        if os.path.isfile(path):
            try:
                with open(path) as f:
                    data = json.load(f)
                rows = data["rows"]
                described = row_columns(data)
            except (OSError, ValueError, KeyError, TypeError,
                    AttributeError) as e:
                failed.append((p, "unreadable result %s: %s" % (path, e)))
                continue
            results.append((p, data))
            build = data.get("incsim")
            if isinstance(build, dict) and build not in builds:
                builds.append(build)
            for name, unit, kind in described:
                if name in setting_cols or name == "point":
                    continue
                have = row_cols.get(name)
                if have is None:
                    row_cols[name] = {"unit": unit, "kind": kind,
                                      "point": p.hash}
                elif have["kind"] != kind:
                    stream.write(
                        "collect: column %s is a %s in point %s but a %s in "
                        "point %s; taken as a %s\n" % (
                            name, have["kind"], have["point"], kind, p.hash,
                            have["kind"]))
                    have["point"] = p.hash      # warn once per column
            listed = {n for n, _, _ in described}
            for r in rows:
                for k, v in r.items():
                    if k in SKIP_ROW_KEYS or k in listed or \
                            k in setting_cols or k == "point":
                        continue
                    (nested if isinstance(v, (list, dict))
                     else unlisted).add(k)
            continue
        fpath = failed_path(campaign.output, p.hash)
        if os.path.isfile(fpath):
            try:
                with open(fpath) as f:
                    err = json.load(f).get("error") or "failed"
            except (OSError, ValueError):
                err = "failed (unreadable %s)" % fpath
            failed.append((p, err))
        else:
            missing.append(p)
    # scalar values a result did not describe, then nested ones (as JSON):
    # measurements
    for k in sorted(unlisted - set(row_cols)) + sorted(nested -
                                                      set(row_cols)):
        row_cols[k] = {"unit": "", "kind": "measurement", "point": None}
        if k in nested:
            row_cols[k]["json"] = True
    row_keys = list(row_cols)

    columns = ["point"] + setting_cols + row_keys
    if csv_path is None:
        csv_path = os.path.join(campaign.output, "results.csv")
    os.makedirs(os.path.dirname(os.path.abspath(csv_path)), exist_ok=True)
    nrows = 0
    tmp = csv_path + ".tmp%d" % os.getpid()
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for p, data in results:
            config = data.get("config") or {}
            cparams = config.get("params") or {}
            base = {"point": p.hash}
            for c in setting_cols:
                if c in p.settings:
                    base[c] = value_text(p.settings[c])
                elif c in config:
                    base[c] = _cell(config[c])
                elif c in cparams:
                    base[c] = _cell(cparams[c])
                else:
                    base[c] = ""
            for r in data["rows"]:
                row = dict(base)
                # a row's own value of a setting wins: a training run's
                # baseline row names its algorithm
                row.update((c, _cell(r[c])) for c in setting_cols
                           if c in r and not isinstance(r[c], (list, dict)))
                for k in row_keys:
                    row[k] = _cell(r.get(k))
                w.writerow([row.get(c, "") for c in columns])
                nrows += 1
    os.replace(tmp, csv_path)

    side = {"format": SIDECAR_FORMAT, "csv": os.path.basename(csv_path),
            "incsim": builds,
            "columns": [{"name": "point", "kind": "id", "unit": "",
                         "from": "point"}] +
            [{"name": c, "kind": "setting", "unit": "", "from": "point"}
             for c in setting_cols] +
            [dict({"name": k, "kind": v["kind"], "unit": v["unit"],
                   "from": "row"}, **({"json": True} if v.get("json")
                                      else {}))
             for k, v in row_cols.items()]}
    spath = columns_path(csv_path)
    with open(spath + ".tmp%d" % os.getpid(), "w") as f:
        f.write(_sidecar_text(side))
    os.replace(spath + ".tmp%d" % os.getpid(), spath)

    stream.write("collect: %d points: %d done, %d failed, %d not run; "
                 "wrote %s (%d rows)\n" % (len(points), len(results),
                                           len(failed), len(missing),
                                           csv_path, nrows))
    if len(builds) > 1:
        stream.write("collect: the results come from %d incsim builds (%s); "
                     "delete %s to run them again with one\n" % (
                         len(builds), ", ".join(
                             "%s %s" % (b.get("version"), b.get("commit"))
                             for b in builds),
                         points_dir(campaign.output)))
    for p, err in failed:
        stream.write("collect: FAILED point %s (%s): %s\n" % (
            p.hash, p.label(campaign.swept or None), err))
    if missing and len(missing) <= 20:
        for p in missing:
            stream.write("collect: not run: point %s (%s)\n" % (
                p.hash, p.label(campaign.swept or None)))
    return csv_path, nrows, len(results), failed, missing
