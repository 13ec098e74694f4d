// The fuzz targets' stand-in for testbench/choices.cpp, which lists the
// platforms and so needs them (and SystemC): the parser only prints these
// lists in --help, and the fuzz targets test the parser.
#include "choices.h"

namespace incsim::tb {

std::string choice_list(const std::string& option) { return "(" + option + ")"; }
std::string algorithm_defaults() { return "(defaults)"; }
std::string algorithm_help() { return "(algorithms)\n"; }

}  // namespace incsim::tb
