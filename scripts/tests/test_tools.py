"""The small tools around the simulator: sweep's help, demo.sh's output
paths, plot's axes, facets, legends and line styles, the papers' reference
numbers and the figure scripts that read them. No simulator needed."""

import contextlib
import glob
import io
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


# A campaign CSV without a sidecar: the columns left of size_bytes are the
# points' settings. gpus follows platform (star has 8, dgx2 16); star comes
# first, so the CSV's order is not the alphabet's.
HEADER = ("point,platform,algorithm,gpus,seed,ring.channels,size_bytes,count,"
          "time_us,algbw_GBps,busbw_GBps,bound_us,bound_fraction")
SIZES = (8192, 1048576)


def time_us(platform, algorithm, channels, seed, size):
    return (size / 1e4 * (1 + 1.0 / channels) + seed * 0.1 +
            (2 if platform == "star" else 1) + (algorithm == "tree"))


def swept_csv():
    lines = [HEADER]
    for platform, gpus in (("star", 8), ("dgx2", 16)):
        for algorithm in ("ring", "tree"):
            for ch in (1, 2, 4, 8):
                for seed in (1, 2):
                    for size in SIZES:
                        t = time_us(platform, algorithm, ch, seed, size)
                        lines.append("p,%s,%s,%d,%d,%d,%d,%d,%g,%g,%g,%g,%g"
                                     % (platform, algorithm, gpus, seed, ch,
                                        size, size // 4, t, size / t / 1e3,
                                        2 * size / t / 1e3, size / 2e4,
                                        size / 2e4 / t))
    return "\n".join(lines) + "\n"


def series_csv(n):
    """n series (column k) over three sizes."""
    lines = ["platform,k,size_bytes,time_us,algbw_GBps,busbw_GBps,bound_us"]
    for k in range(n):
        for size in (8192, 65536, 1048576):
            t = 5 + size / 1e4 * (1 + k / n)
            lines.append("dgx2,%d,%d,%g,%g,%g,%g" % (
                k, size, t, size / t / 1e3, 2 * size / t / 1e3, size / 2e4))
    return "\n".join(lines) + "\n"


class PlotAxes(TempDirCase):
    def draw(self, data, *args):
        """The figure of `plot data args`, drawn in this process."""
        a = pmod.parser().parse_args([data] + list(args))
        rows, meta = pmod.read_csv(data)
        rows = pmod._filter(rows, a.where)
        fig = (pmod.plot_heatmap if a.kind == "heatmap"
               else pmod.plot_lines)(rows, a, meta)
        import matplotlib.pyplot as plt
        self.addCleanup(plt.close, fig)
        return fig

    def series(self, ax):
        """{label: line} of the series an axes draws."""
        return {line.get_label(): line for line in ax.get_lines()
                if not line.get_label().startswith("_") and
                line.get_label() != "analytical bound"}

    def run_main(self, *args):
        """(exit status, stderr) of plot's main in this process."""
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = pmod.main(list(args))
        return status, err.getvalue()

    def test_a_parameter_on_the_x_axis(self):
        data = self.write("r.csv", swept_csv())
        out = os.path.join(self.tmp, "x.png")
        p = self.plot(data, "--kind", "time", "--x", "ring.channels", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(out, "rb")[:8], b"\x89PNG\r\n\x1a\n")
        # numbers: one point per value, at the largest size, seeds averaged;
        # powers of two on a log axis
        ax = self.draw(data, "--kind", "time", "--x", "ring.channels",
                       "--where", "platform=star", "--no-bound").axes[0]
        lines = self.series(ax)
        self.assertEqual(sorted(lines), ["ring", "tree"])
        self.assertEqual(list(lines["ring"].get_xdata()), [1, 2, 4, 8])
        want = [(time_us("star", "ring", ch, 1, SIZES[-1]) +
                 time_us("star", "ring", ch, 2, SIZES[-1])) / 2
                for ch in (1, 2, 4, 8)]
        for got, w in zip(lines["ring"].get_ydata(), want):
            self.assertAlmostEqual(got, w, places=3)
        self.assertEqual(ax.get_xscale(), "log")
        self.assertIn("at 1M", ax.get_title())
        # --size picks another size (time is linear in the seed: 1.5 is the
        # mean of seeds 1 and 2)
        ax = self.draw(data, "--kind", "time", "--x", "ring.channels",
                       "--size", "8K", "--where", "platform=star").axes[0]
        self.assertAlmostEqual(self.series(ax)["ring"].get_ydata()[0],
                               time_us("star", "ring", 1, 1.5, 8192), places=3)
        # words: ticks in the CSV's order; gpus, which follows platform,
        # makes no series of its own
        for kind in ("bw", "time", "speedup"):
            ax = self.draw(data, "--kind", kind, "--x", "platform",
                           "--where", "ring.channels=4").axes[0]
            self.assertEqual([t.get_text() for t in ax.get_xticklabels()],
                             ["star", "dgx2"], kind)
            self.assertEqual(sorted(self.series(ax)),
                             ["tree"] if kind == "speedup" else
                             ["ring", "tree"], kind)
            self.assertEqual(list(self.series(ax)["tree"].get_xdata()),
                             [0, 1], kind)
            # the bound at each point
            (bound,) = [line for line in ax.get_lines()
                        if line.get_label() == "analytical bound"]
            self.assertEqual(list(bound.get_xdata()), [0, 1], kind)

    def test_one_panel_per_facet_on_shared_axes(self):
        data = self.write("r.csv", swept_csv())
        fig = self.draw(data, "--x", "ring.channels", "--facet", "platform")
        self.assertEqual([ax.get_title() for ax in fig.axes],
                         ["platform=star", "platform=dgx2"])
        a, b = fig.axes
        self.assertTrue(a.get_shared_y_axes().joined(a, b))
        self.assertTrue(a.get_shared_x_axes().joined(a, b))
        for ax in fig.axes:
            self.assertEqual(sorted(self.series(ax)), ["ring", "tree"])
        # five facets: a 3x2 grid, the empty sixth cell removed, the panel
        # above it with its x tick labels; one legend for all
        fig = self.draw(self.write("s.csv", series_csv(5)), "--facet", "k")
        self.assertEqual(len(fig.axes), 5)
        self.assertEqual(len(fig.legends), 1)
        fig.canvas.draw()
        self.assertEqual([any(t.get_visible() and t.get_text()
                              for t in ax.get_xticklabels())
                          for ax in fig.axes], [False, False, True, True, True])

    def legend_clear_of_the_axes(self, fig):
        r = fig.canvas.get_renderer()
        (leg,) = fig.legends
        box = leg.get_window_extent(r)
        for ax in fig.axes:
            self.assertFalse(box.overlaps(ax.get_tightbbox(r)))
        self.assertTrue(box.x0 >= fig.bbox.x0 and box.x1 <= fig.bbox.x1 and
                        box.y0 >= fig.bbox.y0 and box.y1 <= fig.bbox.y1)
        return box, fig.axes[0].get_tightbbox(r)

    def test_many_series_have_a_legend_outside_and_styles_of_their_own(self):
        box, ax = self.legend_clear_of_the_axes(
            self.draw(self.write("s12.csv", series_csv(12))))
        self.assertGreater(box.x0, ax.x1)               # to the right
        fig = self.draw(self.write("s40.csv", series_csv(40)))
        box, ax = self.legend_clear_of_the_axes(fig)
        self.assertLess(box.y1, ax.y0)                  # too tall: below
        from matplotlib.colors import to_hex
        lines = self.series(fig.axes[0])
        self.assertEqual(len(lines), 40)
        styles = {(to_hex(line.get_color()), str(line.get_linestyle()),
                   line.get_marker()) for line in lines.values()}
        self.assertEqual(len(styles), 40)
        # in the series' order, the first ten as matplotlib's own cycle
        self.assertEqual(list(lines), ["k=%d" % i for i in range(40)])
        self.assertEqual(to_hex(lines["k=3"].get_color()), "#d62728")

    def test_heatmap_with_a_column_that_follows_an_axis(self):
        data = self.write("r.csv", swept_csv())
        out = os.path.join(self.tmp, "h.png")
        status, err = self.run_main(data, "--kind", "heatmap", "--x",
                                    "platform", "--y", "algorithm", "--where",
                                    "ring.channels=2", "-o", out)
        self.assertEqual(status, 0, err)
        self.assertTrue(os.path.exists(out))
        # a column that varies on its own still needs --where
        status, err = self.run_main(data, "--kind", "heatmap", "--x",
                                    "platform", "--y", "algorithm", "-o", out)
        self.assertEqual(status, 2)
        self.assertEqual(err, "plot: error: column(s) ring.channels vary too; "
                         "pick values with --where COL=VALUE\n")

    def test_bad_axes_are_one_sentence(self):
        data = self.write("r.csv", swept_csv())
        out = os.path.join(self.tmp, "b.png")
        settings = ("platform, algorithm, gpus, seed, ring.channels, "
                    "size_bytes, count")
        for args, msg in (
                (["--x", "nosuch"], "--x: 'nosuch' is not a setting column "
                 "(settings: %s)" % settings),
                (["--x", "time_us"], "--x: 'time_us' is not a setting"),
                (["--facet", "nosuch"], "--facet: 'nosuch' is not a setting"),
                (["--x", "platform", "--facet", "platform"],
                 "--facet and --x are both 'platform'"),
                (["--facet", "size_bytes"],
                 "--facet and --x are both 'size_bytes'"),
                (["--kind", "heatmap", "--facet", "platform"],
                 "--facet is for the line plots"),
                (["--x", "platform", "--size", "3Q"], "--size: '3Q' is not"),
                (["--x", "platform", "--size", "64K"], "no rows of size 64K"),
                (["--kind", "speedup", "--x", "algorithm"],
                 "the baseline column 'algorithm' must make the series"),
                (["--x", "platform", "--reference", data],
                 "--reference gives numbers at message sizes"),
                (["--kind", "heatmap", "--x", "platform", "--y", "algorithm",
                  "--where", "ring.channels=2", "--metric", "nosuch"],
                 "--metric must be one of")):
            status, err = self.run_main(data, "-o", out, *args)
            self.assertEqual(status, 2, args)
            self.assertTrue(err.startswith("plot: error: " + msg), err)
            self.assertEqual(err.count("\n"), 1, err)
        status, err = self.run_main(self.write("s.csv", series_csv(2)),
                                    "--kind", "heatmap", "-o", out)
        self.assertEqual(err, "plot: error: --metric bound_fraction: the CSV "
                         "has no column 'bound_fraction'\n")
        self.assertFalse(os.path.exists(out))
