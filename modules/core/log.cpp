#include "log.h"

#include <map>
#include <set>
#include <vector>
#include <sstream>
#include <systemc>

#include "error.h"
#include "nearest.h"

namespace incsim::log {

namespace {
struct Settings {
  Level fallback = Level::Off;
  std::map<std::string, Level> by_name;  // name prefix -> level
  std::set<std::string> matched;         // prefixes some block's name matched
  std::vector<std::string> blocks;       // every logger's name, for suggestions
};
Settings g_settings;

Level parse_level(const std::string& text, const std::string& item) {
  if (text == "trace") return Level::Trace;
  if (text == "debug") return Level::Debug;
  if (text == "info") return Level::Info;
  if (text == "warn" || text == "warning") return Level::Warn;
  if (text == "off") return Level::Off;
  throw UserError("--log '" + item + "' names level '" + text + "'; the levels are trace, debug, info, warn and off");
}
}  // namespace

void configure(const std::string& spec) {
  Settings s;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) throw UserError("--log '" + spec + "' has an empty item");
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      s.fallback = parse_level(item, item);
    } else {
      const std::string name = item.substr(0, eq);
      if (name.empty()) throw UserError("--log '" + item + "' names no block before '='");
      s.by_name[name] = parse_level(item.substr(eq + 1), item);
    }
  }
  g_settings = std::move(s);
}

Level register_block(const std::string& name) {
  g_settings.blocks.push_back(name);
  return level_for(name);
}

bool any_enabled() {
  if (g_settings.fallback < Level::Warn) return true;
  for (const auto& kv : g_settings.by_name)
    if (kv.second < Level::Warn) return true;
  return false;
}

Level level_for(const std::string& name) {
  Level l = g_settings.fallback;
  size_t best = 0;
  for (const auto& [prefix, level] : g_settings.by_name) {
    // A name matches itself and the blocks inside it (sw3 matches sw3.port5, not sw30).
    const bool match = name.compare(0, prefix.size(), prefix) == 0 &&
                       (name.size() == prefix.size() || name[prefix.size()] == '.');
    if (match) g_settings.matched.insert(prefix);
    if (match && prefix.size() >= best) {
      best = prefix.size();
      l = level;
    }
  }
  return l;
}

void check_matched() {
  for (const auto& kv : g_settings.by_name) {
    if (g_settings.matched.count(kv.first)) continue;
    const std::string near = nearest(kv.first, g_settings.blocks);
    throw UserError("--log names '" + kv.first + "', which is no block of this run" +
                    (near.empty() ? "" : "; did you mean '" + near + "'?"));
  }
}

const char* level_name(Level l) {
  switch (l) {
    case Level::Trace: return "trace";
    case Level::Debug: return "debug";
    case Level::Info: return "info";
    case Level::Warn: return "warn";
    case Level::Off: return "off";
  }
  return "?";
}

void Logger::report(Level l, const std::string& msg) const {
  // SC_INFO for everything below a warning: the verbosity carries the level.
  const int verbosity = l == Level::Trace ? sc_core::SC_DEBUG : l == Level::Debug ? sc_core::SC_HIGH : sc_core::SC_MEDIUM;
  if (l >= Level::Warn)
    sc_core::sc_report_handler::report(sc_core::SC_WARNING, name_.c_str(), msg.c_str(), __FILE__, __LINE__);
  else
    sc_core::sc_report_handler::report(sc_core::SC_INFO, name_.c_str(), msg.c_str(), verbosity, __FILE__, __LINE__);
}

}  // namespace incsim::log
