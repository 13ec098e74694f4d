"""The examples in README.md and docs/*.md against the real simulator:
every `$ build/incsim ...` command runs, and prints what the file shows
(scripts/gen-examples --check; run scripts/gen-examples to rewrite the
outputs after a change that alters them). Skipped (with the reason) when
there is no simulator binary."""

import os
import subprocess
import time
import unittest

from common import PYTHON, SCRIPTS, SKIP_MARK, real_incsim

INCSIM = real_incsim()


@unittest.skipIf(INCSIM is None, "%s: no simulator at $INCSIM or "
                 "build/incsim (build it first)" % SKIP_MARK)
class Examples(unittest.TestCase):
    def test_examples_print_what_the_docs_show(self):
        t0 = time.monotonic()
        p = subprocess.run([PYTHON, os.path.join(SCRIPTS, "gen-examples"),
                            "--check", "--incsim", INCSIM],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        print("\nexamples: %.1f s\n%s" % (time.monotonic() - t0, p.stderr))
        self.assertEqual(p.returncode, 0, "run scripts/gen-examples if the "
                         "change is meant:\n" + p.stdout)
