// The command-line parser: the input is argv, words separated by NUL bytes.
// Words that name files are kept from reading the system's (--config
// /dev/zero would never end): a --config word gets the fuzz target's own file.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words{"incsim"};
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(data[i]);
    }
  }
  words.push_back(word);
  const std::string own = incsim::fuzz::write_input(data, 0, ".opt.yaml");
  std::vector<const char*> argv;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0 && words[i - 1].rfind("--config", 0) == 0) words[i] = own;
    if (words[i].rfind("--config=", 0) == 0) words[i] = "--config=" + own;
    argv.push_back(words[i].c_str());
  }
  try {
    incsim::tb::parse_command_line(static_cast<int>(argv.size()), argv.data());
  } catch (const incsim::UserError&) {
  }
  return 0;
}
