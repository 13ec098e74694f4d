"""Finding the simulator and checking a campaign against what it accepts."""

import difflib
import os
import subprocess

from .campaign import CampaignError, FLAGS, value_text

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


def list_params(incsim, platform=None, timeout=60, **flags):
    """{key: (type, default, description)} from `incsim --list-params`.

    flags (collective=..., algorithm=...) are passed as the options of the
    same name: the parameters a run accepts depend on them (push and pull
    have wave and barrier parameters that ring has not)."""
    argv = [incsim, "--list-params"]
    if platform is not None:
        argv += ["--platform", platform]
    for k, v in sorted(flags.items()):
        if v is not None:
            argv += ["--" + k, v]
    params = {}
    for line in _run_listing(incsim, argv, timeout).splitlines():
        if not line.strip():
            continue
        fields = line.split("\t")
        fields += [""] * (4 - len(fields))
        params[fields[0].strip()] = (fields[1].strip(), fields[2].strip(),
                                     fields[3].strip())
    return params


# Run options whose values incsim lists with --list-choices.
CHOICE_FLAGS = ("platform", "collective", "algorithm", "dtype", "redop")
# Run options besides the platform that change what --list-params lists.
LIST_FLAGS = ("collective", "algorithm")


def list_choices(incsim, timeout=60):
    """{option: [values]} from `incsim --list-choices`; the platform list
    ends with FILE.yaml, meaning any platform file."""
    choices = {}
    for line in _run_listing(incsim, [incsim, "--list-choices"],
                             timeout).splitlines():
        if "\t" in line:
            opt, values = line.split("\t", 1)
            choices[opt.strip()] = [v.strip() for v in values.split(",")]
    return choices


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


def _type_ok(typ, text):
    typ = typ.lower()
    try:
        if typ in ("int", "integer", "uint", "unsigned", "int64", "uint64",
                   "size_t", "uint32", "int32"):
            int(text, 0)
        elif typ in ("float", "double", "real"):
            float(text)
        elif typ in ("bool", "boolean"):
            return text.lower() in ("true", "false", "1", "0", "yes", "no",
                                    "on", "off")
    except ValueError:
        return False
    return True


def check_campaign(campaign, incsim):
    """Every `-c` key named by the campaign must be one incsim accepts, for
    every platform the campaign uses; int/float/bool values must parse."""
    names = campaign.param_names()
    choices = list_choices(incsim)
    for p in campaign.points():
        for flag in CHOICE_FLAGS:
            if flag not in p.settings or flag not in choices:
                continue
            text = value_text(p.settings[flag])
            if text in choices[flag]:
                continue
            if flag == "platform" and os.path.isfile(campaign.resolve_file(text)):
                continue
            raise CampaignError("%s '%s' is not one incsim accepts (%s)" % (
                flag, text, ", ".join(choices[flag])))
    # incsim lists the parameters a run of one platform, collective and
    # algorithm accepts; ask once for each combination the points use.
    listed = ("platform",) + LIST_FLAGS
    groups = {}
    for p in campaign.points():
        key = tuple(value_text(p.settings[f]) if f in p.settings else None
                    for f in listed)
        groups.setdefault(key, []).append(p)
    for key in sorted(groups, key=lambda k: [v or "" for v in k]):
        platform = key[0]
        arg = campaign.resolve_file(platform) if platform else None
        flags = dict(zip(LIST_FLAGS, key[1:]))
        known = list_params(incsim, arg, **flags)
        where = "".join(" --%s %s" % (f, v) for f, v in zip(listed, key)
                        if v is not None)
        for n in names:
            if n not in known:
                close = difflib.get_close_matches(n, list(known), 3, 0.75)
                hint = (" (did you mean %s?)" % ", ".join(close)
                        if close else "")
                raise CampaignError("unknown parameter '%s': not in "
                                    "`incsim --list-params%s`%s" % (
                                        n, where, hint))
        for p in groups[key]:
            for n in names:
                if n in p.settings:
                    text = value_text(p.settings[n])
                    if not _type_ok(known[n][0], text):
                        raise CampaignError(
                            "parameter '%s' is of type %s; value %r does not "
                            "fit" % (n, known[n][0], text))
    return True


def argv_for(campaign_dir, settings, incsim, json_path):
    """The incsim command line of a point."""
    argv = [incsim]
    for k in FLAGS:
        if k in settings:
            text = value_text(settings[k])
            if k in ("platform", "config"):
                path = os.path.join(campaign_dir, text)
                if os.path.isfile(path):
                    text = os.path.abspath(path)
            argv += ["--" + k, text]
    for k, v in settings.items():
        if k not in FLAGS:
            argv += ["-c", "%s=%s" % (k, value_text(v))]
    argv += ["--json", json_path, "--quiet"]
    return argv
