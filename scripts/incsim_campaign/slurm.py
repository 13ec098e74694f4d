"""Slurm: an sbatch script for a job array over the unfinished points of a
campaign (one task per batch of K points), its submission, and waiting.

Each array task runs `sweep task MANIFEST --list FILE --batch K --task ID`,
which runs its points with the same PointRun as a local run, so the result
files are the same bytes. The output folder must be on a file system the
compute nodes share (it is, on the one-node test cluster)."""

import math
import os
import re
import shlex
import subprocess
import sys
import time

from .campaign import CampaignError
from .runner import is_done

SWEEP = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "sweep")


def _slurm_dir(output):
    return os.path.join(output, "slurm")


def write_job(campaign, manifest_path, manifest, opts):
    """Write <output>/slurm/job-<stamp>.{points,sbatch}; return the sbatch
    path and the number of array tasks (None, 0 when nothing is left)."""
    output = manifest["output"]
    pending = [e["hash"] for e in manifest["points"]
               if not is_done(output, e["hash"])]
    if not pending:
        return None, 0, 0
    batch = int(opts.get("batch") or 1)
    if batch < 1:
        raise CampaignError("--batch must be at least 1")
    ntasks = (len(pending) + batch - 1) // batch
    sdir = _slurm_dir(output)
    os.makedirs(os.path.join(sdir, "logs"), exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 0
    while True:
        base = os.path.join(sdir, "job-%s%s" % (stamp, "-%d" % n if n else ""))
        if not os.path.exists(base + ".sbatch"):
            break
        n += 1
    with open(base + ".points", "w") as f:
        f.write("".join(h + "\n" for h in pending))
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", "incsim-" + campaign.name)
    lines = ["#!/bin/sh",
             "# Written by scripts/sweep slurm for campaign %s" % campaign.path,
             "#SBATCH --job-name=%s" % name,
             "#SBATCH --array=0-%d" % (ntasks - 1),
             "#SBATCH --output=%s" % os.path.join(sdir, "logs", "%A_%a.out"),
             "#SBATCH --ntasks=1",
             "#SBATCH --cpus-per-task=%s" % (opts.get("cpus_per_task") or 1)]
    if not opts.get("time"):
        # Without a limit from the campaign or the flags, ask for what the
        # task's points may take at most: per-point timeout x batch + 1 min.
        timeout = float(manifest.get("timeout") or 600)
        opts = dict(opts, time=str(int(math.ceil(
            (timeout * batch + 60) / 60.0))))
    for key, flag in (("partition", "partition"), ("time", "time"),
                      ("mem", "mem"), ("account", "account"),
                      ("qos", "qos")):
        if opts.get(key):
            lines.append("#SBATCH --%s=%s" % (flag, opts[key]))
    for extra in opts.get("extra") or []:
        lines.append("#SBATCH %s" % extra)
    # Per-point timeout and a little for Python; the job's --time bounds it.
    lines += ["",
              "exec %s %s task %s --list %s --batch %d --task "
              "\"$SLURM_ARRAY_TASK_ID\"" % (
                  shlex.quote(sys.executable), shlex.quote(SWEEP),
                  shlex.quote(manifest_path), shlex.quote(base + ".points"),
                  batch),
              ""]
    with open(base + ".sbatch", "w") as f:
        f.write("\n".join(lines))
    return base + ".sbatch", ntasks, len(pending)


def task_hashes(points_file, batch, task):
    with open(points_file) as f:
        hashes = [l.strip() for l in f if l.strip()]
    return hashes[task * batch:(task + 1) * batch]


def _run(argv, what):
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120)
    except FileNotFoundError:
        raise CampaignError("%s not found: is Slurm installed here? (the "
                            "job script is written; submit it where Slurm "
                            "is)" % argv[0]) from None
    except subprocess.TimeoutExpired:
        raise CampaignError("%s timed out" % what) from None
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or ["exit status %d" %
                                                    proc.returncode])[-1]
        raise CampaignError("%s failed: %s" % (what, err))
    return proc.stdout


def submit(sbatch_path):
    try:
        out = _run(["sbatch", "--parsable", sbatch_path], "sbatch")
    except CampaignError as e:
        if "array" in str(e).lower():
            raise CampaignError("%s (more array tasks than the cluster's "
                                "MaxArraySize? use --batch K)" % e) from None
        raise
    job = out.strip().split(";")[0]
    if not job:
        raise CampaignError("sbatch printed no job id")
    return job


def wait(job, timeout, stream=sys.stderr, poll=1.0):
    """Wait until no task of the job is queued or running. Returns True, or
    False on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            out = _run(["squeue", "-h", "-j", str(job), "-o", "%T"],
                       "squeue")
        except CampaignError as e:
            if "invalid job id" in str(e).lower():
                return True     # already purged from the controller
            raise
        states = [s.strip() for s in out.splitlines() if s.strip()]
        if not states:
            return True
        summary = ", ".join("%d %s" % (states.count(s), s.lower())
                            for s in sorted(set(states)))
        if summary != last:
            stream.write("sweep: job %s: %s\n" % (job, summary))
            stream.flush()
            last = summary
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
