#include "param.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config.h"
#include "error.h"
#include "units.h"

namespace incsim {

namespace {
std::map<std::string, const ParamDecl*>& registry() {
  static std::map<std::string, const ParamDecl*> r;  // function-local: safe whatever the static-init order
  return r;
}
}  // namespace

const std::map<std::string, const ParamDecl*>& param_registry() { return registry(); }

namespace {
std::map<std::string, const ParamDecl*>& renamed() {
  static std::map<std::string, const ParamDecl*> r;
  return r;
}
}  // namespace

RenamedParam::RenamedParam(const char* old_key, const ParamDecl& now) { renamed()[old_key] = &now; }

const ParamDecl* renamed_param(const std::string& old_key) {
  const auto it = renamed().find(old_key);
  return it == renamed().end() ? nullptr : it->second;
}

bool Range::contains(double v) const {
  if (!std::isfinite(v)) return false;
  if (zero_ && v == 0) return true;
  return (lo_open_ ? v > lo_ : v >= lo_) && (hi_open_ ? v < hi_ : v <= hi_);
}

std::string shortest_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[32];
  for (int precision = 1; precision < 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string number_text(double v) {
  // Whole numbers in full (16777216), unless a round power of ten (1e9).
  if (v == std::floor(v) && std::fabs(v) < 1e18 && (std::fabs(v) < 1e6 || std::fmod(v, 1e6) != 0))
    return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  std::string s = buf;
  // 1e+09 -> 1e9, 1e-05 -> 1e-5
  const auto e = s.find('e');
  if (e != std::string::npos) {
    std::string mant = s.substr(0, e), exp = s.substr(e + 1);
    const bool neg = exp[0] == '-';
    exp.erase(0, 1);
    exp.erase(0, std::min(exp.find_first_not_of('0'), exp.size() - 1));
    s = mant + "e" + (neg ? "-" : "") + exp;
  }
  return s;
}

std::string Range::text(const std::string& unit) const {
  const std::string u = unit.empty() ? "" : " " + unit;
  const bool has_lo = lo_ != -std::numeric_limits<double>::infinity();
  const bool has_hi = hi_ != std::numeric_limits<double>::infinity();
  std::string t;
  if (has_lo && has_hi && !lo_open_ && !hi_open_) t = number_text(lo_) + " to " + number_text(hi_) + u;
  else {
    if (has_lo) t = (lo_open_ ? "above " : "at least ") + number_text(lo_);
    if (has_hi) t += (t.empty() ? "" : " and ") + std::string(hi_open_ ? "below " : "at most ") + number_text(hi_);
    t += u;
  }
  return (zero_ ? "0, or " + t : t) + (auto_ ? ", or auto" : "");
}

ParamDecl::ParamDecl(const char* key, const char* type, std::string default_text, Range range, const char* description,
                     const char* defaults)
    : key_(key), type_(type), default_(std::move(default_text)), range_(range), description_(description),
      defaults_(defaults) {
  // Declared twice, or a default outside its own range: a programming error,
  // found by any run of any test.
  const bool numeric = std::string(type) == "int" || std::string(type) == "float";
  if (!registry().emplace(key_, this).second ||
      (numeric && !range_.numeric()) ||
      (numeric && !range_.contains(std::strtod(default_.c_str(), nullptr)))) {
    std::fprintf(stderr, "incsim: parameter %s is declared twice, without a range or with its default outside it\n",
                 key);
    std::abort();
  }
}

std::string ParamDecl::unit() const {
  static const std::pair<const char*, const char*> kUnits[] = {
      {"_ns", "ns"},       {"_us", "us"},         {"_s", "s"},           {"_GBps", "GB/s"},
      {"_Gbps", "Gbit/s"}, {"_ghz", "GHz"},       {"bytes", "bytes"},    {"_cycles", "cycles"},
      {"_flits", "flits"}, {"_packets", "packets"}, {"_entries", "entries"}, {".entries", "entries"}};
  for (const auto& [suffix, unit] : kUnits) {
    const std::string s = suffix;
    if (key_.size() > s.size() && key_.compare(key_.size() - s.size(), s.size(), s) == 0) return unit;
  }
  return "";
}

double ParamDecl::check(const std::string& key, const std::string& text) const {
  if (std::string(type_) == "bool") {
    parse_bool(key, text);
    return 0;
  }
  if (!range_.numeric() || (range_.automatic() && text == "auto")) return 0;
  const double v = parse_number(key, text);
  if (!range_.contains(v))
    throw UserError(key + " = " + text + " is outside its range (" + range_.text(unit()) + ")");
  if (std::string(type_) == "int" && v != std::floor(v))
    throw UserError("configuration key '" + key + "' expects a whole number, got '" + text + "'");
  return v;
}

void list_all_params(std::ostream& os) {
  os << "key\ttype\tdefault\trange\n    description\n";
  for (const auto& [key, p] : registry())
    os << key << "\t" << p->type() << "\t" << (p->defaults().empty() ? p->default_text() : "per algorithm") << "\t"
       << (p->range().numeric() ? p->range().text(p->unit()) : "") << "\n"
       << (p->defaults().empty() ? "" : wrap("    defaults: ", p->defaults(), 4)) << wrap("    ", p->description(), 4);
}

}  // namespace incsim
