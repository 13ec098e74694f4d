#pragma once
// Reads a whole file the user named (a platform, a configuration, a
// program), refusing in one sentence what is missing or would never end or
// not fit: a file that does not exist, a device (/dev/zero), a folder, a
// file over `max_bytes` (checked before reading, and for a pipe by stopping
// one byte past it).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace incsim {

// "; a WHAT is at most N MiB", for messages.
inline std::string user_file_limit(const std::string& what, std::uintmax_t max_bytes) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.0f", static_cast<double>(max_bytes) / (1 << 20));
  return "; a " + what + " is at most " + mib + " MiB";
}

// What read_user_file checks before it reads: a file that exists and is no
// device or folder, of at most `max_bytes` if its size is known.
inline void check_user_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes) {
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::not_found) throw UserError(what + " '" + path + "' does not exist");
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::block ||
      type == std::filesystem::file_type::directory)
    throw UserError(what + " '" + path + "' is not a file");
  if (type == std::filesystem::file_type::regular) {
    const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (!ec && bytes > max_bytes) {
      char size[32];
      std::snprintf(size, sizeof size, "%.1f", static_cast<double>(bytes) / (1 << 20));
      throw UserError(what + " " + path + " is " + size + " MiB" + user_file_limit(what, max_bytes));
    }
  }
}

// `what` names the file's role in messages, e.g. "platform file".
inline std::string read_user_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes) {
  check_user_file(path, what, max_bytes);
  const std::string limit = user_file_limit(what, max_bytes);
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.0f", static_cast<double>(max_bytes) / (1 << 20));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read " + what + " '" + path + "'");
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= max_bytes && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes) throw UserError(what + " " + path + " is larger than " + mib + " MiB" + limit);
  return text;
}

}  // namespace incsim
