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
            # Counted before expanding (these used to print a traceback or
            # take 8 GB).
            ("axes: {gpus: {from: 1, to: 1e12, step: 1}}\n",
             "axis 'gpus' has 1,000,000,000,000 values, more than the "
             "100,000 a campaign may have"),
            ("axes: {gpus: {from: 1, to: 2, mul: 1.0000001}}\n",
             "6,931,473 values"),
            ("axes: {gpus: {from: 1, to: .inf, step: 1}}\n",
             "inf is not a finite number"),
            ("axes: {gpus: {from: .nan, to: 4, step: 1}}\n",
             "nan is not a finite number"),
            ("seeds: 1000000000000\n", "'seeds' has 1,000,000,000,000"),
            ("max_points: .inf\n", "'max_points' must be a positive number"),
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
        ref = self.write("ref.csv", "key,series,column,size_bytes,value,source\n"
                         "a,paper,busbw_GBps,8K,1.5,Fig. 1\n"
                         "b,paper,busbw_GBps,1M,90,Fig. 1\n"
                         "peak,paper: peak,busbw_GBps,,100,text\n")
        out = os.path.join(self.tmp, "r.png")
        p = self.plot(data, "-o", out, "--reference", ref)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(out))
        for args, msg in ((["--where", "nope=1"], "no column 'nope'"),
                          (["--kind", "time", "--reference", ref],
                           "has no numbers for time_us"),
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



TWO_BY_TWO = """\
name: t
output: out
fixed:
  platform: dgx2
  collective: allreduce
  sizes: [8K, 64K, 1M]
axes:
  algorithm: [ring, tree]
  ring.channels: [6, 12]
seeds: 2
"""


class Columns(TempDirCase):
    """Issue 13: which columns are settings and which measurements comes
    from the results (incsim's "columns", collect's sidecar), so new
    measurements never change the series."""

    def run_campaign(self, text=TWO_BY_TWO):
        c = self.write("c.yaml", text)
        self.sweep("run", c, "-j", "2", check=0)
        return os.path.join(self.tmp, "out", "results.csv")

    def sidecar(self, csv_path):
        with open(csv_path[:-4] + ".columns.json") as f:
            return json.load(f)

    def legend(self, csv_path, *args):
        """The legend labels of `plot CSV args` drawn in this process."""
        from incsim_campaign import plot as plot_mod
        a = plot_mod.parser().parse_args([csv_path, "--no-bound"] +
                                         list(args))
        rows, meta = plot_mod.read_csv(csv_path)
        rows = plot_mod._filter(rows, a.where)
        fig = plot_mod.plot_lines(rows, a, meta)
        labels = fig.axes[0].get_legend_handles_labels()[1]
        import matplotlib.pyplot as plt
        plt.close(fig)
        return labels

    def test_sidecar_says_what_incsim_said(self):
        data = self.run_campaign()
        side = self.sidecar(data)
        self.assertEqual(side["format"], "incsim-campaign-columns/1")
        self.assertEqual(side["csv"], "results.csv")
        self.assertEqual(side["incsim"], [{"version": "0.13.0",
                                           "commit": "abc1234"}])
        with open(data) as f:
            header = next(csv.reader(f))
        self.assertEqual([c["name"] for c in side["columns"]], header)
        kinds = {c["name"]: (c["kind"], c["unit"], c["from"])
                 for c in side["columns"]}
        self.assertEqual(kinds["point"][0], "id")
        for name in ("platform", "algorithm", "gpus", "seed",
                     "ring.channels"):
            self.assertEqual(kinds[name], ("setting", "", "point"), name)
        self.assertEqual(kinds["size_bytes"], ("setting", "B", "row"))
        self.assertEqual(kinds["count"], ("setting", "elements", "row"))
        self.assertEqual(kinds["time_us"], ("measurement", "us", "row"))
        self.assertEqual(kinds["avg_packet_latency_ns"],
                         ("measurement", "ns", "row"))
        self.assertEqual(kinds["packets"][0], "measurement")
        self.assertEqual(kinds["reduction_tables"][0], "measurement")
        self.assertTrue([c for c in side["columns"]
                         if c["name"] == "reduction_tables"][0]["json"])
        self.assertNotIn("links", kinds)
        # the header: point settings, then incsim's columns in its order
        self.assertEqual(header[header.index("size_bytes"):], [
            "size_bytes", "count", "type", "redop", "time_us", "algbw_GBps",
            "busbw_GBps", "wrong", "bound_us", "bound_fraction", "packets",
            "avg_packet_latency_ns", "reduction_tables"])

    def test_extra_measurements_one_line_per_setting_combination(self):
        data = self.run_campaign()
        want = ["algorithm=%s, ring.channels=%d" % (a, ch)
                for a in ("ring", "tree") for ch in (6, 12)]
        self.assertEqual(self.legend(data), want)
        self.assertEqual(self.legend(data, "--kind", "time"), want)
        self.assertEqual(self.legend(data, "--where", "algorithm=tree"),
                         ["ring.channels=6", "ring.channels=12"])
        # without the sidecar: the same, from the columns' places
        os.remove(data[:-4] + ".columns.json")
        self.assertEqual(self.legend(data), want)
        # a measurement nobody described yet changes nothing either
        with open(data) as f:
            rows = list(csv.reader(f))
        rows[0].append("new_thing_ns")
        for i, r in enumerate(rows[1:]):
            r.append(str(1000 + i))
        with open(data, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        self.assertEqual(self.legend(data), want)
        out = os.path.join(self.tmp, "m.png")
        p = self.plot(data, "--kind", "bw", "--metric", "new_thing_ns",
                      "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_the_sidecar_decides(self):
        data = self.run_campaign(TWO_BY_TWO.replace(
            "  algorithm: [ring, tree]\n", "").replace(
            "collective: allreduce", "collective: allreduce\n  "
            "algorithm: ring"))
        self.assertEqual(self.legend(data), ["ring.channels=6",
                                             "ring.channels=12"])
        # a column the results call a setting makes series wherever it is
        path = data[:-4] + ".columns.json"
        side = self.sidecar(data)
        # (avg_packet_latency_ns differs by seed: a line per point)
        for c in side["columns"]:
            if c["name"] == "avg_packet_latency_ns":
                c["kind"] = "setting"
        with open(path, "w") as f:
            json.dump(side, f)
        self.assertEqual(len(self.legend(data)), 2 * 2 * 3)
        # ... and one it calls a measurement never does
        for c in side["columns"]:
            if c["name"] in ("avg_packet_latency_ns", "ring.channels"):
                c["kind"] = "measurement"
        with open(path, "w") as f:
            json.dump(side, f)
        self.assertEqual(self.legend(data), [])

    def test_heatmap_with_extra_measurements(self):
        data = self.run_campaign()
        for args in (["--x", "ring.channels", "--y", "algorithm"],
                     ["--x", "ring.channels", "--y", "algorithm",
                      "--metric", "avg_packet_latency_ns", "--size", "8K"],
                     ["--where", "algorithm=ring"],
                     ["--x", "ring.channels", "--y", "size_bytes",
                      "--where", "algorithm=tree"]):
            out = os.path.join(self.tmp, "h.png")
            if os.path.exists(out):
                os.remove(out)
            p = self.plot(data, "--kind", "heatmap", "-o", out, *args)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertEqual(read(out, "rb")[:4], b"\x89PNG")
        # only settings can be in the way
        p = self.plot(data, "--kind", "heatmap", "--x", "ring.channels",
                      "--y", "seed", "-o", os.path.join(self.tmp, "x.png"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("plot: error: column(s) algorithm vary too", p.stderr)

    def test_each_workload_brings_its_own_columns(self):
        # ring rows and NetReduce rows (extra measurements) in one CSV
        data = self.run_campaign(TWO_BY_TWO.replace(
            "[ring, tree]", "[ring, netreduce]").replace(
            "ring.channels: [6, 12]", "link.bandwidth_GBps: [25, 50]"))
        side = {c["name"]: c for c in self.sidecar(data)["columns"]}
        for name in ("goodput_Gbps", "lost", "retransmitted"):
            self.assertEqual(side[name]["kind"], "measurement", name)
        with open(data) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({r["goodput_Gbps"] == "" for r in rows
                          if r["algorithm"] == "ring"}, {True})
        self.assertEqual(len(self.legend(data)), 4)
        # a traffic campaign: rows keyed by offered load, a setting
        c = self.write("t.yaml", """\
            output: tout
            fixed: {platform: dgx2, traffic: uniform, load: [0.1, 0.2]}
            axes: {traffic.hotspot.fraction: [0.1]}
            """)
        p = self.sweep("run", c)
        self.assertEqual(p.returncode, 2)       # only hotspot reads it
        self.assertIn("'traffic.hotspot.fraction' is not read by this run",
                      p.stderr)
        c = self.write("t.yaml", """\
            output: tout
            fixed: {platform: dgx2, load: [0.1, 0.2]}
            axes: {traffic: [uniform, hotspot]}
            """)
        self.sweep("run", c, check=0)
        tdata = os.path.join(self.tmp, "tout", "results.csv")
        side = {c["name"]: c for c in self.sidecar(tdata)["columns"]}
        self.assertEqual(side["offered"]["kind"], "setting")
        self.assertEqual(side["traffic"]["kind"], "setting")
        self.assertNotIn("size_bytes", side)
        with open(tdata) as f:
            self.assertEqual([(r["traffic"], r["offered"])
                              for r in csv.DictReader(f)],
                             [("uniform", "0.1"), ("uniform", "0.2"),
                              ("hotspot", "0.1"), ("hotspot", "0.2")])

    def test_a_rows_own_setting_wins(self):
        # a training run's rows: --algorithm's, then --baseline's
        data = self.run_campaign()
        for f in results(os.path.join(self.tmp, "out")):
            with open(f) as fh:
                d = json.load(fh)
            d["columns"].insert(0, {"name": "algorithm", "unit": "",
                                    "kind": "setting"})
            base = dict(d["rows"][0], algorithm="tree")
            d["rows"] = [dict(d["rows"][0], algorithm="ring"), base]
            with open(f, "w") as fh:
                json.dump(d, fh)
        self.sweep("collect", os.path.join(self.tmp, "c.yaml"), check=0)
        with open(data) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({r["algorithm"] for r in rows[1::2]}, {"tree"})
        self.assertEqual({r["algorithm"] for r in rows[::2]}, {"ring"})

    def test_results_from_before_columns(self):
        data = self.run_campaign()
        for f in results(os.path.join(self.tmp, "out")):
            with open(f) as fh:
                d = json.load(fh)
            del d["columns"], d["incsim"]
            with open(f, "w") as fh:
                json.dump(d, fh)
        before = read(data)
        self.sweep("collect", os.path.join(self.tmp, "c.yaml"), check=0)
        self.assertEqual(read(data), before)
        side = {c["name"]: c for c in self.sidecar(data)["columns"]}
        self.assertEqual(side["count"]["kind"], "setting")
        self.assertEqual(side["packets"]["kind"], "measurement")
        self.assertEqual(self.sidecar(data)["incsim"], [])
        self.assertEqual(len(self.legend(data)), 4)


if __name__ == "__main__":
    unittest.main()
