#include "config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "nearest.h"

namespace incsim {

void Config::set(const std::string& key, const std::string& value, const std::string& source) {
  if (key.empty()) throw UserError("an empty configuration key was given in " + source);
  if (const ParamDecl* now = renamed_param(key)) {
    const std::string note = key + " is renamed " + now->key() + "; the old name still sets it";
    if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
    overrides_[now->key()] = Override{value, source, false};
    return;
  }
  overrides_[key] = Override{value, source, false};
}

const std::string& Config::declare(const ParamDecl& p, const std::string& key, const std::string& def,
                                   const std::string& description) {
  auto it = params_.find(key);
  if (it == params_.end()) {
    Param e{p.type(), def, def, description, "default", ""};
    if (p.range().numeric()) e.range = p.range().text(p.unit());
    auto ov = overrides_.find(key);
    if (ov != overrides_.end()) {
      ov->second.used = true;
      e.value = ov->second.value;
      e.source = ov->second.source;
    }
    it = params_.emplace(key, e).first;
  }
  return it->second.value;
}

const std::string* Config::instance_override(const std::string& path, const ParamDecl& p, const std::string& value,
                                             std::string& key) {
  const auto dot = p.key().find('.');
  const std::string suffix = dot == std::string::npos ? p.key() : p.key().substr(dot + 1);
  for (std::string at = path;;) {
    key = at + "." + suffix;
    if (overrides_.count(key))
      return &declare(p, key, value, "this block's " + p.key() + " (per-instance override)");
    const auto up = at.rfind('.');
    if (up == std::string::npos) return nullptr;
    at.resize(up);
  }
}

void Config::list(std::ostream& os) const {
  for (const auto& [k, p] : params_)
    os << k << "\t" << p.type << "\t" << p.value << "\t" << p.default_value << "\t" << p.source << "\t" << p.description
       << (p.range.empty() ? "" : " [range: " + p.range + "]") << "\n";
}

// Keys renamed so that one concept has one name and unit everywhere; an old
// campaign gets the new name instead of a guess.
const std::pair<const char*, const char*> kRenamed[] = {
    {"link.bandwidth_Gbps", "link.bw_GBps, in GB/s (100 Gbit/s is 12.5)"},
    {"leaf.uplink_Gbps", "leaf.uplink_bw_GBps, in GB/s (400 Gbit/s is 50)"},
    {"intra.bandwidth_GBps", "intra.bw_GBps"},
};

namespace {
// The sentence for an override nobody declared: its new name if renamed,
// else the nearest of `keys`.
[[noreturn]] void unknown_key(const std::string& key, const std::string& source,
                              const std::vector<std::string>& keys) {
  for (const auto& [old_key, now] : kRenamed)
    if (key == old_key) throw UserError("key '" + key + "' is now " + now);
  const std::string near = nearest(key, keys);
  throw UserError("unknown key '" + key + "'" + (source == "-c" ? "" : " (in " + source + ")") +
                  (near.empty() ? "; incsim --list-params shows the keys this run reads"
                                : "; did you mean '" + near + "'?"));
}

// The declared key `key` names: itself, or the type's key of a block's
// instance (switch.reduction_table.bytes for sw3.port5.reduction_table.bytes:
// the suffix after the block type's name); "" if none.
std::string declared(const std::string& key) {
  const auto& registry = param_registry();
  if (registry.count(key)) return key;
  for (const auto& [k, p] : registry) {
    const auto dot = k.find('.');
    const std::string suffix = dot == std::string::npos ? k : k.substr(dot + 1);
    if (key.size() > suffix.size() && key[key.size() - suffix.size() - 1] == '.' &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
      return k;
  }
  return "";
}
}  // namespace

void Config::check_known() const {
  std::vector<std::string> keys;
  for (const auto& kv : param_registry()) keys.push_back(kv.first);
  for (const auto& [key, ov] : overrides_)
    if (declared(key).empty()) unknown_key(key, ov.source, keys);
}

void Config::check_unused(const std::function<std::string(const std::string& key)>& not_read,
                          const std::vector<std::string>& read_elsewhere) const {
  std::vector<std::string> keys;
  for (const auto& kv : params_) keys.push_back(kv.first);
  for (const auto& [key, ov] : overrides_) {
    if (ov.used || std::find(read_elsewhere.begin(), read_elsewhere.end(), key) != read_elsewhere.end()) continue;
    // A key of incsim's whose type no block of this run read (an instance of
    // a type it read names a block it does not have: unknown).
    const std::string type = declared(key);
    if (!type.empty() && !params_.count(type)) {
      const std::string why = not_read ? not_read(type) : "";
      throw UserError(key + (ov.source == "-c" ? "" : " (in " + ov.source + ")") + " is not read by this run" +
                      (why.empty() ? "; incsim --list-params shows the keys it reads" : why));
    }
    unknown_key(key, ov.source, keys);
  }
}

std::vector<std::pair<std::string, std::string>> Config::unread() const {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const auto& [key, ov] : overrides_) {
    const std::string type = declared(key);
    if (!ov.used && !type.empty() && !params_.count(type)) keys.emplace_back(key, type);
  }
  return keys;
}

double parse_number(const std::string& key, const std::string& text) {
  // YAML spells infinity and NaN .inf, -.inf and .nan (any case).
  std::string t = text;
  const size_t sign = !t.empty() && (t[0] == '+' || t[0] == '-');
  if (t.size() > sign + 1 && t[sign] == '.' && std::isalpha(static_cast<unsigned char>(t[sign + 1]))) t.erase(sign, 1);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end == nullptr || *end != '\0' || std::isspace(static_cast<unsigned char>(t[0])))
    throw UserError("configuration key '" + key + "' expects a number, got '" + text + "'");
  return v;
}

bool parse_bool(const std::string& key, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw UserError("configuration key '" + key + "' expects true or false, got '" + text + "'");
}

}  // namespace incsim
