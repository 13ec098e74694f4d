#pragma once
// A problem with what the user asked for (flag, key, size, topology): the
// testbench prints its message as one sentence and exits non-zero.
#include <stdexcept>
#include <string>

namespace incsim {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A job whose share of an in-network resource cannot hold what its
// algorithm needs (a table's entries, an FPGA's memory, a switch's multicast
// groups): a jobs run refuses it naming the job, or with fallback: software
// runs the ring (docs/jobs.md).
class ShareShortfall : public UserError {
 public:
  // `resource`: what it cannot aggregate in ("SHARP's aggregation tables").
  ShareShortfall(std::string resource, const std::string& why) : UserError(why), resource_(std::move(resource)) {}
  const std::string& resource() const { return resource_; }

 private:
  std::string resource_;
};

}  // namespace incsim
