"""scripts/sweep: run a campaign locally or on Slurm, and collect it."""

import argparse
import os
import sys

from . import campaign as cmod
from . import collect as collect_mod
from . import params as pmod
from . import runner
from . import slurm as slurm_mod
from .campaign import CampaignError

USAGE = """scripts/sweep COMMAND CAMPAIGN.yaml [options]

  run CAMPAIGN -j N      run every unfinished point here with N processes,
                         then collect (Ctrl-C stops; run again to resume)
  slurm CAMPAIGN         write and submit a Slurm job array of the
                         unfinished points (--partition --time --mem --batch)
  collect CAMPAIGN       merge finished points into one CSV; list failures
  list CAMPAIGN          print every point with its hash and state
See docs/campaigns.md."""


def _common(p):
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--incsim", help="simulator binary (default: $INCSIM, "
                   "the campaign's incsim:, or build/incsim)")


def _launch_opts(p):
    p.add_argument("--yes", action="store_true",
                   help="allow more points than max_points")
    p.add_argument("--max-points", type=int,
                   help="the point cap (default: the campaign's max_points, "
                   "or %d)" % cmod.DEFAULT_MAX_POINTS)
    p.add_argument("--timeout", type=float,
                   help="seconds per point (default: the campaign's "
                   "timeout, or %g)" % cmod.DEFAULT_TIMEOUT)
    p.add_argument("--no-check", action="store_true",
                   help="do not check the points with incsim --list-params")


def parser():
    ap = argparse.ArgumentParser(prog="sweep", usage=USAGE)
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    p = sub.add_parser("run", help="run the campaign on this machine")
    _common(p)
    _launch_opts(p)
    p.add_argument("-j", "--jobs", type=int, default=1,
                   help="processes in parallel (default 1)")
    p.add_argument("--skip-failed", action="store_true",
                   help="do not retry points that failed before")
    p.add_argument("--no-collect", action="store_true",
                   help="do not write the CSV at the end")
    p = sub.add_parser("slurm", help="submit the campaign as a job array")
    _common(p)
    _launch_opts(p)
    for o in ("partition", "time", "mem", "account", "qos"):
        p.add_argument("--" + o)
    p.add_argument("--batch", type=int, help="points per array task")
    p.add_argument("--cpus-per-task", type=int)
    p.add_argument("--no-submit", action="store_true",
                   help="write the job script only")
    p.add_argument("--wait", action="store_true",
                   help="wait for the array to finish, then collect")
    p.add_argument("--wait-timeout", type=float, default=3600,
                   help="seconds to wait at most (default 3600)")
    p = sub.add_parser("collect", help="merge results into one CSV")
    p.add_argument("campaign")
    p.add_argument("-o", "--csv", help="CSV file (default: "
                   "<output>/results.csv)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a point failed or has not run")
    p = sub.add_parser("list", help="list the points and their state")
    p.add_argument("campaign")
    p = sub.add_parser(
        "task", help="run one array task's points (the Slurm job calls it)")
    p.add_argument("manifest")
    p.add_argument("--list", required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--task", type=int, required=True)
    return ap


def _prepare(args):
    """Load, cap, check; write the manifest. Returns (campaign, path, m)."""
    c = cmod.load(args.campaign)
    if args.timeout is not None:
        if args.timeout <= 0:
            raise CampaignError("--timeout must be positive")
        c.timeout = args.timeout
    points = c.points()
    cap = args.max_points if args.max_points is not None else c.max_points
    if len(points) > cap and not args.yes:
        raise CampaignError(
            "the campaign has %d points, more than the limit of %d; pass "
            "--yes to launch them all (or set max_points)" % (len(points),
                                                              cap))
    incsim = pmod.find_incsim(args.incsim, c)
    pmod.check_binary(incsim)
    if not args.no_check:
        # as many --list-params runs at a time as the run has processes;
        # a Slurm submission checks with this machine's cores
        jobs = getattr(args, "jobs", None) or os.cpu_count() or 1
        pmod.check_campaign(c, incsim, jobs=jobs)
    path, manifest = runner.write_manifest(c, incsim, points)
    return c, path, manifest


def _count(n, one, many=None):
    """'1 point', '2 points'."""
    return "%d %s" % (n, one if n == 1 else many or one + "s")


def cmd_run(args):
    if args.jobs < 1:
        raise CampaignError("-j must be at least 1")
    c, _, manifest = _prepare(args)
    sys.stderr.write("sweep: campaign %s: %s, %s, results in %s\n" % (
        c.name, _count(len(manifest["points"]), "point"),
        _count(args.jobs, "process", "processes"), c.output))
    done, failed, interrupted = runner.run_local(
        manifest, args.jobs, retry_failed=not args.skip_failed)
    if interrupted:
        return 130
    if not args.no_collect:
        collect_mod.collect(c)
    return 1 if failed else 0


def cmd_slurm(args):
    c, path, manifest = _prepare(args)
    opts = dict(c.slurm)
    for k in ("partition", "time", "mem", "account", "qos", "batch",
              "cpus_per_task"):
        v = getattr(args, k)
        if v is not None:
            opts[k] = v
    if isinstance(opts.get("extra"), str):
        opts["extra"] = [opts["extra"]]
    sbatch, ntasks, npoints = slurm_mod.write_job(c, path, manifest, opts)
    if sbatch is None:
        sys.stderr.write("sweep: every point of %s is done; nothing to "
                         "submit\n" % c.name)
        if args.wait:
            collect_mod.collect(c)
        return 0
    sys.stderr.write("sweep: wrote %s (%d points in %d array tasks)\n" % (
        sbatch, npoints, ntasks))
    if args.no_submit:
        return 0
    job = slurm_mod.submit(sbatch)
    sys.stdout.write(job + "\n")
    sys.stdout.flush()
    sys.stderr.write("sweep: submitted job %s; `scripts/sweep collect %s` "
                     "gathers what has finished\n" % (job, args.campaign))
    if args.wait:
        if not slurm_mod.wait(job, args.wait_timeout):
            raise CampaignError("job %s still not finished after %gs" % (
                job, args.wait_timeout))
        _, _, _, failed, missing = collect_mod.collect(c)
        return 1 if failed or missing else 0
    return 0


def cmd_collect(args):
    c = cmod.load(args.campaign)
    _, _, _, failed, missing = collect_mod.collect(c, args.csv)
    return 1 if args.strict and (failed or missing) else 0


def cmd_list(args):
    c = cmod.load(args.campaign)
    for p in c.points():
        if runner.is_done(c.output, p.hash):
            state = "done"
        elif os.path.exists(runner.failed_path(c.output, p.hash)):
            state = "failed"
        else:
            state = "todo"
        sys.stdout.write("%s\t%s\t%s\n" % (p.hash, state, p.label()))
    return 0


def cmd_task(args):
    manifest = runner.read_manifest(args.manifest)
    try:
        hashes = slurm_mod.task_hashes(args.list, args.batch, args.task)
    except OSError as e:
        raise CampaignError("cannot read %s: %s" % (args.list, e.strerror)) \
            from None
    return 1 if runner.run_task(manifest, hashes) else 0


def main(argv=None):
    args = parser().parse_args(argv)
    if not args.cmd:
        sys.stderr.write("usage: " + USAGE + "\n")
        return 2
    try:
        return {"run": cmd_run, "slurm": cmd_slurm, "collect": cmd_collect,
                "list": cmd_list, "task": cmd_task}[args.cmd](args)
    except CampaignError as e:
        sys.stderr.write("sweep: error: %s\n" % e)
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("sweep: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
