// Sizes as architects write them, and typed parameters (plain C++).
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "core/config.h"
#include "core/nearest.h"
#include "core/error.h"
#include "core/units.h"

using namespace incsim;

TEST_CASE("parse_size reads bytes and binary suffixes", "[units]") {
  CHECK(parse_size("4096", "size") == 4096);
  CHECK(parse_size("4", "size") == 4);
  CHECK(parse_size("8K", "size") == 8192);
  CHECK(parse_size("8k", "size") == 8192);
  CHECK(parse_size("8KiB", "size") == 8192);
  CHECK(parse_size("64M", "size") == 64ull << 20);
  CHECK(parse_size("64MiB", "size") == 64ull << 20);
  CHECK(parse_size("1G", "size") == 1ull << 30);
  CHECK(parse_size("100B", "size") == 100);
}

TEST_CASE("parse_size rejects zero, negative and garbage, naming the text", "[units][errors]") {
  for (const char* bad : {"0", "0K", "-8K", "-1", "", "K", "8X", "8 K", "abc", "1.5M", "8K8", "99999999999999999999"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(parse_size(bad, "size"), UserError);
    CHECK_THROWS_WITH(parse_size(bad, "size"), Catch::Contains(std::string("'") + bad + "'"));
  }
  CHECK_THROWS_WITH(parse_size("0", "message size"), Catch::StartsWith("message size"));
}

TEST_CASE("parse_sizes reads doubling ranges and lists", "[units]") {
  CHECK(parse_sizes("8K") == std::vector<uint64_t>{8192});
  CHECK(parse_sizes("8K:64K") == std::vector<uint64_t>{8192, 16384, 32768, 65536});
  CHECK(parse_sizes("8K:8K") == std::vector<uint64_t>{8192});
  CHECK(parse_sizes("8K:64M").size() == 14);
  CHECK(parse_sizes("8K:64M").back() == 64ull << 20);
  CHECK(parse_sizes("8K,1M,64M") == std::vector<uint64_t>{8192, 1 << 20, 64 << 20});
  CHECK(parse_sizes("12292,4") == std::vector<uint64_t>{12292, 4});
  // A range whose top is not a doubling of the bottom stops below it.
  CHECK(parse_sizes("3K:10K") == std::vector<uint64_t>{3072, 6144});
}

TEST_CASE("parse_sizes rejects bad lists and ranges", "[units][errors]") {
  for (const char* bad : {"", "8K,", ",8K", "8K,,1M", "8K,0", "8K,-1M", "64M:8K", "0:8K", "8K:", ":8K", "8K:x"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(parse_sizes(bad), UserError);
  }
  CHECK_THROWS_WITH(parse_sizes("64M:8K"), Catch::Contains("backwards"));
}

TEST_CASE("size_label inverts parse_size", "[units]") {
  for (const char* s : {"8K", "64M", "1G", "12292", "4"}) CHECK(size_label(parse_size(s, "size")) == s);
}

namespace {
// Declarations of this test's own (the blocks' are not linked in here).
const Param<int> kInt{"t.int", 3, Range::at_least(0).at_most(100), "an int"};
const Param<double> kFloat{"t.float", 1.0, Range::at_least(0).at_most(10), "a float"};
const Param<bool> kBool{"t.bool", true, Range::none(), "a bool"};
const Param<std::string> kStr{"t.str", "x", Range::none(), "a string"};
const Param<double> kDefault{"t.default", 150.0, Range::at_least(0).at_most(1e9), "a default"};
const Param<uint32_t> kUnsigned{"t.mem_cycles", 180, Range::at_least(0).at_most(1e6), "cycles"};
const Param<double> kLatency{"t.latency_ns", 150.0, Range::at_least(0).at_most(1e9), "latency"};
const Param<int> kChannels{"t.channels", 12, Range::at_least(1).at_most(256), "channels"};
const Param<double> kBw{"t.bw_GBps", 25.0, Range::at_least(0.001).at_most(1e5), "bw"};
const Param<double> kProb{"t.loss", 0.0, Range::at_least(0).below(1), "a probability"};
const Param<double> kAuto{"t.speedup", 0.0, Range::at_least(1).at_most(1024).or_zero(), "0: derived"};
const Param<uint32_t> kTable{"sw.table.bytes", 256, Range::at_least(0).at_most(16 << 20), "per port"};
}  // namespace

TEST_CASE("Config returns defaults, overrides and records every parameter", "[config]") {
  Config c;
  c.set("t.int", "7", "-c");
  c.set("t.float", "2.5", "file.yaml");
  c.set("t.bool", "off", "-c");
  c.set("t.str", "hello", "-c");
  CHECK(c.get(kInt) == 7);
  CHECK(c.get(kFloat) == 2.5);
  CHECK(c.get(kBool) == false);
  CHECK(c.get(kStr) == "hello");
  CHECK(c.get(kDefault) == 150.0);
  CHECK(c.get(kUnsigned) == 180u);
  // Reading the same key again gives the same value.
  CHECK(c.get(kInt) == 7);
  CHECK_NOTHROW(c.check_unused());

  const auto& p = c.params();
  REQUIRE(p.count("t.default"));
  CHECK(p.at("t.default").type == "float");
  CHECK(p.at("t.default").default_value == "150");
  CHECK(p.at("t.default").description == "a default");
  CHECK(p.at("t.default").range == "0 to 1e9");
  CHECK(p.at("t.int").type == "int");
  CHECK(p.at("t.int").default_value == "3");
  CHECK(p.at("t.int").value == "7");
  CHECK(p.at("t.bool").type == "bool");
  CHECK(p.at("t.bool").range.empty());
  CHECK(p.at("t.str").type == "string");
  CHECK(c.has_override(kInt));
  CHECK_FALSE(c.has_override(kDefault));
}

TEST_CASE("Config: a platform family's default replaces the declared one", "[config]") {
  Config c;
  CHECK(c.get(kLatency, 4.0) == 4.0);
  CHECK(c.params().at("t.latency_ns").default_value == "4");
}

TEST_CASE("Config: a later source wins", "[config]") {
  Config c;
  c.set("t.int", "1", "file.yaml");
  c.set("t.int", "2", "-c");
  CHECK(c.get(kInt) == 2);
}

TEST_CASE("Config: an unknown key is an error from check_unused naming key and source", "[config][errors]") {
  Config c;
  c.set("t.latency_ns", "100", "-c");
  c.set("t.latncy_ns", "100", "my.yaml");
  CHECK(c.get(kLatency) == 100.0);
  CHECK_THROWS_AS(c.check_unused(), UserError);
  CHECK_THROWS_WITH(c.check_unused(), Catch::Contains("t.latncy_ns") && Catch::Contains("my.yaml"));
}

TEST_CASE("Config: an unknown key suggests the nearest declared one", "[config][errors]") {
  Config c;
  c.get(kLatency);
  c.get(kChannels);
  c.set("t.latency", "100", "-c");
  CHECK_THROWS_WITH(c.check_unused(), "unknown key 't.latency'; did you mean 't.latency_ns'?");
  Config far;
  far.get(kLatency);
  far.set("gpu.clock", "1", "-c");
  CHECK_THROWS_WITH(far.check_unused(), Catch::Contains("incsim --list-params") && !Catch::Contains("did you mean"));
}

TEST_CASE("Config: a value outside its range, NaN or infinite is one sentence naming key, value and range",
          "[config][errors]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1e-300", "t.bw_GBps = 1e-300 is outside its range (0.001 to 100000 GB/s)"},
      {"1e30", "t.bw_GBps = 1e30 is outside its range (0.001 to 100000 GB/s)"},
      {"-1", "t.bw_GBps = -1 is outside its range (0.001 to 100000 GB/s)"},
      {"nan", "t.bw_GBps = nan is outside its range (0.001 to 100000 GB/s)"},
      {"inf", "t.bw_GBps = inf is outside its range (0.001 to 100000 GB/s)"},
      {"1e999", "t.bw_GBps = 1e999 is outside its range (0.001 to 100000 GB/s)"},
      // YAML's spellings of infinity and NaN hit the same check.
      {".inf", "t.bw_GBps = .inf is outside its range (0.001 to 100000 GB/s)"},
      {"-.Inf", "t.bw_GBps = -.Inf is outside its range (0.001 to 100000 GB/s)"},
      {".NaN", "t.bw_GBps = .NaN is outside its range (0.001 to 100000 GB/s)"}};
  for (const auto& [v, msg] : cases) {
    INFO(v);
    Config c;
    c.set("t.bw_GBps", v, "-c");
    CHECK_THROWS_WITH(c.get(kBw), msg);
  }
  Config c;
  c.set("t.loss", "1", "-c");
  CHECK_THROWS_WITH(c.get(kProb), "t.loss = 1 is outside its range (at least 0 and below 1)");
  c.set("t.speedup", "0.5", "-c");
  CHECK_THROWS_WITH(c.get(kAuto), "t.speedup = 0.5 is outside its range (0, or 1 to 1024)");
  Config ok;
  ok.set("t.speedup", "0", "-c");
  CHECK(ok.get(kAuto) == 0);
}

TEST_CASE("Config: a per-instance override is range-checked under its own key", "[config][errors]") {
  Config c;
  c.set("sw3.port5.table.bytes", "1e12", "-c");
  c.set("sw4.table.bytes", "512", "-c");
  const uint32_t all = c.get(kTable);
  CHECK(c.instance("sw4.port0", kTable, all) == 512u);
  CHECK(c.instance("sw2.port0", kTable, all) == 256u);
  CHECK_THROWS_WITH(c.instance("sw3.port5", kTable, all),
                    "sw3.port5.table.bytes = 1e12 is outside its range (0 to 16777216 bytes)");
}

TEST_CASE("The registry holds every declaration, with its range", "[config]") {
  const auto& r = param_registry();
  REQUIRE(r.count("t.bw_GBps"));
  CHECK(r.at("t.bw_GBps") == &kBw);
  CHECK(kBw.unit() == "GB/s");
  CHECK(kTable.unit() == "bytes");
  CHECK(kUnsigned.unit() == "cycles");
  CHECK(kInt.unit().empty());
  std::ostringstream os;
  list_all_params(os);
  CHECK(os.str().rfind("key\ttype\tdefault\trange\n    description\n", 0) == 0);
  CHECK(os.str().find("t.bw_GBps\tfloat\t25\t0.001 to 100000 GB/s\n    bw\n") != std::string::npos);
  CHECK(os.str().find("t.str\tstring\tx\t\n    a string\n") != std::string::npos);
}

TEST_CASE("number_text writes bounds as a person would", "[config]") {
  CHECK(number_text(0) == "0");
  CHECK(number_text(100000) == "100000");
  CHECK(number_text(0.001) == "0.001");
  CHECK(number_text(1e9) == "1e9");
  CHECK(number_text(1e-6) == "1e-6");
  CHECK(number_text(16 << 20) == "16777216");
  CHECK(number_text(131.072) == "131.072");
}

TEST_CASE("nearest: edits and prefixes, nothing when far", "[config]") {
  const std::vector<std::string> c{"--platform", "--sizes", "--seed", "switch.latency_ns"};
  CHECK(nearest("--platfrom", c) == "--platform");
  CHECK(nearest("--size", c) == "--sizes");
  CHECK(nearest("switch.latency", c) == "switch.latency_ns");
  CHECK(nearest("--PLATFORM", c) == "--platform");
  CHECK(nearest("--xyz", c).empty());
  CHECK(nearest("", c).empty());
}

TEST_CASE("Config: an empty key is an error", "[config][errors]") {
  Config c;
  CHECK_THROWS_AS(c.set("", "1", "-c"), UserError);
}

TEST_CASE("Config: bad numbers and booleans name the key", "[config][errors]") {
  for (const char* v : {"abc", "12x", "", "1.5", "inf", "nan", " 5"}) {
    INFO("int '" << v << "'");
    Config c;
    c.set("t.channels", v, "-c");
    CHECK_THROWS_WITH(c.get(kChannels), Catch::Contains("t.channels"));
  }
  {
    Config c;
    c.set("t.mem_cycles", "-5", "-c");
    CHECK_THROWS_WITH(c.get(kUnsigned), Catch::Contains("t.mem_cycles") && Catch::Contains("-5"));
  }
  {
    Config c;
    c.set("t.bw_GBps", "fast", "-c");
    CHECK_THROWS_WITH(c.get(kBw), Catch::Contains("t.bw_GBps") && Catch::Contains("fast"));
  }
  {
    Config c;
    c.set("t.bool", "maybe", "-c");
    CHECK_THROWS_WITH(c.get(kBool), Catch::Contains("t.bool"));
  }
  CHECK_THROWS_AS(parse_number("k", "x1"), UserError);
  CHECK(std::isinf(parse_number("k", ".inf")));
  CHECK(parse_number("k", "2.5e3") == 2500.0);
}
