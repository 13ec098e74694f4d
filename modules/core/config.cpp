#include "config.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "nearest.h"

namespace incsim {

void Config::set(const std::string& key, const std::string& value, const std::string& source) {
  if (key.empty()) throw UserError("an empty configuration key was given in " + source);
  overrides_[key] = Override{value, source, false};
}

const std::string& Config::declare(const std::string& key, const char* type, const std::string& def,
                                   const std::string& description) {
  auto it = params_.find(key);
  if (it == params_.end()) {
    Param p{type, def, def, description};
    auto ov = overrides_.find(key);
    if (ov != overrides_.end()) {
      ov->second.used = true;
      p.value = ov->second.value;
      p.source = ov->second.source;
    }
    it = params_.emplace(key, p).first;
  }
  return it->second.value;
}

const std::string* Config::instance_override(const std::string& path, const std::string& key,
                                             const std::string& value) {
  const auto dot = key.find('.');
  const std::string suffix = dot == std::string::npos ? key : key.substr(dot + 1);
  for (std::string p = path;;) {
    const std::string k = p + "." + suffix;
    if (overrides_.count(k)) {
      const auto type = params_.find(key);
      return &declare(k, type == params_.end() ? "string" : type->second.type.c_str(), value,
                      "this block's " + key + " (per-instance override)");
    }
    const auto up = p.rfind('.');
    if (up == std::string::npos) return nullptr;
    p.resize(up);
  }
}

void Config::list(std::ostream& os) const {
  for (const auto& [k, p] : params_)
    os << k << "\t" << p.type << "\t" << p.value << "\t" << p.default_value << "\t" << p.source << "\t" << p.description
       << "\n";
}

void Config::check_unused() const {
  std::vector<std::string> keys;
  for (const auto& kv : params_) keys.push_back(kv.first);
  for (const auto& [key, ov] : overrides_) {
    if (ov.used) continue;
    const std::string near = nearest(key, keys);
    throw UserError("unknown key '" + key + "'" + (ov.source == "-c" ? "" : " (in " + ov.source + ")") +
                    (near.empty() ? "; incsim --list-params shows the keys this run reads"
                                  : "; did you mean '" + near + "'?"));
  }
}

double parse_number(const std::string& key, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v))
    throw UserError("configuration key '" + key + "' expects a number, got '" + text + "'");
  return v;
}

bool parse_bool(const std::string& key, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw UserError("configuration key '" + key + "' expects true or false, got '" + text + "'");
}

}  // namespace incsim
