// The 16-bit element types through the real binary, on every engine family
// that reduces: the GPUs' cores (ring on DGX-2), the copy engines and the
// NVSwitch reduction tables (push and pull on DGX-2), the NICs (MultiTree on
// a 4x4 torus), NVLS on the cores (NVLSTree on 2 HGX H100 nodes). Each runs
// --dtype half and bfloat16 with #wrong 0 and the
// nccl-tests count and type columns of 2-byte elements, and a faulty ALU
// shows exactly as many wrong elements as in float32: the faults reach all
// 16 GPUs, 7 x 16. NetReduce's RoCE hosts and FPGA aggregator too: the
// hosts' ring, NetReduce on a rack and Parallel NetReduce.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

using cli::incsim;

namespace {

struct Engine {
  std::string run, faulty_block;
};
const Engine kEngines[] = {
    {"--platform dgx2 --algorithm ring", "gpu1.cores"},
    {"--platform dgx2 --algorithm push", "sw0.port0.reduction_table"},
    // Without its barrier, pull's first results are data, not the barrier's flag.
    {"--platform dgx2 --algorithm pull -c pull.barrier=false", "sw0.port0.reduction_table"},
    {"--platform torus --dims 4x4 --algorithm multitree", "n5.nic"},
    // The cores' NVLS (multimem loads and stores) in 2 nodes of 8: a node's fault reaches all 16 GPUs.
    {"--platform cluster --nodes 2 --algorithm nvlstree", "n1_sw0.port0.reduction_table"},
    {"--platform dgx2 --algorithm nvls -c nvls.engine=cores", "sw0.port0.reduction_table"},
};

nlohmann::json rows(const std::string& args) {
  TempDir d;
  const cli::Result r = incsim(args + " --quiet --json " + d.file("r.json"));
  INFO("incsim " << args << "\n" << r.err);
  CHECK(r.exited);
  return nlohmann::json::parse(cli::slurp(d.file("r.json")))["rows"];
}

}  // namespace

TEST_CASE("half and bfloat16 all-reduce with #wrong 0 on the cores, the copy engines, the switches and the NICs",
          "[dtypes]") {
  for (const Engine& e : kEngines)
    for (const std::string type : {"half", "bfloat16"})
      for (const std::string redop : {"sum", "max"}) {
        INFO(e.run << " " << type << " " << redop);
        // 12290 B: an odd count of 2-byte elements.
        const auto r = rows(e.run + " --sizes 4K,12290,64K --dtype " + type + " --redop " + redop);
        REQUIRE(r.size() == 3);
        for (const auto& row : r) {
          CHECK(row["wrong"] == 0);
          CHECK(row["type"] == type);
          CHECK(row["redop"] == redop);  // the NICs' too (they once printed sum)
          CHECK(row["count"] == row["size_bytes"].get<uint64_t>() / 2);
        }
      }
}

TEST_CASE("half and bfloat16 on NetReduce's RoCE hosts and FPGA aggregator: #wrong 0, and a faulty aggregator counted",
          "[dtypes][netreduce]") {
  for (const std::string run : {"--platform rack --algorithm ring", "--platform rack --algorithm netreduce",
                                "--platform multigpu --machines 2 --gpus-per-machine 3 --algorithm pnetreduce"})
    for (const std::string type : {"half", "bfloat16"}) {
      INFO(run << " " << type);
      for (const auto& row : rows(run + " --sizes 4K,12290,64K --dtype " + type)) {
        CHECK(row["wrong"] == 0);
        CHECK(row["count"] == row["size_bytes"].get<uint64_t>() / 2);
      }
      // Each of the 6 hosts gets the aggregator's 5 wrong sums.
      CHECK(rows("--platform rack --algorithm netreduce --sizes 64K --dtype " + type +
                 " -c fault.alu.block=fpga.aggregator -c fault.alu.elements=5")[0]["wrong"] == 5 * 6);
    }
}

TEST_CASE("a faulty ALU adding half or bfloat16 shows as exactly its wrong elements, as in float", "[dtypes][fault]") {
  for (const Engine& e : kEngines)
    for (const std::string type : {"float", "half", "bfloat16"}) {
      INFO(e.run << " " << type);
      const auto r = rows(e.run + " --sizes 64K --dtype " + type + " -c fault.alu.block=" + e.faulty_block +
                          " -c fault.alu.elements=7");
      REQUIRE(r.size() == 1);
      CHECK(r[0]["wrong"] == 7 * 16);
    }
}

TEST_CASE("the aliases of the 16-bit types, and what refuses them", "[dtypes][errors]") {
  CHECK(rows("--platform star --gpus 4 --sizes 4K --dtype fp16")[0]["type"] == "half");
  CHECK(rows("--platform star --gpus 4 --sizes 4K --dtype float16")[0]["type"] == "half");
  CHECK(rows("--platform star --gpus 4 --sizes 4K --dtype bf16")[0]["type"] == "bfloat16");
  cli::require_error("--platform star --gpus 4 --dtype half --sizes 4K,6,7",
                     {"size 7 is not a multiple of the 2-byte element size of half"});
  cli::require_error("--platform torus --dims 16x16 --algorithm multitree --dtype bfloat16 --sizes 4K",
                     {"--dtype bfloat16 cannot sum 256 ranks exactly", "at most 255 ranks"});
}
