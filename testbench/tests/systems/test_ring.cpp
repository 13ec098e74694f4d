// Ring all-reduce end to end through tb::Experiment, as the incsim command
// line runs it: real data checked against the reference (#wrong == 0) on the
// star with 2, 3, 5, 8 and 16 GPUs and on DGX-2, float and int32; and on
// DGX-2 the 64 MiB row near the bound, the 8 KiB row latency-bound.
#include <catch2/catch.hpp>

#include <sstream>
#include <systemc>

#include "experiment.h"
#include "gpu/gpu.h"
#include "options.h"
#include "run_checked.h"

using namespace incsim;

namespace {

// Sizes: one element, small, a non-power-of-two multiple of 4 (12K + 4), and
// one that needs several ring iterations per channel on small rings.
const char* kSizes = "4,8K,12292,96K";

std::vector<tb::Row> run(const std::string& platform, int gpus, const std::string& dtype, const std::string& sizes,
                         const std::string& collective = "allreduce", const std::string& redop = "sum") {
  tb::Options o = tb::run_options(platform, collective, "", sizes, {}, dtype, redop);
  if (gpus) o.gpus = gpus;  // 0: the platform's own count
  tb::Experiment e(o);
  if (gpus) REQUIRE(tb::collective_of(e).participants() == gpus);
  std::ostringstream table;
  auto rows = e.run(&table);
  INFO(table.str());
  return rows;
}

void require_correct(const std::string& platform, int gpus, const std::string& dtype,
                     const std::string& collective = "allreduce", const std::string& redop = "sum") {
  const auto rows = run(platform, gpus, dtype, kSizes, collective, redop);
  REQUIRE(rows.size() == 4);
  const uint64_t sizes[] = {4, 8192, 12292, 96 * 1024};
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(platform << " " << gpus << " GPUs " << dtype << " size " << rows[i]["size_bytes"]);
    CHECK(rows[i]["size_bytes"] == sizes[i]);
    CHECK(rows[i]["count"] == sizes[i] / 4);
    CHECK(rows[i].wrong() == 0);
    CHECK(rows[i]["time_us"] > 0);
    CHECK(rows[i]["bound_fraction"] > 0);
    CHECK(rows[i]["bound_fraction"] <= 1.0);  // nothing beats the analytical bound
  }
}

}  // namespace

#define RING_CORRECT(platform, gpus, dtype)                                                          \
  TEST_CASE("ring all-reduce is exact on " platform " with " #gpus " GPUs in " dtype, "[ring]") { \
    require_correct(platform, gpus, dtype);                                                          \
  }

RING_CORRECT("star", 2, "float")
RING_CORRECT("star", 2, "int32")
RING_CORRECT("star", 3, "float")
RING_CORRECT("star", 3, "int32")
RING_CORRECT("star", 5, "float")
RING_CORRECT("star", 5, "int32")
RING_CORRECT("star", 8, "float")
RING_CORRECT("star", 8, "int32")
RING_CORRECT("star", 16, "float")
RING_CORRECT("star", 16, "int32")
RING_CORRECT("dgx2", 16, "float")
RING_CORRECT("dgx2", 16, "int32")

TEST_CASE("ring all-reduce is exact on a subset of DGX-2 GPUs", "[ring]") { require_correct("dgx2", 5, "float"); }
RING_CORRECT("fattree2l", 64, "float")

#define RING_GATHER_CORRECT(collective, platform, gpus, dtype)                                          \
  TEST_CASE("ring " collective " is exact on " platform " with " #gpus " GPUs in " dtype, "[ring][gather]") { \
    require_correct(platform, gpus, dtype, collective);                                                \
  }

RING_GATHER_CORRECT("reducescatter", "star", 2, "int32")
RING_GATHER_CORRECT("reducescatter", "star", 3, "int32")
RING_GATHER_CORRECT("reducescatter", "star", 5, "float")
RING_GATHER_CORRECT("reducescatter", "dgx2", 16, "float")
RING_GATHER_CORRECT("allgather", "star", 2, "int32")
RING_GATHER_CORRECT("allgather", "star", 3, "int32")
RING_GATHER_CORRECT("allgather", "star", 5, "float")
RING_GATHER_CORRECT("allgather", "dgx2", 16, "float")

#define RING_REDOP_CORRECT(collective, redop, platform, gpus, dtype)                                          \
  TEST_CASE("ring " collective " with " redop " is exact on " platform " with " #gpus " GPUs in " dtype,        \
            "[ring][redop]") {                                                                                 \
    require_correct(platform, gpus, dtype, collective, redop);                                                 \
  }

RING_REDOP_CORRECT("allreduce", "min", "star", 3, "int32")
RING_REDOP_CORRECT("allreduce", "max", "star", 5, "float")
RING_REDOP_CORRECT("allreduce", "min", "dgx2", 16, "float")
RING_REDOP_CORRECT("allreduce", "max", "dgx2", 16, "int32")
RING_REDOP_CORRECT("reducescatter", "min", "star", 3, "float")
RING_REDOP_CORRECT("reducescatter", "max", "dgx2", 16, "int32")

// Reduce-scatter and all-gather move (n-1)/n of the buffer per GPU, half of
// an all-reduce, so their busbw reaches the same fraction of the bound
// (all-reduce at 4 MiB on DGX-2: 64%).
#define RING_GATHER_BOUND(collective)                                                           \
  TEST_CASE("ring " collective " at 4 MiB on DGX-2 keeps the all-reduce's busbw", "[ring][gather]") { \
    const auto rows = run("dgx2", 16, "float", "4M", collective);                               \
    CHECK(rows[0].wrong() == 0);                                                                   \
    CHECK(rows[0]["bound_us"] == Approx(15.0 / 16 * 4194304 / 120e3));                             \
    CHECK(rows[0]["bound_fraction"] > 0.55);                                                        \
    CHECK(rows[0]["bound_fraction"] < 0.75);                                                        \
  }
RING_GATHER_BOUND("reducescatter")
RING_GATHER_BOUND("allgather")

TEST_CASE("a different seed gives different data and still no wrong element", "[ring]") {
  tb::Options o;
  o.platform = "star";
  o.gpus = 3;
  o.sizes = "8K,12292";
  o.seed = 12345;
  o.quiet = true;
  tb::Experiment e(o);
  for (const auto& r : e.run(nullptr)) CHECK(r.wrong() == 0);
}

// Parameters reach the hardware: buffers too small to cover the credit round
// trip throttle the links, yet the result stays exact.
TEST_CASE("one-packet switch buffers throttle a 1 MiB all-reduce and keep it exact", "[ring][params]") {
  tb::Options o;
  o.platform = "star";
  o.gpus = 4;
  o.sizes = "1M";
  o.quiet = true;
  tb::set_params(o, {{"switch.in_buffer_bytes", "144"}, {"switch.out_queue_bytes", "144"}});
  tb::Experiment e(o);
  const auto rows = e.run(nullptr);
  CHECK(rows[0].wrong() == 0);
  // With round-trip-sized buffers this run reaches about 95% of the bound;
  // one 144 B packet per 150+ ns credit loop allows under 1 GB/s per link.
  INFO(100 * rows[0]["bound_fraction"] << "% of the bound");
  CHECK(rows[0]["bound_fraction"] < 0.1);
}

TEST_CASE("GPU memory holds the mailboxes only, whatever the message size", "[ring][memory]") {
  // 16 KiB chunks: a channel's 4 MiB step (21.8 KiB) takes two.
  tb::Experiment e(tb::run_options("dgx2", "allreduce", "ring", "8K,4M", {{"cores.chunk_bytes", "16384"}}));
  const auto rows = e.run(nullptr);
  CHECK(rows[1].wrong() == 0);
  // 12 channels x 4 slots x 16 KiB of mailboxes plus 16 B of flags per channel.
  for (auto* g : tb::collective_of(e).platform().gpus()) CHECK(g->memory().allocated() == 12 * 4 * 16384 + 256);
}

TEST_CASE("a mailbox slot holds no more than the largest chunk the message moves", "[ring][memory]") {
  tb::Experiment e(tb::run_options("dgx2", "allreduce", "ring", "4M"));
  CHECK(e.run(nullptr)[0].wrong() == 0);
  // A channel's step: 4 MiB / 12 channels / 16 ranks = 5462 floats at most,
  // under one 128 KiB chunk; 4 slots of it per channel, 256 B aligned.
  const uint64_t mailbox = (4 * 5462 * 4 + 255) / 256 * 256;
  for (auto* g : tb::collective_of(e).platform().gpus()) CHECK(g->memory().allocated() == 12 * mailbox + 256);
}

TEST_CASE("a mailbox slot holds host memory only from its data's landing to its reading", "[ring][memory]") {
  tb::Experiment e(tb::run_options("dgx2", "allreduce", "ring", "4M"));
  CHECK(e.run(nullptr)[0].wrong() == 0);
  // 4 slots of 5462 floats per channel (above) and 16 B of flags. Holding
  // every slot once touched would reach all 12 x 4; a channel's mailbox has
  // 2 or 3 filled at once here (one landing, one being read).
  const uint64_t slot = 5462 * 4, flags = 12 * 16;
  for (auto* g : tb::collective_of(e).platform().gpus()) {
    INFO("GPU " << g->index() << ": " << g->memory().peak_held() << " B at most");
    CHECK(g->memory().peak_held() > 12 * slot);
    CHECK(g->memory().peak_held() <= 12 * 3 * slot + flags);
  }
}

TEST_CASE("on DGX-2 the 8 KiB all-reduce is latency-bound", "[ring][bound]") {
  const auto rows = run("dgx2", 0, "float", "8K");
  REQUIRE(rows.size() == 1);
  INFO("8 KiB: " << rows[0]["time_us"] << " us, busbw " << rows[0]["busbw_GBps"] << " GB/s, "
                 << 100 * rows[0]["bound_fraction"] << "% of the bound");
  CHECK(rows[0].wrong() == 0);
  CHECK(rows[0]["bound_fraction"] < 0.2);
  // At least the 2(n-1) = 30 dependent steps, each two switch traversals.
  CHECK(rows[0]["time_us"] >= 30 * 0.3);
}

TEST_CASE("on DGX-2 the 64 MiB all-reduce reaches 85% of the 120 GB/s bound", "[ring][bound][slow]") {
  const auto rows = run("dgx2", 0, "float", "64M");
  REQUIRE(rows.size() == 1);
  const auto& r = rows[0];
  WARN("64 MiB on DGX-2: " << r["time_us"] << " us, busbw " << r["busbw_GBps"] << " GB/s, " << 100 * r["bound_fraction"]
                           << "% of the bound");
  CHECK(r.wrong() == 0);
  // The bound: 6 links x 25 GB/s less header flits and write acks = 120 GB/s.
  CHECK(r["bound_us"] == Approx(2.0 * 15 / 16 * (64 << 20) / 120e3).epsilon(1e-6));
  CHECK(r["bound_fraction"] >= 0.85);
  CHECK(r["busbw_GBps"] >= 0.85 * 120);
}

// Each wrong partial sum of the reduce-scatter reaches every GPU in the
// all-gather: 5 corrupted additions in GPU 3's cores are 5 x 16 wrong elements.
TEST_CASE("ring: a faulty ALU in one GPU's cores shows as exactly that many wrong elements on every GPU", "[ring][wrong]") {
  const tb::Options o = tb::run_options("dgx2", "allreduce", "ring", "64K,1M");
  CHECK(tb::wrong_with_alu_fault(o, "gpu3.cores", 5) == 5 * 16);
}
