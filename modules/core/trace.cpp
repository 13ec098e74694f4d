#include "trace.h"

#include <fstream>

#include "error.h"

namespace incsim {

sc_core::sc_trace_file* open_vcd(const std::string& path) {
  std::string base = path;
  if (base.size() > 4 && base.substr(base.size() - 4) == ".vcd") base.resize(base.size() - 4);
  {
    std::ofstream probe(base + ".vcd");
    if (!probe) throw UserError("cannot write the waveform file '" + base + ".vcd'");
  }
  sc_core::sc_trace_file* tf = sc_core::sc_create_vcd_trace_file(base.c_str());
  tf->set_time_unit(1, sc_core::SC_PS);
  return tf;
}

void close_vcd(sc_core::sc_trace_file* tf, const std::string& path) {
  sc_core::sc_close_vcd_trace_file(tf);
  std::string file = path;
  if (file.size() < 4 || file.substr(file.size() - 4) != ".vcd") file += ".vcd";
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::string line;
  std::streampos pos = 0;
  bool in_date = false;
  while (std::getline(f, line)) {
    std::streampos next = f.tellg();
    if (in_date) {
      if (line.find("$end") != std::string::npos) break;
      f.seekp(pos);
      f << std::string(line.size(), ' ');
      f.seekg(next);
    }
    if (line.find("$date") != std::string::npos) in_date = true;
    if (line.find("$scope") != std::string::npos) break;
    pos = next;
  }
}

}  // namespace incsim
