#include "training/scalesim_topology.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/user_file.h"

namespace incsim::training {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

}  // namespace

Model parse_scalesim_topology(const std::string& text, const std::string& file) {
  static const char* kFields[] = {"IFMAP height", "IFMAP width", "filter height", "filter width",
                                  "channels",     "filters",     "stride",        "stride along the width"};
  Model m;
  m.source = "SCALE-Sim topology " + file;
  const size_t slash = file.find_last_of('/');
  m.name = file.substr(slash == std::string::npos ? 0 : slash + 1);
  if (m.name.size() > 4 && m.name.compare(m.name.size() - 4, 4, ".csv") == 0) m.name.resize(m.name.size() - 4);
  std::istringstream in(text);
  std::string line;
  // SCALE-Sim skips the first line, its header, whatever it holds.
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (number == 1 || line.empty()) continue;
    auto fail = [&](const std::string& what) {
      throw UserError("SCALE-Sim topology " + file + ", line " + std::to_string(number) + ": " + what);
    };
    std::vector<std::string> fields;
    std::istringstream cells(line);
    // getline drops the empty field after the trailing comma SCALE-Sim's
    // rows end with (optional here).
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(trim(cell));
    if (fields.size() != 8 && fields.size() != 9)
      fail("a layer is a name and 7 numbers (IFMAP height, IFMAP width, filter height, filter width, channels, "
           "filters, stride) and optionally a stride along the width, not " + std::to_string(fields.size()) +
           " fields");
    if (fields[0].empty()) fail("a layer has no name");
    if (fields[0].find("DP") != std::string::npos)
      fail("'" + fields[0] + "' is a depth-wise layer to SCALE-Sim v2 ('DP' in its name), which incsim does not read");
    uint64_t v[8];
    for (size_t i = 1; i < fields.size(); ++i) {
      const std::string& f = fields[i];
      char* end = nullptr;
      errno = 0;
      // An empty field reads as 0; strtoull would wrap a negative one.
      const unsigned long long x = std::strtoull(f.c_str(), &end, 10);
      if (f[0] == '-' || *end != '\0' || errno == ERANGE || x < 1 || x > (1u << 24))
        fail(std::string("the ") + kFields[i - 1] + " of '" + fields[0] + "' must be a whole number from 1 to " +
             "16777216, not '" + f + "'");
      v[i - 1] = x;
    }
    if (fields.size() == 8) v[7] = v[6];
    const uint64_t h = v[0], w = v[1], fh = v[2], fw = v[3], c = v[4], filters = v[5], sh = v[6], sw = v[7];
    if (fh > h || fw > w)
      fail("the filter of '" + fields[0] + "' (" + std::to_string(fh) + "x" + std::to_string(fw) +
           ") is larger than its input (" + std::to_string(h) + "x" + std::to_string(w) + ")");
    const uint64_t oh = (h - fh) / sh + 1, ow = (w - fw) / sw + 1;
    const double weights = static_cast<double>(fh) * fw * c * filters;
    if (weights > 1e12) fail("'" + fields[0] + "' has more than 10^12 weights");
    Layer l;
    l.name = fields[0];
    l.kind = LayerKind::conv;
    l.gemms.push_back({static_cast<double>(oh) * ow, static_cast<double>(filters), static_cast<double>(fh) * fw * c});
    l.params = static_cast<uint64_t>(weights);
    l.forward_flops = 2 * l.gemms[0].macs();
    l.input_elements = static_cast<double>(h) * w * c;
    l.output_elements = static_cast<double>(oh) * ow * filters;
    m.layers.push_back(std::move(l));
    if (m.layers.size() > 100000) fail("more than 100000 layers");
  }
  if (m.layers.empty()) throw UserError("SCALE-Sim topology " + file + " has no layer after its header line");
  return m;
}

Model read_scalesim_topology(const std::string& path) {
  return parse_scalesim_topology(read_user_file(path, "SCALE-Sim topology", 16u << 20), path);
}

}  // namespace incsim::training
