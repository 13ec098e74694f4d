// Blink (MLSys 2020): spanning trees packed over a DGX-1's NVLinks (also
// several servers, three-phase), or one-hop trees through a switch, run by
// the NICs in dataflow mode; and its automatic chunk size (§4.2.1).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "collectives/algorithms/common.h"

namespace incsim::collectives::builtin {

namespace {

const Param<int> kMiadIterations{
    "blink.miad_iterations", 0, Range::at_least(0).at_most(64),
    "iterations per size that search the chunk size by multiplicative increase, additive decrease, the last one "
    "reported (Blink §4.2.1, Fig. 11: about 4 to settle); 0: blink.chunks fixed"};
const Param<uint64_t> kMiadStart{"blink.miad_start_bytes", 1 << 20, Range::at_least(4).at_most(1ull << 40),
                                 "the MIAD search's first chunk size, doubled while throughput rises (Blink §4.2.1, "
                                 "Fig. 11: 1 MB, x2)"};
const Param<uint64_t> kMiadStep{"blink.miad_step_bytes", 256 << 10, Range::at_least(4).at_most(1ull << 40),
                                "the MIAD search's additive decrease once throughput falls (Blink §4.2.1 gives no "
                                "step: a quarter of the first size)"};

// Blink's chunk size search (§4.2.1): multiplicative increase while the
// throughput rises; once it falls, additive decrease from the best size
// while it rises; then steady at the best. Each run re-synthesizes the
// trees with the chunk size turned into chunks per tree.
class Miad : public Tuner {
 public:
  Miad(const Site& s, const Synthesis& first, int runs, uint64_t start, uint64_t step)
      : site_(s), runs_(runs), start_(start), step_(step), largest_share_(first.largest_share) {}
  int runs() const override { return runs_; }
  Synthesis next(int k, uint64_t bytes) override {
    if (k == 0) {
      chunk_ = start_;
      best_chunk_ = 0;
      best_GBps_ = 0;
      phase_ = Phase::Increase;
    }
    const double per_tree = static_cast<double>(bytes) * largest_share_ / static_cast<double>(chunk_);
    chunks_ = static_cast<int>(std::min(1024.0, std::max(1.0, std::round(per_tree))));
    return tree_program(site_, false, chunks_);
  }
  std::string ran(int k, double time_us, double algbw_GBps) override {
    std::ostringstream line;
    line << "# MIAD iteration " << k + 1 << ": chunk " << chunk_ << " B (" << chunks_ << " per tree), " << std::fixed
         << std::setprecision(2) << time_us << " us, " << algbw_GBps << " GB/s\n";
    const bool better = algbw_GBps > best_GBps_;
    if (better) {
      best_GBps_ = algbw_GBps;
      best_chunk_ = chunk_;
    }
    if (phase_ == Phase::Increase && better) {
      chunk_ *= 2;
    } else if (phase_ != Phase::Steady && (better || phase_ == Phase::Increase) && chunk_ > step_ &&
               best_chunk_ > step_) {
      chunk_ = (phase_ == Phase::Increase ? best_chunk_ : chunk_) - step_;
      phase_ = Phase::Decrease;
    } else {
      phase_ = Phase::Steady;
      chunk_ = best_chunk_;
    }
    return line.str();
  }

 private:
  enum class Phase { Increase, Decrease, Steady };
  const Site& site_;
  int runs_;
  uint64_t start_, step_;
  double largest_share_;  // the largest tree's share of the buffer
  uint64_t chunk_ = 0, best_chunk_ = 0;
  int chunks_ = 0;
  double best_GBps_ = 0;
  Phase phase_ = Phase::Increase;
};

class Blink : public Algorithm {
 public:
  Blink()
      : Algorithm({"blink", "allreduce, broadcast", "", Family::GpuFabric,
                   "dgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72",
                   "the NICs' schedule tables, dataflow",
                   "spanning trees packed over NVLink (DGX-1, also several servers), or one-hop trees through a switch "
                   "(Blink, MLSys 2020, §3)",
                   120}) {}
  bool gpu_numbered(const topo::Topology&) const override { return true; }
  std::string cannot_run(const Site& s) const override {
    if (const std::string why = cluster_refusal(s, name(), false); !why.empty()) return why;
    return gpu_numbered_refusal(s, *this, "trees");
  }
  Synthesis synthesize(const Site& s) const override { return tree_program(s, false); }
  // The chunk search on a DGX-1 (on a switch fabric its one-hop trees take one chunk).
  std::unique_ptr<Tuner> tuner(const Site& s, const Synthesis& first) const override {
    if (!s.dgx1()) return nullptr;
    const int runs = s.cfg.get(kMiadIterations);
    const uint64_t start = s.cfg.get(kMiadStart), step = s.cfg.get(kMiadStep);
    if (runs == 0) return nullptr;
    return std::make_unique<Miad>(s, first, runs, start, step);
  }
};

}  // namespace

INCSIM_ALGORITHMS(blink) { r.add(std::make_unique<Blink>()); }

}  // namespace incsim::collectives::builtin
