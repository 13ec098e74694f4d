"""scripts/hardware-validation.py on one small table: it runs incsim on the
table's machine and writes each size's error against the measured time,
and a table name it does not know is one sentence."""

import csv
import os
import subprocess
import unittest

from common import PYTHON, SCRIPTS, SKIP_MARK, TempDirCase, real_incsim

INCSIM = real_incsim()
SCRIPT = os.path.join(SCRIPTS, "hardware-validation.py")
TABLE = "a100_8gpu_allreduce_default_mpi8_thanos"


@unittest.skipIf(INCSIM is None, "%s: no simulator at $INCSIM or build/incsim (build it first)" % SKIP_MARK)
class Hardware(TempDirCase):
    def run_script(self, *args):
        return subprocess.run([PYTHON, SCRIPT, "--incsim", INCSIM, "--out", self.tmp] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)

    def test_one_table_at_two_sizes(self):
        p = self.run_script("--tables", TABLE, "--sizes", "8K,1M", "--no-plot")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.tmp, "hardware-validation.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([int(r["size_bytes"]) for r in rows], [8192, 1048576])
        # The table's own times (docs/measurements), and the error as incsim / measured - 1.
        self.assertEqual([r["measured_us"] for r in rows], ["25.84", "37.89"])
        for r in rows:
            self.assertAlmostEqual(float(r["error"]), float(r["incsim_us"]) / float(r["measured_us"]) - 1, places=3)
            self.assertTrue(r["choice"].startswith("ring ll"), r["choice"])
        self.assertIn("| %s | 8x A100 SXM4, mpirun -np 8 |" % TABLE, p.stdout)

    def test_sizes_above_packet_level_run_as_flows_of_their_own_choice(self):
        p = self.run_script("--tables", TABLE, "--sizes", "8K,1M,32M", "--packet-max", "8K", "--no-plot")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.tmp, "hardware-validation.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["fidelity"] for r in rows], ["packet", "flow", "flow"])
        # NCCL's choice per size, as flows too: LL's ring at 1 MiB, Simple's at 32 MiB on A100.
        self.assertTrue(rows[1]["choice"].startswith("ring ll,"), rows[1]["choice"])
        self.assertTrue(rows[2]["choice"].startswith("ring simple,"), rows[2]["choice"])
        self.assertIn("above 8192 B as flows; flows at 8192 B: ", p.stdout)

    def test_an_unknown_table_is_one_sentence(self):
        p = self.run_script("--tables", "h100_8gpu")
        self.assertNotEqual(p.returncode, 0)
        self.assertTrue(p.stderr.startswith("hardware-validation: unknown table 'h100_8gpu'; the tables are "),
                        p.stderr)
        self.assertNotIn("Traceback", p.stderr)


if __name__ == "__main__":
    unittest.main()
