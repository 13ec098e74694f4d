"""The small tools around the simulator: sweep's help, demo.sh's output
paths, plot's log axis, the papers' reference numbers and the figure
scripts that read them. No simulator needed."""

import glob
import os
import shutil
import stat
import subprocess

from common import PYTHON, REPO, SCRIPTS, TempDirCase, read
from incsim_campaign import figures as fmod
from incsim_campaign import plot as pmod


class Tools(TempDirCase):
    def test_sweep_help_names_every_command(self):
        p = self.sweep("--help", check=0)
        self.assertNotIn("SUPPRESS", p.stdout)
        for cmd in ("run", "slurm", "collect", "list", "task"):
            self.assertIn("    %s " % cmd, p.stdout)

    def test_demo_writes_relative_paths_in_the_callers_folder(self):
        # A copy of the repository's layout whose setup and build do
        # nothing and whose simulator writes the --json file it is given.
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(repo, "scripts"))
        os.makedirs(os.path.join(repo, "build"))
        shutil.copy(os.path.join(SCRIPTS, "demo.sh"), os.path.join(repo, "scripts"))
        for s in ("setup.sh", "build.sh"):
            self.write(os.path.join("repo", "scripts", s), "")
        fake = self.write(os.path.join("repo", "build", "incsim"),
                          '#!/bin/sh\nwhile [ $# -gt 0 ]; do\n'
                          '  [ "$1" = --json ] && echo "{}" > "$2"; shift\ndone\n')
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        here = os.path.join(self.tmp, "here")
        os.makedirs(here)
        p = subprocess.run(["sh", os.path.join(repo, "scripts", "demo.sh"),
                            "--json", "results.json"], cwd=here,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(here, "results.json")))
        self.assertFalse(os.path.exists(os.path.join(repo, "results.json")))

    def test_plot_takes_a_log_axis_for_a_wide_range(self):
        self.assertTrue(pmod.wide_range([2, 620]))
        self.assertFalse(pmod.wide_range([0.5, 20, 0, None]))
        data = self.write("r.csv", "platform,algorithm,size_bytes,time_us,"
                          "algbw_GBps,busbw_GBps,bound_us\n"
                          "dgx2,ring,8192,38,0.2,0.4,0.06\n"
                          "dgx2,ring,67108864,600,110,200,550\n")
        for extra, scale in (([], "log"), (["--liny"], "linear")):
            args = pmod.parser().parse_args([data, "--kind", "bw"] + extra)
            ax = pmod.plot_lines(pmod.read_csv(data)[0], args).axes[0]
            self.assertEqual(ax.get_yscale(), scale, extra)

    def test_every_reference_number_has_a_source_and_a_reader(self):
        paths = glob.glob(os.path.join(SCRIPTS, "figures", "reference", "*.csv"))
        self.assertTrue(paths)
        for path in paths:
            rows = pmod.read_reference(path)   # refuses a row without a source
            self.assertTrue(rows, path)
        for paper in ("klenk", "blink", "multitree", "netreduce"):
            self.assertTrue(fmod.paper(paper))
        # Each paper's numbers are read by its figure script.
        for script in glob.glob(os.path.join(SCRIPTS, "figures", "*-plot.py")):
            name = os.path.basename(script).split("-")[0]
            self.assertIn('paper("%s")' % name, read(script), script)
            p = subprocess.run([PYTHON, script, "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True,
                               timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_training_figures_draw_from_a_campaign_csv(self):
        # plot-training.py on a two-point CSV per paper: each writes its
        # PNG and summary, and a row with wrong elements makes it exit 1.
        head = "point,platform,algorithm,model,batch,compute,gpus,train.overlap,time_us,compute_us,comm_us,exposed_us,wrong\n"
        points = {"klenk": [("push", "resnet50", 8, "v100", 16), ("ring", "resnet50", 8, "v100", 16)],
                  "multitree": [("multitree", "ncf", 16, "systolic", 64), ("ring", "ncf", 16, "systolic", 64)],
                  "blink": [("blink", "alexnet", 128, "v100", "0,3,4"), ("ring", "alexnet", 128, "v100", "0,3,4"),
                            ("blink", "alexnet", 128, "v100", "0,1,2/0,1,2,3,4"),
                            ("ring", "alexnet", 128, "v100", "0,1,2/0,1,2,3,4")],
                  "netreduce": [("netreduce", "alexnet", 32, "v100", ""), ("ring", "alexnet", 32, "v100", "")]}
        platform = {"klenk": "dgx2", "multitree": "torus", "blink": "dgx1v", "netreduce": "rack"}
        for name, rows in points.items():
            text = head
            for i, (alg, model, batch, compute, gpus) in enumerate(rows):
                for overlap in ("false", "true"):
                    t = 100 if alg == "ring" else 80
                    text += 'p%d,%s,%s,%s,%d,%s,"%s",%s,%d,60,%d,%d,0\n' % (
                        i, platform[name], alg, model, batch, compute, gpus, overlap, t, t - 50, t - 60)
            for wrong, status in ((0, 0), (3, 1)):
                data = self.write("%s%d.csv" % (name, wrong), text if not wrong else text[:-2] + "3\n")
                out = os.path.join(self.tmp, "out%d" % wrong)
                p = subprocess.run([PYTHON, os.path.join(SCRIPTS, "figures", "plot-training.py"), name,
                                    "--csv", data, "--out", out], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
                self.assertEqual(p.returncode, status, name + p.stderr)
                for f in ("training.png", "training-summary.csv"):
                    self.assertTrue(os.path.exists(os.path.join(out, "%s-%s" % (name, f))), name + f)

    def test_a_reference_number_without_a_source_is_refused(self):
        ref = self.write("ref.csv", "key,series,column,size_bytes,value,source\n"
                         "a,paper,algbw_GBps,,120,\n")
        with self.assertRaises(pmod.PlotError):
            pmod.read_reference(ref)


    def test_fidelity_page_says_what_the_csvs_give(self):
        script = os.path.join(SCRIPTS, "figures", "fidelity.py")
        run = lambda *a: subprocess.run([PYTHON, script] + list(a), stdout=subprocess.PIPE,  # noqa: E731
                                        stderr=subprocess.PIPE, universal_newlines=True,
                                        timeout=60)
        p = run("--check")
        self.assertEqual(p.returncode, 0, p.stderr)
        # The check bites: one number of ours changed in a copy of the CSVs.
        figures = os.path.join(self.tmp, "figures")
        shutil.copytree(os.path.join(REPO, "docs", "figures"), figures)
        doc = self.write("fidelity.md", read(os.path.join(REPO, "docs", "fidelity.md")))
        path = os.path.join(figures, "netreduce-table6.csv")
        text = read(path)
        self.assertIn("92.0092", text)

        def ours(goodput):
            with open(path, "w") as f:
                f.write(text.replace("92.0092", goodput))
        ours("90.0092")
        p = run("--check", "--figures", figures, "--doc", doc)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("does not say what the CSVs give", p.stderr)
        self.assertEqual(run("--figures", figures, "--doc", doc).returncode, 0)
        self.assertIn("| 90 (NetReduce, 6 hosts, 64 MiB", read(doc))
        # A comparison pushed outside 15% with no reason given is refused.
        ours("72.0092")
        p = run("--check", "--figures", figures, "--doc", doc)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("goodput_Gbps is 0.83x the paper's with no explanation", p.stderr)

    def test_docs_tables_quote_their_csvs(self):
        script = os.path.join(SCRIPTS, "check-doc-numbers")
        run = lambda *a: subprocess.run([PYTHON, script] + list(a), stdout=subprocess.PIPE,  # noqa: E731
                                        stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        p = run()
        self.assertEqual(p.returncode, 0, p.stderr)
        # It bites: a number the CSV does not hold, at the precision quoted.
        self.write("r.csv", "size_bytes,busbw_GBps,bound_fraction\n1048576,101.04,0.7571\n")
        page = self.write("p.md", "<!-- numbers: r.csv -->\n| size | busbw |\n|---|---:|\n"
                                  "| 1 MiB | 101.0 (75.7%) | 101.04 |\n")
        self.assertEqual(run(page).returncode, 0, run(page).stderr)
        page = self.write("p.md", "<!-- numbers: r.csv -->\n| 1 MiB | 101.1 (75.7%) |\n")
        p = run(page)
        self.assertEqual(p.returncode, 1)
        self.assertIn("p.md:2: 101.1 is in none of r.csv", p.stderr)

    def test_docs_stand_alone(self):
        # README.md and docs/ are read from a clone, which has no ../shared/
        # folder and no issue tracker: neither may be named.
        import re
        pages = [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
        pattern = re.compile(r"\.\./shared|\b[Ii]ssues? #?\d+|\bstop \d+\b")
        found = []
        for page in pages:
            for n, line in enumerate(read(page).splitlines(), 1):
                if pattern.search(line):
                    found.append("%s:%d: %s" % (os.path.relpath(page, REPO), n, line.strip()))
        self.assertEqual(found, [])

    def test_test_case_names_hold_no_semicolon(self):
        # catch_discover_tests hands each TEST_CASE's name to CMake, whose
        # lists split at ';': a name with one becomes two ctest entries that
        # match no test case, and the test case itself never runs.
        import re
        found = []
        for path in sorted(glob.glob(os.path.join(REPO, "testbench", "tests", "**", "*.cpp"), recursive=True)):
            text = read(path)
            for m in re.finditer(r'TEST_CASE\(\s*((?:"[^"]*"\s*)+)', text):
                if ";" in m.group(1):
                    found.append("%s:%d" % (os.path.relpath(path, REPO), text.count("\n", 0, m.start()) + 1))
        self.assertEqual(found, [])
