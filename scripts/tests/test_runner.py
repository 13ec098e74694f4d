"""scripts/sweep and scripts/plot end to end against fake_incsim.py (the
incsim command-line contract): resume, failures, timeouts, the point cap,
user errors, interruption, CSV merge, the Slurm task path without Slurm,
and plots."""

import csv
import glob
import json
import os
import re
import signal
import subprocess
import time
import unittest

from common import FAKE, PYTHON, SWEEP, TempDirCase, read

CAMPAIGN = """\
name: t
output: out
fixed:
  platform: dgx2
  collective: allreduce
  algorithm: ring
  sizes: [8K, 64K, 1M]
axes:
  ring.channels: [6, 12]
seeds: 2
"""


def results(output):
    """The result files of a campaign output folder (<16 hex>.json)."""
    d = os.path.join(output, "points")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if re.match(r"^[0-9a-f]{16}\.json$", f))


class Runner(TempDirCase):
    def setUp(self):
        super().setUp()
        self.log = os.path.join(self.tmp, "runs.log")

    def runs(self):
        return len(read(self.log).splitlines()) if os.path.exists(
            self.log) else 0

    def env(self):
        return {"FAKE_INCSIM_LOG": self.log}

    def csv_rows(self, path=None):
        with open(path or os.path.join(self.tmp, "out", "results.csv")) as f:
            return list(csv.DictReader(f))

    def test_run_collect_and_resume(self):
        c = self.write("c.yaml", CAMPAIGN)
        p = self.sweep("run", c, "-j", "2", env=self.env(), check=0)
        self.assertEqual(self.runs(), 4)
        self.assertIn("4/4 done, 0 failed", p.stderr)
        rows = self.csv_rows()
        self.assertEqual(len(rows), 4 * 3)
        for col in ("point", "platform", "algorithm", "gpus", "seed",
                    "ring.channels", "size_bytes", "time_us", "busbw_GBps",
                    "bound_us", "bound_fraction", "wrong"):
            self.assertIn(col, rows[0])
        self.assertNotIn("links", rows[0])
        self.assertEqual([(r["ring.channels"], r["seed"], r["size_bytes"])
                          for r in rows[:4]],
                         [("6", "1", "8192"), ("6", "1", "65536"),
                          ("6", "1", "1048576"), ("6", "2", "8192")])
        first = read(os.path.join(self.tmp, "out", "results.csv"))

        # resume: nothing is run again
        p = self.sweep("run", c, "-j", "2", env=self.env(), check=0)
        self.assertEqual(self.runs(), 4)
        self.assertIn("4 of 4 points already done", p.stderr)
        # a lost result is run again, and comes back byte for byte
        res = results(os.path.join(self.tmp, "out"))
        self.assertEqual(len(res), 4)
        keep = read(res[1], "rb")
        os.remove(res[1])
        self.sweep("run", c, env=self.env(), check=0)
        self.assertEqual(self.runs(), 5)
        self.assertEqual(read(res[1], "rb"), keep)
        self.assertEqual(read(os.path.join(self.tmp, "out", "results.csv")),
                         first)
        # adding a value to an axis runs only the new points
        c2 = self.write("c.yaml", CAMPAIGN.replace("[6, 12]", "[6, 12, 24]"))
        self.sweep("run", c2, "-j", "2", env=self.env(), check=0)
        self.assertEqual(self.runs(), 7)
        p = self.sweep("list", c2, check=0)
        self.assertEqual(p.stdout.count("\tdone\t"), 6)

    def test_failures_do_not_stop_the_campaign(self):
        c = self.write("c.yaml", """\
            output: out
            fixed: {platform: dgx2, sizes: 8K}
            timeout: 1
            zip:
              - fake.crash: [false, true, false, false]
                fake.segv:  [false, false, true, false]
                fake.sleep: [0, 0, 0, 20]
            """)
        t0 = time.monotonic()
        p = self.sweep("run", c, "-j", "2", env=self.env(), check=1)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertIn("failed: incsim: error: crash requested", p.stderr)
        self.assertIn("killed by signal SIGSEGV", p.stderr)
        self.assertIn("timed out: timed out after 1s", p.stderr)
        self.assertIn("1/4 done, 3 failed", p.stderr)
        self.assertEqual(len(self.csv_rows()), 1)
        p = self.sweep("collect", c, check=0)
        self.assertEqual(p.stderr.count("collect: FAILED point"), 3, p.stderr)
        self.assertIn("fake.crash=true", p.stderr)
        self.assertIn("incsim: error: crash requested", p.stderr)
        self.assertEqual(self.sweep("collect", c, "--strict").returncode, 1)
        logs = glob.glob(os.path.join(self.tmp, "out", "points", "*.log"))
        self.assertEqual(len(logs), 3)
        # failed points are retried on resume, unless --skip-failed
        n = self.runs()
        self.sweep("run", c, "--skip-failed", env=self.env(), check=0)
        self.assertEqual(self.runs(), n)
        self.sweep("run", c, env=self.env(), check=1)
        self.assertGreater(self.runs(), n)

    def test_user_errors_are_one_line(self):
        cases = [
            ("axes: {ring.chanels: [6]}\nfixed: {platform: dgx2}\n",
             "(platform=dgx2 ring.chanels=6): incsim: error: unknown key "
             "'ring.chanels'; did you mean 'ring.channels'?"),
            ("axes: {ring.channels: []}\n", "axis 'ring.channels' is empty"),
            ("axes: {ring.channels: [6, seven]}\nfixed: {platform: dgx2}\n",
             "incsim: error: bad value 'seven' for key 'ring.channels'"),
            ("axes: {gpus: {from: 2, to: 64, step: 1}}\nmax_points: 10\n",
             "63 points, more than the limit of 10; pass --yes"),
            ("axes: [1, 2]\n", "'axes' must be a mapping"),
            ("fixed: {platform: dgx2\n", "not valid YAML"),
        ]
        for text, msg in cases:
            c = self.write("bad.yaml", text)
            p = self.sweep("run", c, env=self.env())
            self.assertEqual(p.returncode, 2, text)
            self.assertTrue(p.stderr.startswith("sweep: error: "), p.stderr)
            self.assertIn(msg, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertEqual(self.runs(), 0)
        p = self.sweep("run", os.path.join(self.tmp, "missing.yaml"))
        self.assertIn("sweep: error: cannot read", p.stderr)
        c = self.write("c.yaml", CAMPAIGN)
        p = self.sweep("run", c, incsim="/nonexistent/incsim")
        self.assertIn("sweep: error: simulator not found at "
                      "/nonexistent/incsim", p.stderr)

    def test_point_cap(self):
        c = self.write("c.yaml", CAMPAIGN + "max_points: 3\n")
        p = self.sweep("run", c, env=self.env())
        self.assertEqual(p.returncode, 2)
        self.assertIn("4 points, more than the limit of 3", p.stderr)
        self.assertEqual(self.runs(), 0)
        self.sweep("run", c, "--yes", env=self.env(), check=0)
        self.assertEqual(self.runs(), 4)
        c = self.write("d.yaml", CAMPAIGN.replace("out", "out2"))
        self.assertEqual(self.sweep("run", c, "--max-points", "2").returncode,
                         2)

    def test_interrupt_and_resume(self):
        c = self.write("c.yaml", CAMPAIGN.replace(
            "ring.channels: [6, 12]",
            "ring.channels: [6, 12]\n  fake.sleep: [3]") + "timeout: 60\n")
        e = dict(os.environ, INCSIM=FAKE, FAKE_INCSIM_LOG=self.log)
        proc = subprocess.Popen([PYTHON, SWEEP, "run", c, "-j", "2"], env=e,
                                stderr=subprocess.PIPE,
                                universal_newlines=True)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 130, err)
        self.assertRegex(err, r"interrupted: [0-3] of 4 points done; run "
                         "the same command again to resume")
        self.assertNotIn("Traceback", err)
        pts = os.path.join(self.tmp, "out", "points")
        self.assertEqual(glob.glob(os.path.join(pts, "*tmp*")), [])
        # the simulators it started are gone (killed by process group)
        alive = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = read("/proc/%s/cmdline" % pid, "rb")
            except OSError:
                continue
            if self.tmp.encode() in cmd and b"fake_incsim" in cmd:
                alive.append(pid)
        self.assertEqual(alive, [])
        done_before = len(results(os.path.join(self.tmp, "out")))
        self.assertLess(done_before, 4)
        p = self.sweep("run", c, "-j", "2", env=self.env(), check=0)
        self.assertIn("%d of 4 points already done" % done_before
                      if done_before else "0/4 done", p.stderr)
        self.assertEqual(len(self.csv_rows()), 12)

    def test_slurm_job_script_and_tasks_without_slurm(self):
        c = self.write("c.yaml", CAMPAIGN + "slurm: {partition: p1, "
                       "time: '00:05:00', mem: 1G}\n")
        p = self.sweep("slurm", c, "--batch", "3", "--no-submit",
                       "--partition", "p2", check=0)
        self.assertIn("4 points in 2 array tasks", p.stderr)
        [job] = glob.glob(os.path.join(self.tmp, "out", "slurm",
                                       "job-*.sbatch"))
        text = read(job)
        self.assertIn("#SBATCH --array=0-1\n", text)
        self.assertIn("#SBATCH --partition=p2\n", text)
        self.assertIn("#SBATCH --time=00:05:00\n", text)
        self.assertIn("#SBATCH --mem=1G\n", text)
        # without a time limit: per-point timeout x batch + 1 minute
        c3 = self.write("t.yaml", CAMPAIGN.replace("output: out",
                                                   "output: out3") +
                        "timeout: 120\n")
        self.sweep("slurm", c3, "--batch", "2", "--no-submit", check=0)
        [job3] = glob.glob(os.path.join(self.tmp, "out3", "slurm",
                                        "job-*.sbatch"))
        self.assertIn("#SBATCH --time=5\n", read(job3))
        # run the two array tasks by hand, as Slurm would
        for task in ("0", "1"):
            e = dict(os.environ, SLURM_ARRAY_TASK_ID=task,
                     FAKE_INCSIM_LOG=self.log)
            subprocess.run(["/bin/sh", job], env=e, check=True,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(self.runs(), 4)
        self.sweep("collect", c, "-o", os.path.join(self.tmp, "slurm.csv"),
                   check=0)
        # the same campaign run locally in another folder: same bytes
        local = self.write("l.yaml", CAMPAIGN.replace("output: out",
                                                      "output: local"))
        self.sweep("run", local, "-j", "2", check=0)
        self.assertEqual(read(os.path.join(self.tmp, "slurm.csv")),
                         read(os.path.join(self.tmp, "local",
                                           "results.csv")))
        local_results = results(os.path.join(self.tmp, "local"))
        self.assertEqual(len(local_results), 4)
        for f in local_results:
            other = os.path.join(self.tmp, "out", "points",
                                 os.path.basename(f))
            self.assertEqual(read(f, "rb"), read(other, "rb"))
        # nothing left to submit
        p = self.sweep("slurm", c, "--no-submit", check=0)
        self.assertIn("nothing to submit", p.stderr)

    def test_sbatch_missing_is_a_clear_error(self):
        c = self.write("c.yaml", CAMPAIGN)
        p = self.sweep("slurm", c, env={"PATH": "/nonexistent"})
        self.assertEqual(p.returncode, 2)
        self.assertIn("sbatch not found", p.stderr)

    def test_manifest(self):
        c = self.write("c.yaml", CAMPAIGN)
        self.sweep("slurm", c, "--no-submit", check=0)
        with open(os.path.join(self.tmp, "out", "manifest.json")) as f:
            m = json.load(f)
        self.assertEqual(len(m["points"]), 4)
        self.assertEqual(m["incsim"], FAKE)
        self.assertEqual(m["points"][0]["args"], [
            "--platform", "dgx2", "--collective", "allreduce", "--algorithm",
            "ring", "--sizes", "8K,64K,1M", "--seed", "1", "-c",
            "ring.channels=6"])


class Plot(TempDirCase):
    def test_every_kind(self):
        c = self.write("c.yaml", CAMPAIGN.replace(
            "  algorithm: ring\n", "").replace(
            "ring.channels: [6, 12]", "ring.channels: [6, 12]\n"
            "  algorithm: [ring, tree]"))
        self.sweep("run", c, "-j", "2", check=0)
        data = os.path.join(self.tmp, "out", "results.csv")
        for args in (["--kind", "bw"], ["--kind", "bw", "--metric", "algbw"],
                     ["--kind", "time"], ["--kind", "speedup"],
                     ["--kind", "speedup", "--baseline", "ring.channels=6",
                      "--where", "algorithm=tree"],
                     ["--kind", "heatmap", "--x", "ring.channels",
                      "--y", "algorithm", "--size", "64K"],
                     ["--kind", "heatmap", "--where", "algorithm=ring"]):
            out = os.path.join(self.tmp, "f.png")
            if os.path.exists(out):
                os.remove(out)
            p = self.plot(data, "-o", out, *args)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertEqual(read(out, "rb")[:8], b"\x89PNG\r\n\x1a\n")
        ref = self.write("ref.csv", "series,size_bytes,busbw_GBps\n"
                         "paper,8K,1.5\npaper,1M,90\n")
        out = os.path.join(self.tmp, "r.png")
        p = self.plot(data, "-o", out, "--reference", ref)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(out))
        for args, msg in ((["--where", "nope=1"], "no column 'nope'"),
                          (["--kind", "time", "--reference", ref],
                           "needs columns size_bytes and time_us"),
                          (["--kind", "speedup", "--baseline",
                            "algorithm=x"], "no rows with algorithm=x"),
                          (["--kind", "heatmap", "--x", "ring.channels",
                            "--y", "seed"], "algorithm vary too")):
            p = self.plot(data, "-o", os.path.join(self.tmp, "g.png"), *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertTrue(p.stderr.startswith("plot: error: "), p.stderr)
            self.assertIn(msg, p.stderr)
        p = self.plot(os.path.join(self.tmp, "missing.csv"))
        self.assertIn("plot: error: cannot read", p.stderr)


if __name__ == "__main__":
    unittest.main()
