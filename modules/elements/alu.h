#pragma once
// The ALU of a block that reduces (a switch port's reduction table, a NIC, an
// FPGA aggregator, a GPU's cores), with fault injection: a test or an
// architect can make one named block get a chosen number of elements wrong
// (fault.alu.block, fault.alu.elements) and see #wrong count exactly those,
// which shows the result check bites. Plain C++; the blocks do the timing.
#include <cstdint>
#include <string>

#include "data_pattern.h"

namespace incsim::elements {

class Alu {
 public:
  Alu() = default;
  // Takes the faults configured for the block of that hierarchical name.
  explicit Alu(const std::string& block);
  // acc[i] = op(acc[i], in[i]) over bytes of elements of type t.
  void reduce(DType t, RedOp op, uint8_t* acc, const uint8_t* in, uint32_t bytes) {
    reduce_bytes(t, op, acc, in, bytes);
    if (faults_) corrupt(t, acc, bytes);
  }
  // out[i] = op(out[i], rank's element first + i): a rank adding its own data.
  void reduce_own(const DataPattern& d, DType t, RedOp op, int rank, uint64_t first, uint64_t n, uint8_t* out) {
    d.reduce_own(t, op, rank, first, n, out);
    if (faults_) corrupt(t, out, static_cast<uint32_t>(n * dtype_bytes(t)));
  }
  // Data the block moves without reducing it (a GPU's cores copying a
  // chunk along): where a collective reduces nothing, its copies are the
  // results a fault garbles.
  void pass(DType t, uint8_t* data, uint32_t bytes) {
    if (faults_) corrupt(t, data, bytes);
  }
  bool faulty() const { return faults_ != 0; }

  // Before the blocks are built: the next ALUs built for `block` get its
  // first `elements` results one too high (1 added in the element's type,
  // rounded as the ALU rounds); "" injects nothing.
  static void inject(const std::string& block, uint64_t elements);
  // Throws UserError if fault.alu.block named no block with an ALU.
  static void check_matched();

 private:
  void corrupt(DType t, uint8_t* acc, uint32_t bytes);
  uint64_t faults_ = 0;  // results still to get wrong
};

}  // namespace incsim::elements
