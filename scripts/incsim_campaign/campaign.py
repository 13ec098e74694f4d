"""Campaign files: loading, checking and expansion into points.

A campaign is a YAML mapping (see docs/campaigns.md):

    name: dgx2-ring
    output: results/dgx2-ring        # relative to the campaign file
    fixed:    {platform: dgx2, collective: allreduce, sizes: [8K, 1M]}
    axes:     {ring.channels: [6, 12], gpus: {from: 4, to: 16, mul: 2}}
    zip:      [{algorithm: [ring, tree], some.key: [1, 2]}]
    exclude:  [{algorithm: tree, gpus: 4}]
    seeds: 2                          # or a list, or a range
    timeout: 600                      # seconds per point
    max_points: 500
    slurm: {partition: ..., time: ..., mem: ..., batch: 1}

A point is a flat mapping from setting name to value; each point is one
incsim run. Every user error raises CampaignError with a one-line message.
"""

import hashlib
import itertools
import json
import math
import os
import re

# Settings that are incsim flags rather than `-c key=value` parameters.
FLAGS = ("platform", "dims", "nodes", "node", "collective", "algorithm", "gpus",
         "sizes", "dtype", "redop", "seed", "config", "hosts", "ring", "racks",
         "hosts-per-rack", "machines", "gpus-per-machine", "traffic", "load",
         "workload", "model", "batch", "iterations", "warmup", "tp", "pp",
         "baseline", "compute", "precision")
# Settings whose value may name a file (resolved against the campaign file).
FILE_FLAGS = ("platform", "config", "model")

TOP_KEYS = ("name", "output", "incsim", "fixed", "axes", "zip", "exclude",
            "seeds", "timeout", "max_points", "slurm", "description")
SLURM_KEYS = ("partition", "time", "mem", "batch", "cpus_per_task",
              "account", "qos", "extra")

DEFAULT_TIMEOUT = 600.0
DEFAULT_MAX_POINTS = 500


class CampaignError(Exception):
    """A user error in a campaign or on the command line (one line)."""


# --------------------------------------------------------------------------
# values

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*$", re.I)
_SIZE_MUL = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3,
             "T": 1024 ** 4}


def parse_size(text):
    """'8K' -> 8192 (K, M, G, T are powers of 1024, as in nccl-tests)."""
    if isinstance(text, bool):
        raise ValueError(text)
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(text)
    value = float(m.group(1)) * _SIZE_MUL[m.group(2).upper()]
    if value != int(value):
        raise ValueError(text)
    return int(value)


def format_size(nbytes):
    """8192 -> '8K'; the largest suffix that divides exactly."""
    for suffix in ("T", "G", "M", "K"):
        mul = _SIZE_MUL[suffix]
        if nbytes >= mul and nbytes % mul == 0:
            return "%d%s" % (nbytes // mul, suffix)
    return str(nbytes)


def value_text(value):
    """The text a value takes on the incsim command line (and in hashes).

    Numbers written 6, 6.0 or "6" in YAML all give "6"; lists (a list of
    sizes for one run) are joined with commas; booleans are true/false.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ",".join(value_text(v) for v in value)
    if value is None:
        raise CampaignError("a setting has no value (null)")
    if isinstance(value, dict):
        raise CampaignError("a setting value is a mapping: %r" % (value,))
    return str(value)


# --------------------------------------------------------------------------
# axes and ranges

# A campaign larger than this is a typo (a huge count, a tiny 'mul'), not a
# plan: it is refused before any point is made.
MAX_POINTS = 100000


def _number(x, where):
    if isinstance(x, bool):
        raise CampaignError("%s: %r is not a number" % (where, x))
    if isinstance(x, (int, float)):
        v, sized = x, False
    else:
        try:
            return parse_size(x), True
        except ValueError:
            pass
        try:
            v, sized = float(x), False
        except (TypeError, ValueError):
            raise CampaignError("%s: %r is not a number" % (where, x)) \
                from None
    # YAML's .inf and .nan arrive as floats.
    if not math.isfinite(v):
        raise CampaignError("%s: %s is not a finite number" % (where, v))
    return v, sized


def _too_many(count, where, what="values"):
    """Refuses a count (a float, perhaps infinite) above MAX_POINTS."""
    if not count <= MAX_POINTS:
        text = "{:,}".format(int(count)) if math.isfinite(count) else \
            "countless"
        raise CampaignError("%s has %s %s, more than the {:,} a campaign "
                            "may have".format(MAX_POINTS) % (where, text, what))


def expand_range(spec, where):
    """{from, to, step} or {from, to, mul} (both ends included) -> list."""
    unknown = set(spec) - {"from", "to", "step", "mul"}
    if unknown:
        raise CampaignError("%s: unknown range key(s) %s (use from, to and "
                            "step or mul)" % (where, ", ".join(sorted(unknown))))
    if "from" not in spec or "to" not in spec:
        raise CampaignError("%s: a range needs 'from' and 'to'" % where)
    if ("step" in spec) == ("mul" in spec):
        raise CampaignError("%s: a range needs exactly one of 'step' or "
                            "'mul'" % where)
    lo, lo_size = _number(spec["from"], where)
    hi, hi_size = _number(spec["to"], where)
    sized = lo_size or hi_size
    values = []
    if "mul" in spec:
        mul, _ = _number(spec["mul"], where)
        if mul <= 1:
            raise CampaignError("%s: 'mul' must be greater than 1" % where)
        if lo <= 0:
            raise CampaignError("%s: 'from' must be positive with 'mul'"
                                % where)
        # Counted before expanding: a 'mul' just above 1 makes millions.
        if hi >= lo:
            _too_many((math.log(hi) - math.log(lo)) / math.log(mul) + 1,
                      where)
        v = lo
        while v <= hi * (1 + 1e-12):
            values.append(v)
            v = v * mul
    else:
        step, _ = _number(spec["step"], where)
        if step == 0:
            raise CampaignError("%s: 'step' must not be 0" % where)
        _too_many((hi - lo) / step + 1, where)
        n = math.floor((hi - lo) / step + 1e-9)
        values = [lo + i * step for i in range(n + 1)] if n >= 0 else []
    integral = all(float(x) == int(x) for x in
                   [lo, hi] + [_number(spec[k], where)[0]
                               for k in ("step", "mul") if k in spec])
    out = []
    for v in values:
        v = int(round(v)) if integral else round(float(v), 12)
        out.append(format_size(v) if sized and integral else v)
    if not out:
        raise CampaignError("%s: the range is empty" % where)
    return out


def axis_values(spec, where):
    """An axis given as a list, a range mapping or a single value."""
    if isinstance(spec, dict):
        return expand_range(spec, where)
    if isinstance(spec, list):
        if not spec:
            raise CampaignError("%s is empty" % where)
        for v in spec:
            if v is None:
                raise CampaignError("%s has an empty (null) value" % where)
        return list(spec)
    if spec is None:
        raise CampaignError("%s is empty" % where)
    return [spec]


# --------------------------------------------------------------------------
# hashing

def canonical_json(settings):
    """The canonical JSON of a point: keys sorted, values as command text."""
    norm = {str(k): value_text(v) for k, v in settings.items()}
    return json.dumps(norm, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)


def point_hash(settings, extra=None):
    """A stable 16-hex-digit name for a point's configuration.

    extra: a mapping added to the hashed text (contents digests of the
    files a point reads), so that editing such a file gives a new name.
    """
    text = canonical_json(settings)
    if extra:
        text += json.dumps(extra, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


# --------------------------------------------------------------------------
# the campaign

class Point:
    __slots__ = ("index", "settings", "hash")

    def __init__(self, index, settings, hash_):
        self.index = index
        self.settings = settings
        self.hash = hash_

    def label(self, keys=None):
        keys = keys if keys is not None else list(self.settings)
        return " ".join("%s=%s" % (k, value_text(self.settings[k]))
                        for k in keys if k in self.settings)

    def to_json(self):
        return {"index": self.index, "hash": self.hash,
                "settings": {k: value_text(v)
                             for k, v in self.settings.items()}}


class Campaign:
    def __init__(self, data, path):
        self.path = os.path.abspath(path)
        self.dir = os.path.dirname(self.path)
        if not isinstance(data, dict):
            raise CampaignError("%s: a campaign must be a YAML mapping" % path)
        unknown = [k for k in data if k not in TOP_KEYS]
        if unknown:
            raise CampaignError("unknown campaign key(s): %s (known: %s)" % (
                ", ".join(map(str, unknown)), ", ".join(TOP_KEYS)))
        base = os.path.splitext(os.path.basename(path))[0]
        self.name = str(data.get("name") or base)
        out = data.get("output") or os.path.join("results", self.name)
        self.output = os.path.normpath(os.path.join(self.dir, str(out)))
        self.incsim = data.get("incsim")
        if self.incsim:
            self.incsim = os.path.normpath(os.path.join(self.dir,
                                                        str(self.incsim)))
        self.timeout = self._positive(data, "timeout", DEFAULT_TIMEOUT)
        self.max_points = int(self._positive(data, "max_points",
                                             DEFAULT_MAX_POINTS))
        self.slurm = data.get("slurm") or {}
        if not isinstance(self.slurm, dict):
            raise CampaignError("'slurm' must be a mapping")
        bad = [k for k in self.slurm if k not in SLURM_KEYS]
        if bad:
            raise CampaignError("unknown slurm key(s): %s (known: %s)" % (
                ", ".join(map(str, bad)), ", ".join(SLURM_KEYS)))

        self.fixed = data.get("fixed") or {}
        if not isinstance(self.fixed, dict):
            raise CampaignError("'fixed' must be a mapping of settings")
        for k, v in self.fixed.items():
            if v is None:
                raise CampaignError(_no_value(path, "fixed", k))
            value_text(v)           # rejects mappings
        self.axes = []              # [(names tuple, [values tuple, ...])]
        axes = data.get("axes") or {}
        if not isinstance(axes, dict):
            raise CampaignError("'axes' must be a mapping from setting to "
                                "values")
        for name, spec in axes.items():
            vals = axis_values(spec, "axis '%s'" % name)
            self.axes.append(((str(name),), [(v,) for v in vals]))
        zips = data.get("zip") or []
        if isinstance(zips, dict):
            zips = [zips]
        if not isinstance(zips, list):
            raise CampaignError("'zip' must be a list of mappings")
        for i, group in enumerate(zips):
            if not isinstance(group, dict) or not group:
                raise CampaignError("zip group %d must be a non-empty mapping"
                                    % (i + 1))
            names, columns = [], []
            for name, spec in group.items():
                names.append(str(name))
                columns.append(axis_values(spec, "zipped axis '%s'" % name))
            lengths = {len(c) for c in columns}
            if len(lengths) != 1:
                raise CampaignError(
                    "zip group %d: axes %s have different lengths (%s)" % (
                        i + 1, ", ".join(names),
                        ", ".join(str(len(c)) for c in columns)))
            self.axes.append((tuple(names), list(zip(*columns))))
        if "seeds" in data and data["seeds"] is not None:
            seeds = data["seeds"]
            if isinstance(seeds, bool):
                raise CampaignError("'seeds' must be a count, list or range")
            if isinstance(seeds, int):
                if seeds < 1:
                    raise CampaignError("'seeds' must be at least 1")
                _too_many(seeds, "'seeds'")
                seeds = list(range(1, seeds + 1))
            else:
                seeds = axis_values(seeds, "'seeds'")
            self.axes.append((("seed",), [(s,) for s in seeds]))

        seen = {k: "fixed" for k in self.fixed}
        for names, _ in self.axes:
            for n in names:
                if n in seen:
                    raise CampaignError(
                        "setting '%s' is given twice (fixed, an axis, a zip "
                        "group or seeds)" % n)
                seen[n] = "axis"
        self.swept = [n for names, _ in self.axes for n in names]

        self.exclude = data.get("exclude") or []
        if isinstance(self.exclude, dict):
            self.exclude = [self.exclude]
        if not isinstance(self.exclude, list):
            raise CampaignError("'exclude' must be a list of mappings")
        for i, ex in enumerate(self.exclude):
            if not isinstance(ex, dict) or not ex:
                raise CampaignError("exclusion %d must be a non-empty mapping"
                                    % (i + 1))
            for k in ex:
                if k not in seen:
                    raise CampaignError("exclusion %d names '%s', which is "
                                        "not a setting of this campaign"
                                        % (i + 1, k))
        self._points = None

    @staticmethod
    def _positive(data, key, default):
        v = data.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                not 0 < v < math.inf:
            raise CampaignError("'%s' must be a positive number" % key)
        return v

    def settings_names(self):
        return list(self.fixed) + self.swept

    def param_names(self):
        """Every `-c` parameter named anywhere in the campaign."""
        return [n for n in self.settings_names() if n not in FLAGS]

    def _excluded(self, settings):
        for ex in self.exclude:
            ok = True
            for k, want in ex.items():
                have = value_text(settings.get(k))
                wants = want if isinstance(want, list) else [want]
                if have not in [value_text(w) for w in wants]:
                    ok = False
                    break
            if ok:
                return True
        return False

    def resolve_file(self, value):
        """A file setting, relative to the campaign file if it exists."""
        text = value_text(value)
        path = os.path.join(self.dir, text)
        if os.path.isfile(path):
            return os.path.abspath(path)
        return text

    def file_digests(self, settings):
        extra = {}
        for k in FILE_FLAGS:
            if k in settings:
                path = self.resolve_file(settings[k])
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        extra[k + "#sha256"] = hashlib.sha256(
                            f.read()).hexdigest()
        return extra

    def points(self):
        """Every point, in order (the last axis varies fastest)."""
        if self._points is None:
            total = 1
            for _, vals in self.axes:
                total *= len(vals)
            _too_many(total, "the campaign", "points")
            pts = []
            for combo in itertools.product(*[vals for _, vals in self.axes]):
                settings = dict(self.fixed)
                for (names, _), values in zip(self.axes, combo):
                    settings.update(zip(names, values))
                if self._excluded(settings):
                    continue
                h = point_hash(settings, self.file_digests(settings))
                pts.append(Point(len(pts), settings, h))
            if not pts:
                raise CampaignError("the campaign has no points (all "
                                    "excluded?)")
            self._points = pts
        return self._points


def _key_line(path, section, key):
    """The line of `key` in the file's top-level mapping `section`, or None
    (a campaign made in code, a file that no longer reads)."""
    try:
        import yaml
        with open(path) as f:
            root = yaml.compose(f)
    except Exception:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    for k, v in root.value:
        if k.value == section and isinstance(v, yaml.MappingNode):
            for kk, _ in v.value:
                if kk.value == str(key):
                    return kk.start_mark.line + 1
    return None


def _no_value(path, section, key):
    """The sentence for a setting of `section` whose value is null, naming
    the file, the line and the key; a key that looks like a value is the
    comma of a flow mapping ({sizes: 1M,4M} is sizes: 1M and 4M: null)."""
    line = _key_line(path, section, key)
    where = "%s, line %d" % (path, line) if line else path
    text = "%s: %s setting '%s' has no value" % (where, section, key)
    try:
        parse_size(str(key))
        looks_like_value = True
    except ValueError:
        looks_like_value = False
    if looks_like_value:
        text += ("; in a {...} mapping a comma starts the next key, so "
                 "'%s' became a key of its own: write the value as a list "
                 "([1M, %s]) or in quotes ('1M,%s')" % (key, key, key))
    return text


def load(path):
    try:
        import yaml
    except ImportError:
        raise CampaignError("python3-yaml is missing (run with "
                            "/usr/bin/python3, or apt-get install "
                            "python3-yaml)") from None
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise CampaignError("cannot read %s: %s" % (path, e.strerror)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = " line %d" % (mark.line + 1) if mark else ""
        raise CampaignError("%s:%s not valid YAML: %s" % (
            path, where, getattr(e, "problem", None) or e)) from None
    return Campaign(data, path)
