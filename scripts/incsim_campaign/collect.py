"""Merging point results into one CSV: one row per point and message size,
every setting of the campaign a column."""

import csv
import json
import os
import sys

from .campaign import FLAGS, value_text
from .runner import failed_path, result_path

CONFIG_COLUMNS = ("platform", "collective", "algorithm", "gpus", "dtype",
                  "seed")
ROW_COLUMNS = ("size_bytes", "count", "type", "redop", "time_us",
               "algbw_GBps", "busbw_GBps", "wrong", "bound_us",
               "bound_fraction")
SKIP_ROW_KEYS = ("links",)


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


def collect(campaign, csv_path=None, stream=sys.stderr):
    """Write the CSV; return (csv_path, nrows, done, failed, missing) where
    failed is a list of (point, error line) and missing a list of points."""
    points = campaign.points()
    names = campaign.settings_names()
    extra_flags = [n for n in names if n in FLAGS and n not in CONFIG_COLUMNS
                   and n != "sizes"]
    params = [n for n in names if n not in FLAGS]
    setting_cols = list(CONFIG_COLUMNS) + extra_flags + params

    results, failed, missing = [], [], []
    extra_row_keys = []
    for p in points:
        path = result_path(campaign.output, p.hash)
        if os.path.isfile(path):
            try:
                with open(path) as f:
                    data = json.load(f)
                rows = data["rows"]
            except (OSError, ValueError, KeyError, TypeError) as e:
                failed.append((p, "unreadable result %s: %s" % (path, e)))
                continue
            results.append((p, data))
            for r in rows:
                for k in r:
                    if (k not in ROW_COLUMNS and k not in SKIP_ROW_KEYS and
                            k not in extra_row_keys):
                        extra_row_keys.append(k)
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

    columns = (["point"] + setting_cols + list(ROW_COLUMNS) +
               sorted(extra_row_keys))
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
                for k in list(ROW_COLUMNS) + extra_row_keys:
                    row[k] = _cell(r.get(k))
                w.writerow([row.get(c, "") for c in columns])
                nrows += 1
    os.replace(tmp, csv_path)

    stream.write("collect: %d points: %d done, %d failed, %d not run; "
                 "wrote %s (%d rows)\n" % (len(points), len(results),
                                           len(failed), len(missing),
                                           csv_path, nrows))
    for p, err in failed:
        stream.write("collect: FAILED point %s (%s): %s\n" % (
            p.hash, p.label(campaign.swept or None), err))
    if missing and len(missing) <= 20:
        for p in missing:
            stream.write("collect: not run: point %s (%s)\n" % (
                p.hash, p.label(campaign.swept or None)))
    return csv_path, nrows, len(results), failed, missing
