// Platforms through the real binary: built-ins' shapes and defaults,
// YAML platform files, --dump-platform and its reload, the examples.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"

#ifndef PLATFORM_EXAMPLES
#error "CMake passes the folder of the example platform files as PLATFORM_EXAMPLES"
#endif

using namespace cli;

TEST_CASE("torus, mesh, fattree and bigraph run from flags and from a config file", "[cli][platform]") {
  for (const char* args : {"--platform torus --dims 2x4", "--platform mesh --dims 3x2", "--platform fattree --nodes 4",
                           "--platform bigraph --dims 1x4", "--platform torus --dims 4x4 --gpus 5"}) {
    INFO(args);
    const Result r = incsim(std::string(args) + " --sizes 8K,64K --quiet");
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK_THAT(r.out, Catch::Contains("65536"));
  }
  TempDir d;
  const std::string cfg = d.write("torus.yaml", "platform: torus\ndims: 2x4\nsizes: 8K\n");
  const Result r = incsim("--config " + cfg + " --quiet --json " + d.file("r.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("on 8 of 8 GPUs, platform torus (8 switches"));
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  CHECK(j["config"]["dims"] == "2x4");
  const std::string cfg2 = d.write("ft.yaml", "platform: fattree\nnodes: 4\nsizes: 8K\n");
  const Result r2 = incsim("--config " + cfg2 + " --quiet");
  INFO(r2.err);
  REQUIRE(r2.code == 0);
  CHECK_THAT(r2.out, Catch::Contains("on 4 of 4 GPUs, platform fattree"));
}

TEST_CASE("link, switch and payload defaults follow the platform", "[cli][platform]") {
  // {link.bw_GBps, link.latency_ns, switch.latency_ns, net.max_payload_bytes}:
  // Klenk §V on the NVSwitch platforms, MultiTree Table III on its networks.
  const std::map<std::string, std::vector<std::string>> want = {
      {"dgx2", {"25", "0", "150", "128"}},     {"fattree2l", {"25", "0", "150", "128"}},
      {"star", {"25", "0", "150", "128"}},     {"torus", {"16", "150", "4", "256"}},
      {"mesh", {"16", "150", "4", "256"}},     {"fattree", {"16", "150", "4", "256"}},
      {"bigraph", {"16", "150", "4", "256"}}, {"hgx-h100", {"25", "0", "150", "128"}},
      {"nvl72", {"50", "0", "150", "128"}},    {"hgx-a100", {"25", "0", "150", "128"}},
      {"hgx-b200", {"50", "0", "150", "128"}}};
  for (const auto& [platform, values] : want) {
    INFO(platform);
    const Result r = incsim("--list-params --platform " + platform);
    REQUIRE(r.code == 0);
    std::map<std::string, std::string> def;
    for (const auto& l : lines(r.out)) {
      std::vector<std::string> f;
      std::istringstream is(l);
      for (std::string x; std::getline(is, x, '\t');) f.push_back(x);
      if (f.size() == 6) def[f[0]] = f[3];
    }
    CHECK(def["link.bw_GBps"] == values[0]);
    CHECK(def["link.latency_ns"] == values[1]);
    CHECK(def["switch.latency_ns"] == values[2]);
    CHECK(def["net.max_payload_bytes"] == values[3]);
  }
}

TEST_CASE("dump-platform writes a YAML topology that runs the same", "[cli][platform]") {
  TempDir d;
  const std::string yaml = d.file("dgx2.yaml");
  const Result dump = incsim("--platform dgx2 --dump-platform '" + yaml + "'");
  REQUIRE(dump.code == 0);
  CHECK_THAT(slurp(yaml), Catch::Contains("{a: sw0.8, b: sw6.8, bw_GBps: 25, latency_ns: 0}"));
}

// Issue 13: a platform file carries all a built-in platform is (its family's
// defaults, a grid's dimension-order routing, the VC policy and datelines, a
// DGX-1's generation and servers), so running from the dump gives the
// built-in's rows, and dumping the reload writes the same file again.
TEST_CASE("every built-in platform dumped and reloaded gives the same rows, and the dump is a fixpoint",
          "[cli][platform]") {
  // The platform with its shape, and the run options.
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"--platform dgx2", "--sizes 16K"},
      {"--platform dgx2", "--algorithm push --sizes 16K"},
      {"--platform fattree2l --gpus 16", "--sizes 16K"},
      {"--platform star --gpus 8", "--sizes 16K"},
      {"--platform torus", "--sizes 64K"},
      {"--platform torus --dims 2x3", "--algorithm multitree --sizes 16K"},
      {"--platform mesh", "--sizes 16K"},
      {"--platform fattree", "--sizes 16K"},
      {"--platform bigraph", "--algorithm hdrm --sizes 16K"},
      {"--platform dgx1v", "--algorithm blink --sizes 16K"},
      {"--platform hgx-h100", "--sizes 16K"},
      {"--platform hgx-h100", "--algorithm pull --sizes 16K"},
      {"--platform nvl72", "--gpus 8 --sizes 16K"},  // all 72 take 4 s a run
      {"--platform dgx1p --gpus 1,4,5,6", "--sizes 16K"},
      {"--platform dgx1v --gpus 0,1/2,3", "--sizes 16K"},
      {"--platform rack --hosts 4", "--sizes 64K"},
      {"--platform rack", "--algorithm ring --ring 2,0,5 --sizes 64K"},
      {"--platform spineleaf --racks 2 --hosts-per-rack 2", "--sizes 256K -c link.loss=0.01"},
      {"--platform multigpu --machines 2 --gpus-per-machine 4", "--sizes 256K"},
      {"--platform multigpu --machines 3 --gpus-per-machine 2", "--algorithm tencent --sizes 64K"},
  };
  for (const auto& [platform, run] : runs) {
    INFO(platform << " " << run);
    TempDir d;
    const std::string yaml = d.file("p.yaml"), again = d.file("again.yaml");
    REQUIRE(incsim(platform + " " + run + " --dump-platform '" + yaml + "'").code == 0);
    const Result a = incsim(platform + " " + run + " --quiet --json '" + d.file("a.json") + "'");
    const Result b = incsim("--platform '" + yaml + "' " + run + " --quiet --json '" + d.file("b.json") + "'");
    INFO(a.err << b.err);
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    auto rows = [&](const std::string& f) { return nlohmann::json::parse(slurp(f))["rows"].dump(); };
    CHECK(rows(d.file("a.json")) == rows(d.file("b.json")));
    REQUIRE(incsim("--platform '" + yaml + "' " + run + " --dump-platform '" + again + "'").code == 0);
    CHECK(slurp(again) == slurp(yaml));
  }
}

// What a workload takes from a built-in's netlist (hdrm's numbering on a
// BiGraph, Klenk Fig. 8's pull table size on the fat tree) it takes from the
// netlist, not from the name: a renamed dump runs the same.
TEST_CASE("a platform file with a built-in's netlist under another name runs as the built-in", "[cli][platform]") {
  for (const auto& [platform, run] : std::vector<std::pair<std::string, std::string>>{
           {"bigraph", "--algorithm hdrm --sizes 16K"}, {"fattree2l --gpus 16", "--algorithm pull --sizes 16K"}}) {
    INFO(platform);
    TempDir d;
    const std::string yaml = d.file("p.yaml");
    REQUIRE(incsim("--platform " + platform + " --dump-platform '" + yaml + "'").code == 0);
    std::string text = slurp(yaml);
    text.replace(0, text.find('\n'), "name: renamed");
    const Result a = incsim("--platform " + platform + " " + run + " --quiet --json '" + d.file("a.json") + "'");
    const Result b = incsim("--platform '" + d.write("r.yaml", text) + "' " + run + " --quiet --json '" + d.file("b.json") + "'");
    INFO(a.err << b.err);
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    auto rows = [&](const std::string& f) { return nlohmann::json::parse(slurp(f))["rows"].dump(); };
    CHECK(rows(d.file("a.json")) == rows(d.file("b.json")));
  }
  require_error("--platform torus --algorithm hdrm --sizes 16K", {"runs only on a BiGraph"});
}

// The example platform files run, exactly (the kinds example with its own
// per-switch override).
TEST_CASE("the example platform files run", "[cli][platform]") {
  for (const std::string args : {"dual-switch.yaml --sizes 64K", "pcie-servers.yaml --sizes 64K -c s0_cpu.latency_ns=0",
                                  "two-switch.yaml --sizes 64K --algorithm ring,push,nvls",
                                  "three-switch.yaml --sizes 64K --algorithm ring,push,nvls"}) {
    INFO(args);
    const Result r = incsim("--platform " PLATFORM_EXAMPLES "/" + args + " --quiet");
    INFO(r.err);
    CHECK(r.code == 0);
  }
}

// Klenk §IV-F1 keeps push's waves within the tables. Where no paper sets
// them (a platform file) the tables default to hold the waves: the
// two-switch example's 16 x 8 KiB over 24 ports, 5,504 B per port, where
// Eq. (2)'s 1,280 B evicted 28,761 partial sums at 1 MiB behind its
// binding trunk. Flows model no push tables: with 1,280 B their header
// says so, naming the size; DGX-2's 2.7 times, Klenk's own, prints nothing.
TEST_CASE("push's tables hold its waves by default, and flows name the tables that do not", "[cli][platform][flow]") {
  const std::string run = "--platform " PLATFORM_EXAMPLES "/two-switch.yaml --algorithm push --sizes 1M";
  const Result packet = incsim(run);
  CHECK_THAT(packet.out, Catch::Contains("C_min = 30576 B = 1274 B per port over 24 ports; configured 5504 B per port, "
                                         "which holds push's waves (131072 B per GPU in flight; Klenk §IV-F1)") &&
                             Catch::Contains(" 0 evictions"));
  const Result checked = incsim(run + " --fidelity flow --check-fidelity");
  CHECK_THAT(checked.out, !Catch::Contains("# flows: push's waves") && Catch::Contains("within the 5% flows are held to"));
  const std::string small = run + " -c switch.reduction_table.bytes=1280";
  CHECK_THAT(incsim(small).out, !Catch::Contains(" 0 evictions"));
  const Result flows = incsim(small + " --fidelity flow");
  REQUIRE(flows.code == 0);
  CHECK_THAT(flows.out, Catch::Contains("# flows: push's waves keep up to 131072 B per GPU in flight") &&
                            Catch::Contains("4.3 times the network's 30720 B of reduction table, and a link between "
                                            "switches binds") &&
                            Catch::Contains("rows above 30K may be optimistic") &&
                            Catch::Contains("switch.reduction_table.bytes=5504 spreads the waves"));
  CHECK_THAT(incsim("--platform dgx2 --algorithm push --sizes 1M --fidelity flow").out,
             !Catch::Contains("# flows: push's waves"));
}

// Reads that cross switch levels queue at packet level, not as flows:
// NVLS on the three-switch chain is 32% fast as flows at 1 MiB, and the
// header says so; on one level of switches (hgx-h100, within 1%) it does not.
TEST_CASE("as flows, reads across switch levels say that packet level's queues may make them slower",
          "[cli][platform][flow]") {
  const std::string note = "# flows: the reads cross up to 3 switches, where packet level's requests and answers "
                           "also wait in queues";
  CHECK_THAT(incsim("--platform " PLATFORM_EXAMPLES "/three-switch.yaml --algorithm nvls --sizes 1M --fidelity flow").out,
             Catch::Contains(note));
  CHECK_THAT(incsim("--platform hgx-h100 --algorithm nvls --sizes 1M --fidelity flow").out,
             !Catch::Contains("# flows: the reads cross"));
}

// Three switches in a triangle: a multicast tree can wait on itself around
// it (Klenk §IV-E2). Both fidelities refuse in-network algorithms there in
// one sentence, and run the ring, which needs no multicast.
TEST_CASE("a platform file whose multicast paths can deadlock is refused at packet level and as flows",
          "[cli][platform][errors]") {
  TempDir d;
  std::ofstream(d.file("triangle.yaml")) << "name: triangle\nfamily: hgx-h100\nendpoints:\n"
                                            "  - {name: gpu0, ports: 1}\n  - {name: gpu1, ports: 1}\n"
                                            "  - {name: gpu2, ports: 1}\nswitches:\n  - {name: swA, ports: 3}\n"
                                            "  - {name: swB, ports: 3}\n  - {name: swC, ports: 3}\nlinks:\n"
                                            "  - {a: gpu0.0, b: swA.0}\n  - {a: gpu1.0, b: swB.0}\n"
                                            "  - {a: gpu2.0, b: swC.0}\n  - {a: swA.1, b: swB.2}\n"
                                            "  - {a: swB.1, b: swC.2}\n  - {a: swC.1, b: swA.2}\n";
  for (const std::string fidelity : {"packet", "flow"}) {
    const std::string run = "--platform " + d.file("triangle.yaml") + " --sizes 64K --quiet --fidelity " + fidelity;
    for (const std::string algorithm : {"push", "nvls"}) {
      INFO(fidelity << " " << algorithm);
      const Result r = incsim(run + " --algorithm " + algorithm);
      CHECK(r.code == 2);
      CHECK_THAT(r.err, Catch::Contains("platform 'triangle' cannot carry multicast and in-switch reduction without "
                                        "deadlock: packets on the link"));
      CHECK(lines(r.err).size() == 1);
    }
    CHECK(incsim(run + " --algorithm ring").code == 0);
  }
}

// The Ethernet platforms are graphs too: their dump lists each node's kind
// and each link (and runs the same: the test above).
TEST_CASE("the Ethernet platforms dump their graph with node kinds", "[cli][platform]") {
  TempDir d;
  const std::vector<std::pair<std::string, std::vector<std::string>>> expect = {
      {"rack", {"{name: host5, ports: 1, kind: roce_host}", "{name: fpga, ports: 6, kind: fpga_aggregator}",
                "{name: switch, ports: 12, kind: ethernet_switch}", "{a: switch.6, b: fpga.0, bw_GBps: 12.5, latency_ns: 50}"}},
      {"spineleaf", {"{name: leaf1_fpga, ports: 5, kind: fpga_aggregator}", "{name: spine_fpga, ports: 2, kind: fpga_aggregator}",
                     "{a: leaf0.9, b: spine.0, bw_GBps: 50, latency_ns: 50}"}},
      {"multigpu", {"{name: tor, ports: 8, kind: ethernet_switch}", "{a: machine0.0, b: host0.0, bw_GBps: 150, latency_ns: 50}"}},
  };
  for (const auto& [platform, lines] : expect) {
    INFO(platform);
    const std::string yaml = d.file(platform + ".yaml");
    REQUIRE(incsim("--platform " + platform + " --dump-platform '" + yaml + "'").code == 0);
    const std::string text = slurp(yaml);
    CHECK_THAT(text, Catch::Contains("family: netreduce"));
    for (const auto& l : lines) CHECK_THAT(text, Catch::Contains(l));
  }
}

TEST_CASE("a NetReduce file's links may differ: each runs at its own rate, the bound takes the slowest", "[cli][platform]") {
  TempDir d;
  const std::string yaml = d.file("s.yaml");
  REQUIRE(incsim("--platform spineleaf --racks 2 --hosts-per-rack 2 --dump-platform '" + yaml + "'").code == 0);
  std::string text = slurp(yaml);
  const std::string from = "{a: leaf0.1, b: host1.0, bw_GBps: 12.5";
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), "{a: leaf0.1, b: host1.0, bw_GBps: 10");
  auto row = [](const std::string& args) {
    const Result r = incsim(args + " --sizes 1M --json -");
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["rows"][0];
  };
  const auto slow = row("--platform '" + d.write("m.yaml", text) + "'");
  const auto fast = row("--platform '" + yaml + "'");
  CHECK(slow["wrong"] == 0);
  // One host at 10 GB/s paces every host: the run is slower, and the bound (10 of 12.5) says so.
  CHECK(slow["time_us"].get<double>() > fast["time_us"].get<double>() * 1.15);
  CHECK(slow["bound_us"].get<double>() == Approx(fast["bound_us"].get<double>() * 1.25));
  CHECK(slow["bound_fraction"].get<double>() > 0.8);
  // The same on a built-in: an oversubscribed uplink paces the ring, and the bound is its.
  const auto up = row("--platform spineleaf --racks 2 --hosts-per-rack 2 -c leaf.uplink_bw_GBps=6");
  CHECK(up["bound_us"].get<double>() == Approx(fast["bound_us"].get<double>() * 12.5 / 6));
  CHECK(up["bound_fraction"].get<double>() > 0.8);
}

TEST_CASE("a port that leads nowhere useful carries no ring traffic and does not count in the bound", "[cli][platform]") {
  TempDir d;
  // gpu0's second port goes to a switch that reaches no other GPU.
  const std::string yaml = d.write("dead-end.yaml", R"(name: dead-end
endpoints:
  - {name: gpu0, ports: 2}
  - {name: gpu1, ports: 1}
switches:
  - {name: s0, ports: 2}
  - {name: s1, ports: 1}
links:
  - {a: gpu0.0, b: s0.0}
  - {a: gpu1.0, b: s0.1}
  - {a: gpu0.1, b: s1.0}
)");
  const Result r = incsim("--platform '" + yaml + "' --sizes 8K,1M --quiet --json '" + d.file("r.json") + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  CHECK(j["endpoint_payload_GBps"].get<double>() == Approx(20.0));
  for (const auto& row : j["rows"]) {
    CHECK(row["wrong"] == 0);
    for (const auto& l : row["links"])
      if (l["from"] == "gpu0.1") CHECK(l["bytes"] == 0);
  }
}

TEST_CASE("a ring on a platform where each GPU reaches its two neighbours by different ports", "[cli][platform]") {
  // Three GPUs in a triangle of two-port switches: the port toward the next
  // GPU does not lead to the previous one, where the head flags go.
  TempDir d;
  const std::string yaml = d.write("tri.yaml", R"(name: tri
endpoints:
  - {name: gpu0, ports: 2}
  - {name: gpu1, ports: 2}
  - {name: gpu2, ports: 2}
switches:
  - {name: s01, ports: 2}
  - {name: s12, ports: 2}
  - {name: s20, ports: 2}
links:
  - {a: gpu0.0, b: s01.0}
  - {a: gpu1.0, b: s01.1}
  - {a: gpu1.1, b: s12.0}
  - {a: gpu2.0, b: s12.1}
  - {a: gpu2.1, b: s20.0}
  - {a: gpu0.1, b: s20.1}
)");
  for (const char* c : {"allreduce", "reducescatter", "allgather"}) {
    INFO(c);
    const Result r = incsim("--platform '" + yaml + "' --collective " + c + " --sizes 4,8K,64K --quiet");
    INFO(r.err);
    CHECK(r.code == 0);
  }
}

TEST_CASE("a platform file's partly populated switches run as the switches of the ports they use", "[cli][platform]") {
  // dual-switch.yaml's two 8-port switches declared with 64 ports, the
  // trunk's last link moved to port 63 of one and 40 of the other.
  std::string text = slurp(PLATFORM_EXAMPLES "/dual-switch.yaml");
  const auto swap = [&](const std::string& from, const std::string& to) {
    for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  };
  TempDir d;
  swap("ports: 8}", "ports: 64}");
  swap("{a: swA.7, b: swB.7,", "{a: swA.63, b: swB.40,");
  const std::string wide = d.write("wide.yaml", text);
  for (const char* algorithm : {"ring", "push"}) {
    INFO(algorithm);
    const std::string args = std::string(" --sizes 64K,1M --quiet --algorithm ") + algorithm;
    const Result a = incsim("--platform " PLATFORM_EXAMPLES "/dual-switch.yaml" + args);
    const Result b = incsim("--platform " + wide + args);
    INFO(b.err);
    REQUIRE(b.code == 0);
    CHECK(b.out.substr(b.out.find("\n#")) == a.out.substr(a.out.find("\n#")));  // all but the header's first line
  }
}
