# Third-party dependencies, all from Debian 12 packages (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)

# Debian's libsystemc-dev ships only systemc.pc (no CMake config); prefer a CMake
# config where one exists (STYLE.md, convention 2) and alias whichever we get.
find_package(SystemCLanguage CONFIG QUIET)
if(SystemCLanguage_FOUND)
  add_library(incsim::systemc ALIAS SystemC::systemc)
else()
  pkg_check_modules(SystemC REQUIRED IMPORTED_TARGET systemc)
  add_library(incsim::systemc ALIAS PkgConfig::SystemC)
endif()

find_package(yaml-cpp REQUIRED)          # --config files and YAML platforms
find_package(nlohmann_json 3 REQUIRED)   # --json results
find_package(spdlog REQUIRED)            # block logs behind the sc_report handler (modules/core/log.h)
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)  # the command line, declared once (docs/architecture.md)
# GLPK solves Blink's tree-minimisation integer programs (modules/collectives/
# packing.cpp says why GLPK and not CBC). Debian ships no CMake config for it.
find_library(GLPK_LIBRARY glpk REQUIRED)
find_path(GLPK_INCLUDE_DIR glpk.h REQUIRED)
add_library(incsim::glpk UNKNOWN IMPORTED)
set_target_properties(incsim::glpk PROPERTIES IMPORTED_LOCATION ${GLPK_LIBRARY}
                                              INTERFACE_INCLUDE_DIRECTORIES ${GLPK_INCLUDE_DIR})
find_package(Protobuf REQUIRED)          # Chakra execution traces (modules/training/chakra_trace.h)
find_package(Catch2 2 REQUIRED)          # tests, one executable per block
include(Catch)
