// In-network collectives end to end through tb::Experiment (Klenk §IV): push
// and pull all-reduce, multicast all-gather and broadcast, with real data
// checked against the reference (#wrong == 0) for every operator, type, table
// size and eviction pattern; the tables empty when a collective ends; waves
// bound what is in flight; a copy engine that finds no counter reports it.
#include <catch2/catch.hpp>

#include <sstream>
#include <systemc>

#include "core/error.h"
#include "experiment.h"
#include "options.h"
#include "run_checked.h"

using namespace incsim;

namespace {

struct Run {
  std::vector<tb::Row> rows;
  uint64_t entries_left = 0;  // packets and reduction table entries still held after the run
};

Run run(const std::string& platform, int gpus, const std::string& collective, const std::string& algorithm,
        const std::string& sizes, std::vector<std::pair<std::string, std::string>> params = {},
        const std::string& dtype = "float", const std::string& redop = "sum") {
  tb::Options o = tb::run_options(platform, collective, algorithm, sizes, std::move(params), dtype, redop);
  if (gpus) o.gpus = gpus;  // 0: the platform's own count
  tb::Experiment e(o);
  std::ostringstream table;
  Run r;
  r.rows = e.run(&table);
  INFO(table.str());
  // Nothing may stay behind: no packet anywhere, no table entry.
  std::ostringstream held;
  r.entries_left = tb::collective_of(e).platform().report_held(held);
  if (held.str().find("entries held") != std::string::npos) ++r.entries_left;
  r.entries_left += tb::collective_of(e).platform().pool().in_use();  // packets still anywhere, links included
  INFO(held.str());
  return r;
}

// Sizes: one element, less than a packet, a non-multiple of 128 B, several waves.
const char* kSizes = "4,100,12292,96K";

void require_exact(const Run& r) {
  REQUIRE(r.rows.size() >= 1);
  for (const auto& row : r.rows) {
    INFO("size " << row["size_bytes"]);
    CHECK(row.wrong() == 0);
    CHECK(row["time_us"] > 0);
    CHECK(row["bound_fraction"] > 0);
    CHECK(row["bound_fraction"] <= 1.0);  // nothing beats the bound
  }
  CHECK(r.entries_left == 0);
}

}  // namespace

// Every platform's defaults: a star's 7 ports hold 1792 B of table, so its
// waves are 1792 B, not the paper's 8 kB (Klenk §IV-F1 sizes waves to C/k);
// MultiTree's fat tree carries 128 B blocks, not its own 256 B packets.
#define INNET_EXACT(platform, gpus, collective, algorithm)                                               \
  TEST_CASE(collective " by " algorithm " is exact on " platform " with " #gpus " GPUs", "[innet]") { \
    require_exact(run(platform, gpus, collective, algorithm, kSizes));                                \
  }
INNET_EXACT("dgx2", 16, "allreduce", "push")
INNET_EXACT("dgx2", 16, "allreduce", "pull")
INNET_EXACT("dgx2", 16, "allgather", "multicast")
INNET_EXACT("dgx2", 16, "broadcast", "multicast")
INNET_EXACT("dgx2", 5, "allreduce", "push")
INNET_EXACT("dgx2", 5, "allreduce", "pull")
INNET_EXACT("star", 7, "allreduce", "push")
INNET_EXACT("star", 7, "allreduce", "pull")
INNET_EXACT("fattree2l", 32, "allreduce", "push")
INNET_EXACT("fattree2l", 32, "allreduce", "pull")
INNET_EXACT("fattree2l", 32, "allgather", "multicast")
INNET_EXACT("fattree", 16, "allreduce", "push")
INNET_EXACT("fattree", 16, "allreduce", "pull")

#define INNET_OPS(algorithm, dtype, redop)                                                                 \
  TEST_CASE("allreduce by " algorithm " with " redop " in " dtype " is exact", "[innet][ops]") {         \
    require_exact(run("dgx2", 16, "allreduce", algorithm, "12292,96K", {}, dtype, redop));              \
  }
INNET_OPS("push", "int32", "sum")
INNET_OPS("push", "float", "min")
INNET_OPS("push", "int32", "max")
INNET_OPS("pull", "int32", "sum")
INNET_OPS("pull", "float", "max")
INNET_OPS("pull", "int32", "min")

#define PUSH_THRASH(policy)                                                                                    \
  TEST_CASE("push with one-entry tables and " policy " eviction evicts nearly everything and stays exact",       \
            "[innet][evictions]") {                                                                              \
    const Run r = run("dgx2", 16, "allreduce", "push", "96K,1M",                                                \
                      {{"switch.reduction_table.bytes", "128"},                                                 \
                       {"gpu.copy_engine.waves", "0"},                                                          \
                       {"switch.reduction_table.eviction", policy}});                                           \
    require_exact(r);                                                                                           \
    CHECK(r.rows.back().details["reduction_tables"]["evictions"].get<uint64_t>() > r.rows.back().details["reduction_tables"]["completions"].get<uint64_t>());                                   \
  }
PUSH_THRASH("lru")
PUSH_THRASH("timeout")

TEST_CASE("push with a timeout shorter than a hop evicts on time and stays exact", "[innet][evictions]") {
  // Tables far larger than the message never fill: every eviction is a timeout.
  const Run r = run("fattree2l", 16, "allreduce", "push", "96K",
                    {{"switch.reduction_table.timeout_ns", "20"}, {"switch.reduction_table.bytes", "1048576"}});
  require_exact(r);
  CHECK(r.rows[0].details["reduction_tables"]["evictions"].get<uint64_t>() > 0);
}

TEST_CASE("pull with one-entry tables stalls requests at the first hop and stays exact", "[innet][stalls]") {
  const Run r = run("dgx2", 16, "allreduce", "pull", "96K",
                    {{"switch.reduction_table.bytes", "128"}, {"gpu.copy_engine.waves", "0"}});
  require_exact(r);
  CHECK(r.rows[0].details["reduction_tables"]["stalls"].get<uint64_t>() > 0);
  CHECK(r.rows[0].details["reduction_tables"]["evictions"].get<uint64_t>() == 0);  // pull never evicts
}

TEST_CASE("pull reduces at intermediate switches too", "[innet][pull]") {
  // 96 KiB = 768 blocks; each is reduced at the requester's first hop and,
  // on DGX-2, at the switch of the other group: two completions per block,
  // plus one for the barrier's flag.
  const Run r = run("dgx2", 16, "allreduce", "pull", "96K", {{"switch.reduction_table.bytes", "65536"}});
  require_exact(r);
  CHECK(r.rows[0].details["reduction_tables"]["completions"].get<uint64_t>() == 2 * 768 + 1);
  CHECK(r.rows[0].details["reduction_tables"]["misses"].get<uint64_t>() == 1);  // the barrier's first write
}

TEST_CASE("push with large tables reduces every block in the switches", "[innet][push]") {
  const Run r = run("dgx2", 16, "allreduce", "push", "96K", {{"switch.reduction_table.bytes", "65536"}});
  require_exact(r);
  CHECK(r.rows[0].details["reduction_tables"]["completions"].get<uint64_t>() == 768);
  CHECK(r.rows[0].details["reduction_tables"]["evictions"].get<uint64_t>() == 0);
  CHECK(r.rows[0].details["reduction_tables"]["hits"].get<uint64_t>() == 768 * 15);
}

TEST_CASE("push at 8 MiB with 2 KiB tables reaches 75% of the injection bound", "[innet][bound]") {
  const Run r = run("dgx2", 16, "allreduce", "push", "8M", {{"switch.reduction_table.bytes", "2048"}});
  require_exact(r);
  CHECK(r.rows[0]["bound_fraction"] > 0.75);
}

TEST_CASE("a copy engine that finds no wave counter for the timeout reports an error", "[innet][errors]") {
  try {
    run("dgx2", 16, "allreduce", "push", "1M", {{"gpu.copy_engine.waves", "1"}, {"gpu.copy_engine.counter_timeout_us", "0.1"}});
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("copy engine") && Catch::Contains("counter"));
  }
}


// A switch port's table reduces a block and multicasts the result to all 16
// GPUs: 3 corrupted reductions are 3 x 16 wrong elements.
TEST_CASE("push: a faulty ALU in one reduction table shows as exactly that many wrong elements on every GPU",
          "[innet][push][wrong]") {
  const tb::Options o = tb::run_options("dgx2", "allreduce", "push", "64K");
  CHECK(tb::wrong_with_alu_fault(o, "sw0.port0.reduction_table", 3) == 3 * 16);
}

// Without the barrier (itself an all-reduce, whose flag would take the first
// fault) the table's first reductions are data, and the reduced block the
// puller gets is multicast to every GPU.
TEST_CASE("pull: a faulty ALU in one reduction table shows as exactly that many wrong elements on every GPU",
          "[innet][pull][wrong]") {
  const tb::Options o = tb::run_options("dgx2", "allreduce", "pull", "64K", {{"pull.barrier", "false"}});
  CHECK(tb::wrong_with_alu_fault(o, "sw0.port0.reduction_table", 3) == 3 * 16);
}
