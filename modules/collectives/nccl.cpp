#include "collectives/nccl.h"

#include "core/error.h"
#include "core/units.h"
#include "core/nearest.h"

namespace incsim::collectives {

std::string ProtocolBySize::header_line() const {
  return "# protocol by size (ring.protocol=auto): LL up to " + size_label(ll_max_bytes) + ", LL128 up to " +
         size_label(ll128_max_bytes) + ", Simple above\n";
}

void apply_protocol(Program& p, const std::string& algorithm, const std::string& proto, bool simple_only) {
  const bool by_size = to_lower(proto) == "auto";
  if (simple_only && !by_size && parse_protocol(proto, "ring.protocol (or auto)") != Protocol::Simple)
    throw UserError(algorithm + " runs NCCL's Simple protocol only, as NCCL's NVLS and CollNet kernels do: "
                    "ring.protocol=" + proto);
  p.protocol_by_size = by_size && !simple_only;
  if (!by_size)
    for (Operation& o : p.ops) o.proto = parse_protocol(proto, "ring.protocol (or auto)");
}

uint32_t protocol_data_bytes(Protocol p, uint32_t max_payload) {
  switch (p) {
    case Protocol::LL: return max_payload / kLlLine * kLlData;
    case Protocol::LL128: return max_payload / kLl128Line * kLl128Data;
    default: return max_payload;
  }
}

uint32_t protocol_wire_payload(Protocol p, uint32_t data) {
  switch (p) {
    case Protocol::LL: return (data + kLlData - 1) / kLlData * kLlLine;
    case Protocol::LL128: return (data + kLl128Data - 1) / kLl128Data * kLl128Line;
    default: return data;
  }
}

}  // namespace incsim::collectives
