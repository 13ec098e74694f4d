#include "report.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "log.h"

namespace incsim {
namespace {
int g_warnings = 0;
int g_errors = 0;

// stderr, unformatted: the handler writes the simulated time and the block.
spdlog::logger& sink() {
  static spdlog::logger logger = [] {
    spdlog::logger l("incsim", std::make_shared<spdlog::sinks::stderr_sink_st>());
    l.set_pattern("%v");
    l.set_level(spdlog::level::trace);
    return l;
  }();
  return logger;
}

log::Level level_of(int verbosity) {
  return verbosity >= sc_core::SC_DEBUG ? log::Level::Trace
         : verbosity >= sc_core::SC_HIGH ? log::Level::Debug
                                         : log::Level::Info;
}

void handler(const sc_core::sc_report& rep, const sc_core::sc_actions& actions) {
  switch (rep.get_severity()) {
    case sc_core::SC_INFO: {
      // Blocks check their level before reporting; SystemC's own messages
      // are shown at the default level (--log info).
      const log::Level l = level_of(rep.get_verbosity());
      if (!(l >= log::level_for(rep.get_msg_type()))) return;
      sink().log(spdlog::level::info, "[{:.6f} us] {}: {}: {}", sc_core::sc_time_stamp().to_seconds() * 1e6,
                 rep.get_msg_type(), log::level_name(l), rep.get_msg());
      return;
    }
    case sc_core::SC_WARNING:
      ++g_warnings;
      std::cerr << "incsim: warning: " << rep.get_msg_type() << ": " << rep.get_msg() << '\n';
      return;
    default:
      ++g_errors;
      // SystemC's own handler throws for SC_THROW; keep that so errors unwind.
      if (actions & sc_core::SC_THROW) throw rep;
      std::cerr << "incsim: error: " << rep.get_msg_type() << ": " << rep.get_msg() << '\n';
      return;
  }
}
}  // namespace

void install_report_handler(bool verbose) {
  if (verbose) log::configure("info");
  sc_core::sc_report_handler::set_handler(handler);
  // Every level reaches the handler, which filters by block (log.h).
  sc_core::sc_report_handler::set_verbosity_level(sc_core::SC_DEBUG);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_FATAL, sc_core::SC_THROW);
}

int reported_warnings() { return g_warnings; }
int reported_errors() { return g_errors; }

}  // namespace incsim
