// The algorithm registry (modules/collectives/algorithm.h): every algorithm
// says what it is and where it runs, one default per collective and family,
// the CLI's lists come from it, and an algorithm of one's own, registered
// from an sc_main, runs like a built-in one (docs/programs.md, "Adding an
// algorithm").
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "choices.h"
#include "collectives/algorithms/common.h"
#include "run_checked.h"

using namespace incsim;
using namespace incsim::collectives;

TEST_CASE("every algorithm says what it is, a name once per family, one default per collective", "[registry]") {
  std::set<std::pair<std::string, int>> names;
  std::map<std::pair<std::string, int>, int> defaults;  // (collective, family): its defaults
  int last = 0;
  for (const Algorithm* a : algorithms()) {
    const Algorithm::Info& i = a->info();
    INFO(i.name);
    CHECK(names.insert({i.name, static_cast<int>(i.family)}).second);
    CHECK(*i.collectives);
    CHECK(*i.runs_on);
    CHECK(*i.engine);
    CHECK(std::string(i.description).size() > 20);
    CHECK(i.listing >= last);  // listed in order
    last = i.listing;
    for (const char* c : {"allreduce", "reducescatter", "allgather", "broadcast", "alltoall"})
      if (tb::one_of(c, i.default_for)) {
        CHECK(tb::one_of(c, i.collectives));
        ++defaults[{c, static_cast<int>(i.family)}];
      }
  }
  for (const auto& [key, count] : defaults) {
    INFO(key.first);
    CHECK(count == 1);
  }
  CHECK(names.size() >= 26);
  // The command line's list is the registry's.
  CHECK(tb::choice_list("algorithm") == algorithm_names());
  CHECK(tb::algorithms_for("allreduce", Family::GpuFabric).rfind("ring,", 0) == 0);
  CHECK(tb::algorithms_for("allreduce", Family::Rack, "rack") == "netreduce, ring");
}

namespace {
// docs/programs.md's example: each of two GPUs sends its data to the other,
// which adds it.
class Pair : public Algorithm {
 public:
  Pair()
      : Algorithm({"pair", "allreduce", "", Family::GpuFabric, "star", "the GPUs' cores",
                   "each of two GPUs sends its data to the other, which adds it (an example)", 300}) {}
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    return s.ranks() == 2 ? "" : "pair runs on 2 GPUs, not " + std::to_string(s.ranks());
  }
  Synthesis synthesize(const Site&) const override {
    ProgramBuilder b("pair", Collective::AllReduce, 2, /*in_place=*/true);
    for (int r = 0; r < 2; ++r) {
      b.begin_rank(r, Buffers{1, 0, 0});
      Operation send;
      send.kind = OpKind::Send;
      send.send_peer = 1 - r;
      send.src = chunk(Buffer::Input, 0);
      b.add(send);
      Operation add;
      add.kind = OpKind::RecvReduceCopy;
      add.recv_peer = 1 - r;
      add.dst = chunk(Buffer::Output, 0);
      b.add(add);  // same queue: after the send
    }
    Synthesis out;
    out.program = b.build();
    return out;
  }
};
}  // namespace

TEST_CASE("an algorithm of one's own, registered from an sc_main, runs exact and is refused where it says",
          "[registry]") {
  register_algorithm(std::make_unique<Pair>());
  CHECK(tb::one_of("pair", tb::choice_list("algorithm")));
  CHECK(tb::one_of("pair", tb::algorithms_for("allreduce", Family::GpuFabric, "star")));
  tb::Options three = tb::run_options("star", "allreduce", "pair", "64K");
  three.gpus = 3;
  CHECK_THROWS_WITH(tb::Experiment(three), "pair runs on 2 GPUs, not 3");
  tb::Options o = tb::run_options("star", "allreduce", "pair", "64K,1M");
  o.gpus = 2;
  tb::Experiment e(o);
  const auto rows = tb::run_checked(e, "pair");
  REQUIRE(rows.size() == 2);
  // Each GPU sends its whole buffer once: the ring's 2(n-1)/n at n = 2.
  CHECK(rows[1]["bound_us"] == Approx(1048576 / 20e3));
}
