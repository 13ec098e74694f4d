#pragma once
// A symbolic check of a Program (docs/programs.md): it runs the program by
// dependency order with sets in place of data (which rank's contribution of
// which input chunk each buffer chunk holds) and compares every rank's
// result with what the collective promises. Plain C++, no SystemC.
//
// Run model: an operation runs once the operations it depends on and the one
// before it in its queue have run, and, if it receives, once its matching
// send has run (per channel and peer pair, first in first out); a send never
// waits for its receiver (NCCL's connection buffers), so a program that only
// deadlocks with unbuffered sends passes. In-network operations of a group
// run together once every member has reached its one.
#include <string>
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

struct ProgramCheck {
  std::vector<std::string> problems;  // one sentence each; empty: correct
  std::string summary;                // when correct: what every rank's result holds
  bool ok() const { return problems.empty(); }
  std::string report() const;  // the problems, one a line (at most 20)
};

// Checks in order, stopping after the first stage with problems: the
// program's shape (peers, groups, engines, chunks in range, dependencies), the
// pairing of sends with receives and of group members, a dependency cycle,
// the run (a deadlock, a send of nothing, a receive of another size than was
// sent), and the result (a chunk never reduced or delivered, a contribution
// counted twice or out of place).
ProgramCheck check_program(const Program& p);

}  // namespace incsim::collectives
