"""Helpers shared by the campaign-tool tests."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)
REPO = os.path.dirname(SCRIPTS)
SWEEP = os.path.join(SCRIPTS, "sweep")
PLOT = os.path.join(SCRIPTS, "plot")
FAKE = os.path.join(HERE, "fake_incsim.py")
PYTHON = "/usr/bin/python3"
# ctest's SKIP_REGULAR_EXPRESSION for tests that cannot run here.
SKIP_MARK = "INCSIM" + "-SKIP"

sys.path.insert(0, SCRIPTS)


def real_incsim():
    """The simulator binary ($INCSIM, else build/incsim), or None."""
    path = os.environ.get("INCSIM") or os.path.join(REPO, "build", "incsim")
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return os.path.abspath(path)
    return None


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="incsim-campaign-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def sweep(self, *args, incsim=FAKE, env=None, timeout=120, check=None):
        e = dict(os.environ)
        e["INCSIM"] = incsim
        e.update(env or {})
        proc = subprocess.run([PYTHON, SWEEP] + list(args), env=e,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout)
        self.assertNotIn("Traceback", proc.stderr, proc.stderr)
        if check is not None:
            self.assertEqual(proc.returncode, check,
                             "sweep %s: %s" % (" ".join(args), proc.stderr))
        return proc

    def plot(self, *args):
        proc = subprocess.run([PYTHON, PLOT] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120)
        self.assertNotIn("Traceback", proc.stderr, proc.stderr)
        return proc


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()
