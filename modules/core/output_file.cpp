#include "core/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace incsim {

namespace {
// Why a file cannot be opened or written, from errno, in words a user acts on.
std::string reason(int err) {
  switch (err) {
    case ENOENT: return "its folder does not exist";
    case ENOTDIR: return "a folder on its path is a file";
    case EISDIR: return "it is a folder";
    case EACCES:
    case EPERM: return "permission denied";
    case EROFS: return "the file system is read-only";
    case ENOSPC: return "no space left on the device";
    default: return std::strerror(err);
  }
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw UserError("cannot write the " + what + " '" + path + "' (" + reason(err) + ")");
}
}  // namespace

void check_writable(const std::string& path, const std::string& what) {
  if (path == "-") return;
  struct stat st {};
  const bool existed = stat(path.c_str(), &st) == 0;
  if (existed && S_ISDIR(st.st_mode)) fail(path, what, EISDIR);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, what, errno);
  close(fd);
  if (!existed) unlink(path.c_str());
}

void write_user_file(const std::string& path, const std::string& text, const std::string& what) {
  if (path == "-") {
    std::cout << text;
    check_stream(std::cout, "the " + what + " to stdout");
    return;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, what, errno);
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) fail(path, what, wrote ? errno : err);
}

void copy_to_user_file(std::istream& in, const std::string& path, const std::string& what) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, what, errno);
  char buf[1 << 16];
  bool wrote = true;
  while (wrote && in.read(buf, sizeof buf).gcount() > 0)
    wrote = std::fwrite(buf, 1, static_cast<size_t>(in.gcount()), f) == static_cast<size_t>(in.gcount());
  wrote = wrote && std::fflush(f) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) fail(path, what, wrote ? errno : err);
}

void check_stream(std::ostream& os, const std::string& what) {
  // A stream keeps no errno: the flush that fails sets it, and for a stream
  // that failed before, errno still holds a write's error if nothing since
  // has failed otherwise.
  int err = errno;
  if (os) {
    errno = 0;
    os.flush();
    if (os) return;
    err = errno;
  }
  if (err != ENOSPC && err != EIO && err != EPIPE && err != EBADF && err != EFBIG && err != EDQUOT) err = 0;
  throw UserError("cannot write " + what + (err ? " (" + reason(err) + ")" : std::string()));
}

}  // namespace incsim
