#pragma once
// Reads a YAML file the user named (a platform, a configuration), turning
// yaml-cpp's exceptions into one-sentence UserErrors. Header-only, so only
// the libraries that read YAML link yaml-cpp.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace incsim {

// yaml-cpp holds about 80 B per byte of text: a larger file is refused
// before it is read (a platform file of the most nodes, 30000 with 8 links
// each, takes about 6 MiB).
inline constexpr std::uintmax_t kMaxYamlFileBytes = 8 << 20;

// `what` names the file's role in messages, e.g. "platform file".
inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  // A device never ends (/dev/zero, /dev/urandom); a pipe (<(...)) does.
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block ||
      type == std::filesystem::file_type::directory)
    throw UserError(what + " '" + path + "' is not a file");
  const std::string limit = "; a " + what + " is at most 8 MiB";
  if (type == std::filesystem::file_type::regular) {
    const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (!ec && bytes > kMaxYamlFileBytes) {
      char mib[32];
      std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(bytes) / (1 << 20));
      throw UserError(what + " " + path + " is " + mib + " MiB" + limit);
    }
  }
  // A pipe has no size: read up to one byte past the limit.
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read " + what + " '" + path + "'");
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= kMaxYamlFileBytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxYamlFileBytes) throw UserError(what + " " + path + " is larger than 8 MiB" + limit);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(what + " " + path + " is not valid YAML (line " + std::to_string(e.mark.line + 1) + ")");
  }
}

}  // namespace incsim
