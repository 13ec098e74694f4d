#pragma once
// A file of the given text under /tmp for one test, removed after it.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

struct TempFile {
  std::string path;
  // `suffix` ends the name, e.g. ".yaml".
  explicit TempFile(const std::string& text, const std::string& suffix = ".yaml") {
    std::string name = "/tmp/incsim_test_XXXXXX" + suffix;
    const int fd = mkstemps(name.data(), static_cast<int>(suffix.size()));
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};
