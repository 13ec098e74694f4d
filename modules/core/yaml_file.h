#pragma once
// Reads a YAML file the user named (a platform, a configuration), turning
// yaml-cpp's exceptions into one-sentence UserErrors. Header-only, so only
// the libraries that read YAML link yaml-cpp.
#include <yaml-cpp/yaml.h>

#include <string>

#include "core/error.h"

namespace incsim {

// `what` names the file's role in messages, e.g. "platform file".
inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw UserError("cannot read " + what + " '" + path + "'");
  } catch (const YAML::Exception& e) {
    throw UserError(what + " " + path + " is not valid YAML (line " + std::to_string(e.mark.line + 1) + ")");
  }
}

}  // namespace incsim
