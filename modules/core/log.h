#pragma once
// Logging (STYLE.md, convention 6): what a block does, with the simulated
// time, through SystemC's sc_report (so SystemC's own messages and ours share
// one handler, report.cpp) and spdlog behind that handler.
//
// Each block holds a Logger named by its hierarchical name
// (sw3.port5.reduction_table); its level comes from --log when the block is
// built: a default level and per-name levels, the longest matching name
// prefix winning (`--log info,sw3.port5=debug,fpga.clt=trace`). INCSIM_LOG tests
// the level, one byte compare, before it formats anything: with logging off a
// packet's path pays that compare and nothing else.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>

namespace incsim::log {

enum class Level : uint8_t { Trace, Debug, Info, Warn, Off };

// Parses a --log spec and makes it the configuration for every Logger built
// from now on; throws UserError naming a bad level or item.
void configure(const std::string& spec);
// The level a block of that name gets under the current configuration.
Level level_for(const std::string& name);
// The same, for a block being built: its name is remembered for suggestions.
Level register_block(const std::string& name);
// Whether any block may log below a warning (a progress line kept in place
// on a terminal would be broken by log lines).
bool any_enabled();
// Throws UserError if a per-block level named no block built since configure().
void check_matched();
const char* level_name(Level l);

class Logger {
 public:
  Logger() = default;
  explicit Logger(std::string name) : name_(std::move(name)), level_(register_block(name_)) {}
  bool enabled(Level l) const { return l >= level_; }
  const std::string& name() const { return name_; }
  // Formats and reports; call through INCSIM_LOG, which checks the level first.
  template <class... Args>
  void write(Level l, fmt::format_string<Args...> f, Args&&... args) const {
    report(l, fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  void report(Level l, const std::string& msg) const;
  std::string name_;
  Level level_ = Level::Off;
};

}  // namespace incsim::log

#define INCSIM_LOG(logger, lvl, ...)                                             \
  do {                                                                           \
    if ((logger).enabled(::incsim::log::Level::lvl))                             \
      (logger).write(::incsim::log::Level::lvl, __VA_ARGS__);                    \
  } while (0)
