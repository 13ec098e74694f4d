#pragma once
// One handler for SystemC's messages and ours (STYLE.md, convention 6).
#include <systemc>

namespace incsim {

// Installs the handler: info is printed only when verbose, warnings and errors
// are counted and printed as one line; errors and fatals also stop the run by
// throwing. Tests treat any counted warning as a failure.
void install_report_handler(bool verbose);
int reported_warnings();
int reported_errors();

}  // namespace incsim
