"""End to end on the real simulator: a small DGX-2 ring all-reduce campaign
(2 GPU counts x 2 seeds, sizes 8K and 64K) run with 2 processes, resumed,
collected and plotted; and every example campaign checked against
`incsim --list-params`. Skipped (with the reason) when there is no
simulator binary."""

import csv
import glob
import json
import os
import time
import unittest

from common import (SCRIPTS, SKIP_MARK, TempDirCase, read, real_incsim)
from incsim_campaign import campaign as cmod
from incsim_campaign import params as pmod

INCSIM = real_incsim()
# scripts/sanitize.sh scales time limits (CMakeLists.txt, INCSIM_TEST_TIMEOUT_SCALE).
TIMEOUT_SCALE = int(os.environ.get("INCSIM_TEST_TIMEOUT_SCALE", "1"))

CAMPAIGN = """\
name: e2e
output: out
fixed:
  platform: dgx2
  collective: allreduce
  algorithm: ring
  sizes: [8K, 64K]
axes:
  gpus: [4, 16]
seeds: 2
timeout: 120
"""


@unittest.skipIf(INCSIM is None, "%s: no simulator at $INCSIM or "
                 "build/incsim (build it first)" % SKIP_MARK)
class EndToEnd(TempDirCase):
    def test_small_dgx2_campaign(self):
        c = self.write("c.yaml", CAMPAIGN)
        t0 = time.monotonic()
        p = self.sweep("run", c, "-j", "2", incsim=INCSIM, timeout=280)
        elapsed = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        print("\ne2e: 4 DGX-2 points in %.1fs" % elapsed)
        out = os.path.join(self.tmp, "out")
        with open(os.path.join(out, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 8)
        self.assertEqual(sorted({(r["gpus"], r["seed"]) for r in rows}),
                         [("16", "1"), ("16", "2"), ("4", "1"), ("4", "2")])
        self.assertEqual(sorted({r["size_bytes"] for r in rows}),
                         ["65536", "8192"])
        for r in rows:
            self.assertEqual(r["platform"], "dgx2")
            self.assertEqual(int(r["wrong"]), 0, r)
            self.assertGreater(float(r["time_us"]), 0, r)
            if r["bound_fraction"]:
                self.assertLessEqual(float(r["bound_fraction"]), 1.0001, r)
        first = read(os.path.join(out, "results.csv"))

        # resume does nothing; a lost point comes back byte for byte
        p = self.sweep("run", c, "-j", "2", incsim=INCSIM, check=0)
        self.assertIn("4 of 4 points already done", p.stderr)
        res = [f for f in glob.glob(os.path.join(out, "points", "*.json"))
               if len(os.path.basename(f)) == 21]
        self.assertEqual(len(res), 4)
        keep = read(res[0], "rb")
        os.remove(res[0])
        self.sweep("run", c, incsim=INCSIM, check=0, timeout=200)
        self.assertEqual(read(res[0], "rb"), keep)
        self.assertEqual(read(os.path.join(out, "results.csv")), first)

        # what incsim says of its columns reaches the sidecar
        with open(os.path.join(out, "results.columns.json")) as f:
            side = json.load(f)
        kinds = {c["name"]: c["kind"] for c in side["columns"]}
        self.assertEqual(kinds["gpus"], "setting")
        self.assertEqual(kinds["size_bytes"], "setting")
        for m in ("time_us", "busbw_GBps", "bound_fraction", "wrong"):
            self.assertEqual(kinds[m], "measurement", m)
        self.assertEqual(len(side["incsim"]), 1, side["incsim"])
        self.assertRegex(side["incsim"][0]["version"], r"^\d+\.\d+")

        png = os.path.join(self.tmp, "bw.png")
        p = self.plot(os.path.join(out, "results.csv"), "--kind", "bw",
                      "-o", png)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(png, "rb")[:4], b"\x89PNG")

    def test_bad_parameter_is_caught_before_running(self):
        c = self.write("c.yaml", CAMPAIGN.replace(
            "  gpus: [4, 16]", "  gpus: [4, 16]\n  no.such.param: [1]"))
        p = self.sweep("run", c, incsim=INCSIM)
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"^sweep: error: incsim rejects point "
                         r"[0-9a-f]{16} \(.*no.such.param=1.*\).*: incsim: "
                         r"error: .*'no.such.param'")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out",
                                                     "points")))

    def test_precheck_uses_the_campaigns_settings(self):
        # issue 13: push on a star with a reduction-table size is valid
        ok = cmod.Campaign({"fixed": {
            "platform": "star", "collective": "allreduce",
            "algorithm": "push", "sizes": "8K",
            "switch.reduction_table.bytes": 4096}}, self.write("a.yaml", ""))
        self.assertTrue(pmod.check_campaign(ok, INCSIM))
        typo = cmod.Campaign({"fixed": {
            "platform": "star", "collective": "allreduce",
            "algorithm": "ring", "sizes": "8K", "switch.latency": 100}},
            self.write("b.yaml", ""))
        with self.assertRaisesRegex(
                cmod.CampaignError, r"\(platform=star .*switch.latency=100"
                r".*\): incsim: error: unknown key 'switch.latency'; did "
                r"you mean 'switch.latency_ns'\?"):
            pmod.check_campaign(typo, INCSIM)

    def test_example_campaigns_are_valid(self):
        files = glob.glob(os.path.join(SCRIPTS, "campaigns", "*.yaml"))
        self.assertTrue(files)
        for f in files:
            c = cmod.load(f)
            self.assertLessEqual(len(c.points()), c.max_points, f)
            # The pre-check elaborates each platform (a 256-node torus takes 2.6 s
            # here, over a minute under the sanitizers).
            pmod.check_campaign(c, INCSIM, timeout=60 * TIMEOUT_SCALE)


if __name__ == "__main__":
    unittest.main()
