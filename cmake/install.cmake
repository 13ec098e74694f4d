# cmake --install: incsim's libraries, headers and programs, with a package
# config, so that an architect's own sc_main does
#   find_package(incsim REQUIRED)
#   target_link_libraries(my_bench PRIVATE incsim::incsim)
# (testbench/examples/ shows it; the test "install: an outside project builds
# and runs the examples" builds them against an installed copy).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(INCSIM_LIBRARIES incsim_util incsim_core incsim_topology incsim_net incsim_elements incsim_collectives incsim_training incsim_flow incsim_credit_switch incsim_nvswitch incsim_adapter
    incsim_gpu incsim_graph_runner incsim_nic incsim_traffic_patterns incsim_traffic incsim_ethernet incsim_roce incsim_netreduce incsim_platforms
    incsim_testbench)
# The one target an outside project links: the driver and every block.
# (incsim is the program's name, so the library target is incsim_all, exported as incsim::incsim.)
add_library(incsim_all INTERFACE)
target_link_libraries(incsim_all INTERFACE incsim_testbench)
set_target_properties(incsim_all PROPERTIES EXPORT_NAME incsim)

install(TARGETS ${INCSIM_LIBRARIES} incsim_all EXPORT incsimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS incsim-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS $<TARGET_FILE:incsim> DESTINATION ${CMAKE_INSTALL_BINDIR})
# Headers keep the paths the sources include them by: "nvswitch/nvswitch.h",
# "platforms/platform.h", "experiment.h" (testbench/ is on the include path).
install(DIRECTORY modules/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/incsim FILES_MATCHING PATTERN "*.h")
install(DIRECTORY platforms/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/incsim/platforms FILES_MATCHING PATTERN "*.h")
install(DIRECTORY testbench/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/incsim/testbench FILES_MATCHING PATTERN "*.h"
        PATTERN "tests" EXCLUDE PATTERN "examples" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/testbench/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/incsim/testbench)

set(INCSIM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/incsim)
install(EXPORT incsimTargets NAMESPACE incsim:: DESTINATION ${INCSIM_CMAKE_DIR})
configure_package_config_file(cmake/incsimConfig.cmake.in ${CMAKE_BINARY_DIR}/incsimConfig.cmake
                              INSTALL_DESTINATION ${INCSIM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/incsimConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/incsimConfig.cmake ${CMAKE_BINARY_DIR}/incsimConfigVersion.cmake
        DESTINATION ${INCSIM_CMAKE_DIR})
