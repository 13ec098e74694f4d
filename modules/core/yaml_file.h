#pragma once
// Reads a YAML file the user named (a platform, a configuration), turning
// yaml-cpp's exceptions into one-sentence UserErrors. Header-only, so only
// the libraries that read YAML link yaml-cpp.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

#include "core/error.h"

namespace incsim {

// `what` names the file's role in messages, e.g. "platform file".
inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  // A device never ends (/dev/zero, /dev/urandom); a pipe (<(...)) does.
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block ||
      type == std::filesystem::file_type::directory)
    throw UserError(what + " '" + path + "' is not a file");
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw UserError("cannot read " + what + " '" + path + "'");
  } catch (const YAML::Exception& e) {
    throw UserError(what + " " + path + " is not valid YAML (line " + std::to_string(e.mark.line + 1) + ")");
  }
}

}  // namespace incsim
