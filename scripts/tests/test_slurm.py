"""The Slurm integration test: a real one-node Slurm cluster on localhost.

As root: install slurm-wlm and munge if missing (scripts/install-slurm.sh),
start munged, write a slurm.conf in a temporary folder (state, spool, pid
and log files inside it; non-default ports; one node named by
`hostname -s` with 2 CPUs), start slurmctld and slurmd on it, submit a
small campaign as a job array with `scripts/sweep slurm --wait`, and check
that the collected CSV and every point result equal a local run's, byte
for byte. The daemons this test started are always stopped afterwards.

Uses the real simulator when there is one, else fake_incsim.py (the Slurm
path is the same). Skipped, with the reason, when not root or when Slurm
cannot be installed.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from common import (FAKE, SCRIPTS, SKIP_MARK, TempDirCase, read,
                    real_incsim)

INSTALL = os.path.join(SCRIPTS, "install-slurm.sh")
DAEMONS = ("slurmctld", "slurmd", "munged")


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _have_slurm():
    return all(shutil.which(d) for d in DAEMONS + ("sbatch", "squeue"))


def _skip_reason():
    if os.geteuid() != 0:
        return "not root (the test installs Slurm and starts its daemons)"
    if not _have_slurm():
        try:
            p = subprocess.run(["/bin/sh", INSTALL], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=600)
        except subprocess.TimeoutExpired:
            return "installing slurm-wlm and munge timed out"
        if p.returncode != 0 or not _have_slurm():
            tail = (p.stdout.strip().splitlines() or ["?"])[-1]
            return "cannot install slurm-wlm and munge: %s" % tail
    return None


class Cluster:
    """slurmctld + slurmd (+ munged when not already running) on this
    host, configured in `root`; stop() ends exactly what start() began."""

    def __init__(self, root):
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        self.conf = os.path.join(root, "slurm.conf")
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def log(self, name):
        path = os.path.join(self.root, name + ".log")
        return read(path)[-3000:] if os.path.exists(path) else ""

    def write_conf(self):
        for d in ("state", "spool"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        r = self.root
        text = "\n".join([
            "ClusterName=incsimtest",
            "SlurmctldHost=%s" % self.host,
            "SlurmctldPort=%d" % _free_port(),
            "SlurmdPort=%d" % _free_port(),
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "StateSaveLocation=%s/state" % r,
            "SlurmdSpoolDir=%s/spool" % r,
            "SlurmctldPidFile=%s/slurmctld.pid" % r,
            "SlurmdPidFile=%s/slurmd.pid" % r,
            "SlurmctldLogFile=%s/slurmctld.log" % r,
            "SlurmdLogFile=%s/slurmd.log" % r,
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "MinJobAge=300",
            "KillWait=5",
            "NodeName=%s CPUs=2 State=UNKNOWN" % self.host,
            "PartitionName=incsim Nodes=%s Default=YES MaxTime=INFINITE "
            "State=UP" % self.host,
            ""])
        with open(self.conf, "w") as f:
            f.write(text)

    def _munge_ok(self):
        try:
            cred = subprocess.run(["munge", "-n"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, timeout=10)
            if cred.returncode != 0:
                return False
            un = subprocess.run(["unmunge"], input=cred.stdout,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=10)
            return un.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _start(self, name, argv):
        out = open(os.path.join(self.root, name + ".out"), "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=self.env)
        out.close()
        self.procs.append((name, p))
        return p

    def start(self):
        self.write_conf()
        if not self._munge_ok():
            os.makedirs("/run/munge", exist_ok=True)
            if not os.path.exists("/etc/munge/munge.key"):
                subprocess.run(["mungekey", "--create"], check=True,
                               timeout=30)
            # foreground (-F) so that this test owns the process and its id
            self._start("munged", ["munged", "--force", "-F"])
            deadline = time.monotonic() + 15
            while not self._munge_ok():
                if time.monotonic() > deadline:
                    raise AssertionError("munged did not come up: %s" %
                                         read(os.path.join(self.root,
                                                           "munged.out")))
                time.sleep(0.2)
        self._start("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self._start("slurmd", ["slurmd", "-D", "-f", self.conf])
        deadline = time.monotonic() + 60
        state = ""
        while time.monotonic() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise AssertionError("%s exited (%s): %s %s" % (
                        name, p.returncode, self.log(name),
                        read(os.path.join(self.root, name + ".out"))))
            q = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"],
                               env=self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=20)
            state = (q.stdout + q.stderr).strip()
            if q.returncode == 0 and state in ("idle", "mixed"):
                return
            time.sleep(0.5)
        raise AssertionError("the node did not become idle (sinfo: %s)\n"
                             "slurmctld: %s\nslurmd: %s" % (
                                 state, self.log("slurmctld"),
                                 self.log("slurmd")))

    def stop(self):
        # slurmd first (it owns the job steps), then the controller, then
        # munged if this test started it.
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)
        self.procs = []


@unittest.skipIf(os.geteuid() != 0, "%s: not root (the test installs Slurm "
                 "and starts its daemons)" % SKIP_MARK)
class Slurm(TempDirCase):
    @classmethod
    def setUpClass(cls):
        reason = _skip_reason()
        if reason:
            raise unittest.SkipTest("%s: %s" % (SKIP_MARK, reason))

    def test_job_array_matches_local_run(self):
        incsim = real_incsim() or FAKE
        print("\nslurm: simulator %s" % incsim)
        root = tempfile.mkdtemp(prefix="incsim-slurm-")
        self.addCleanup(shutil.rmtree, root, True)
        cluster = Cluster(root)
        self.addCleanup(cluster.stop)        # also when start() fails
        t0 = time.monotonic()
        cluster.start()
        print("slurm: cluster up in %.1fs (%s)" % (time.monotonic() - t0,
                                                   cluster.conf))

        campaign = """\
            name: slurm-e2e
            output: %s
            fixed:
              platform: dgx2
              collective: allreduce
              algorithm: ring
              sizes: [8K, 64K]
            axes:
              gpus: [4, 8]
            seeds: 2
            timeout: 120
            slurm:
              partition: incsim
              time: "00:05:00"
            """
        on_slurm = self.write("slurm.yaml", campaign % "on-slurm")
        local = self.write("local.yaml", campaign % "local")

        t0 = time.monotonic()
        p = self.sweep("slurm", on_slurm, "--wait", "--wait-timeout", "240",
                       incsim=incsim, env={"SLURM_CONF": cluster.conf},
                       timeout=300)
        took = time.monotonic() - t0
        logs = "\n".join(read(f)[-1500:] for f in glob.glob(os.path.join(
            self.tmp, "on-slurm", "slurm", "logs", "*.out")))
        self.assertEqual(p.returncode, 0, "%s\ntask logs:\n%s\nslurmctld:"
                         " %s" % (p.stderr, logs, cluster.log("slurmctld")))
        self.assertIn("4 points in 4 array tasks", p.stderr)
        self.assertIn("4 done, 0 failed, 0 not run", p.stderr)
        print("slurm: 4-task array submitted, run and collected in %.1fs"
              % took)
        self.assertEqual(len(glob.glob(os.path.join(
            self.tmp, "on-slurm", "slurm", "logs", "*.out"))), 4)

        self.sweep("run", local, "-j", "2", incsim=incsim, check=0,
                   timeout=300)
        slurm_csv = read(os.path.join(self.tmp, "on-slurm", "results.csv"))
        self.assertEqual(slurm_csv,
                         read(os.path.join(self.tmp, "local",
                                           "results.csv")))
        self.assertEqual(len(slurm_csv.splitlines()), 1 + 4 * 2)
        self.assertEqual(
            read(os.path.join(self.tmp, "on-slurm", "results.columns.json")),
            read(os.path.join(self.tmp, "local", "results.columns.json")))
        for f in glob.glob(os.path.join(self.tmp, "local", "points",
                                        "*.json")):
            name = os.path.basename(f)
            if len(name) != 21:             # <16 hex>.json only
                continue
            self.assertEqual(read(f, "rb"), read(os.path.join(
                self.tmp, "on-slurm", "points", name), "rb"), name)

        # resubmitting a finished campaign submits nothing
        p = self.sweep("slurm", on_slurm, incsim=incsim,
                       env={"SLURM_CONF": cluster.conf}, check=0)
        self.assertIn("nothing to submit", p.stderr)


if __name__ == "__main__":
    unittest.main()
