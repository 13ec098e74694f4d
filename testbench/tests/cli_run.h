#pragma once
// Running the real incsim binary from a test (test_cli, test_bad_input): its
// exit status, stdout and stderr, and the one-sentence error contract.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_file.h"

#ifndef INCSIM_BINARY
#error "CMake passes the path of the incsim binary as INCSIM_BINARY"
#endif

namespace cli {

// A quick run: two sizes on four GPUs of a star.
inline constexpr const char* kQuickRun = "--platform star --gpus 4 --sizes 8K,64K --quiet";

namespace fs = std::filesystem;

using ::TempDir;

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

struct Result {
  bool exited = false;  // false: killed by a signal (a crash)
  int code = -1;
  std::string out, err;
};

// Runs a shell command with stdout and stderr captured.
inline Result sh(const std::string& command) {
  TempDir d;
  const std::string cmd = command + " >'" + d.file("out") + "' 2>'" + d.file("err") + "' </dev/null";
  const int st = std::system(cmd.c_str());
  Result r;
  r.exited = st != -1 && WIFEXITED(st);
  r.code = r.exited ? WEXITSTATUS(st) : -1;
  r.out = slurp(d.file("out"));
  r.err = slurp(d.file("err"));
  return r;
}

inline Result incsim(const std::string& args) {
  return sh("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 '" INCSIM_BINARY "' " + args);
}

// The first row of a quiet run that writes JSON to stdout; the run
// succeeds, and a row with a #wrong count has none wrong.
inline nlohmann::json first_row(const std::string& args) {
  const Result r = incsim(args + " --quiet --json -");
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  if (row["wrong"].is_number()) CHECK(row["wrong"] == 0);
  return row;
}

// Bad input: non-zero exit (not a crash), one line on stderr that starts
// with "incsim: error:" and contains every needle.
inline void require_error(const std::string& args, std::initializer_list<std::string> needles) {
  INFO("incsim " << args);
  const Result r = incsim(args);
  INFO("exit " << r.code << "\nstderr:\n" << r.err);
  REQUIRE(r.exited);
  CHECK(r.code != 0);
  CHECK(r.code < 128);
  const auto err = lines(r.err);
  REQUIRE(err.size() == 1);
  CHECK(err[0].rfind("incsim: error: ", 0) == 0);
  for (const auto& n : needles) CHECK_THAT(err[0], Catch::Contains(n));
  CHECK_THAT(r.err, !Catch::Contains("terminate") && !Catch::Contains("Abort"));
}

}  // namespace cli
