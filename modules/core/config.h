#pragma once
// Typed, named, described parameters (STYLE.md, convention 5).
//
// A block declares each parameter once (core/param.h) with its default, range
// and the source of that default; the value comes from, in order, a
// `-c key=value` override, a `--config` YAML file, or the default. Every
// override must be consumed by some parameter: check_unused() turns a key
// nobody read into an error. Only a declaration can be read, so a key that is
// not declared does not compile.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "error.h"
#include "param.h"

namespace incsim {

class Config {
 public:
  struct Param {
    std::string type;
    std::string default_value;
    std::string value;
    std::string description;
    std::string source = "default";  // or "-c", or the config file that set it
    std::string range;               // "0 to 1e9 ns"; empty for strings and bools
  };

  // Sets key=value from a source ("-c", a file name); later sources win. A
  // renamed key (RenamedParam) sets the parameter's key, and notes() says so.
  void set(const std::string& key, const std::string& value, const std::string& source);
  // What the run should tell its user about its configuration (renamed keys), one sentence each.
  const std::vector<std::string>& notes() const { return notes_; }

  // The value of a declared parameter, checked against its range.
  template <class T>
  T get(const incsim::Param<T>& p) {
    return get(p, p.default_value());
  }
  // The same where a platform family has another default (MultiTree's 4 ns
  // routers for switch.latency_ns); that default must lie in the range too.
  template <class T>
  T get(const incsim::Param<T>& p, const typename incsim::Param<T>::value_type& family_default) {
    return parse<T>(p, p.key(), declare(p, p.key(), incsim::Param<T>::text(family_default), p.description()));
  }

  // The value of parameter `p` (switch.reduction_table.bytes, read already,
  // its value `value`) for the block at hierarchical path `path`
  // (sw3.port5): an override of the block's own key
  // (sw3.port5.reduction_table.bytes) or of an enclosing block's
  // (sw3.reduction_table.bytes), the most specific winning, else `value`.
  // The key's first component names the block type and is replaced by the
  // path. An override is checked against p's range.
  template <class T>
  T instance(const std::string& path, const incsim::Param<T>& p, const typename incsim::Param<T>::value_type& value) {
    std::string key;
    const std::string* text = instance_override(path, p, incsim::Param<T>::text(value), key);
    return text ? parse<T>(p, key, *text) : value;
  }

  // Throws UserError if an override names a key that no block of incsim
  // declares (nor a block's instance of one), suggesting the nearest: before
  // anything is built, so a mistyped key is reported before any conflict
  // the run would meet with its default.
  void check_known() const;
  // Throws UserError if an override named a key that no block declared,
  // suggesting the nearest declared key. A key of incsim's that this run does
  // not read (its blocks or algorithms do not: a switch table's on a ring)
  // is refused too: "K is not read by this run", continued by what
  // `not_read(K's declared key)` returns (which run, who reads it). Keys in
  // `read_elsewhere` are not refused (another algorithm of a comparison reads them).
  void check_unused(const std::function<std::string(const std::string& key)>& not_read = {},
                    const std::vector<std::string>& read_elsewhere = {}) const;
  // The overrides of incsim's keys that this run did not read, each with its declared key.
  std::vector<std::pair<std::string, std::string>> unread() const;

  const std::map<std::string, Param>& params() const { return params_; }
  // One line per parameter: key, type, value, default, source, description
  // (its range appended), tab-separated (incsim --list-params).
  void list(std::ostream& os) const;
  bool has_override(const ParamDecl& p) const { return overrides_.count(p.key()) != 0; }

 private:
  struct Override {
    std::string value;
    std::string source;
    mutable bool used = false;
  };
  const std::string& declare(const ParamDecl& p, const std::string& key, const std::string& def,
                             const std::string& description);
  const std::string* instance_override(const std::string& path, const ParamDecl& p, const std::string& value,
                                       std::string& key);
  template <class T>
  static T parse(const ParamDecl& p, const std::string& key, const std::string& text);

  std::map<std::string, Param> params_;
  std::map<std::string, Override> overrides_;
  std::vector<std::string> notes_;
};

// Parses a number, int or float, naming the key on failure; YAML's .inf and
// .nan read as infinity and NaN (a range then refuses them).
double parse_number(const std::string& key, const std::string& text);
bool parse_bool(const std::string& key, const std::string& text);

template <class T>
T Config::parse(const ParamDecl& p, const std::string& key, const std::string& text) {
  const double v = p.check(key, text);
  if constexpr (std::is_same_v<T, bool>) {
    return parse_bool(key, text);
  } else if constexpr (std::is_integral_v<T>) {
    if (p.range().automatic() && text == "auto") return std::numeric_limits<T>::max();
    if (v < static_cast<double>(std::numeric_limits<T>::min()) || v > static_cast<double>(std::numeric_limits<T>::max()))
      throw UserError("configuration key '" + key + "' is out of range: '" + text + "'");
    return static_cast<T>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    return T(text);
  }
}

}  // namespace incsim
