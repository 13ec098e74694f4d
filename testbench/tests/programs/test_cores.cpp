// Programs on the GPUs' cores and copy engines through the real binary
// (docs/programs.md): an MSCCL XML runs with real data and moves exactly the
// bytes it implies, #wrong bites, a printed program (the ring, MSCCL's, push,
// pull, multicast, NVLS, the NICs' MultiTree and baselines) runs back to the
// same rows, a copy-engine program of
// one's own runs exact, and a bad file is one sentence naming the file and
// the element.
#include <catch2/catch.hpp>

#include "cli_run.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#ifndef TEST_DATA
#error "CMake passes the folder of the test data as TEST_DATA"
#endif

using namespace cli;

namespace {

const std::string kAllPairs = std::string(TEST_DATA) + "/allpairs_allreduce_4.xml";
const std::string kAllToAll = std::string(TEST_DATA) + "/alltoall_pairs_3.xml";

// The all-pairs XML with its first `from` replaced by `to`, written to d.
std::string edited(const TempDir& d, const std::string& name, const std::string& from, const std::string& to) {
  std::string xml = slurp(kAllPairs);
  const size_t at = xml.find(from);
  REQUIRE(at != std::string::npos);
  xml.replace(at, from.size(), to);
  return d.write(name, xml);
}

// The CSV's rows without the header line.
std::string rows(const Result& r) { return r.out.substr(r.out.find('\n') + 1); }

}  // namespace

TEST_CASE("an MSCCL all-pairs all-reduce runs with #wrong 0 and moves exactly the bytes its XML implies",
          "[cores][msccl]") {
  TempDir d;
  for (const std::string platform : {"star --gpus 4", "dgx2"}) {
    INFO(platform);
    const Result r = incsim("--platform " + platform + " --algorithm " + kAllPairs + " --sizes 4K,64K --quiet --json " +
                            d.file("r.json"));
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    for (const auto& row : j["rows"]) {
      CHECK(row["wrong"] == 0);
      // Each GPU sends its three peers their chunks and the sum of its own
      // chunk back to each (6 sends of a quarter of the message) and
      // receives as many. One channel: every connection on the GPU's first
      // port. A transfer is 128-byte packets with a 16-byte header, a tail
      // flag to the receiver and a head flag back (32 bytes on the wire
      // each), and every packet that comes in is acknowledged (16 bytes).
      const uint64_t chunk = row["size_bytes"].get<uint64_t>() / 4, packets = chunk / 128;
      const uint64_t sends = 6, receives = 6;
      const uint64_t out = sends * packets * (128 + 16) + (sends + receives) * 32 +
                           (receives * packets + sends + receives) * 16;
      int gpus = 0;
      for (const auto& l : row["links"]) {
        const std::string from = l["from"];
        if (from.rfind("gpu", 0) != 0) continue;
        const bool first_port = from.size() > 2 && from.substr(from.size() - 2) == ".0" &&
                                std::stoi(from.substr(3)) < 4;
        CHECK(l["bytes"].get<uint64_t>() == (first_port ? out : 0));
        gpus += first_port;
      }
      CHECK(gpus == 4);
    }
  }
}

TEST_CASE("an MSCCL XML whose rrs and rrc add to a src other than their dst runs as MSCCL's runtime runs it",
          "[cores][msccl]") {
  // testbench/tests/data/msccl_src_dst_3.xml: each chunk's partial sums
  // added to the input chunk an rrs or rrc names as src, the rrc's sum
  // written to the output chunk it names as dst. Every element of every
  // GPU's output is checked against its exact sum (#wrong), and each GPU
  // sends 4 chunks (s, rrs, s, rcs) and receives 4, one connection each way.
  TempDir d;
  const std::string xml = std::string(TEST_DATA) + "/msccl_src_dst_3.xml";
  const Result r = incsim("--platform star --gpus 3 --algorithm " + xml + " --sizes 3K,96K --quiet --json " +
                          d.file("r.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  REQUIRE(j["rows"].size() == 2);
  for (const auto& row : j["rows"]) {
    CHECK(row["wrong"] == 0);
    const uint64_t packets = row["size_bytes"].get<uint64_t>() / 3 / 128, sends = 4, receives = 4;
    const uint64_t out = sends * packets * (128 + 16) + (sends + receives) * 32 + (receives * packets + sends + receives) * 16;
    for (const auto& l : row["links"]) {
      const std::string from = l["from"];
      if (from.rfind("gpu", 0) == 0) CHECK(l["bytes"].get<uint64_t>() == out);
    }
  }
  // The count bites: GPU 1's cores add one too many to its first results.
  const Result f = incsim("--platform star --gpus 3 --algorithm " + xml + " --sizes 96K --quiet -c fault.alu.block=gpu1.cores "
                          "-c fault.alu.elements=5");
  CHECK(f.code == 1);
  // Its 5 wrong sums reach all three GPUs: 15 elements.
  CHECK_THAT(f.out, Catch::Contains("      15    54.9"));
}

TEST_CASE("#wrong bites: a reduction that reads the wrong chunk is refused, a faulty ALU is counted",
          "[cores][msccl]") {
  TempDir d;
  // GPU 0's thread block 0 adds scratch chunk 0 twice instead of 0 and 1:
  // the checker sees it before anything runs.
  const std::string bad = edited(d, "wrong_chunk.xml", "<step s=\"1\" type=\"re\" srcbuf=\"s\" srcoff=\"1\"",
                                 "<step s=\"1\" type=\"re\" srcbuf=\"s\" srcoff=\"0\"");
  require_error("--platform star --gpus 4 --sizes 64K --algorithm " + bad,
                {bad, "is not a correct allreduce", "rank 0's output chunk 0 counts rank 1's input chunk 0 twice"});
  // A correct program on cores that get 7 results wrong: GPU 1's chunk
  // reaches all four GPUs, so 28 elements differ.
  const Result r = incsim("--platform star --gpus 4 --sizes 64K --csv - --algorithm " + kAllPairs +
                          " -c fault.alu.block=gpu1.cores -c fault.alu.elements=7");
  CHECK(r.code == 1);
  CHECK(r.out.find(",28,") != std::string::npos);
}

TEST_CASE("the cores run NCCL's ring broadcast: the root's data reaches every GPU, and a faulty copy is counted",
          "[cores][broadcast]") {
  TempDir d;
  // 2 GPUs: the root sends, the other receives, a point-to-point transfer.
  for (const std::string platform : {"star --gpus 2", "star --gpus 4", "dgx2"}) {
    INFO(platform);
    const Result r = incsim("--platform " + platform + " --collective broadcast --algorithm ring --sizes 4K,64K,12292,1M " +
                            "--quiet --json " + d.file("r.json"));
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    REQUIRE(j["rows"].size() == 4);
    for (const auto& row : j["rows"]) {
      CHECK(row["wrong"] == 0);
      CHECK(row["redop"] == "none");
    }
  }
  // A broadcast reduces nothing, so the cores' fault garbles what they copy:
  // GPU 1 forwards its 7 wrong elements down the chain from GPU 0 to GPUs 2
  // and 3, and 21 differ.
  const Result r = incsim("--platform star --gpus 4 --collective broadcast --algorithm ring --sizes 64K --csv - "
                          "-c fault.alu.block=gpu1.cores -c fault.alu.elements=7");
  CHECK(r.code == 1);
  CHECK(r.out.find(",21,") != std::string::npos);
}

TEST_CASE("reduce, gather and scatter run on the cores, exact, with nccl-tests' busbw factors", "[cores][rooted]") {
  TempDir d;
  struct Case {
    std::string collective, algorithm, redop;
    double factor;  // busbw over algbw on n GPUs: 1 for a reduce, (n-1)/n for gather and scatter
  };
  for (const std::string platform : {"star --gpus 3", "dgx2", "cluster --nodes 2"})
    for (const Case& c : {Case{"reduce", "ring", "sum", 0}, Case{"gather", "p2p", "none", 1},
                          Case{"scatter", "p2p", "none", 1}}) {
      INFO(platform << " " << c.collective);
      // 12288 B on 3 GPUs: blocks that split unevenly over the channels.
      const Result r = incsim("--platform " + platform + " --collective " + c.collective + " --sizes 4K,12288,1M " +
                              "--quiet --json " + d.file("r.json"));
      REQUIRE(r.code == 0);
      const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
      REQUIRE(j["config"]["algorithm"] == c.algorithm);
      REQUIRE(j["rows"].size() == 3);
      const double n = j["config"]["gpus"].get<double>();
      for (const auto& row : j["rows"]) {
        CHECK(row["wrong"] == 0);
        CHECK(row["redop"] == c.redop);
        CHECK(row["busbw_GBps"].get<double>() ==
              Approx(row["algbw_GBps"].get<double>() * (c.factor == 0 ? 1.0 : (n - 1) / n)));
      }
    }
}

TEST_CASE("gather and scatter stay under their bound, which charges no acks: the root's go the other way",
          "[cores][rooted][bound]") {
  // DGX-2's 6 links x 25 GB/s less header flits: 133.3 GB/s; charged with
  // acks it would be 120, which both pass at 16 MiB.
  TempDir d;
  for (const std::string c : {"gather", "scatter"}) {
    INFO(c);
    const Result r = incsim("--platform dgx2 --collective " + c + " --sizes 16M --json " + d.file("r.json"));
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("133.3 GB/s payload per GPU (links less header flits; the busiest GPU's "
                                      "write acks go the other way)"));
    const auto row = nlohmann::json::parse(slurp(d.file("r.json")))["rows"][0];
    CHECK(row["busbw_GBps"].get<double>() > 120.0);
    CHECK(row["bound_fraction"].get<double>() <= 1.0);
  }
}

TEST_CASE("#wrong bites on reduce, gather and scatter: a faulty GPU on the way to the root is counted",
          "[cores][rooted]") {
  // The reduce's chain on 4 GPUs runs 1, 2, 3, 0: GPU 2's cores add 7
  // wrong elements, which reach the root's result. Gather: GPU 0's cores
  // copy their own block wrongly; scatter: GPU 2's copy of what it receives
  // is wrong. Either way 7 elements differ.
  for (const std::string c : {"reduce", "gather", "scatter"}) {
    INFO(c);
    const std::string gpu = c == "gather" ? "gpu0" : "gpu2";
    const Result r = incsim("--platform star --gpus 4 --collective " + c + " --sizes 64K --csv - -c fault.alu.block=" +
                            gpu + ".cores -c fault.alu.elements=7");
    CHECK(r.code == 1);
    CHECK(r.out.find(",7,") != std::string::npos);
  }
}

TEST_CASE("NCCL's all-to-all on the cores is exact at every size, type and GPU count, its busbw (n-1)/n of algbw",
          "[cores][alltoall]") {
  TempDir d;
  // 5 GPUs and 12292 B: blocks that split unevenly; 2 channels on star, 12 on dgx2.
  struct Case {
    std::string run;
    int n;
  };
  for (const Case& c : {Case{"star --gpus 2 --dtype half", 2}, Case{"star --gpus 5 -c ring.channels=2", 5},
                        Case{"star --gpus 5 --dtype bfloat16", 5}, Case{"star --gpus 4 --dtype int32", 4},
                        Case{"dgx2", 16}}) {
    INFO(c.run);
    const Result r = incsim("--platform " + c.run + " --collective alltoall --sizes 4K,12292,1M --quiet --json " +
                            d.file("r.json"));
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    REQUIRE(j["rows"].size() == 3);
    const double n = c.n;
    for (const auto& row : j["rows"]) {
      CHECK(row["wrong"] == 0);
      CHECK(row["redop"] == "none");
      CHECK(row["busbw_GBps"].get<double>() == Approx(row["algbw_GBps"].get<double>() * (n - 1) / n));
      CHECK(row["bound_fraction"].get<double>() <= 1.0);
    }
    // Large enough to stream: near the bound of (n-1)/n M per GPU's links.
    CHECK(j["rows"][2]["bound_fraction"].get<double>() > (c.n == 16 ? 0.7 : 0.85));
  }
}

TEST_CASE("#wrong bites on an all-to-all: a faulty GPU's copies are counted, element by element", "[cores][alltoall]") {
  // GPU 1's cores garble the first 7 elements they copy (its own block, or
  // a block received), which no one forwards: 7 differ.
  for (const std::string& run : {std::string("--gpus 4 --collective alltoall"), "--gpus 3 --algorithm " + kAllToAll}) {
    INFO(run);
    const Result r = incsim("--platform star " + run + " --sizes 64K --csv - -c fault.alu.block=gpu1.cores "
                            "-c fault.alu.elements=7");
    CHECK(r.code == 1);
    CHECK(r.out.find(",7,") != std::string::npos);
  }
}

TEST_CASE("an MSCCL alltoall XML of msccl-tools' layout runs with #wrong 0, and all-to-all refuses the ring",
          "[cores][alltoall][msccl]") {
  TempDir d;
  // One step (a thread block per peer), and two (a relay through scratch, as msccl-tools' two-step).
  for (const std::string& run : {"--gpus 3 --algorithm " + kAllToAll,
                                 "--gpus 4 --algorithm " + std::string(TEST_DATA) + "/alltoall_two_step_4.xml"}) {
    INFO(run);
    const Result r = incsim("--platform star " + run + " --sizes 4K,12292,1M --quiet --json " + d.file("r.json"));
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    REQUIRE(j["rows"].size() == 3);
    for (const auto& row : j["rows"]) CHECK(row["wrong"] == 0);
  }
  require_error("--platform star --gpus 4 --collective alltoall --algorithm ring",
                {"algorithm 'ring' does not run alltoall; choose one of p2p"});
  require_error("--platform star --gpus 4 --collective allreduce --algorithm p2p",
                {"algorithm 'p2p' does not run allreduce"});
  require_error("--platform dgx1v --collective alltoall", {"sends between GPUs that no NVLink joins"});
  require_error("--platform star --gpus 3 --collective allreduce --algorithm " + kAllToAll,
                {"its collective is alltoall, not the --collective allreduce asked for"});
}

TEST_CASE("a printed program runs back from its file with identical rows", "[cores][programs]") {
  TempDir d;
  // The ring's settings shape its program; the file's run reads none of them.
  struct Case {
    std::string run, ring_settings, algorithm;
  };
  for (const Case& c : {Case{"--platform star --gpus 5 --sizes 12292,96K", " -c ring.channels=3", "ring"},
                        Case{"--platform dgx2 --collective allgather --sizes 64K", " -c ring.channels=2", "ring"},
                        Case{"--platform dgx2 --sizes 64K", "", kAllPairs},
                        Case{"--platform dgx2 --sizes 64K", "", "push"},
                        Case{"--platform star --gpus 4 --sizes 64K,12292", " -c pull.barrier=false", "pull"},
                        Case{"--platform dgx2 --collective reducescatter --sizes 64K", " -c nvls.engine=copy", "nvls"},
                        Case{"--platform dgx2 --collective allgather --sizes 64K", "", "multicast"},
                        Case{"--platform dgx2 --collective broadcast --sizes 64K", "", "multicast"},
                        Case{"--platform dgx2 --collective broadcast --sizes 64K,1M", " -c ring.channels=3", "ring"},
                        Case{"--platform torus --sizes 64K", " -c nic.lockstep=true", "multitree"},
                        Case{"--platform fattree --sizes 64K", " -c dbtree.pieces=2", "dbtree"},
                        Case{"--platform dgx2 --sizes 64K", " -c ring.engine=nic", "ring"},
                        // NCCL's protocol by size (LL, then LL128), and a tree's chunk rules.
                        Case{"--platform hgx-h100 --sizes 8K,64K", "", "ring"},
                        Case{"--platform cluster --nodes 2 --sizes 64K,1M", "", "tree"},
                        // NVLSTree: the cores' multimem loads and stores, the switches' tables.
                        Case{"--platform cluster --nodes 2 --sizes 1M,12292", " -c ring.channels=2", "nvlstree"},
                        Case{"--platform hgx-h100 --sizes 64K,12292", " -c nvls.engine=cores", "nvls"},
                        Case{"--platform hgx-h100 --collective reducescatter --sizes 64K", " -c nvls.engine=cores",
                             "nvls"},
                        Case{"--platform star --gpus 4 --collective allgather --sizes 12288", " -c nvls.engine=cores",
                             "nvls"},
                        // NCCL's all-to-all, and on hgx-h100 by size (LL, then LL128).
                        Case{"--platform star --gpus 5 --collective alltoall --sizes 12292,96K", " -c ring.channels=3",
                             "p2p"},
                        Case{"--platform hgx-h100 --collective alltoall --sizes 8K,64K", "", "p2p"},
                        // On a cluster, relayed by PXN: its relay channels (datachannels) and scratch.
                        Case{"--platform cluster --nodes 2 --collective alltoall --sizes 64K,1M", "", "p2p"}}) {
    INFO(c.run << c.ring_settings << " " << c.algorithm);
    const Result printed = incsim(c.run + c.ring_settings + " --algorithm " + c.algorithm + " --print-program");
    REQUIRE(printed.code == 0);
    REQUIRE(printed.out.rfind("# incsim collective program", 0) == 0);
    const std::string file = d.write("p.txt", printed.out);
    const Result a = incsim(c.run + c.ring_settings + " --algorithm " + c.algorithm + " --csv -");
    const Result b = incsim(c.run + " --algorithm " + file + " --csv -");
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(rows(a) == rows(b));
    // Printing the file's program gives the file.
    CHECK(incsim(c.run + " --algorithm " + file + " --print-program").out == printed.out);
  }
}

namespace {
// A push all-reduce of 4 ranks in two chunks, each reduced in its own group
// (so its own multicast window) of all four.
const char* const kTwoGroups =
    "program 1\nname twogroups\ncollective allreduce ranks 4 root 0 inplace 0\ngroup 0 1 2 3\ngroup 0 1 2 3\n";

std::string two_groups() {
  std::string s = kTwoGroups;
  for (int r = 0; r < 4; ++r)
    s += "rank " + std::to_string(r) + " input 2 output 2 scratch 0\n" +
         "0 redwrite copy ch 0 q 0 group 0 src i0 dst o0\n1 redwrite copy ch 0 q 0 group 1 src i1 dst o1\n";
  return s;
}

// A pull all-reduce of n ranks in 2n chunks: rank r reads chunks r and n + r,
// each forwarded by a multicast, so two reads queue in each copy engine.
std::string two_reads(int n) {
  std::string s = "program 1\nname tworeads\ncollective allreduce ranks " + std::to_string(n) + " root 0 inplace 0\ngroup";
  for (int r = 0; r < n; ++r) s += " " + std::to_string(r);
  s += "\n";
  for (int r = 0; r < n; ++r) {
    s += "rank " + std::to_string(r) + " input " + std::to_string(2 * n) + " output " + std::to_string(2 * n) +
         " scratch 0\n0 barrier copy ch 0 q 0 group 0\n";
    int i = 1;
    std::vector<int> reads(2 * n);
    for (int k = 0; k < 2 * n; ++k) {
      reads[k] = i;
      s += std::to_string(i++) + " redread copy ch 0 q 0 group 0 src i" + std::to_string(k) +
           (k % n == r ? " dst o" + std::to_string(k) : "") + "\n";
    }
    for (int k = 0; k < 2 * n; ++k)
      s += std::to_string(i++) + " mcast copy ch 0 q 0 group 0 " +
           (k % n == r ? "src o" + std::to_string(k) + " after " + std::to_string(reads[k]) : "dst o" + std::to_string(k)) +
           "\n";
  }
  return s;
}
// An all-gather of n ranks by the copy engines' unicast writes (a DMA put
// and a flag): rank r sends its input to r + 1, r + 2, ... in turn.
std::string dma_allgather(int n) {
  std::string s = "program 1\nname dma\ncollective allgather ranks " + std::to_string(n) + " root 0 inplace 0\n";
  for (int r = 0; r < n; ++r) {
    s += "rank " + std::to_string(r) + " input 1 output " + std::to_string(n) + " scratch 0\n0 cpy copy ch 0 q 0 src i0 dst o" +
         std::to_string(r) + "\n";
    int i = 1;
    for (int k = 1; k < n; ++k) s += std::to_string(i++) + " s copy ch 0 q 0 to " + std::to_string((r + k) % n) + " src i0\n";
    for (int k = 1; k < n; ++k) {
      const std::string q = std::to_string((r - k + n) % n);
      s += std::to_string(i++) + " r copy ch 0 q 1 from " + q + " dst o" + q + "\n";
    }
  }
  return s;
}
}  // namespace

TEST_CASE("a copy-engine all-gather by unicast writes runs exact and moves exactly the bytes it implies",
          "[copy][programs]") {
  TempDir d;
  const std::string file = d.write("dma.txt", dma_allgather(4));
  const Result r = incsim("--platform star --gpus 4 --sizes 4K,64K,12292 --quiet --json " + d.file("r.json") +
                          " --algorithm " + file);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  for (const auto& row : j["rows"]) {
    CHECK(row["wrong"] == 0);
    const uint64_t size = row["size_bytes"];
    if (size % (4 * 128) != 0) continue;
    // Each GPU writes its quarter to three peers in 128-byte packets with a
    // 16-byte header, then a flag to each (32 bytes on the wire), and
    // acknowledges every packet and flag that comes in (16 bytes).
    const uint64_t packets = size / 4 / 128;
    const uint64_t out = 3 * packets * (128 + 16) + 3 * 32 + (3 * packets + 3) * 16;
    for (const auto& l : row["links"]) CHECK(l["bytes"].get<uint64_t>() == out);
  }
  // Unicast writes need no switch tables or multicast: a torus and a DGX-1 run them.
  for (const std::string platform : {"torus", "dgx1v"}) {
    const Result t = incsim("--platform " + platform + " --sizes 64K --csv - --algorithm " + file);
    REQUIRE(t.code == 0);
    CHECK(t.out.find(",0,") != std::string::npos);
  }
}

TEST_CASE("copy-engine programs of one's own run exact, #wrong bites, and what the engines cannot do is refused",
          "[copy][programs]") {
  TempDir d;
  const std::string groups = d.write("twogroups.txt", two_groups());
  const std::string reads = d.write("tworeads.txt", two_reads(4));
  for (const std::string& file : {groups, reads}) {
    INFO(file);
    const Result r = incsim("--platform star --gpus 4 --sizes 4K,64K,12292 --quiet --json " + d.file("r.json") +
                            " --algorithm " + file);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("operations on the GPUs' copy engines") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    REQUIRE(j["rows"].size() == 3);
    for (const auto& row : j["rows"]) CHECK(row["wrong"] == 0);
  }
  // Three corrupted reductions in one table reach all four GPUs.
  const Result faulty = incsim("--platform star --gpus 4 --sizes 64K --csv - --algorithm " + groups +
                               " -c fault.alu.block=sw0.port0.reduction_table -c fault.alu.elements=3");
  CHECK(faulty.code == 1);
  CHECK(faulty.out.find(",12,") != std::string::npos);

  std::string unpaired = two_groups();
  unpaired.replace(unpaired.find("0 redwrite copy ch 0 q 0 group 0 src i0 dst o0"), 46, "0 s copy ch 0 q 0 to 1 src i0");
  require_error("--platform star --gpus 4 --algorithm " + d.write("unpaired.txt", unpaired),
                {"unpaired.txt", "is not a correct"});
  std::string mixed = two_groups();
  mixed.replace(mixed.find("1 redwrite copy"), 15, "1 redwrite cores");
  require_error("--platform star --gpus 4 --algorithm " + d.write("mixed.txt", mixed),
                {"mixed.txt: rank 0's operation 1 (redwrite) runs on the cores engine; a program runs on one engine"});
  require_error("--platform torus --algorithm " + groups, {"reduces or multicasts in the switches", "torus"});
}

// SHARP's aggregation buffers hold a contribution until its block is
// complete; Klenk's tables evict partial sums to a home GPU, which only the
// copy engines' push takes.
TEST_CASE("the cores push only to switches that hold contributions: refused on Klenk's tables, rerun from a file on a cluster",
          "[cores][sharp]") {
  TempDir d;
  std::string cores = two_groups();
  for (size_t at; (at = cores.find("redwrite copy")) != std::string::npos;) cores.replace(at, 13, "redwrite cores");
  require_error("--platform star --gpus 4 --algorithm " + d.write("cores.txt", cores),
                {"rank 0's operation 0 (redwrite)", "push only to switches that hold a contribution"});
  const std::string run = "--platform cluster --nodes 2 --sizes 64K,1000000";
  const Result printed = incsim(run + " --algorithm nvlssharp --print-program");
  REQUIRE(printed.code == 0);
  const Result a = incsim(run + " --algorithm nvlssharp --csv -");
  const Result b = incsim(run + " --algorithm " + d.write("sharp.txt", printed.out) + " --csv -");
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(rows(a) == rows(b));
  // Ranks 1 and 8 swapped: node 0's NVLS group now spans both nodes, and
  // rail 0's SHARP group lies in node 0.
  const auto swap = [](const std::string& w) { return w == "1" ? std::string("8") : w == "8" ? std::string("1") : w; };
  std::istringstream in(printed.out);
  std::string head;
  std::vector<std::string> ranks;  // each rank's block, its first line without the rank's number
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("rank ", 0) == 0) {
      ranks.push_back(line.substr(line.find(' ', 5)) + "\n");
    } else if (!ranks.empty()) {
      ranks.back() += line + "\n";
    } else if (line.rfind("group ", 0) == 0) {
      std::istringstream words(line.substr(6));
      head += "group";
      for (std::string w; words >> w;) head += " " + swap(w);
      head += "\n";
    } else {
      head += line + "\n";
    }
  }
  REQUIRE(ranks.size() == 16);
  std::swap(ranks[1], ranks[8]);
  std::string swapped = head;
  for (size_t r = 0; r < ranks.size(); ++r) swapped += "rank " + std::to_string(r) + ranks[r];
  require_error(run + " --algorithm " + d.write("swapped.txt", swapped),
                {"(redread) is in a group across the cluster's nodes, which takes only reducing writes"});
}

TEST_CASE("bad input: a malformed MSCCL XML is refused naming the file and the element, and a file that does not fit",
          "[cores][msccl][errors]") {
  TempDir d;
  const std::string bad = edited(d, "bad_dep.xml", "depid=\"2\" deps=\"1\"", "depid=\"7\" deps=\"1\"");
  require_error("--platform star --gpus 4 --algorithm " + bad, {bad, "gpu 0 tb 0 step 1", "tb 7"});
  const std::string broken = d.write("broken.xml", "<algo name=\"x\"><gpu id=\"0\">\n</algo>\n");
  require_error("--platform star --gpus 4 --algorithm " + broken, {broken});
  require_error("--platform star --gpus 3 --algorithm " + kAllPairs, {"3 GPUs", "the 4 ranks of " + kAllPairs});
  require_error("--platform star --gpus 4 --collective allgather --algorithm " + kAllPairs,
                {kAllPairs, "its collective is allreduce, not the --collective allgather"});
  // The same refusals as flows, and --gpus that a file's ranks contradict on a platform --gpus does not shape.
  require_error("--fidelity flow --platform star --gpus 3 --algorithm " + kAllPairs,
                {"3 GPUs", "the 4 ranks of " + kAllPairs});
  require_error("--fidelity flow --platform star --gpus 4 --collective allgather --algorithm " + kAllPairs,
                {kAllPairs, "its collective is allreduce, not the --collective allgather"});
  for (const char* fidelity : {"packet", "flow"})
    require_error(std::string("--fidelity ") + fidelity + " --platform hgx-h100 --gpus 3 --algorithm " + kAllPairs,
                  {"--gpus 3, and " + kAllPairs + " has 4 ranks"});
}

TEST_CASE("an XML's proto takes effect: LL and LL128 move exactly their lines' bytes, without fences or tail flags",
          "[cores][msccl][protocols]") {
  TempDir d;
  struct Proto {
    const char* name;
    uint64_t line, data;  // bytes of a line and of data in it
  };
  for (const Proto& p : {Proto{"LL", 16, 8}, Proto{"LL128", 128, 120}}) {
    INFO(p.name);
    const std::string xml = edited(d, std::string(p.name) + ".xml", "proto=\"Simple\"", std::string("proto=\"") + p.name + "\"");
    const Result r = incsim("--platform star --gpus 4 --algorithm " + xml + " --sizes 4K,64K --json " + d.file("r.json"));
    REQUIRE(r.code == 0);
    CHECK(r.out.find(std::string("cores, ") + (p.line == 16 ? "ll" : "ll128") + " protocol") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    for (const auto& row : j["rows"]) {
      CHECK(row["wrong"] == 0);
      // 128-byte packets (16-byte header) of whole lines: a quarter of the
      // message per send. No tail flags: the receiver polls the lines. Head
      // flags still free the sender's slots (32 bytes on the wire), and
      // every packet that comes in is acknowledged (16 bytes).
      const uint64_t chunk = row["size_bytes"].get<uint64_t>() / 4, per_packet = 128 / p.line * p.data;
      const uint64_t full = chunk / per_packet, rest = chunk % per_packet;
      const uint64_t packets = full + (rest ? 1 : 0);
      const uint64_t send_bytes = full * (16 + 128) + (rest ? 16 + (rest + p.data - 1) / p.data * p.line : 0);
      const uint64_t sends = 6, receives = 6;
      const uint64_t out = sends * send_bytes + receives * 32 + (receives * packets + sends) * 16;
      for (const auto& l : row["links"]) {
        const std::string from = l["from"];
        if (from.rfind("gpu", 0) == 0 && from.substr(from.size() - 2) == ".0") CHECK(l["bytes"].get<uint64_t>() == out);
      }
    }
  }
}

TEST_CASE("NCCL's protocols on the ring: exact, LL lowest latency at half the bandwidth, LL128 both, #wrong bites",
          "[cores][protocols]") {
  TempDir d;
  const auto time_us = [&d](const std::string& args) {
    const Result r = incsim(args + " --quiet --csv " + d.file("r.csv"));
    REQUIRE(r.code == 0);
    const auto rows = lines(slurp(d.file("r.csv")));
    std::vector<double> t;
    for (size_t k = 1; k < rows.size(); ++k) {
      std::vector<std::string> f;
      std::istringstream is(rows[k]);
      for (std::string x; std::getline(is, x, ',');) f.push_back(x);
      CHECK(f[7] == "0");  // #wrong
      t.push_back(std::stod(f[4]));
    }
    return t;
  };
  for (const char* c : {"allreduce", "allgather", "reducescatter"}) {
    INFO(c);
    for (const char* p : {"ll", "ll128"})
      time_us(std::string("--platform dgx2 --collective ") + c + " --sizes 8K,999996 -c ring.protocol=" + p);
  }
  // The hardware alone: NCCL's fixed cost per collective (nccl.launch) would dilute the fence's share.
  const std::string h = "--platform hgx-h100 -c nccl.launch=none --sizes 8K,16M -c ring.protocol=";
  const auto simple = time_us(h + "simple"), ll = time_us(h + "ll"), ll128 = time_us(h + "ll128");
  CHECK(ll[0] < 0.7 * simple[0]);       // no fence round trip per step
  CHECK(ll128[0] < 0.7 * simple[0]);
  CHECK(ll[1] > 1.8 * ll128[1]);        // 8 of every 16 bytes are data, against 120 of every 128
  CHECK(ll128[1] < 1.05 * simple[1]);   // 120 of every 128
  const Result f = incsim("--platform dgx2 --sizes 1M -c ring.protocol=ll -c fault.alu.block=gpu3.cores "
                          "-c fault.alu.elements=5 --quiet");
  CHECK(f.code != 0);
  CHECK_THAT(f.err, Catch::Contains("80 elements differ"));  // as with Simple: 5 per GPU of 16
}

TEST_CASE("ring.protocol=auto runs each size as the protocol its thresholds pick would alone", "[cores][protocols]") {
  const std::string base = "--platform dgx2 --quiet ";
  for (const auto& [size, proto] : {std::pair{"8K", "ll"}, std::pair{"64K", "ll128"}, std::pair{"1M", "simple"}}) {
    INFO(size << " " << proto);
    const Result a = incsim(base + "--sizes " + size +
                            " -c ring.protocol=auto -c ring.auto.ll_max_bytes=8192 -c ring.auto.ll128_max_bytes=65536");
    const Result b = incsim(base + "--sizes " + size + " -c ring.protocol=" + proto);
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(a.out.find("protocol by size (ring.protocol=auto): LL up to 8K, LL128 up to 64K") != std::string::npos);
    CHECK(lines(a.out).back() == lines(b.out).back());
  }
  require_error("--platform dgx2 -c ring.protocol=auto -c net.max_payload_bytes=64", {"ll128 protocol's lines"});
}

TEST_CASE("today's machines pick the protocol by size as NCCL does, the papers' platforms keep Simple", "[cores][protocols]") {
  const auto last_row = [](const std::string& args) {
    const Result r = incsim(args + " --quiet");
    REQUIRE(r.code == 0);
    return std::pair{r.out.find("protocol by size (ring.protocol=auto)") != std::string::npos, lines(r.out).back()};
  };
  for (const char* platform : {"hgx-h100", "cluster --nodes 2"}) {
    INFO(platform);
    const auto [by_size, row] = last_row(std::string("--platform ") + platform + " --sizes 8K");
    CHECK(by_size);
    CHECK(row == last_row(std::string("--platform ") + platform + " --sizes 8K -c ring.protocol=ll").second);
  }
  CHECK_FALSE(last_row("--platform dgx2 --sizes 8K").first);
}

// An empty transfer stores a flag under LL and LL128 too; it must not
// complete the transfers before it that are still landing (found on NVL72 at
// 4 KiB: 72 GPUs x 18 channels leave most chunks empty, 20031 wrong).
TEST_CASE("LL and LL128 are exact where most of the ring's chunks are empty", "[cores][protocols]") {
  for (const char* proto : {"ll", "ll128"})
    for (const char* channels : {"4", "9"}) {
      const Result r = incsim(std::string("--platform star --gpus 8 --sizes 64,128,256 -c ring.protocol=") + proto +
                              " -c ring.channels=" + channels + " --csv -");
      INFO(proto << ", " << channels << " channels: " << r.err);
      CHECK(r.code == 0);
    }
}

TEST_CASE("bad input: an unknown protocol, LL128 lines larger than a packet, a program that mixes protocols",
          "[cores][protocols]") {
  require_error("--platform dgx2 -c ring.protocol=fast", {"ring.protocol (or auto) must be simple, ll or ll128, not 'fast'"});
  require_error("--platform dgx2 -c ring.protocol=ll128 -c net.max_payload_bytes=64",
                {"ll128 protocol's lines (128 B) do not fit a packet of net.max_payload_bytes = 64"});
  TempDir d;
  const Result p = incsim("--platform star --gpus 4 --algorithm ring --collective allgather --print-program");
  REQUIRE(p.code == 0);
  std::string text = p.out;
  const size_t at = text.find(" cores ch ");
  REQUIRE(at != std::string::npos);
  text.insert(at + 6, " proto ll");  // after "cores"
  require_error("--platform star --gpus 4 --algorithm " + d.write("mixed.prog", text), {"mixes the ll and simple protocols"});
}

TEST_CASE("NVLS runs on the cores by default, as NCCL runs it, and -c nvls.engine=copy keeps the copy engines' form",
          "[cores][nvls]") {
  const std::string run = "--platform hgx-h100 --algorithm nvls --sizes 64K,1M";
  const auto program = [&](const std::string& extra) {
    const Result r = incsim(run + extra + " --print-program");
    REQUIRE(r.code == 0);
    return r.out;
  };
  const std::string by_default = program(""), cores = program(" -c nvls.engine=cores"),
                    copy = program(" -c nvls.engine=copy");
  CHECK(by_default == cores);
  // The cores' thread blocks: one load-reduce per GPU's chunk, no barrier.
  CHECK_THAT(by_default, Catch::Contains("0 redread cores ch 0 q 0 group 0"));
  CHECK_THAT(by_default, !Catch::Contains(" copy ch "));
  // The copy engines' form: Klenk's pull, after its barrier.
  CHECK_THAT(copy, Catch::Contains("0 barrier copy ch 0 q 0 group 0"));
  CHECK_THAT(copy, !Catch::Contains(" cores ch "));
  const auto csv = [&](const std::string& extra) {
    const Result r = incsim(run + extra + " --csv -");
    REQUIRE(r.code == 0);
    return rows(r);
  };
  CHECK(csv("") == csv(" -c nvls.engine=cores"));
  CHECK(csv("") != csv(" -c nvls.engine=copy"));
}

TEST_CASE("NVLS on the cores (nvls.engine=cores) is exact, has the copy engines' bound, and holds NCCL's 16 blocks",
          "[cores][nvls]") {
  TempDir d;
  const auto run = [&](const std::string& engine, const std::string& collective) {
    const Result r = incsim("--platform hgx-h100 --algorithm nvls -c nvls.engine=" + engine + " --collective " +
                            collective + " --sizes 64K,1000000 --quiet --json " + d.file(engine + ".json"));
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(slurp(d.file(engine + ".json")))["rows"];
  };
  for (const char* collective : {"allreduce", "reducescatter", "allgather"}) {
    INFO(collective);
    const auto cores = run("cores", collective), copy = run("copy", collective);
    REQUIRE(cores.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      CHECK(cores[i]["wrong"] == 0);
      CHECK(copy[i]["wrong"] == 0);
      // All-reduce and reduce-scatter move M (n + 1) / n and M per GPU over links that carry no
      // acknowledgements, whoever issues them; the cores' all-gather takes its own store back too (M).
      const double ratio = std::string(collective) == "allgather" ? 8.0 / 7.0 : 1.0;
      CHECK(cores[i]["bound_us"].get<double>() == Approx(ratio * copy[i]["bound_us"].get<double>()).epsilon(1e-9));
    }
  }
  // On the cores NVLS's NCCL_NVLS_NCHANNELS thread blocks each hold an SM
  // while they run, slowing the backward kernels they overlap; on the copy
  // engines it holds none.
  const auto iteration = [](const std::string& engine, const std::string& contention) {
    const Result t = incsim("--model transformer -c transformer.layers=2 -c transformer.hidden=256 "
                            "-c transformer.heads=4 -c transformer.sequence=64 -c transformer.vocabulary=1000 "
                            "--batch 8 --platform star --gpus 4 --algorithm nvls -c train.bucket_bytes=1 "
                            "-c nvls.engine=" + engine + " -c train.contention=" + contention + " --quiet");
    REQUIRE(t.code == 0);
    return lines(t.out).back();
  };
  CHECK(iteration("cores", "sm") != iteration("cores", "none"));
  CHECK(iteration("copy", "sm") == iteration("copy", "none"));
}

TEST_CASE("NVLS on the cores spreads every channel's blocks over the GPU's links by their addresses",
          "[cores][nvls]") {
  // On NVL72 at 64 KiB each of a GPU's 16 channels reads one block; striped
  // by address they reach different switches, and 16 channels take no
  // longer than one. Numbered from the first port, every channel's block
  // went to switch 0 and 16 channels took 2.8 times one's time.
  TempDir d;
  const auto time_us = [&](int channels) {
    const std::string json = d.file("c" + std::to_string(channels) + ".json");
    const Result r = incsim("--platform nvl72 --algorithm nvls --sizes 64K --quiet -c nvls.channels=" +
                            std::to_string(channels) + " --json " + json);
    REQUIRE(r.code == 0);
    const auto row = nlohmann::json::parse(slurp(json))["rows"].at(0);
    CHECK(row["wrong"] == 0);
    return row["time_us"].get<double>();
  };
  const double one = time_us(1), sixteen = time_us(16);
  INFO("one channel " << one << " us, 16 channels " << sixteen << " us");
  CHECK(sixteen < 1.2 * one);
}

TEST_CASE("the cores' parameters are cores.*: the ring.* names they had still set them, and the run says so",
          "[cores][params]") {
  const Result now = incsim("--platform star --gpus 4 --sizes 64K --csv - -c cores.chunk_bytes=16384 -c cores.slots=2");
  const Result old = incsim("--platform star --gpus 4 --sizes 64K --csv - -c ring.chunk_bytes=16384 -c ring.slots=2");
  REQUIRE(now.code == 0);
  REQUIRE(old.code == 0);
  CHECK(rows(old) == rows(now));
  CHECK(now.err.find("renamed") == std::string::npos);
  CHECK_THAT(old.err, Catch::Contains("incsim: note: ring.chunk_bytes is renamed cores.chunk_bytes"));
  CHECK_THAT(old.err, Catch::Contains("incsim: note: ring.slots is renamed cores.slots"));
  // A chunk of 16 KiB makes more flags than 128 KiB's: the key took effect.
  const Result dflt = incsim("--platform star --gpus 4 --sizes 64K --csv -");
  CHECK(rows(dflt) != rows(now));
}
