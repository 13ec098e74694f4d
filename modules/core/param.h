#pragma once
// A parameter's declaration: its key (whose suffix names the unit), type,
// default, the range of values that make physical sense, and a description
// naming the default's source. Each is declared once, at namespace scope in
// the file of the block that owns it,
//
//   inline const Param<double> kSwitchLatency{"switch.latency_ns", 150.0,
//       Range::at_least(0).at_most(1e9), "port-to-port latency, ns (Klenk §V)"};
//
// and registered at static initialisation, so `incsim --list-params --all`
// lists every parameter without building anything. A block reads its value
// with Config::get(kSwitchLatency); a key nobody declared cannot be read.
#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <type_traits>

namespace incsim {

// The values a numeric parameter accepts: an interval, each end closed or
// open, and optionally 0 besides, where 0 asks the block to derive the value.
class Range {
 public:
  static Range at_least(double lo) { return Range(lo, false); }
  static Range above(double lo) { return Range(lo, true); }
  Range at_most(double hi) const { return with_hi(hi, false); }
  Range below(double hi) const { return with_hi(hi, true); }
  // 0 is accepted too: "0, or 1 to 1024".
  Range or_zero() const {
    Range r = *this;
    r.zero_ = true;
    return r;
  }
  // The word auto is accepted too, read as the type's largest value, which
  // the block that reads it replaces by the value it derives.
  Range or_auto() const {
    Range r = *this;
    r.auto_ = true;
    return r;
  }
  // Strings and bools have no numeric range.
  static Range none() { return Range(-std::numeric_limits<double>::infinity(), false); }

  // False for NaN and infinities, whatever the bounds.
  bool contains(double v) const;
  bool numeric() const { return lo_ != -std::numeric_limits<double>::infinity() || hi_ != std::numeric_limits<double>::infinity(); }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  bool lo_open() const { return lo_open_; }
  bool hi_open() const { return hi_open_; }
  bool zero() const { return zero_; }
  bool automatic() const { return auto_; }
  // "0.001 to 100000 GB/s", "above 0 and below 1", "0, or 1 to 1024".
  std::string text(const std::string& unit) const;

 private:
  Range(double lo, bool open) : lo_(lo), lo_open_(open) {}
  Range with_hi(double hi, bool open) const {
    Range r = *this;
    r.hi_ = hi;
    r.hi_open_ = open;
    return r;
  }
  double lo_, hi_ = std::numeric_limits<double>::infinity();
  bool lo_open_, hi_open_ = false, zero_ = false, auto_ = false;
};

// The shortest text that reads back as v: 0.05, not 0.050000000000000003.
std::string shortest_text(double v);

// A declaration, whatever its type (the registry holds these).
class ParamDecl {
 public:
  ParamDecl(const ParamDecl&) = delete;
  ParamDecl& operator=(const ParamDecl&) = delete;

  const std::string& key() const { return key_; }
  const char* type() const { return type_; }
  const std::string& default_text() const { return default_; }
  const Range& range() const { return range_; }
  const std::string& description() const { return description_; }
  // Where the default depends on the run (the algorithm, the platform), what
  // it is for each; "" where it is default_text() for every run.
  const std::string& defaults() const { return defaults_; }
  // From the key's suffix: _ns is "ns", _GBps "GB/s", bytes "bytes"; else "".
  std::string unit() const;
  // Throws UserError unless `text` is a value of this parameter's type within
  // its range; `key` names it in the sentence (an instance's key for a
  // per-instance override). Returns the number (0 for strings and bools).
  double check(const std::string& key, const std::string& text) const;

 protected:
  ParamDecl(const char* key, const char* type, std::string default_text, Range range, const char* description,
            const char* defaults);
  ~ParamDecl() = default;

 private:
  std::string key_;
  const char* type_;
  std::string default_;
  Range range_;
  std::string description_, defaults_;
};

template <class T>
class Param : public ParamDecl {
 public:
  using value_type = T;
  // `defaults`: what the default is for each run where it depends on the run
  // (--list-params --all shows it in place of default_value).
  Param(const char* key, T default_value, Range range, const char* description, const char* defaults = "")
      : ParamDecl(key, type_name(), text(default_value), range, description, defaults), default_(default_value) {}
  const T& default_value() const { return default_; }

  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_integral_v<T>) return "int";
    else if constexpr (std::is_floating_point_v<T>) return "float";
    else return "string";
  }
  static std::string text(const T& v) {
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_same_v<T, std::string>) return v;
    else if constexpr (std::is_integral_v<T>) return std::to_string(v);
    else return shortest_text(v);
  }

 private:
  T default_;
};

// Every declared parameter by key (filled at static initialisation).
const std::map<std::string, const ParamDecl*>& param_registry();

// A parameter's earlier key: a -c or --config that still names it sets the
// parameter, and the run says that it is renamed (Config::notes). Declared
// beside the parameter, at namespace scope.
class RenamedParam {
 public:
  RenamedParam(const char* old_key, const ParamDecl& now);
};
// The parameter an earlier key now names, or nullptr.
const ParamDecl* renamed_param(const std::string& old_key);
// incsim --list-params --all: a header row, then per parameter, sorted by
// key, a line of key, type, default ("per algorithm" where it depends on
// the run), range, tab-separated, and below it, indented and wrapped, its
// defaults per run if any and its description.
void list_all_params(std::ostream& os);
// A bound as a person writes it: 100000, 0.001, 1e9.
std::string number_text(double v);

}  // namespace incsim
