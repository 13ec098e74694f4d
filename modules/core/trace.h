#pragma once
// VCD waveforms (STYLE.md, convention 7): every block exposes its state through
// trace(); the file has an explicit timescale and no wall-clock date, so the
// same run gives the same bytes.
#include <string>
#include <systemc>

namespace incsim {

class Traceable {
 public:
  virtual ~Traceable() = default;
  virtual void trace(sc_core::sc_trace_file* tf) const = 0;
};

sc_core::sc_trace_file* open_vcd(const std::string& path);
// Closes the file and blanks the $date SystemC writes, keeping byte offsets.
void close_vcd(sc_core::sc_trace_file* tf, const std::string& path);

}  // namespace incsim
