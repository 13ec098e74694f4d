#pragma once
// Comparing algorithms in one run: `--algorithm ring,push,pull` (or one
// algorithm and `--baseline`) runs each algorithm exactly as a run of it
// alone would, one after the other, each in a child process forked before
// anything is elaborated (SystemC elaborates once per process, and each
// algorithm's machine has its own defaults: push's reduction tables, pull's,
// the payload of a switch that reduces). Each child sends its rows back over
// a pipe as JSON; the parent prints one table, a size's algorithms together
// with the speed-up over the baseline, and writes one --json and --csv with
// an algorithm column. docs/campaigns.md describes it for users.
#include <iosfwd>
#include <string>
#include <vector>

#include "options.h"

namespace incsim::tb {

struct Comparison {
  std::vector<std::string> algorithms;  // in the order given; "" the workload's default
  size_t baseline = 0;                  // the one the speed-ups are against
};

// The algorithms the options compare: none for a run of one algorithm (and
// for training, whose --baseline is its own). Throws UserError for a bad
// list (an empty item, a duplicate, a --baseline not in it) and for options
// that show one machine (--print-*, --dump-platform) or take their own
// algorithms (a jobs: list). --vcd and --timeline write a file per
// algorithm (w.vcd: w-ring.vcd, w-push.vcd).
Comparison comparison_of(const Options& o);

// Runs the comparison and writes its table and files; returns the exit
// status as run_incsim does (a child's failure is the run's, with its message).
int run_comparison(const Options& o, const Comparison& c, std::ostream& out, std::ostream& err);

// --check-fidelity, after a run of flows: each algorithm at the run's
// smallest size as flows and at packet level (the reference), each in a
// child, and their difference, printed after the table (on stderr where
// stdout holds --json or --csv) and added to a --json file. Returns the
// exit status as run_incsim does.
int check_fidelity(const Options& o, std::ostream& out, std::ostream& err);

}  // namespace incsim::tb
