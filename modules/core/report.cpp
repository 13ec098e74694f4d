#include "report.h"

#include <iostream>

namespace incsim {
namespace {
bool g_verbose = false;
int g_warnings = 0;
int g_errors = 0;

void handler(const sc_core::sc_report& rep, const sc_core::sc_actions& actions) {
  switch (rep.get_severity()) {
    case sc_core::SC_INFO:
      if (g_verbose) std::cerr << "incsim: " << rep.get_msg() << '\n';
      return;
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
  g_verbose = verbose;
  sc_core::sc_report_handler::set_handler(handler);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_FATAL, sc_core::SC_THROW);
}

int reported_warnings() { return g_warnings; }
int reported_errors() { return g_errors; }

}  // namespace incsim
