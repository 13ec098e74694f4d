"""scripts/plot: figures from a campaign CSV (scripts/sweep collect).

  --kind bw       bandwidth vs message size, one line per series, the
                  analytical bound dashed (bound algbw = size / bound_us)
  --kind time     time vs message size, bound_us dashed
  --kind speedup  speedup over a baseline (--baseline algorithm=ring) vs
                  size; dashed: the speedup the bound would allow
  --kind heatmap  a metric over two swept columns (--x, --y) at one size

The line plots take any setting as x (--x, then at one --size) and draw
one panel per value of --facet. Series are the settings that vary
independently of the axes (never a measurement, nor seed, which is
averaged), or --series COL,...; --where COL=VALUE filters.
Which columns are settings and which measurements is read from the CSV's
sidecar, <name>.columns.json (scripts/sweep collect writes it from what
incsim says of its rows); without one, the columns left of size_bytes are
settings, as are size_bytes, count, type, redop and offered, and every
other column is a measurement.
"""

import argparse
import csv
import json
import math
import os
import sys

from .campaign import format_size, parse_size
from .collect import LEGACY_ROW_SETTINGS, columns_path

# The default x axis of the line plots.
X_COLUMN = "size_bytes"
# Settings averaged over rather than drawn as series (unless --series).
AVERAGED = ("seed",)
METRICS = {
    "busbw": ("busbw_GBps", "bus bandwidth (GB/s)"),
    "algbw": ("algbw_GBps", "algorithm bandwidth (GB/s)"),
    "time": ("time_us", "time (\u00b5s)"),
    "bound_fraction": ("bound_fraction", "fraction of the analytical bound"),
}


class PlotError(Exception):
    pass


def _num(text):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def infer_columns(header):
    """{column: {"kind", "unit", "from"}} for a CSV without a sidecar, as
    `sweep collect` lays columns out: point, the point's settings, then the
    rows' columns from size_bytes on, of which size_bytes, count, type,
    redop and offered are settings and the rest measurements."""
    meta, in_rows = {}, "size_bytes" not in header
    for c in header:
        if c == "size_bytes":
            in_rows = True
        if c == "point":
            kind = "id"
        elif not in_rows or c in LEGACY_ROW_SETTINGS:
            kind = "setting"
        else:
            kind = "measurement"
        meta[c] = {"kind": kind, "unit": "",
                   "from": "row" if in_rows else "point"}
    return meta


def read_columns(path, header):
    """The kinds and units of a CSV's columns: its sidecar's word where it
    has one (scripts/sweep collect writes <name>.columns.json), else
    infer_columns."""
    meta = infer_columns(header)
    side = columns_path(path)
    if not os.path.isfile(side):
        return meta
    try:
        with open(side) as f:
            described = json.load(f)["columns"]
        for c in described:
            if c["name"] in meta and c.get("kind") in ("id", "setting",
                                                       "measurement"):
                meta[c["name"]] = {"kind": c["kind"],
                                   "unit": c.get("unit") or "",
                                   "from": c.get("from") or "row"}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PlotError("cannot read %s: %s" % (side, e)) from None
    return meta


def read_csv(path):
    """(rows, meta): the rows with size_bytes and the measurements as
    numbers (None when empty), and read_columns' description."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except OSError as e:
        raise PlotError("cannot read %s: %s" % (path, e.strerror)) from None
    if not rows:
        raise PlotError("%s has no rows" % path)
    for need in ("size_bytes", "time_us"):
        if need not in rows[0]:
            raise PlotError("%s has no column '%s' (is it a `sweep "
                            "collect` CSV?)" % (path, need))
    meta = read_columns(path, header)
    plotted = ("size_bytes",) + tuple(m[0] for m in METRICS.values())
    numeric = [c for c in header if c in plotted]
    other = [c for c in header if c not in plotted and
             meta[c]["kind"] == "measurement"]
    for r in rows:
        for k in numeric:
            r[k] = float(r[k]) if r[k] != "" else None
        for k in other:
            try:
                r[k] = float(r[k]) if r[k] != "" else None
            except ValueError:
                pass                    # text or JSON: kept as written
    return rows, meta


def _filter(rows, wheres):
    for w in wheres or []:
        if "=" not in w:
            raise PlotError("--where wants COL=VALUE, not %r" % w)
        col, val = w.split("=", 1)
        if col not in rows[0]:
            raise PlotError("--where: no column '%s' (columns: %s)" % (
                col, ", ".join(rows[0])))
        rows = [r for r in rows if str(r[col]) == val or (
            isinstance(_num(str(r[col])), (int, float)) and
            isinstance(_num(val), (int, float)) and
            float(_num(str(r[col]))) == float(_num(val)))]
        if not rows:
            raise PlotError("no rows left after --where %s" % w)
    return rows


def _distinct(rows, cols):
    return len({tuple(r[c] for c in cols) for r in rows})


def _varying(rows, meta, fixed=(X_COLUMN,), exclude=AVERAGED):
    """The settings that vary independently of the columns in fixed (the
    axes), in column order: the series. Never a measurement, nor a column
    in fixed or exclude, nor one the axes determine (gpus, with the
    platform on an axis, would only repeat it); a setting of the rows
    (count, type, ...) only when it tells apart rows that fixed and the
    settings before it do not (count follows size, type follows dtype)."""
    axes = [f for f in fixed if f in rows[0]]
    chosen = []
    for c in rows[0]:
        m = meta.get(c) or {"kind": "measurement"}
        if m["kind"] != "setting" or c in fixed or c in exclude:
            continue
        base = axes + chosen if m.get("from") == "row" else axes
        if _distinct(rows, base + [c]) == _distinct(rows, base):
            continue
        chosen.append(c)
    return chosen


def _series_cols(rows, meta, args, fixed):
    if args.series:
        cols = [c for c in args.series.split(",") if c]
        for c in cols:
            if c not in rows[0]:
                raise PlotError("--series: no column '%s'" % c)
        return cols
    return _varying(rows, meta, fixed)


def _metric(meta, name, default):
    """(column, axis label) of --metric: a named metric, or any
    measurement column (labelled with its unit)."""
    name = name or default
    if name in METRICS:
        if METRICS[name][0] not in meta:
            raise PlotError("--metric %s: the CSV has no column '%s'" % (
                name, METRICS[name][0]))
        return METRICS[name]
    if meta.get(name, {}).get("kind") == "measurement":
        unit = meta[name].get("unit")
        return name, "%s (%s)" % (name, unit) if unit else name
    raise PlotError("--metric must be one of %s, or a measurement column "
                    "(%s)" % (", ".join(METRICS), ", ".join(
                        c for c, m in meta.items()
                        if m["kind"] == "measurement")))


def _sort_key(v):
    n = _num(str(v))
    return (0, n, "") if isinstance(n, (int, float)) else (1, 0, str(v))


def _group(rows, cols, x):
    """{series tuple: {x(row): [rows]}} with series tuples sorted."""
    out = {}
    for r in rows:
        key = tuple(r[c] for c in cols)
        out.setdefault(key, {}).setdefault(x(r), []).append(r)
    return dict(sorted(out.items(),
                       key=lambda kv: [_sort_key(v) for v in kv[0]]))


def _ordered(rows, col):
    """(col's values, whether all are numbers): numbers in numeric order,
    anything else in the CSV's order (the order the campaign swept)."""
    vals = list(dict.fromkeys(r[col] for r in rows))
    numeric = all(isinstance(_num(str(v)), (int, float)) for v in vals)
    return (sorted(vals, key=_sort_key) if numeric else vals), numeric


def _at_size(rows, size):
    """(the rows of one message size, --size or else the largest; a title
    note naming it)."""
    if size:
        try:
            want = parse_size(size)
        except ValueError:
            raise PlotError("--size: %r is not a size" % size) from None
    else:
        want = max(r["size_bytes"] for r in rows)
    rows = [r for r in rows if r["size_bytes"] == want]
    if not rows:
        raise PlotError("no rows of size %s" % size)
    return rows, " at %s" % format_size(int(want))


def _mean(rows, f):
    vals = [f(r) for r in rows]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return sum(vals) / len(vals) if vals else None


def _label(cols, key):
    if not cols:
        return None
    if len(cols) == 1 and cols[0] in ("algorithm", "platform"):
        return str(key[0])
    return ", ".join("%s=%s" % (c, v) for c, v in zip(cols, key))


def _bound_bw(r, metric):
    if not r.get("bound_us"):
        return None
    algbw = r["size_bytes"] / r["bound_us"] / 1e3        # B/us -> GB/s
    if metric == "busbw_GBps":
        if not r.get("algbw_GBps"):
            return None
        return algbw * r["busbw_GBps"] / r["algbw_GBps"]
    return algbw


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([format_size(int(s)) for s in sizes],
                       rotation=45 if len(sizes) > 8 else 0)
    ax.minorticks_off()
    ax.set_xlabel("message size (bytes)")


def _x_axis(ax, col, values, numeric, meta):
    """The x axis of a line plot: sizes as _size_axis; other numbers on a
    log axis when they are powers of two (as sizes are) or span more than
    LOG_RANGE, else linear; words as evenly spaced ticks."""
    if col == X_COLUMN:
        return _size_axis(ax, values)
    unit = meta.get(col, {}).get("unit")
    ax.set_xlabel("%s (%s)" % (col, unit) if unit else col)
    rotation = 45 if len(values) > 8 else 0
    if not numeric:
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels([str(v) for v in values], rotation=rotation)
        return
    nums = [float(_num(str(v))) for v in values]
    pow2 = all(v >= 1 and v.is_integer() and int(v) & (int(v) - 1) == 0
               for v in nums)
    if pow2 or (min(nums) > 0 and wide_range(nums)):
        ax.set_xscale("log", base=2 if pow2 else 10)
    if len(nums) <= 12:     # a tick at each value; more would crowd
        ax.set_xticks(nums)
        ax.set_xticklabels(["%g" % v for v in nums], rotation=rotation)
        ax.minorticks_off()


# Ten colours, then each further ten series change line style and marker
# too, so that up to 40 series all look different ("--" stays the
# analytical bound's).
COLORS = ["tab:" + c for c in ("blue orange green red purple brown pink "
                               "gray olive cyan").split()]
LINESTYLES = ("-", "-.", ":", (0, (3, 1, 1, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D")


def line_style(i):
    """The colour, line style and marker of the i-th series."""
    block = i // len(COLORS) % len(LINESTYLES)
    return {"color": COLORS[i % len(COLORS)],
            "linestyle": LINESTYLES[block], "marker": MARKERS[block]}


# A linear y axis squashes all but the largest values once they span more
# than this factor (a ring's speed-up bound runs from 2x to 600x): log then.
LOG_RANGE = 50


def wide_range(values):
    """True when the positive values span more than LOG_RANGE."""
    v = [x for x in values if x is not None and x > 0 and x != float("inf")]
    return bool(v) and max(v) / min(v) > LOG_RANGE


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise PlotError("python3-matplotlib is missing (run with "
                        "/usr/bin/python3, or apt-get install "
                        "python3-matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_lines(rows, args, meta=None):
    meta = meta or infer_columns(list(rows[0]))
    plt = _plt()
    kind = args.kind
    xcol, facet = args.x or X_COLUMN, args.facet
    settings = [c for c in rows[0] if meta.get(c, {}).get("kind") == "setting"]
    for flag, c in (("--x", xcol), ("--facet", facet)):
        if c and c not in settings:
            raise PlotError("%s: '%s' is not a setting column (settings: %s)"
                            % (flag, c, ", ".join(settings)))
    if facet == xcol:
        raise PlotError("--facet and --x are both '%s'" % xcol)
    note = ""
    if xcol != X_COLUMN:
        if args.reference:
            raise PlotError("--reference gives numbers at message sizes, so "
                            "it needs size_bytes on the x axis")
        rows, note = _at_size(rows, args.size)
    metric = args.metric or ("time" if kind == "time" else
                             "speedup" if kind == "speedup" else "busbw")
    base_col = base_val = bi = None
    if kind == "speedup":
        spec = args.baseline or ("algorithm=ring" if "algorithm" in rows[0]
                                 else None)
        if not spec or "=" not in spec:
            raise PlotError("--kind speedup needs --baseline COL=VALUE")
        base_col, base_val = spec.split("=", 1)
        if base_col not in rows[0]:
            raise PlotError("--baseline: no column '%s'" % base_col)
        if not any(str(r[base_col]) == base_val for r in rows):
            raise PlotError("--baseline: no rows with %s=%s" % (base_col,
                                                                base_val))
        col, ylabel = "time_us", "speedup over %s (\u00d7)" % (
            base_val if base_col == "algorithm" else spec)
    else:
        col, ylabel = _metric(meta, metric, "busbw")
    cols = _series_cols(rows, meta, args, (X_COLUMN, xcol, facet))
    if kind == "speedup":
        if base_col not in cols:
            raise PlotError("the baseline column '%s' must make the series "
                            "(it does not vary, or is --x or --facet)" %
                            base_col)
        bi = cols.index(base_col)
    xs, numeric = _ordered(rows, xcol)
    xpos = {v: float(_num(str(v))) if numeric else i
            for i, v in enumerate(xs)}
    # Styles by series over all panels: a series looks the same in each.
    keys = [k for k in _group(rows, cols, lambda r: None)
            if bi is None or str(k[bi]) != base_val]
    styles = {k: line_style(i) for i, k in enumerate(keys)}
    refs = column = None
    if args.reference:
        refs = read_reference(args.reference)
        column = col if kind != "speedup" else "speedup"
        if not any(r["column"] == column for r in refs):
            raise PlotError("reference %s has no numbers for %s" % (
                args.reference, column))
    panels = _ordered(rows, facet)[0] if facet else [None]
    ncols = math.ceil(math.sqrt(len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig, grid = plt.subplots(nrows, ncols, squeeze=False, sharex=True,
                             sharey=True, figsize=(args.width * ncols,
                                                   args.height * nrows))
    axes = list(grid.flat[:len(panels)])
    for ax in grid.flat[len(panels):]:
        ax.remove()
    n = 0
    for i, (ax, value) in enumerate(zip(axes, panels)):
        sub = rows if facet is None else [r for r in rows
                                          if r[facet] == value]
        n += _draw_lines(ax, _group(sub, cols, lambda r: xpos[r[xcol]]),
                         cols, styles, (kind, col, bi, base_val),
                         args.no_bound)
        if refs:
            draw_reference(ax, refs, column)
        _x_axis(ax, xcol, xs, numeric, meta)
        # Shared axes: labels at the grid's outer edges only, tick labels
        # too under a panel whose lower neighbour was left empty.
        if i + ncols < len(panels):
            ax.set_xlabel("")
        else:
            ax.xaxis.set_tick_params(labelbottom=True)
        if i % ncols == 0:
            ax.set_ylabel(ylabel)
        if facet:
            ax.set_title("%s=%s" % (facet, value))
    if n == 0:
        raise PlotError("nothing to plot (check --where / --baseline)")
    drawn = [y for ax in axes for line in ax.get_lines()
             for y in line.get_ydata()]
    for ax in axes:
        if kind == "speedup":
            ax.axhline(1.0, color="gray", linewidth=0.8)
        if (kind == "time" or args.logy or
                (not args.liny and wide_range(drawn))):
            ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
    title = args.title or (_default_title(rows, cols) + note).strip()
    if facet:
        fig.suptitle(title)
    else:
        axes[0].set_title(title)
    _legend_outside(fig, axes, [_label(cols, k) for k in keys])
    return fig


def _draw_lines(ax, groups, cols, styles, how, no_bound):
    """One line per series of groups ({series: {x: rows}}) that has a style
    (not the speedup's baseline) and the analytical bound at each x where
    the rows have one; returns the number of lines."""
    kind, col, bi, base_val = how
    bounds_drawn = []
    n = 0
    for key, by_x in groups.items():
        if key not in styles:
            continue
        xs, ys, bx, by = [], [], [], []
        for x in sorted(by_x):
            rs = by_x[x]
            if kind == "speedup":
                bkey = tuple(base_val if i == bi else v
                             for i, v in enumerate(key))
                brs = [b for k2, bs in groups.items()
                       if tuple(map(str, k2)) == tuple(map(str, bkey))
                       for b in bs.get(x, [])]
                if not brs:
                    continue
                t_base = _mean(brs, lambda r: r["time_us"])
                y = t_base / _mean(rs, lambda r: r["time_us"])
                b = _mean(rs, lambda r: r.get("bound_us"))
                bnd = t_base / b if b else None
            elif kind == "time":
                y = _mean(rs, lambda r: r[col])
                bnd = (_mean(rs, lambda r: r.get("bound_us"))
                       if col == "time_us" else None)
            else:
                y = _mean(rs, lambda r: r[col])
                bnd = (_mean(rs, lambda r: _bound_bw(r, col))
                       if col in ("busbw_GBps", "algbw_GBps") else None)
            if y is None:
                continue
            xs.append(x)
            ys.append(y)
            if bnd is not None:
                bx.append(x)
                by.append(bnd)
        if not xs:
            continue
        n += 1
        c = styles[key]["color"]
        ax.plot(xs, ys, ms=3, label=_label(cols, key), **styles[key])
        if by and not no_bound:
            curve = (tuple(bx), tuple(float("%.4g" % v) for v in by))
            if curve not in [d[0] for d in bounds_drawn]:
                bounds_drawn.append((curve, c))
    for i, ((bx, by), c) in enumerate(bounds_drawn):
        if len(bounds_drawn) == 1:
            c = "black"
        ax.plot(bx, by, linestyle="--", linewidth=1, color=c,
                label="analytical bound" if i == 0 else None)
    return n


def _legend_outside(fig, axes, order):
    """Lay the figure out with one legend for all panels outside them: to
    the right, or below in as many columns as fit when it is taller than
    the figure. The figure grows by the legend's size, so the legend never
    covers a curve and the panels keep theirs. order: the series' labels,
    which come first, in this order; other entries (bound, reference)
    follow as drawn."""
    found = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            found.setdefault(label, h)
    if not found:
        fig.tight_layout()
        return
    labels = sorted(found, key=lambda lb: order.index(lb) if lb in order
                    else len(order))
    handles = [found[lb] for lb in labels]
    w, h = fig.get_size_inches()
    renderer = fig.canvas.get_renderer()
    leg = fig.legend(handles, labels, fontsize="small", loc="center right",
                     bbox_to_anchor=(1, 0.5))
    box = leg.get_window_extent(renderer)
    if box.height < 0.95 * fig.bbox.height:
        lw = (fig.bbox.x1 - box.x0) / fig.dpi       # with the legend's pad
        fig.set_size_inches(w + lw, h)
        fig.tight_layout(rect=(0, 0, w / (w + lw), 1))
        return
    leg.remove()
    leg = fig.legend(handles, labels, fontsize="small", loc="lower center",
                     bbox_to_anchor=(0.5, 0),
                     ncol=max(1, int(w * fig.dpi // box.width)))
    box = leg.get_window_extent(renderer)
    lh = (box.y1 - fig.bbox.y0) / fig.dpi
    fig.set_size_inches(max(w, box.width / fig.dpi + 0.2), h + lh)
    fig.tight_layout(rect=(0, lh / (h + lh), 1, 1))


REFERENCE_COLUMNS = ["key", "series", "column", "size_bytes", "value", "source"]


def read_reference(path):
    """A paper's numbers (scripts/figures/reference/*.csv): one row each,
    with the column of ours it compares with, the size it was stated at
    (empty: every size, drawn as a line across) and where the paper states
    it. Returns the rows with value a float and size_bytes an int or None."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            fields = reader.fieldnames or []
    except OSError as e:
        raise PlotError("cannot read %s: %s" % (path, e.strerror)) from None
    if fields != REFERENCE_COLUMNS:
        raise PlotError("reference %s needs the columns %s" % (
            path, ",".join(REFERENCE_COLUMNS)))
    for r in rows:
        try:
            r["value"] = float(r["value"])
            r["size_bytes"] = parse_size(r["size_bytes"]) if r["size_bytes"] else None
        except ValueError:
            raise PlotError("reference %s: bad row %s" % (path, r)) from None
        if not r["source"].strip():
            raise PlotError("reference %s: %s has no source" % (path, r["key"]))
    return rows


def draw_reference(ax, refs, column):
    """The paper's numbers for `column` beside ours: a dotted line across
    for a number stated for every size, crosses for numbers at a size."""
    points = {}
    for r in refs:
        if r["column"] != column:
            continue
        if r["size_bytes"] is None:
            ax.axhline(r["value"], color="gray", ls=":", lw=1,
                       label="%s %g" % (r["series"], r["value"]))
        else:
            points.setdefault(r["series"], []).append((r["size_bytes"], r["value"]))
    for name, pts in points.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=":",
                marker="x", color="gray", label=name)


def _default_title(rows, vary):
    fixed = [c for c in ("platform", "collective", "algorithm", "gpus")
             if c in rows[0] and c not in vary and
             len({r[c] for r in rows}) == 1]
    return " ".join("%s" % rows[0][c] if c != "gpus" else
                    "%s GPUs" % rows[0][c] for c in fixed)


def plot_heatmap(rows, args, meta=None):
    meta = meta or infer_columns(list(rows[0]))
    plt = _plt()
    if args.facet:
        raise PlotError("--facet is for the line plots (bw, time, speedup)")
    col, label = _metric(meta, args.metric, "bound_fraction")
    vary = _varying(rows, meta)
    xcol, ycol = args.x, args.y
    if not xcol or not ycol:
        if not vary and not (xcol or ycol):
            raise PlotError("--kind heatmap needs two swept columns (--x, "
                            "--y); varying: %s" % (", ".join(vary) or "none"))
        rest = [c for c in vary if c not in (xcol, ycol)] + ["size_bytes"]
        xcol = xcol or rest.pop(0)
        ycol = ycol or (rest.pop(0) if rest else "size_bytes")
    for c in (xcol, ycol):
        if c not in rows[0]:
            raise PlotError("no column '%s'" % c)
    size_note = ""
    if "size_bytes" not in (xcol, ycol):
        rows, size_note = _at_size(rows, args.size)
    others = _varying(rows, meta, fixed=(xcol, ycol))
    if others:
        raise PlotError("column(s) %s vary too; pick values with --where "
                        "COL=VALUE" % ", ".join(others))
    xs = sorted({r[xcol] for r in rows}, key=_sort_key)
    ys = sorted({r[ycol] for r in rows}, key=_sort_key)
    grid = [[None] * len(xs) for _ in ys]
    for j, yv in enumerate(ys):
        for i, xv in enumerate(xs):
            rs = [r for r in rows if r[xcol] == xv and r[ycol] == yv]
            grid[j][i] = _mean(rs, lambda r: r[col]) if rs else None
    import numpy
    data = numpy.array([[math.nan if v is None else v for v in row]
                        for row in grid], dtype=float)
    fig, ax = plt.subplots(figsize=(args.width, args.height))
    im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(label)

    def ticks(col, vals):
        if col == "size_bytes":
            return [format_size(int(v)) for v in vals]
        return [str(v) for v in vals]
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels(ticks(xcol, xs))
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels(ticks(ycol, ys))
    ax.set_xlabel(xcol if xcol != "size_bytes" else "message size (bytes)")
    ax.set_ylabel(ycol if ycol != "size_bytes" else "message size (bytes)")
    finite = data[numpy.isfinite(data)]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0
    if len(xs) * len(ys) <= 200:
        for j in range(len(ys)):
            for i in range(len(xs)):
                v = data[j, i]
                if math.isfinite(v):
                    ax.text(i, j, "%.3g" % v, ha="center", va="center",
                            fontsize="small",
                            color="white" if v < mid else "black")
    ax.set_title(args.title or ("%s%s" % (label, size_note)))
    fig.tight_layout()
    return fig


def parser():
    ap = argparse.ArgumentParser(
        prog="plot", description="Figures from a `scripts/sweep collect` "
        "CSV, as PNG.")
    ap.add_argument("csv")
    ap.add_argument("--kind", choices=("bw", "time", "speedup", "heatmap"),
                    default="bw")
    ap.add_argument("-o", "--output", help="PNG file (default: next to the "
                    "CSV, named after the kind)")
    ap.add_argument("--metric", help="busbw, algbw, time, bound_fraction "
                    "or any measurement column")
    ap.add_argument("--series", help="columns that make one line each "
                    "(default: every setting that varies independently of "
                    "the axes, seed averaged)")
    ap.add_argument("--where", action="append", metavar="COL=VALUE",
                    help="keep only these rows (repeatable)")
    ap.add_argument("--baseline", metavar="COL=VALUE",
                    help="speedup baseline (default algorithm=ring)")
    ap.add_argument("--x", metavar="COL", help="the column across: a setting for the line "
                    "plots (default size_bytes), any column for a heatmap")
    ap.add_argument("--y", help="heatmap column up")
    ap.add_argument("--facet", metavar="COL", help="line plots: one panel "
                    "per value of this setting")
    ap.add_argument("--size", help="the message size of a heatmap, or of a "
                    "line plot whose --x is not size_bytes (default largest)")
    ap.add_argument("--reference", metavar="CSV",
                    help="a paper's numbers to draw beside the curves "
                    "(scripts/figures/reference/*.csv)")
    ap.add_argument("--title")
    ap.add_argument("--logy", action="store_true",
                    help="log y axis (the default when the values drawn "
                    "span more than %dx, and for --kind time)" % LOG_RANGE)
    ap.add_argument("--liny", action="store_true",
                    help="linear y axis even for a wide range")
    ap.add_argument("--no-bound", action="store_true",
                    help="do not draw the analytical bound")
    ap.add_argument("--width", type=float, default=6.4)
    ap.add_argument("--height", type=float, default=4.2)
    ap.add_argument("--dpi", type=int, default=150)
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        rows, meta = read_csv(args.csv)
        rows = _filter(rows, args.where)
        fig = (plot_heatmap(rows, args, meta) if args.kind == "heatmap"
               else plot_lines(rows, args, meta))
        out = args.output or os.path.join(
            os.path.dirname(os.path.abspath(args.csv)), args.kind + ".png")
        fig.savefig(out, dpi=args.dpi)
        sys.stderr.write("plot: wrote %s\n" % out)
        return 0
    except PlotError as e:
        sys.stderr.write("plot: error: %s\n" % e)
        return 2
    except ValueError as e:
        sys.stderr.write("plot: error: bad value in CSV: %s\n" % e)
        return 2
