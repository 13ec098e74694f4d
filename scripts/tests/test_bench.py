"""incsim-bench's command line: --help, the named workloads (one line
each, each in a process of its own) and an unknown name. Skipped (with the
reason) when there is no incsim-bench binary."""

import os
import subprocess
import unittest

from common import REPO, SKIP_MARK

BENCH = os.environ.get("INCSIM_BENCH") or os.path.join(REPO, "build",
                                                       "incsim-bench")
NAMES = ["dgx2-ring", "dgx2-push", "fattree2l-push", "torus-multitree-msg",
         "multigpu-pnetreduce"]


def bench(*args, timeout=60):
    return subprocess.run([BENCH] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


@unittest.skipIf(not os.access(BENCH, os.X_OK),
                 "%s: no incsim-bench at $INCSIM_BENCH or build/" % SKIP_MARK)
class Bench(unittest.TestCase):
    def test_help_lists_the_workloads_and_runs_nothing(self):
        p = bench("--help", timeout=5)
        self.assertEqual(p.returncode, 0, p.stderr)
        for n in NAMES:
            self.assertIn(n, p.stdout)
        self.assertEqual(p.stderr, "")

    def test_an_unknown_workload_is_one_sentence(self):
        p = bench("dgx2-rign")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr.count("\n"), 1)
        self.assertTrue(p.stderr.startswith(
            "incsim-bench: error: unknown workload 'dgx2-rign'"), p.stderr)

    def test_named_workloads_print_one_line_each(self):
        p = bench("dgx2-ring", "dgx2-push", "--sizes", "8K")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 3, p.stdout)
        self.assertIn("hops", lines[0])
        for line, name in zip(lines[1:], ["dgx2-ring", "dgx2-push"]):
            f = line.split()
            self.assertEqual(f[0], name)
            self.assertGreater(int(f[1]), 0)   # packet-hops
            self.assertEqual(f[-1], "0")       # #wrong


if __name__ == "__main__":
    unittest.main()
