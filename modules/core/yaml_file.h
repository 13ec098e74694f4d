#pragma once
// Reads a YAML file the user named (a platform, a configuration), turning
// yaml-cpp's exceptions into one-sentence UserErrors. Header-only, so only
// the libraries that read YAML link yaml-cpp.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/user_file.h"

namespace incsim {

// yaml-cpp holds about 80 B per byte of text: a larger file is refused
// before it is read (a platform file of the most nodes, 30000 with 8 links
// each, takes about 6 MiB).
inline constexpr std::uintmax_t kMaxYamlFileBytes = 8 << 20;

// `what` names the file's role in messages, e.g. "platform file".
inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  const std::string text = read_user_file(path, what, kMaxYamlFileBytes);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(what + " " + path + " is not valid YAML (line " + std::to_string(e.mark.line + 1) + ")");
  }
}

}  // namespace incsim
