// Sizes as architects write them, and typed parameters (plain C++).
#include <catch2/catch.hpp>

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

TEST_CASE("Config returns defaults, overrides and records every parameter", "[config]") {
  Config c;
  c.set("a.int", "7", "-c");
  c.set("a.float", "2.5", "file.yaml");
  c.set("a.bool", "off", "-c");
  c.set("a.str", "hello", "-c");
  CHECK(c.get<int>("a.int", 3, "an int") == 7);
  CHECK(c.get<double>("a.float", 1.0, "a float") == 2.5);
  CHECK(c.get<bool>("a.bool", true, "a bool") == false);
  CHECK(c.get<std::string>("a.str", "x", "a string") == "hello");
  CHECK(c.get<double>("b.default", 150.0, "a default") == 150.0);
  CHECK(c.get<uint32_t>("b.unsigned", 180, "cycles") == 180u);
  // Declaring the same key again gives the same value.
  CHECK(c.get<int>("a.int", 3, "an int") == 7);
  CHECK_NOTHROW(c.check_unused());

  const auto& p = c.params();
  REQUIRE(p.count("b.default"));
  CHECK(p.at("b.default").type == "float");
  CHECK(p.at("b.default").default_value == "150");
  CHECK(p.at("b.default").description == "a default");
  CHECK(p.at("a.int").type == "int");
  CHECK(p.at("a.int").default_value == "3");
  CHECK(p.at("a.int").value == "7");
  CHECK(p.at("a.bool").type == "bool");
  CHECK(p.at("a.str").type == "string");
  CHECK(c.has_override("a.int"));
  CHECK_FALSE(c.has_override("b.default"));
}

TEST_CASE("Config: a later source wins", "[config]") {
  Config c;
  c.set("k", "1", "file.yaml");
  c.set("k", "2", "-c");
  CHECK(c.get<int>("k", 0, "k") == 2);
}

TEST_CASE("Config: an unknown key is an error from check_unused naming key and source", "[config][errors]") {
  Config c;
  c.set("switch.latency_ns", "100", "-c");
  c.set("swich.latency_ns", "100", "my.yaml");
  CHECK(c.get<double>("switch.latency_ns", 150.0, "latency") == 100.0);
  CHECK_THROWS_AS(c.check_unused(), UserError);
  CHECK_THROWS_WITH(c.check_unused(), Catch::Contains("swich.latency_ns") && Catch::Contains("my.yaml"));
}

TEST_CASE("Config: an unknown key suggests the nearest declared one", "[config][errors]") {
  Config c;
  c.get<double>("switch.latency_ns", 150.0, "latency");
  c.get<int>("ring.channels", 12, "channels");
  c.set("switch.latency", "100", "-c");
  CHECK_THROWS_WITH(c.check_unused(), "unknown key 'switch.latency'; did you mean 'switch.latency_ns'?");
  Config far;
  far.get<double>("switch.latency_ns", 150.0, "latency");
  far.set("gpu.clock", "1", "-c");
  CHECK_THROWS_WITH(far.check_unused(), Catch::Contains("incsim --list-params") && !Catch::Contains("did you mean"));
}

TEST_CASE("nearest: edits and prefixes, nothing when far", "[config]") {
  const std::vector<std::string> c{"--platform", "--sizes", "--seed", "switch.latency_ns"};
  CHECK(nearest("--platfrom", c) == "--platform");
  CHECK(nearest("--size", c) == "--sizes");
  CHECK(nearest("switch.latency", c) == "switch.latency_ns");
  CHECK(nearest("--xyz", c).empty());
  CHECK(nearest("", c).empty());
}

TEST_CASE("Config: an empty key is an error", "[config][errors]") {
  Config c;
  CHECK_THROWS_AS(c.set("", "1", "-c"), UserError);
}

TEST_CASE("Config: bad numbers and booleans name the key", "[config][errors]") {
  const std::vector<std::pair<std::string, std::string>> bad_ints = {
      {"n", "abc"}, {"n", "12x"}, {"n", ""}, {"n", "1.5"}, {"n", "inf"}, {"n", "nan"}};
  for (const auto& [k, v] : bad_ints) {
    INFO("int '" << v << "'");
    Config c;
    c.set("ring.channels", v, "-c");
    CHECK_THROWS_WITH(c.get<int>("ring.channels", 12, "channels"), Catch::Contains("ring.channels"));
  }
  {
    Config c;
    c.set("gpu.mem_latency_cycles", "-5", "-c");
    CHECK_THROWS_WITH(c.get<uint32_t>("gpu.mem_latency_cycles", 180, "cycles"),
                      Catch::Contains("gpu.mem_latency_cycles") && Catch::Contains("-5"));
  }
  {
    Config c;
    c.set("link.bw_GBps", "fast", "-c");
    CHECK_THROWS_WITH(c.get<double>("link.bw_GBps", 25.0, "bw"), Catch::Contains("link.bw_GBps") && Catch::Contains("fast"));
  }
  {
    Config c;
    c.set("x.flag", "maybe", "-c");
    CHECK_THROWS_WITH(c.get<bool>("x.flag", false, "flag"), Catch::Contains("x.flag"));
  }
  CHECK_THROWS_AS(parse_number("k", "1e999"), UserError);
  CHECK(parse_number("k", "2.5e3") == 2500.0);
}
