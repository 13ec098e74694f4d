#pragma once
// One rank of a collective program run by one engine of one endpoint: the
// GPU's cores (gpu/cores_rank.h), its copy engine (gpu/copy_collective.h),
// a NIC's schedule table (nic/nic.h), a RoCE host (roce/host_program.h).
// Each engine starts its ranks its own way (a table is loaded once and
// started per size, the cores' ranks are made per size); what the launch
// asks of every rank is the same, here. Plain C++.
#include <cstdint>

namespace incsim::collectives {

class RankExecutor {
 public:
  virtual ~RankExecutor() = default;
  // Elements of its result that differ from the reference, plus those it
  // checked too few or too many times (or never saw).
  virtual uint64_t wrong() const = 0;
  // What it must do and what it has done, in its engine's unit (transfers
  // sent, blocks landed, table entries issued, messages handled), known
  // exactly from the start: the progress line's measure.
  struct Progress {
    uint64_t done = 0, all = 0;
  };
  virtual Progress progress() const = 0;
};

// The share of what a set of ranks must do that they have done, or -1 if
// they have nothing to do.
template <class Ranks>
double done_fraction(const Ranks& ranks) {
  uint64_t done = 0, all = 0;
  for (const auto& r : ranks) {
    const RankExecutor::Progress p = r->progress();
    done += p.done;
    all += p.all;
  }
  return all ? static_cast<double>(done) / static_cast<double>(all) : -1;
}

// A rank's progress as transfers: what its queues have sent of all they
// send (the cores' queues, and their flows at --fidelity flow).
template <class Queues>
RankExecutor::Progress transfers_sent(const Queues& queues) {
  RankExecutor::Progress p;
  for (const auto& q : queues) {
    p.done += q->sent;
    p.all += q->transfers;
  }
  return p;
}

// The ranks' wrong elements, summed.
template <class Ranks>
uint64_t wrong(const Ranks& ranks) {
  uint64_t w = 0;
  for (const auto& r : ranks) w += r->wrong();
  return w;
}

}  // namespace incsim::collectives
