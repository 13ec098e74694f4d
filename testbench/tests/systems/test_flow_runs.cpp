// --fidelity flow through the real incsim binary (docs/flow.md): what it
// refuses, that it is deterministic, that it agrees with packet level
// within 5% at 1 MiB, and that a 1,024-node cluster builds and runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "temp_file.h"

using namespace cli;

namespace {
// The run's rows, from its JSON on stdout.
nlohmann::json rows(const std::string& args) {
  INFO("incsim " << args);
  const Result r = incsim(args + " --quiet --json -");
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exited);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out)["rows"];
}
// A column of the run's rows.
std::vector<double> column(const std::string& args, const std::string& key) {
  std::vector<double> t;
  for (const auto& row : rows(args)) t.push_back(row[key].get<double>());
  return t;
}
std::vector<double> times(const std::string& args) { return column(args, "time_us"); }

void require_refused(const std::string& args, const std::string& sentence) {
  require_error(args, {sentence});
  CHECK(incsim(args).code == 2);
}
// A row's bytes per link direction ("from>to"), from its JSON "links".
std::map<std::string, double> link_bytes(const nlohmann::json& row) {
  std::map<std::string, double> b;
  for (const auto& l : row.at("links")) b[l["from"].get<std::string>() + ">" + l["to"].get<std::string>()] = l["bytes"];
  return b;
}
double total(const std::map<std::string, double>& bytes) {
  double t = 0;
  for (const auto& [link, b] : bytes) t += b;
  return t;
}
}  // namespace

TEST_CASE("flow refuses what it cannot honour, in one sentence, exit 2", "[flow][errors]") {
  require_refused("--fidelity bogus", "--fidelity must be packet or flow, not 'bogus'");
  require_refused("--fidelity flow --vcd /tmp/incsim_flow.vcd", "--vcd shows a VCD of packets");
  require_refused("--fidelity flow -c fault.alu.block=gpu1.cores", "which --fidelity flow does not simulate");
  require_refused("--fidelity flow --traffic uniform", "runs collectives, jobs and training, not --workload traffic");
  require_refused("--fidelity flow --platform rack --model resnet18",
                  "runs NetReduce's Ethernet platform rack for one collective at a time, not training");
  require_refused("--fidelity flow --platform spineleaf --algorithm netreduce",
                  "netreduce on spineleaf aggregates in the leaves' FPGAs and the spine's");
  require_refused("--fidelity flow --platform rack -c link.corruption=0.001",
                  "link.corruption drops frames for go-back-N to resend, which --fidelity flow does not simulate");
  require_refused("--fidelity flow --model resnet18 --vcd /tmp/incsim_flow.vcd", "--vcd shows a VCD of packets");
  require_refused("--fidelity flow --algorithm push -c gpu.copy_engine.order=bogus",
                  "gpu.copy_engine.order must be window, arbitrary or address, not 'bogus'");
  require_refused("--fidelity flow --platform star --algorithm pull -c gpu.copy_engine.wave_bytes=65536",
                  "B of reduction table in the whole network");
  require_refused("--fidelity flow --platform torus --algorithm multitree -c nic.flow_control=bogus",
                  "nic.flow_control must be packet or message, not 'bogus'");
  require_refused("--fidelity flow --platform dgx1v --algorithm blink -c blink.miad_iterations=4",
                  "blink tunes itself over several runs of each size, which flows do not run");
  require_refused("--fidelity flow -c flow.steady_passes=2",
                  "flow.steady_passes must be auto, 0 or a number of passes from 4, not '2'");
  require_refused("--fidelity flow -c flow.steady_passes=16x",
                  "flow.steady_passes must be auto, 0 or a number of passes from 4, not '16x'");
  require_refused("--fidelity flow --platform cluster --nodes 2 -c cluster.network=roce --algorithm nvlsnetreduce",
                  "nvlsnetreduce adds its reducing writes in NetReduce's FPGA beside each rail leaf, which flows do not model");
  require_refused("--fidelity flow --platform cluster --nodes 2 -c cluster.network=roce -c roce.mtu_payload=1002",
                  "roce.mtu_payload must be a multiple of 4 between 4 and 4096 bytes, not 1002");
  require_refused("--fidelity flow --platform cluster --nodes 2 -c cluster.network=roce -c link.loss=0.001",
                  "link.loss drops frames for go-back-N to resend, which --fidelity flow does not simulate");
}

TEST_CASE("packet level refuses a platform too large for the memory the process may use, naming flow", "[flow][errors]") {
  // 128 nodes: 21,504 links, about 1.4 GB at packet level; the process may use 1 GB of address space.
  const std::string limited = "ulimit -v 1000000 && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 '" INCSIM_BINARY "' ";
  const Result r = sh(limited + "--platform cluster --nodes 128 --algorithm tree --sizes 1M");
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exited);
  CHECK(r.code == 2);
  REQUIRE(lines(r.err).size() == 1);
  CHECK_THAT(r.err, Catch::Contains("platform cluster has 21504 links: packet level needs about 1.41 GB") &&
                        Catch::Contains("--fidelity flow runs its collectives"));
  CHECK_THAT(r.err, Catch::Matches(".*\\(a cluster of at most [0-9]+ of these nodes fits\\).*\n"));
  // The same platform as flows fits, and so does a DGX-2 at packet level.
  CHECK(sh(limited + "--platform cluster --nodes 128 --algorithm tree --sizes 1M --fidelity flow").code == 0);
  // --check-fidelity would run it at packet level after the flows: refused before them.
  const Result check = sh(limited + "--platform cluster --nodes 128 --algorithm tree --sizes 1M --fidelity flow "
                                    "--check-fidelity --quiet");
  CHECK(check.code == 2);
  CHECK(check.out.empty());
  REQUIRE(lines(check.err).size() == 1);
  CHECK_THAT(check.err, Catch::Contains("--check-fidelity runs it beside the flows: check the flows on a smaller "
                                        "platform"));
  CHECK(sh(limited + "--platform dgx2 --sizes 64K").code == 0);
}

TEST_CASE("flow reports its progress as packet level does: the point, % done, simulated time, ETA", "[flow]") {
  const Result r = incsim("--fidelity flow --platform cluster --nodes 16 --algorithm tree --sizes 64M -c sim.progress_s=0");
  INFO("stderr:\n" << r.err);
  REQUIRE(r.code == 0);
  const std::vector<std::string> report = lines(r.err);
  REQUIRE(report.size() >= 2);
  CHECK_THAT(report.front(), Catch::Matches("incsim: size 64M \\(1 of 1\\): [0-9]+%, simulated .* us at .*/s, ETA .*"));
  CHECK(incsim("--fidelity flow --platform cluster --nodes 16 --algorithm tree --sizes 64M -c sim.progress_s=0 --quiet")
            .err.empty());
}

TEST_CASE("flow: steady passes add a ring's later passes at their period, as the whole run takes them", "[flow]") {
  // DGX-2's ring at 1 GiB makes 43 passes per channel; K = 16 runs 4, 8 and 16.
  const std::string run = "--fidelity flow --platform dgx2 --sizes 1G";
  const double whole = times(run + " -c flow.steady_passes=0").at(0), steady = times(run).at(0);
  CHECK(steady != whole);
  CHECK(steady == Approx(whole).epsilon(0.001));
  // Off a cluster auto chooses K = 16 and says so; K asked for is named alone.
  CHECK_THAT(incsim(run).out, Catch::Contains("#   passes: 43 per channel; runs of 4, 8 and 16 simulated 28, the other "
                                              "27") &&
                                  Catch::Contains("flow.steady_passes=auto: K = 16 except on clusters"));
  CHECK(times(run + " -c flow.steady_passes=16").at(0) == steady);
  CHECK_THAT(incsim(run + " -c flow.steady_passes=16").out, Catch::Contains("; flow.steady_passes)"));
  // The JSON row says which passes ran.
  const nlohmann::json j = nlohmann::json::parse(incsim(run + " --quiet --json -").out);
  const nlohmann::json& s = j["rows"].at(0)["steady_passes"];
  CHECK(s["passes"] == 43);
  CHECK(s["simulated"] == 28);
  CHECK(s["steady_from"] == 16);
  CHECK(s["pass_ns"].get<double>() > 0);
  const nlohmann::json whole_row = nlohmann::json::parse(incsim(run + " -c flow.steady_passes=0 --quiet --json -").out)["rows"].at(0);
  CHECK(whole_row.count("steady_passes") == 0);
  // Each link's bytes likewise: the later passes cross the links as the simulated ones.
  const auto steady_bytes = link_bytes(j["rows"].at(0)), whole_bytes = link_bytes(whole_row);
  REQUIRE(steady_bytes.size() == whole_bytes.size());
  for (const auto& [link, b] : whole_bytes) {
    INFO(link);
    CHECK(steady_bytes.at(link) == Approx(b).epsilon(1e-6));
  }
}

TEST_CASE("flow: on a cluster steady passes are off unless asked for", "[flow]") {
  // 1 KiB Simple chunks give the 2-node ring 64 passes per channel at 16 MiB.
  const std::string run = "--fidelity flow --platform cluster --nodes 2 --algorithm ring --sizes 16M -c "
                          "cores.chunk_bytes=1024 -c ring.protocol=simple";
  CHECK_THAT(incsim(run).out, !Catch::Contains("#   passes:"));
  // Asked for there, the note says what it may cost.
  CHECK_THAT(incsim(run + " -c flow.steady_passes=16").out,
             Catch::Contains("#   passes: 64 per channel") &&
                 Catch::Contains("; flow.steady_passes, up to 9% off on a cluster: docs/flow.md)"));
}

namespace {

// `algorithm` on 4 nodes without the memory's jitter, with channel classes
// against every channel: the times within `epsilon`, a class's share of the
// flows, the parts and classes the JSON row counts, and the note.
void check_classes(const std::string& algorithm, double epsilon, int parts, int classes, const std::string& note) {
  const std::string run = "--fidelity flow --platform cluster --nodes 4 --sizes 1M,64M -c gpu.mem_jitter_cycles=0 "
                          "--algorithm " + algorithm;
  const nlohmann::json whole = rows(run), some = rows(run + " -c flow.channel_classes=true");
  for (size_t i = 0; i < whole.size(); ++i) {
    INFO(algorithm << " at " << whole[i]["size_bytes"] << " B");
    CHECK(some[i]["time_us"].get<double>() == Approx(whole[i]["time_us"].get<double>()).epsilon(epsilon));
    CHECK(some[i]["flows"].get<uint64_t>() * static_cast<uint64_t>(parts / classes) ==
          whole[i]["flows"].get<uint64_t>());
    CHECK(some[i]["channel_classes"]["channels"] == 16);
    CHECK(some[i]["channel_classes"]["parts"] == parts);
    CHECK(some[i]["channel_classes"]["classes"] == classes);
    CHECK(whole[i].count("channel_classes") == 0);
    // A class's links carry its mean: the whole run's bytes (each link's rounded), spread alike.
    CHECK(total(link_bytes(some[i])) == Approx(total(link_bytes(whole[i]))).epsilon(1e-5));
  }
  CHECK_THAT(incsim(run + " -c flow.channel_classes=true").out, Catch::Contains("#   channel classes: " + note));
}

}  // namespace

TEST_CASE("flow: channel classes run NCCL's trees and rings on one rail for all eight, near every channel's times",
          "[flow][scale]") {
  // Without the memory's jitter, which draws the whole run's channels
  // apart, what is left is their drift on hgx-h100's uneven NVSwitch
  // trunks, which the classes run in step (docs/flow.md, "Channel classes").
  // The ring's channels 2j and 2j + 1 are one ring on other NVLink ports: one class.
  check_classes("tree", 0.015, 16, 2,
                "16 channels in 2 classes, each class's first channel run for all of it; 4 classes of links pool "
                "128 links");
  check_classes("ring", 0.015, 16, 1,
                "16 channels in 1 class, each class's first channel run for all of it; 4 classes of links pool "
                "128 links");
}

TEST_CASE("flow: channel classes run one GPU's share of NVLSTree and NVLS-SHARP for all eight, at every part's times",
          "[flow][scale]") {
  // Each GPU heads a block of every channel: its node's reducing read of it
  // in the NVSwitches, the all-reduce of it on its rail and its multicast.
  // Without the memory's jitter the whole run's shares stay in step, so the
  // classes give its times (docs/flow.md, "Channel classes").
  for (const char* algorithm : {"nvlstree", "nvlssharp"})
    check_classes(algorithm, 1e-6, 128, 16,
                  "16 channels in 128 parts (a GPU's share of a channel) in 16 classes, each class's first part run "
                  "for all of it");
}

TEST_CASE("flow: channel classes run one of CollNet's channels for all of them, near every channel's times",
          "[flow][scale]") {
  // CollNet's ring inside the node joins its GPUs' shares, so the rotation
  // maps each channel onto itself; its channels are one ring on other
  // NVLink ports, each reduced on its rail's SHARP group (docs/flow.md,
  // "Channel classes"). hgx-h100's uneven trunks leave 0.3% at 64 MiB.
  check_classes("collnet", 0.005, 16, 1,
                "16 channels in 1 class, each class's first channel run for all of it; 32 classes of links pool 128 "
                "links");
  // With one channel there is neither: it runs whole and says why.
  CHECK_THAT(incsim("--fidelity flow --platform cluster --nodes 2 --algorithm collnet --sizes 1M -c ring.channels=1 "
                    "-c flow.channel_classes=true").out,
             Catch::Contains("#   channel classes: none, every channel ran: each channel is its own image, its GPUs' "
                             "shares joined"));
}

TEST_CASE("flow: channel classes are on by default from 16 nodes, and every channel runs below or when asked",
          "[flow][scale]") {
  const auto classes = [](const std::string& options) {
    const nlohmann::json r = rows("--fidelity flow --platform cluster --algorithm tree --sizes 8K " + options);
    return r.at(0).count("channel_classes") ? r.at(0)["channel_classes"]["classes"].get<int>() : 0;
  };
  CHECK(classes("--nodes 16") == 2);
  CHECK(classes("--nodes 15") == 0);
  CHECK(classes("--nodes 16 -c flow.channel_classes=false") == 0);
  CHECK(classes("--nodes 4 -c flow.channel_classes=true") == 2);
  CHECK_THAT(incsim("--fidelity flow --platform cluster --nodes 16 --algorithm tree --sizes 8K").out,
             Catch::Contains("(flow.channel_classes=auto: on from 16 nodes, within 4.4% of every channel there"));
  // Anything else is one sentence.
  require_refused("--fidelity flow --platform cluster --nodes 16 --algorithm tree --sizes 8K -c flow.channel_classes=on",
                  "flow.channel_classes must be auto, true or false, not 'on'");
}

TEST_CASE("flow: the table says elements were not simulated, and the same seed gives the same bytes", "[flow]") {
  const std::string args = "--fidelity flow --sizes 64K,1M --seed 3";
  const Result a = incsim(args), b = incsim(args);
  REQUIRE(a.code == 0);
  CHECK(a.out == b.out);
  CHECK_THAT(a.out, Catch::Contains("elements were not simulated"));
  std::vector<std::string> rows;
  for (const std::string& l : lines(a.out))
    if (l[0] != '#') rows.push_back(l);
  REQUIRE(rows.size() == 2);
  CHECK_THAT(rows.back(), Catch::Contains(" - "));  // #wrong
}

TEST_CASE("flow's bound is packet level's: a GPU's payload links, NVLS's posted multicasts, a cluster's busiest GPU",
          "[flow]") {
  for (const std::string run : {"--platform dgx2", "--platform hgx-h100 --algorithm nvls",
                                "--platform cluster --nodes 2 --algorithm tree",
                                "--platform cluster --nodes 2 --algorithm nvlssharp"}) {
    const std::vector<double> packet = column(run + " --sizes 64K,1M", "bound_us");
    const std::vector<double> flow = column(run + " --sizes 64K,1M --fidelity flow", "bound_us");
    REQUIRE(flow.size() == 2);
    CHECK(flow[0] > 0);
    CHECK(flow == packet);
    const auto bound_line = [](const std::string& out) {
      for (const std::string& l : lines(out))
        if (l.rfind("# bound:", 0) == 0) return l;
      return std::string();
    };
    CHECK(bound_line(incsim(run + " --sizes 1M --fidelity flow").out) == bound_line(incsim(run + " --sizes 1M").out));
  }
}

TEST_CASE("flow against packet level: the ring at 1 MiB within 5% on dgx2 and 2-node clusters, InfiniBand and RoCE",
          "[flow][accuracy]") {
  for (const std::string platform :
       {"--platform dgx2", "--platform cluster --nodes 2", "--platform cluster --nodes 2 -c cluster.network=roce"}) {
    const double packet = times(platform + " --sizes 1M").at(0);
    const double flow = times(platform + " --sizes 1M --fidelity flow").at(0);
    INFO(platform << ": packet " << packet << " us, flow " << flow << " us");
    CHECK(std::abs(flow / packet - 1) < 0.05);
  }
}

TEST_CASE("flow: the JSON's links carry the bytes packet level counts, and a cluster's rows name its busiest "
          "NVLink and network", "[flow][accuracy]") {
  // Every write's payload and header and its acknowledgement: the same bytes
  // on each link (packet level's flags and slot frees add 0.1% at 4 MiB).
  const std::string star = "--platform star --gpus 4 --algorithm ring --sizes 4M";
  const auto packet = link_bytes(rows(star).at(0)), flow = link_bytes(rows(star + " --fidelity flow").at(0));
  REQUIRE(packet.size() == 8);
  REQUIRE(flow.size() == 8);
  for (const auto& [link, b] : packet) {
    INFO(link);
    CHECK(flow.at(link) == Approx(b).epsilon(0.002));
  }
  // On a cluster the two columns are the busiest link direction's share of
  // the time inside the nodes and between them, as the links say.
  for (const std::string fidelity : {"packet", "flow"}) {
    INFO(fidelity);
    const nlohmann::json row =
        rows("--platform cluster --nodes 2 --algorithm ring --sizes 1M --fidelity " + fidelity).at(0);
    double busiest[2] = {0, 0};
    for (const auto& l : row["links"]) {
      const std::string from = l["from"], to = l["to"];
      const bool nvlink = from.find("_sw") != std::string::npos || to.find("_sw") != std::string::npos;
      busiest[nvlink] = std::max(busiest[nvlink], l["utilisation"].get<double>());
    }
    CHECK(busiest[1] > 0.05);
    CHECK(row["nvlink_busiest"].get<double>() == Approx(busiest[1]));
    CHECK(row["network_busiest"].get<double>() == Approx(busiest[0]));
  }
}

TEST_CASE("flow against packet level: NVLS's multimem loads and stores and SHARP's reducing writes at 1 MiB within 5%",
          "[flow][accuracy]") {
  for (const std::string run : {"--platform hgx-h100 --algorithm nvls",  // on the cores, NCCL's way
                                "--platform cluster --nodes 2 --algorithm nvlstree",
                                "--platform cluster --nodes 2 --algorithm collnet"}) {
    const double packet = times(run + " --sizes 1M").at(0);
    const double flow = times(run + " --sizes 1M --fidelity flow").at(0);
    INFO(run << ": packet " << packet << " us, flow " << flow << " us");
    CHECK(std::abs(flow / packet - 1) < 0.05);
  }
}

TEST_CASE("flow against packet level: Klenk's push and multicast and a DMA put on the copy engines at 1 MiB within 5%",
          "[flow][accuracy]") {
  TempDir d;
  // An all-gather by unicast puts (docs/programs.md): each GPU writes its
  // input to the next, the next but one and the one before, then a flag.
  std::string dma = "program 1\nname dma\ncollective allgather ranks 4 root 0 inplace 0\n";
  for (int r = 0; r < 4; ++r) {
    dma += "rank " + std::to_string(r) + " input 1 output 4 scratch 0\n0 cpy copy ch 0 q 0 src i0 dst o" +
           std::to_string(r) + "\n";
    for (int k = 1; k < 4; ++k)
      dma += std::to_string(k) + " s copy ch 0 q 0 to " + std::to_string((r + k) % 4) + " src i0\n";
    for (int k = 1; k < 4; ++k)
      dma += std::to_string(3 + k) + " r copy ch 0 q 1 from " + std::to_string((r - k + 4) % 4) + " dst o" +
             std::to_string((r - k + 4) % 4) + "\n";
  }
  for (const std::string& run : {std::string("--algorithm push"), std::string("--collective allgather --algorithm multicast"),
                                "--platform star --gpus 4 --algorithm " + d.write("dma.txt", dma)}) {
    const double packet = times(run + " --sizes 1M").at(0);
    const double flow = times(run + " --sizes 1M --fidelity flow").at(0);
    INFO(run << ": packet " << packet << " us, flow " << flow << " us");
    CHECK(std::abs(flow / packet - 1) < 0.05);
  }
}

TEST_CASE("flow against packet level: NetReduce's ring and aggregation on a rack, Parallel NetReduce and the flat "
          "ring on multigpu, at 1 MiB within 1%", "[flow][accuracy]") {
  for (const std::string run : {"--platform rack --algorithm ring", "--platform rack --algorithm netreduce",
                                "--platform multigpu --algorithm flatring", "--platform multigpu --algorithm pnetreduce"}) {
    const double packet = times(run + " --sizes 1M").at(0);
    const nlohmann::json flow = rows(run + " --sizes 1M --fidelity flow");
    INFO(run << ": packet " << packet << " us, flow " << flow[0]["time_us"] << " us");
    CHECK(std::abs(flow[0]["time_us"].get<double>() / packet - 1) < 0.01);
    CHECK(flow[0]["wrong"] == "-");
    CHECK(flow[0]["packet_hops"] == "-");
  }
}

TEST_CASE("flow: NVLS's reduction tables limit its reducing reads by Little's law, as at packet level",
          "[flow][accuracy]") {
  // The tables alone: NCCL's fixed cost per collective (nccl.launch) would dilute their effect.
  const std::string run = "--platform hgx-h100 --algorithm nvls --sizes 1M -c nccl.launch=none";
  const double wide = times(run + " --fidelity flow").at(0);
  // One entry per port: each GPU holds 18 blocks in flight, about a fifth of
  // what its links carry. One channel: with NCCL's 16, packet level's stores
  // wait at the switches' inputs among the reads stalled for entries, which
  // flows do not see (15% at 1 MiB, docs/flow.md).
  const std::string tight = " -c switch.reduction_table.bytes=128 -c nvls.channels=1";
  const double one = times(run + " --fidelity flow" + tight).at(0);
  const double packet = times(run + tight).at(0);
  INFO("flow " << wide << " us with 4096 B per port, " << one << " us with 128 B; packet level " << packet << " us");
  CHECK(one > 3 * wide);
  CHECK(std::abs(one / packet - 1) < 0.10);
  // The header sizes the table as packet level's does.
  const Result r = incsim(run + " --fidelity flow -c switch.reduction_table.bytes=128");
  CHECK_THAT(r.out, Catch::Contains("# table sizing (Little's law; B_in 450 GB/s") &&
                        Catch::Contains("configured 128 B per port") && Catch::Contains("below C_min"));
  require_refused(run + " --fidelity flow -c sw0.port0.reduction_table.bytes=0",
                  "has none (switch.reduction_table.bytes is 0 there), so packet level passes every member's answer on "
                  "unreduced, which flows do not model; run it at packet level");
  // Two jobs on the same GPUs share their ports' tables: each takes half.
  const TempDir d;
  const std::string file = d.file("jobs.yaml");
  std::ofstream(file) << "platform: hgx-h100\nsizes: 1M\nswitch.reduction_table.bytes: 256\nnccl.launch: none\njobs:\n"
                         "  - {name: a, gpus: 0-7, algorithm: nvls, allow_overlap: true}\n"
                         "  - {name: b, gpus: 0-7, algorithm: nvls}\n";
  const nlohmann::json as_flows = rows("--config " + file + " --fidelity flow"), packets = rows("--config " + file);
  for (size_t j = 0; j < 2; ++j) {
    INFO("job " << as_flows[j]["job"] << ": slowdown " << as_flows[j]["slowdown"] << " as flows, "
                << packets[j]["slowdown"] << " at packet level");
    CHECK(as_flows[j]["slowdown"].get<double>() > 1.8);
    CHECK(as_flows[j]["slowdown"].get<double>() == Approx(packets[j]["slowdown"].get<double>()).epsilon(0.05));
  }
}

// A lockstep step ends when the NIC's port has sent its message, most of
// which the first switch's buffers may still hold: without them as flows,
// DBTree's 32 KiB steps on the torus (a 64 GB/s port before 16 GB/s links)
// were 15% slow, MultiTree's desynchronised steps on the fat tree 27%.
TEST_CASE("flow against packet level: the first switch's buffers take a NIC message's rest, within 5%",
          "[flow][accuracy]") {
  for (const std::string run : {"--platform torus --algorithm dbtree --sizes 1M",
                                "--platform fattree --algorithm multitree --sizes 1M"}) {
    const double packet = times(run).at(0);
    const double flow = times(run + " --fidelity flow").at(0);
    INFO(run << ": packet " << packet << " us, flow " << flow << " us");
    CHECK(std::abs(flow / packet - 1) < 0.05);
  }
}

TEST_CASE("flow against packet level: the NICs' schedule tables, lockstep and dataflow, within 5%", "[flow][accuracy]") {
  for (const std::string run : {"--platform torus --algorithm multitree-msg --sizes 16M",  // one head flit per message
                                "--platform torus --algorithm dbtree --sizes 16M",
                                "--platform dgx1v --algorithm blink --sizes 16M",  // dataflow, a lane per tree
                                // Without the memory's jitter, whose desynchronisation of the steps the
                                // switches' buffers absorb beyond the first switch, where flows do not
                                // (docs/flow.md).
                                "--platform fattree --algorithm multitree --sizes 1M -c gpu.mem_jitter_cycles=0"}) {
    const double packet = times(run).at(0);
    const double flow = times(run + " --fidelity flow").at(0);
    INFO(run << ": packet " << packet << " us, flow " << flow << " us");
    CHECK(std::abs(flow / packet - 1) < 0.05);
  }
  // The table's header says where the schedule runs.
  const Result r = incsim("--fidelity flow --platform torus --algorithm multitree --sizes 64K");
  CHECK_THAT(r.out, Catch::Contains("# schedule: multitree on the NICs, 10 steps (5 reduce-scatter), 16 flows") &&
                        Catch::Contains("with the NICs' fixed costs"));
  // The tables and trees they run are packet level's.
  for (const std::string print : {"--platform torus --algorithm multitree --print-schedule",
                                  "--platform dgx1v --algorithm blink --print-trees"}) {
    const Result packet = incsim(print), flow = incsim(print + " --fidelity flow");
    REQUIRE(packet.code == 0);
    CHECK(flow.code == 0);
    CHECK(flow.out == packet.out);
  }
}

TEST_CASE("flow against packet level: training iterations within 1%, data, tensor and pipeline parallel, Chakra",
          "[flow][accuracy][train]") {
  // Collectives that overlap share links at packet level and not as flows
  // (docs/flow.md, "Training"): here they overlap with kernels only, or on
  // links of their own.
  for (const std::string run :
       {"--model resnet18 --batch 8 --platform star --gpus 4",
        "--model transformer -c transformer.layers=2 -c transformer.hidden=512 -c transformer.heads=8 "
        "-c transformer.sequence=128 --batch 4 --tp 2 --pp 2 --platform dgx2 --gpus 8",
        "--model " TEST_DATA "/chakra_step.et --platform star --gpus 4"}) {
    const std::string args = run + " --iterations 1 --warmup 0";
    const nlohmann::json packet = rows(args).at(0), flow = rows(args + " --fidelity flow").at(0);
    INFO(run << ": packet " << packet["time_us"] << " us, flow " << flow["time_us"] << " us");
    CHECK(std::abs(flow["time_us"].get<double>() / packet["time_us"].get<double>() - 1) < 0.01);
    CHECK(flow["compute_us"] == packet["compute_us"]);
  }
}

TEST_CASE("flow: training says elements were not simulated, gives the same bytes from a seed, writes its timeline",
          "[flow][train]") {
  const TempDir d;
  const std::string file = d.file("timeline.json");
  const auto read = [&file] {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string args = "--fidelity flow --model resnet18 --batch 8 --platform hgx-h100 --algorithm nvls --baseline ring "
                           "--iterations 2 "
                           "--seed 5 --timeline " + file;
  const Result a = incsim(args);
  const std::string first = read();
  const Result b = incsim(args);
  REQUIRE(a.code == 0);
  CHECK(a.out == b.out);
  CHECK(read() == first);
  CHECK_THAT(first, Catch::Contains("\"traceEvents\"") && Catch::Contains("\"conv1 backward\"") && Catch::Contains("all-reduce bucket 0"));
  CHECK_THAT(a.out, Catch::Contains("# fidelity: flow") && Catch::Contains("collectives that meet share their links as flows"));
  // The groups' fidelity line, the same for nvls's and the ring's, once.
  int fidelity = 0;
  for (const std::string& l : lines(a.out)) fidelity += l.find(": fidelity: flow (docs/flow.md): each transfer") != std::string::npos;
  CHECK(fidelity == 1);
  int rows = 0;
  for (const std::string& l : lines(a.out))
    if (l[0] != '#') {
      ++rows;
      CHECK_THAT(l, Catch::EndsWith(" -"));  // #wrong
    }
  CHECK(rows == 4);  // two iterations of the algorithm and the baseline
}

TEST_CASE("flow: training alone counts the collectives that ran beside another group's on a link of theirs",
          "[flow][train]") {
  const auto overlap = [](const std::string& run) {
    const nlohmann::json row = rows(run + " --fidelity flow --iterations 1 --warmup 0 -c flow.share_links=false").at(0);
    return row.at("flow_overlap");
  };
  // One data-parallel group: nothing beside it.
  const nlohmann::json alone = overlap("--model resnet18 --batch 8 --platform star --gpus 4");
  CHECK(alone["collectives"] == 2);
  CHECK(alone["shared"] == 0);
  // A pipeline's transfers leave by the GPUs' links while their tensor-parallel groups all-reduce.
  const nlohmann::json pipe = overlap(
      "--model transformer -c transformer.layers=2 -c transformer.hidden=512 -c transformer.heads=8 "
      "-c transformer.sequence=128 --batch 4 --tp 2 --pp 2 --platform dgx2 --gpus 8");
  CHECK(pipe["shared"].get<int>() > 0);
  CHECK(pipe["shared"].get<int>() < pipe["collectives"].get<int>());
  CHECK(pipe["shared_time"].get<double>() > 0);
  const Result r = incsim("--model resnet18 --batch 8 --platform star --gpus 4 --fidelity flow --iterations 1 -c "
                          "flow.share_links=false");
  CHECK_THAT(r.out, Catch::Contains("#   ring: 0 of 2 collectives ran while another group's used a link of theirs"));
}

TEST_CASE("flow: training's collectives share one flow network by default, in step with the iteration",
          "[flow][train]") {
  const std::string share = " --fidelity flow --iterations 1 --warmup 0", apart_only = share + " -c flow.share_links=false";
  // One data-parallel group: alone on the network either way, the same iteration.
  const std::string dp = "--model resnet18 --batch 8 --platform star --gpus 4";
  const nlohmann::json alone = rows(dp + apart_only).at(0), shared = rows(dp + share).at(0);
  CHECK(shared["time_us"].get<double>() == Approx(alone["time_us"].get<double>()).epsilon(1e-6));
  CHECK(shared["flow_overlap"]["share_links"] == true);
  CHECK(shared["flow_overlap"]["collectives"] == 2);
  CHECK(shared["flow_overlap"]["as_flows"] == 0);  // neither met another: nothing simulated twice
  // A pipeline's transfers share the GPUs' links with the tensor-parallel
  // all-reduces: they take longer than each alone (packet level: docs/flow.md).
  const std::string pipe = "--model transformer -c transformer.layers=2 -c transformer.hidden=512 -c transformer.heads=8 "
                           "-c transformer.sequence=128 --batch 4 --tp 2 --pp 2 --platform dgx2 --gpus 8";
  const auto comm = [](const nlohmann::json& row) {
    double sum = 0;
    for (const char* k : {"comm_us", "tp_comm_us", "p2p_us"})
      if (row.contains(k) && row[k].is_number()) sum += row[k].get<double>();
    return sum;
  };
  const nlohmann::json apart = rows(pipe + apart_only).at(0), together = rows(pipe + share).at(0);
  INFO("communication apart " << comm(apart) << " us, sharing " << comm(together) << " us");
  CHECK(comm(together) > comm(apart) * 1.01);
  CHECK(together["flow_overlap"]["as_flows"].get<int>() > 0);
  CHECK(together["flow_overlap"]["as_flows"].get<int>() < together["flow_overlap"]["collectives"].get<int>());
  // What sharing added: the collectives that met, over their times alone.
  CHECK(together["flow_overlap"]["added_us"].get<double>() > 0);
  const Result a = incsim(pipe + share), b = incsim(pipe + share);
  REQUIRE(a.code == 0);
  CHECK(a.out == b.out);
  CHECK_THAT(a.out, Catch::Contains("collectives that meet share their links as flows on one network from their "
                                    "starts (flow.share_links; false: every start alone)"));
  CHECK_THAT(a.out, Catch::Contains("% longer than each alone ("));
  // Steady passes and channel classes shorten the runs alone; a start that
  // meets another runs every pass and channel: the same collectives meet.
  for (const char* scale : {" -c flow.steady_passes=16", " -c flow.channel_classes=true"}) {
    const nlohmann::json scaled = rows(pipe + share + scale).at(0);
    CHECK(scaled["flow_overlap"]["as_flows"] == together["flow_overlap"]["as_flows"]);
  }
}

TEST_CASE("flow: jobs share one flow network, each slowed by the others as at packet level", "[flow][jobs]") {
  const TempDir d;
  const std::string file = d.file("jobs.yaml");
  // Two rings on the same four GPUs: each link carries both.
  std::ofstream(file) << "platform: star\ngpus: 4\nsizes: 1M\njobs:\n"
                         "  - {name: a, gpus: 0-3, algorithm: ring, allow_overlap: true}\n"
                         "  - {name: b, gpus: 0-3, algorithm: ring, start_us: 2}\n";
  const nlohmann::json packet = rows("--config " + file), flow = rows("--config " + file + " --fidelity flow");
  REQUIRE(packet.size() == 2);
  REQUIRE(flow.size() == 2);
  for (size_t j = 0; j < 2; ++j) {
    INFO("job " << flow[j]["job"] << ": slowdown " << flow[j]["slowdown"] << " as flows, " << packet[j]["slowdown"]
                << " at packet level");
    CHECK(flow[j]["slowdown"].get<double>() > 1.5);
    CHECK(flow[j]["slowdown"].get<double>() == Approx(packet[j]["slowdown"].get<double>()).epsilon(0.02));
    CHECK(flow[j]["time_us"].get<double>() == Approx(packet[j]["time_us"].get<double>()).epsilon(0.02));
    CHECK(flow[j]["wrong"] == "-");
  }
  const Result r = incsim("--config " + file + " --fidelity flow");
  CHECK_THAT(r.out, Catch::Contains("as flows on one network the jobs share"));
  std::ofstream(file) << "platform: dgx2\nsizes: 1M\njobs:\n"
                         "  - {name: a, gpus: 0-7, algorithm: ring, weight: 2}\n"
                         "  - {name: b, gpus: 8-15, algorithm: ring}\n";
  require_refused("--config " + file + " --fidelity flow", "whose sharing --fidelity flow does not model");
  require_refused("--config " + file + " --fidelity flow -c switch.multicast.groups=4",
                  "switch.multicast.groups sets how jobs share the switches' or NICs' in-network resources, which "
                  "--fidelity flow does not model");
}

TEST_CASE("flow: a GPU's links to the NVSwitch chips it spreads over are one link each way, at the same rates",
          "[flow]") {
  // NVLS's loads and stores spread over every chip (NVL72's 18, HGX H100's
  // 4); the ring's connections leave by one link each, so nothing merges.
  for (const std::string run : {"--platform nvl72 --algorithm nvls", "--platform hgx-h100 --algorithm nvls",
                                "--platform cluster --nodes 2 --algorithm nvlstree", "--platform nvl72 --algorithm ring"}) {
    const std::string args = run + " --fidelity flow --sizes 64K,16M -c gpu.mem_jitter_cycles=0";
    const std::vector<double> merged = times(args), apart = times(args + " -c flow.merge_planes=false");
    REQUIRE(merged.size() == apart.size());
    for (size_t k = 0; k < merged.size(); ++k) {
      INFO(run << ", size " << k << ": merged " << merged[k] << " us, apart " << apart[k] << " us");
      CHECK(merged[k] == Approx(apart[k]).epsilon(1e-9));
    }
  }
}

TEST_CASE("flow: a cluster of 1,024 nodes (8,192 GPUs) builds and runs a tree all-reduce in seconds", "[flow][scale]") {
  const auto t0 = std::chrono::steady_clock::now();
  const auto t = times("--fidelity flow --platform cluster --nodes 1024 --algorithm tree --sizes 8K");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(t.size() == 1);
  CHECK(t[0] > 0);
  CHECK(s < 30);  // about 5 CPU-seconds on one core of the development machine
}
