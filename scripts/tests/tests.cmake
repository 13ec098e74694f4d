# Tests of the campaign tools (scripts/sweep, scripts/plot), included from
# the top-level CMakeLists.txt. They run on Debian's /usr/bin/python3 (it
# has python3-yaml and python3-matplotlib). INCSIM points the end-to-end
# and Slurm tests at the simulator built here; the unit tests use
# scripts/tests/fake_incsim.py, which follows the same command-line contract.
#
#   scripts.campaign  expansion, ranges, zip, exclusions, seeds, hashing
#   scripts.runner    run/resume/failures/timeouts/cap/interrupt/collect/plot
#   scripts.e2e       a small DGX-2 campaign on the real simulator
#   scripts.slurm     a one-node Slurm cluster on localhost, as root
#   scripts.examples  README's and docs' example commands print what they show
#   scripts.bench     incsim-bench's --help, named workloads, unknown names
#   scripts.tools     sweep --help, demo.sh's paths, plot's axes, the papers' numbers
#   scripts.hardware  the validation against nccl-tests tables on one table
# A test that cannot run here (no simulator, not root) prints its reason
# with a marker and ctest reports it skipped, never passed.

set(_incsim_campaign_tests
    "campaign\;60"
    "runner\;180"
    "e2e\;300"
    "slurm\;900"
    "examples\;300"
    "bench\;60"
    "tools\;60"
    "hardware\;120")
foreach(_entry IN LISTS _incsim_campaign_tests)
  list(GET _entry 0 _name)
  list(GET _entry 1 _timeout)
  add_test(NAME scripts.${_name}
           COMMAND /usr/bin/python3 -m unittest -v test_${_name}
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  math(EXPR _timeout "${_timeout} * ${INCSIM_TEST_TIMEOUT_SCALE}")
  set_tests_properties(scripts.${_name} PROPERTIES
    TIMEOUT ${_timeout}
    ENVIRONMENT "INCSIM=${CMAKE_BINARY_DIR}/incsim;INCSIM_BENCH=${CMAKE_BINARY_DIR}/incsim-bench;PYTHONDONTWRITEBYTECODE=1;INCSIM_TEST_TIMEOUT_SCALE=${INCSIM_TEST_TIMEOUT_SCALE}"
    LABELS "scripts")
endforeach()
# Only these can skip; each holds one test class that skips as a whole.
set_tests_properties(scripts.e2e scripts.slurm scripts.examples scripts.bench scripts.hardware PROPERTIES
  SKIP_REGULAR_EXPRESSION "INCSIM-SKIP")
# The Slurm test brings up daemons on fixed resources; never run it
# alongside another copy of itself.
set_tests_properties(scripts.slurm PROPERTIES RUN_SERIAL TRUE)
