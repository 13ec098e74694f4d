#pragma once
// Reads a YAML file the user named (a platform, a configuration), turning
// yaml-cpp's exceptions into one-sentence UserErrors. Header-only, so only
// the libraries that read YAML link yaml-cpp.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/user_file.h"

namespace incsim {

// yaml-cpp holds about 80 B per byte of text: a larger file is refused
// before it is read (a platform file of the most nodes, 30000 with 8 links
// each, takes about 6 MiB).
inline constexpr std::uintmax_t kMaxYamlFileBytes = 8 << 20;

// `what` names the file's role in messages, e.g. "platform file".
inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  const std::string text = read_user_file(path, what, kMaxYamlFileBytes);
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own depth cap (its depthguard.h): no stack overflow.
    throw UserError(what + " " + path + " nests maps or lists more than 2000 deep (line " +
                    std::to_string(e.mark.line + 1) + ")");
  } catch (const YAML::Exception& e) {
    throw UserError(what + " " + path + " is not valid YAML (line " + std::to_string(e.mark.line + 1) + ")");
  }
}

// Checks the items of a YAML file the user named. Every error names the file
// and the line (yaml-cpp's Mark) of the item at fault, never yaml-cpp's own
// text: "platform file F, line 3: ...".
class YamlChecker {
 public:
  // `what` names the file's role, as for load_yaml_file.
  YamlChecker(const std::string& what, const std::string& file) : source_(what + " " + file) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    const int line = at.Mark().line;
    throw UserError(source_ + (line >= 0 ? ", line " + std::to_string(line + 1) : "") + ": " + what);
  }

  // Runs f for the item at `at`, so that its UserError names the line too.
  template <class F>
  auto at_line(const YAML::Node& at, F&& f) const {
    try {
      return f();
    } catch (const UserError& e) {
      fail(at, e.what());
    }
  }

  // `n` is a map whose keys are among `keys`, each once.
  void check_map(const YAML::Node& n, std::initializer_list<const char*> keys, const std::string& what) const {
    std::string list;
    for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
    if (!n.IsMap()) fail(n, what + " must be a map with the keys " + list);
    std::vector<std::string> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) fail(kv.first, "a key of " + what + " must be one of " + list);
      const auto k = kv.first.Scalar();
      if (std::find(keys.begin(), keys.end(), k) == keys.end())
        fail(kv.first, "unknown key '" + k + "' in " + what + "; the keys are " + list);
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) fail(kv.first, "key '" + k + "' appears twice in " + what);
      seen.push_back(k);
    }
  }

  // n is a map (check_map); its key's value as T, or def if absent.
  template <class T>
  T scalar(const YAML::Node& n, const char* key, T def) const {
    const YAML::Node v = n[key];
    if (!v) return def;
    if (!v.IsScalar()) fail(v, std::string("'") + key + "' must be " + type_name<T>());
    try {
      return v.as<T>();
    } catch (const YAML::Exception&) {
      fail(v, std::string("'") + key + "' must be " + type_name<T>() + ", not '" + v.Scalar() + "'");
    }
  }

 private:
  template <class T>
  static const char* type_name() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return "a whole number";
    else if constexpr (std::is_same_v<T, double>) return "a number";
    else return "a single value";
  }

  std::string source_;
};

}  // namespace incsim
