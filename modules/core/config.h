#pragma once
// Typed, named, described parameters (STYLE.md, convention 5).
//
// A block declares each parameter once with its default and the source of that
// default; the value comes from, in order, a `-c key=value` override, a
// `--config` YAML file, or the default. Every override must be consumed by some
// parameter: check_unused() turns a key nobody declared into an error.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>

#include "error.h"

namespace incsim {

class Config {
 public:
  struct Param {
    std::string type;
    std::string default_value;
    std::string value;
    std::string description;
    std::string source = "default";  // or "-c", or the config file that set it
  };

  // Sets key=value from a source ("-c", a file name); later sources win.
  void set(const std::string& key, const std::string& value, const std::string& source);

  // Declares a parameter and returns its value.
  template <class T>
  T get(const std::string& key, T default_value, const std::string& description) {
    const std::string def = to_text(default_value);
    const std::string& text = declare(key, type_name<T>(), def, description);
    return parse<T>(key, text);
  }

  // The value of parameter `key` (switch.reduction_table.bytes, declared
  // already, its value `value`) for the block at hierarchical path `path`
  // (sw3.port5): an override of the block's own key
  // (sw3.port5.reduction_table.bytes) or of an enclosing block's
  // (sw3.reduction_table.bytes), the most specific winning, else `value`.
  // The key's first component names the block type and is replaced by the path.
  template <class T>
  T instance(const std::string& path, const std::string& key, T value) {
    const std::string* text = instance_override(path, key, to_text(value));
    return text ? parse<T>(key, *text) : value;
  }

  // Throws UserError if an override named a key that no block declared,
  // suggesting the nearest declared key.
  void check_unused() const;

  const std::map<std::string, Param>& params() const { return params_; }
  // One line per parameter: key, type, value, default, source, description,
  // tab-separated (incsim --list-params).
  void list(std::ostream& os) const;
  bool has_override(const std::string& key) const { return overrides_.count(key) != 0; }

 private:
  struct Override {
    std::string value;
    std::string source;
    mutable bool used = false;
  };
  const std::string& declare(const std::string& key, const char* type, const std::string& def,
                             const std::string& description);
  const std::string* instance_override(const std::string& path, const std::string& key, const std::string& value);

  template <class T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_integral_v<T>) return "int";
    else if constexpr (std::is_floating_point_v<T>) return "float";
    else return "string";
  }
  template <class T>
  static std::string to_text(const T& v) {
    if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_same_v<T, std::string>) return v;
    else if constexpr (std::is_convertible_v<T, std::string>) return std::string(v);
    else {
      std::ostringstream os;
      os.precision(17);
      os << v;
      return os.str();
    }
  }
  template <class T>
  static T parse(const std::string& key, const std::string& text);

  std::map<std::string, Param> params_;
  std::map<std::string, Override> overrides_;
};

// Parses a non-negative number, int or float, naming the key on failure.
double parse_number(const std::string& key, const std::string& text);
bool parse_bool(const std::string& key, const std::string& text);

template <class T>
T Config::parse(const std::string& key, const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) {
    return parse_bool(key, text);
  } else if constexpr (std::is_integral_v<T>) {
    double v = parse_number(key, text);
    if (v != std::floor(v))
      throw UserError("configuration key '" + key + "' expects a whole number, got '" + text + "'");
    if (std::is_unsigned_v<T> && v < 0)
      throw UserError("configuration key '" + key + "' must not be negative, got '" + text + "'");
    if (v < static_cast<double>(std::numeric_limits<T>::min()) || v > static_cast<double>(std::numeric_limits<T>::max()))
      throw UserError("configuration key '" + key + "' is out of range: '" + text + "'");
    return static_cast<T>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(parse_number(key, text));
  } else {
    return T(text);
  }
}

}  // namespace incsim
