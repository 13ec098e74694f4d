"""Finding the simulator and checking a campaign against what it accepts."""

import os
import subprocess

from . import campaign as cmod
from .campaign import CampaignError, FILE_FLAGS, FLAGS, value_text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def find_incsim(flag=None, campaign=None):
    """--incsim flag, then $INCSIM, then the campaign's `incsim:`, then
    <repo>/build/incsim. Returned as an absolute path (not checked)."""
    for cand in (flag, os.environ.get("INCSIM"),
                 campaign.incsim if campaign else None):
        if cand:
            return os.path.abspath(cand)
    return os.path.join(REPO, "build", "incsim")


def check_binary(incsim):
    if not os.path.isfile(incsim):
        raise CampaignError("simulator not found at %s (build it, or set "
                            "INCSIM or --incsim)" % incsim)
    if not os.access(incsim, os.X_OK):
        raise CampaignError("simulator %s is not executable" % incsim)


def quiet_env():
    """The environment for simulator runs: without SystemC's banner on
    stderr, so that a failed point's log starts with what went wrong."""
    env = dict(os.environ)
    env["SYSTEMC_DISABLE_COPYRIGHT_MESSAGE"] = "1"
    return env


def _run_listing(incsim, argv, timeout):
    check_binary(incsim)
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, env=quiet_env())
    except subprocess.TimeoutExpired:
        raise CampaignError("`%s` timed out" % " ".join(argv)) from None
    except OSError as e:
        raise CampaignError("cannot run %s: %s" % (incsim, e.strerror)) \
            from None
    if proc.returncode != 0:
        raise CampaignError("`%s` failed: %s" % (
            " ".join(argv), error_line(proc.stderr, proc.returncode)))
    return proc.stdout


def list_params(incsim, settings=None, campaign_dir=".", timeout=60):
    """{key: (type, value, default, source, description)} from `incsim
    [the run's flags and -c keys] --list-params`: the parameters the run
    described by these settings reads. A bad flag, key or value raises
    CampaignError with incsim's error line."""
    argv = list_params_argv(incsim, settings or {}, campaign_dir)
    params = {}
    for line in _run_listing(incsim, argv, timeout).splitlines():
        if not line.strip():
            continue
        fields = line.split("\t")
        fields += [""] * (6 - len(fields))
        params[fields[0].strip()] = tuple(f.strip() for f in fields[1:6])
    return params


def list_params_argv(incsim, settings, campaign_dir):
    """A point's incsim command line with --list-params instead of --json."""
    return argv_for(campaign_dir, settings, incsim, None) + ["--list-params"]


def error_line(stderr, returncode=None):
    """The line that says what went wrong: the last `incsim: error:` line,
    else the last non-empty line, else the exit status."""
    lines = [l.strip() for l in (stderr or "").splitlines() if l.strip()]
    for l in reversed(lines):
        if l.startswith("incsim: error:"):
            return l
    if lines:
        return lines[-1]
    if returncode is not None and returncode < 0:
        import signal
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return "killed by signal %s" % name
    return "exit status %s" % returncode


# Settings that do not change which flags, keys and values incsim accepts:
# points that differ only in these are checked once (with the first one's).
UNCHECKED_SETTINGS = ("sizes", "seed")


def check_groups(campaign):
    """The campaign's points grouped by what the pre-check must ask incsim:
    [(first point, number of points)] in point order."""
    groups = {}
    for p in campaign.points():
        key = cmod.canonical_json({k: v for k, v in p.settings.items()
                                   if k not in UNCHECKED_SETTINGS})
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [p, 1]
    return [tuple(g) for g in groups.values()]


def _check_one(incsim, campaign, point, timeout):
    argv = list_params_argv(incsim, point.settings, campaign.dir)
    try:
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, env=quiet_env())
    except subprocess.TimeoutExpired:
        return "`incsim ... --list-params` timed out after %gs" % timeout
    except OSError as e:
        return "cannot run %s: %s" % (incsim, e.strerror)
    if proc.returncode != 0:
        return error_line(proc.stderr, proc.returncode)
    return None


def check_campaign(campaign, incsim, jobs=1, timeout=60):
    """Ask incsim whether it accepts every point: for each distinct
    combination of settings (sizes and seed aside), run it with exactly the
    point's flags and -c keys plus --list-params, up to `jobs` at a time.
    incsim checks flags, keys and values (unknown, unused by that run, or
    bad); the first point (in campaign order) it rejects raises
    CampaignError with its settings and incsim's error line."""
    check_binary(incsim)
    groups = check_groups(campaign)
    jobs = max(1, min(int(jobs or 1), len(groups)))
    if jobs == 1:
        errors = [_check_one(incsim, campaign, p, timeout)
                  for p, _ in groups]
    else:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            errors = list(pool.map(
                lambda g: _check_one(incsim, campaign, g[0], timeout),
                groups))
    for (p, n), err in zip(groups, errors):
        if err is not None:
            others = (" and %d more point%s with these settings" % (
                n - 1, "s" if n > 2 else "")) if n > 1 else ""
            raise CampaignError("incsim rejects point %s (%s)%s: %s" % (
                p.hash, p.label(), others, err))
    return True


def argv_for(campaign_dir, settings, incsim, json_path):
    """The incsim command line of a point."""
    argv = [incsim]
    for k in FLAGS:
        if k in settings:
            text = value_text(settings[k])
            if k in FILE_FLAGS:
                path = os.path.join(campaign_dir, text)
                if os.path.isfile(path):
                    text = os.path.abspath(path)
            argv += ["--" + k, text]
    for k, v in settings.items():
        if k not in FLAGS:
            argv += ["-c", "%s=%s" % (k, value_text(v))]
    if json_path is not None:
        argv += ["--json", json_path, "--quiet"]
    return argv
