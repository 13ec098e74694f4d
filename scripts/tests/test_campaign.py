"""Campaign expansion (cartesian, ranges, zipped, exclusions, seeds),
hashing and checking against --list-params, without running anything."""

import os
import re
import unittest

import common  # noqa: F401  (puts scripts/ on sys.path)
from common import FAKE, TempDirCase
from incsim_campaign import campaign as cmod
from incsim_campaign import params as pmod
from incsim_campaign.campaign import Campaign, CampaignError


def make(data, path="/tmp/x/c.yaml"):
    return Campaign(data, path)


def values(c, key):
    return [p.settings.get(key) for p in c.points()]


class Expansion(unittest.TestCase):
    def test_cartesian_order_last_axis_fastest(self):
        c = make({"fixed": {"platform": "dgx2"},
                  "axes": {"algorithm": ["ring", "tree", "rhd"],
                           "ring.channels": [6, 12]}})
        pts = c.points()
        self.assertEqual(len(pts), 6)
        self.assertEqual([(p.settings["algorithm"],
                           p.settings["ring.channels"]) for p in pts],
                         [("ring", 6), ("ring", 12), ("tree", 6),
                          ("tree", 12), ("rhd", 6), ("rhd", 12)])
        self.assertTrue(all(p.settings["platform"] == "dgx2" for p in pts))
        self.assertEqual([p.index for p in pts], list(range(6)))
        self.assertEqual(len({p.hash for p in pts}), 6)

    def test_ranges(self):
        r = cmod.expand_range
        self.assertEqual(r({"from": 8, "to": 64, "mul": 2}, "a"),
                         [8, 16, 32, 64])
        self.assertEqual(r({"from": 8, "to": 100, "mul": 2}, "a"),
                         [8, 16, 32, 64])
        self.assertEqual(r({"from": 1, "to": 7, "step": 3}, "a"), [1, 4, 7])
        self.assertEqual(r({"from": 0.5, "to": 1.5, "step": 0.25}, "a"),
                         [0.5, 0.75, 1.0, 1.25, 1.5])
        self.assertEqual(r({"from": "8K", "to": "64K", "mul": 2}, "a"),
                         ["8K", "16K", "32K", "64K"])
        self.assertEqual(r({"from": "512K", "to": "2M", "mul": 2}, "a"),
                         ["512K", "1M", "2M"])
        self.assertEqual(r({"from": 4, "to": 1, "step": -1}, "a"),
                         [4, 3, 2, 1])
        for bad in ({"from": 8, "to": 4, "step": 1},      # empty
                    {"from": 1, "to": 4, "mul": 1},
                    {"from": 0, "to": 4, "mul": 2},
                    {"from": 1, "to": 4, "step": 0},
                    {"from": 1, "to": 4},
                    {"from": 1, "to": 4, "step": 1, "mul": 2},
                    {"from": 1, "step": 1},
                    {"from": 1, "to": 4, "by": 1},
                    {"from": "x", "to": 4, "step": 1}):
            with self.assertRaises(CampaignError, msg=bad):
                r(bad, "axis 'a'")

    def test_range_axis_in_campaign(self):
        c = make({"axes": {"gpus": {"from": 2, "to": 16, "mul": 2}}})
        self.assertEqual(values(c, "gpus"), [2, 4, 8, 16])

    def test_zipped(self):
        c = make({"axes": {"gpus": [4, 8]},
                  "zip": [{"algorithm": ["ring", "tree", "push"],
                           "x.waves": [1, 2, 3]}]})
        got = [(p.settings["gpus"], p.settings["algorithm"],
                p.settings["x.waves"]) for p in c.points()]
        self.assertEqual(got, [(4, "ring", 1), (4, "tree", 2),
                               (4, "push", 3), (8, "ring", 1),
                               (8, "tree", 2), (8, "push", 3)])
        self.assertEqual(c.swept, ["gpus", "algorithm", "x.waves"])
        # a single mapping is one group too
        c = make({"zip": {"a": [1, 2], "b": [3, 4]}})
        self.assertEqual(len(c.points()), 2)

    def test_zip_lengths_must_match(self):
        with self.assertRaisesRegex(CampaignError, "different lengths"):
            make({"zip": [{"a": [1, 2], "b": [1, 2, 3]}]})

    def test_exclusions(self):
        c = make({"axes": {"algorithm": ["ring", "tree"], "gpus": [4, 8, 16]},
                  "exclude": [{"algorithm": "tree", "gpus": 4},
                              {"gpus": [16], "algorithm": ["ring"]}]})
        got = [(p.settings["algorithm"], p.settings["gpus"])
               for p in c.points()]
        self.assertEqual(got, [("ring", 4), ("ring", 8), ("tree", 8),
                               ("tree", 16)])
        # "8" in YAML text matches 8
        c = make({"axes": {"gpus": [4, 8]}, "exclude": [{"gpus": "8"}]})
        self.assertEqual(values(c, "gpus"), [4])

    def test_exclusion_errors(self):
        with self.assertRaisesRegex(CampaignError, "not a setting"):
            make({"axes": {"gpus": [4]}, "exclude": [{"gpu": 4}]})
        with self.assertRaisesRegex(CampaignError, "no points"):
            make({"axes": {"gpus": [4]},
                  "exclude": [{"gpus": 4}]}).points()

    def test_seeds(self):
        c = make({"axes": {"gpus": [4, 8]}, "seeds": 3})
        self.assertEqual(values(c, "seed"), [1, 2, 3, 1, 2, 3])
        c = make({"seeds": [7, 11]})
        self.assertEqual(values(c, "seed"), [7, 11])
        c = make({"seeds": {"from": 10, "to": 30, "step": 10}})
        self.assertEqual(values(c, "seed"), [10, 20, 30])
        for bad in (0, True, []):
            with self.assertRaises(CampaignError):
                make({"seeds": bad})
        with self.assertRaisesRegex(CampaignError, "given twice"):
            make({"fixed": {"seed": 1}, "seeds": 2})

    def test_bad_campaigns(self):
        cases = [({"axes": {"gpus": []}}, "axis 'gpus' is empty"),
                 ({"axes": {"gpus": None}}, "axis 'gpus' is empty"),
                 ({"axes": {"gpus": [4, None]}}, "null"),
                 ({"fixed": {"gpus": None}}, "fixed setting 'gpus' has no value"),
                 ({"fixed": {"gpus": 4}, "axes": {"gpus": [4]}},
                  "given twice"),
                 ({"axis": {"gpus": [4]}}, "unknown campaign key"),
                 ({"slurm": {"partitin": "x"}}, "unknown slurm key"),
                 ({"timeout": -1}, "timeout"),
                 ({"max_points": "many"}, "max_points"),
                 (["not", "a", "mapping"], "mapping")]
        for data, msg in cases:
            with self.assertRaisesRegex(CampaignError, msg, msg=repr(data)):
                make(data).points()

    def test_huge_or_non_finite_ranges_are_refused_before_expanding(self):
        r = cmod.expand_range
        cases = [({"from": 1, "to": 10 ** 12, "step": 1},
                  "axis 'x' has 1,000,000,000,000 values, more than the "
                  "100,000 a campaign may have"),
                 ({"from": 1, "to": 2, "mul": 1.0000001}, "6,931,473 values"),
                 ({"from": 0, "to": 1e10, "step": 1e-300}, "countless values"),
                 ({"from": 1, "to": float("inf"), "step": 1},
                  "inf is not a finite number"),
                 ({"from": float("-inf"), "to": 4, "mul": 2},
                  "-inf is not a finite number"),
                 ({"from": float("nan"), "to": 4, "step": 1},
                  "nan is not a finite number"),
                 ({"from": 1, "to": 4, "step": float("nan")},
                  "nan is not a finite number")]
        for spec, msg in cases:
            with self.assertRaisesRegex(CampaignError, re.escape(msg),
                                        msg=repr(spec)):
                r(spec, "axis 'x'")
        # Wide but countable: 1e-300 to 1e300 by doubling is 1994 values.
        self.assertEqual(len(r({"from": 1e-300, "to": 1e300, "mul": 2}, "x")),
                         1994)

    def test_huge_campaigns_are_refused_before_expanding(self):
        axis = {"from": 1, "to": 1000, "step": 1}
        with self.assertRaisesRegex(CampaignError, "the campaign has "
                                    "1,000,000 points"):
            make({"axes": {"a": axis, "b": axis}}).points()
        with self.assertRaisesRegex(CampaignError, "'seeds' has "
                                    "1,000,000,000,000 values"):
            make({"seeds": 10 ** 12}).points()
        for bad in (float("inf"), float("nan")):
            with self.assertRaisesRegex(CampaignError, "max_points"):
                make({"max_points": bad})

    def test_paths_relative_to_campaign_file(self):
        c = make({"output": "out/here"}, "/a/b/c.yaml")
        self.assertEqual(c.output, "/a/b/out/here")
        c = make({}, "/a/b/my-camp.yaml")
        self.assertEqual(c.name, "my-camp")
        self.assertEqual(c.output, "/a/b/results/my-camp")

    def test_list_value_is_one_run(self):
        c = make({"fixed": {"sizes": ["8K", "64K", "1M"]},
                  "axes": {"gpus": [4]}})
        argv = pmod.argv_for(c.dir, c.points()[0].settings, "incsim", "o.j")
        self.assertEqual(argv, ["incsim", "--gpus", "4", "--sizes",
                                "8K,64K,1M", "--json", "o.j", "--quiet"])

    def test_argv_flags_and_params(self):
        c = make({"fixed": {"platform": "dgx2", "collective": "allreduce",
                            "sizes": "8K:1M", "ring.channels": 6},
                  "axes": {"switch.in_network": [True]}, "seeds": [3]})
        argv = pmod.argv_for(c.dir, c.points()[0].settings, "incsim", "o.j")
        self.assertEqual(argv, [
            "incsim", "--platform", "dgx2", "--collective", "allreduce",
            "--sizes", "8K:1M", "--seed", "3", "-c", "ring.channels=6",
            "-c", "switch.in_network=true", "--json", "o.j", "--quiet"])


class Hashing(unittest.TestCase):
    def test_stable_value(self):
        # Pinned: changing the canonical form would orphan every result
        # folder users already have.
        s = {"platform": "dgx2", "algorithm": "ring", "ring.channels": 6,
             "sizes": ["8K", "1M"], "seed": 1}
        self.assertEqual(cmod.canonical_json(s),
                         '{"algorithm":"ring","platform":"dgx2",'
                         '"ring.channels":"6","seed":"1","sizes":"8K,1M"}')
        self.assertEqual(cmod.point_hash(s), "dae23cfbf323a010")
        import hashlib
        self.assertEqual(cmod.point_hash(s), hashlib.sha256(
            cmod.canonical_json(s).encode()).hexdigest()[:16])

    def test_order_and_spelling_do_not_matter(self):
        a = {"ring.channels": 6, "platform": "dgx2", "x": 0.5, "b": True}
        b = {"platform": "dgx2", "b": True, "x": 0.5, "ring.channels": "6"}
        c = {"platform": "dgx2", "ring.channels": 6.0, "x": "0.5",
             "b": "true"}
        self.assertEqual(cmod.point_hash(a), cmod.point_hash(b))
        self.assertEqual(cmod.point_hash(a), cmod.point_hash(c))

    def test_any_change_changes_it(self):
        base = {"platform": "dgx2", "ring.channels": 6, "seed": 1}
        h = cmod.point_hash(base)
        for k, v in (("ring.channels", 12), ("seed", 2), ("platform", "star"),
                     ("gpus", 4)):
            other = dict(base)
            other[k] = v
            self.assertNotEqual(cmod.point_hash(other), h, k)

    def test_same_point_same_hash_across_campaigns(self):
        a = make({"fixed": {"platform": "dgx2"}, "axes": {"gpus": [4, 8]}})
        b = make({"axes": {"gpus": [8, 16], "platform": ["dgx2"]}},
                 "/elsewhere/other.yaml")
        self.assertEqual(a.points()[1].hash, b.points()[0].hash)


class FileDigests(TempDirCase):
    def test_config_file_contents_are_hashed(self):
        self.write("cfg.yaml", "a: 1\n")
        path = self.write("c.yaml", "fixed: {config: cfg.yaml}\n")
        h1 = cmod.load(path).points()[0].hash
        self.write("cfg.yaml", "a: 2\n")
        h2 = cmod.load(path).points()[0].hash
        self.assertNotEqual(h1, h2)
        c = cmod.load(path)
        argv = pmod.argv_for(c.dir, c.points()[0].settings, "i", "j")
        self.assertEqual(argv[1:3], ["--config",
                                     os.path.join(self.tmp, "cfg.yaml")])

    def test_a_setting_without_a_value_names_the_file_line_and_key(self):
        # {sizes: 1M,4M} is YAML for sizes: 1M and 4M: null.
        path = self.write("c.yaml", "name: x\nfixed: {platform: star,\n        sizes: 1M,4M}\n")
        with self.assertRaisesRegex(CampaignError, r"c\.yaml, line 3: fixed setting '4M' has no value; in a "
                                    r"\{\.\.\.\} mapping a comma starts the next key"):
            cmod.load(path)

    def test_yaml_errors_are_one_line(self):
        path = self.write("c.yaml", "axes: [unclosed\n")
        with self.assertRaisesRegex(CampaignError, "not valid YAML"):
            cmod.load(path)
        with self.assertRaisesRegex(CampaignError, "cannot read"):
            cmod.load(os.path.join(self.tmp, "missing.yaml"))


class ParamCheck(unittest.TestCase):
    def test_list_params(self):
        known = pmod.list_params(FAKE, {"platform": "dgx2",
                                        "ring.channels": 6})
        self.assertEqual(known["ring.channels"],
                         ("int", "6", "12", "-c",
                          "channels of the ring algorithm"))
        self.assertEqual(known["link.bandwidth_GBps"][3], "default")

    def test_unknown_and_mistyped(self):
        ok = make({"fixed": {"platform": "dgx2"},
                   "axes": {"ring.channels": [6, 12], "gpus": [4]}})
        self.assertTrue(pmod.check_campaign(ok, FAKE))
        bad = make({"fixed": {"platform": "dgx2"},
                    "axes": {"ring.chanels": [6]}})
        with self.assertRaisesRegex(
                CampaignError, r"^incsim rejects point [0-9a-f]{16} "
                r"\(platform=dgx2 ring.chanels=6\): incsim: error: unknown "
                r"key 'ring.chanels'; did you mean 'ring.channels'\?$"):
            pmod.check_campaign(bad, FAKE)
        # incsim checks the values' types now
        typed = make({"fixed": {"platform": "dgx2"},
                      "axes": {"ring.channels": [6, "six"]}})
        with self.assertRaisesRegex(CampaignError,
                                    r"\(platform=dgx2 ring.channels=six\): "
                                    "incsim: error: bad value 'six'"):
            pmod.check_campaign(typed, FAKE)
        unknown_fixed = make({"axes": {"gpus": [4, 8]},
                              "fixed": {"bogus.key": 1}})
        with self.assertRaisesRegex(CampaignError, "bogus.key"):
            pmod.check_campaign(unknown_fixed, FAKE)
        # flag values are incsim's to check too
        flag = make({"fixed": {"platform": "dgx3"}})
        with self.assertRaisesRegex(CampaignError,
                                    "incsim: error: unknown platform 'dgx3'"):
            pmod.check_campaign(flag, FAKE)

    def test_params_of_one_algorithm(self):
        # a parameter only tree runs read passes for tree points, not for
        # ring ones
        self.assertIn("tree.arity", pmod.list_params(
            FAKE, {"platform": "dgx2", "algorithm": "tree"}))
        self.assertNotIn("tree.arity", pmod.list_params(
            FAKE, {"platform": "dgx2"}))
        ok = make({"fixed": {"platform": "dgx2", "algorithm": "tree"},
                   "axes": {"tree.arity": [2, 4]}})
        self.assertTrue(pmod.check_campaign(ok, FAKE))
        bad = make({"fixed": {"platform": "dgx2", "tree.arity": 2},
                    "axes": {"algorithm": ["tree", "ring"]}})
        with self.assertRaisesRegex(CampaignError,
                                    "algorithm=ring\\): .*'tree.arity' is not "
                                    "read by this run"):
            pmod.check_campaign(bad, FAKE)

    def test_push_on_star_with_reduction_table(self):
        # issue 13: the pre-check asked incsim without the campaign's
        # settings and rejected this valid campaign
        ok = make({"fixed": {"platform": "star", "collective": "allreduce",
                             "algorithm": "push", "sizes": "8K:1M",
                             "switch.reduction_table.bytes": 4096},
                   "axes": {"gpus": [4, 8]}, "seeds": 2})
        self.assertTrue(pmod.check_campaign(ok, FAKE))
        # ... and the key is still refused where the run does not read it
        ring = make({"fixed": {"platform": "star", "algorithm": "ring",
                               "switch.reduction_table.bytes": 4096}})
        with self.assertRaisesRegex(
                CampaignError, "incsim: error: key "
                "'switch.reduction_table.bytes' is not read by this run"):
            pmod.check_campaign(ring, FAKE)
        typo = make({"fixed": {"platform": "star", "algorithm": "push",
                               "switch.latency": 100}})
        with self.assertRaisesRegex(
                CampaignError, "incsim: error: unknown key 'switch.latency'; "
                "did you mean 'switch.latency_ns'\\?"):
            pmod.check_campaign(typo, FAKE)

    def test_check_asks_once_per_setting_combination(self):
        c = make({"fixed": {"platform": "star", "algorithm": "push"},
                  "axes": {"sizes": ["8K", "1M"], "gpus": [4, 8, 16],
                           "switch.reduction_table.bytes": [4096, 8192]},
                  "seeds": 5})
        self.assertEqual(len(c.points()), 60)
        groups = pmod.check_groups(c)
        self.assertEqual(len(groups), 6)
        self.assertEqual(sum(n for _, n in groups), 60)
        self.assertEqual([p.index for p, _ in groups],
                         [0, 5, 10, 15, 20, 25])
        self.assertEqual(pmod.list_params_argv(
            "incsim", groups[0][0].settings, c.dir),
            ["incsim", "--platform", "star", "--algorithm", "push",
             "--gpus", "4", "--sizes", "8K", "--seed", "1",
             "-c", "switch.reduction_table.bytes=4096", "--list-params"])
        self.assertTrue(pmod.check_campaign(c, FAKE, jobs=3))
        # in parallel, the error reported is still the first point's
        bad = make({"axes": {"platform": ["star", "dgx2"],
                             "algorithm": ["ring", "push", "tree"],
                             "ring.chanels": [1, 2]}})
        with self.assertRaisesRegex(CampaignError,
                                    "point %s " % bad.points()[0].hash):
            pmod.check_campaign(bad, FAKE, jobs=4)

    def test_missing_binary(self):
        with self.assertRaisesRegex(CampaignError, "simulator not found"):
            pmod.list_params("/nonexistent/incsim")
        with self.assertRaisesRegex(CampaignError, "simulator not found"):
            pmod.check_campaign(make({}), "/nonexistent/incsim")

    def test_error_line(self):
        self.assertEqual(pmod.error_line(
            "progress\nincsim: error: bad thing\nmore\n", 2),
            "incsim: error: bad thing")
        self.assertEqual(pmod.error_line("just this\n", 1), "just this")
        self.assertEqual(pmod.error_line("", -11), "killed by signal SIGSEGV")
        self.assertEqual(pmod.error_line("", 3), "exit status 3")


if __name__ == "__main__":
    unittest.main()
