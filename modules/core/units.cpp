#include "units.h"

#include <cctype>
#include <sstream>

#include "error.h"

namespace incsim {

uint64_t parse_size(const std::string& text, const std::string& what) {
  const std::string bad = what + " '" + text + "' is not a positive size (examples: 4096, 8K, 64M, 1G, 1T)";
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw UserError(bad);
  size_t pos = 0;
  uint64_t v = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (v > (UINT64_MAX - 9) / 10) throw UserError(bad);
    v = v * 10 + static_cast<uint64_t>(text[pos++] - '0');
  }
  uint64_t mul = 1;
  std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mul = 1ull << 10;
  else if (suffix == "M" || suffix == "MiB") mul = 1ull << 20;
  else if (suffix == "G" || suffix == "GiB") mul = 1ull << 30;
  else if (suffix == "T" || suffix == "TiB") mul = 1ull << 40;
  else if (!suffix.empty() && suffix != "B") throw UserError(bad);
  if (v == 0) throw UserError(bad);
  if (v > (1ull << 40) / mul) throw UserError(what + " '" + text + "' is larger than 1 TiB, the largest size incsim takes");
  return v * mul;
}

std::vector<uint64_t> parse_sizes(const std::string& text) {
  std::vector<uint64_t> out;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    uint64_t lo = parse_size(text.substr(0, colon), "size");
    uint64_t hi = parse_size(text.substr(colon + 1), "size");
    if (lo > hi) throw UserError("size range '" + text + "' runs backwards");
    for (uint64_t s = lo; s <= hi; s *= 2) out.push_back(s);
    return out;
  }
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    out.push_back(parse_size(text.substr(start, comma - start), "size"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string size_label(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

std::string count_of(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string wrap(std::string line, const std::string& text, size_t indent, size_t width) {
  std::istringstream words(text);
  std::string out, word;
  bool first = true;
  while (words >> word) {
    if (!first && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(indent, ' ');
      first = true;
    }
    line += (first ? "" : " ") + word;
    first = false;
  }
  return out + line + "\n";
}

}  // namespace incsim
