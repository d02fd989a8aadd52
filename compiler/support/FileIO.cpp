#include "support/FileIO.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tkc {

namespace {

/// How many symbolic links an output path may go through (as the kernel's
/// own limit for path lookups).
constexpr int kMaxLinkHops = 40;

std::string displayName(const std::string &path) { return path == "-" ? "<stdin>" : path; }

FileIdentity identityOf(const struct stat &st) {
  return {static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino)};
}

/// Returns 0 or the errno of the failed write.
int writeAll(int fd, std::string_view text) {
  for (size_t written = 0; written < text.size();) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    written += static_cast<size_t>(n);
  }
  return 0;
}

/// The file `path` finally names: symbolic links are followed (also ones
/// whose target does not exist yet), so that the output replaces the target
/// and the link stays. Returns 0 or an errno.
int resolveLinks(std::string &path) {
  for (int hop = 0;; ++hop) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0)
      return errno == ENOENT ? 0 : errno;
    if (!S_ISLNK(st.st_mode))
      return 0;
    if (hop == kMaxLinkHops)
      return ELOOP;
    std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1, '\0');
    ssize_t length = readlink(path.c_str(), target.data(), target.size());
    if (length < 0)
      return errno;
    if (static_cast<size_t>(length) == target.size())
      return ENAMETOOLONG; // the link changed while it was read
    target.resize(static_cast<size_t>(length));
    if (target.empty())
      return ENOENT;
    if (target.front() != '/') {
      size_t slash = path.find_last_of('/');
      if (slash != std::string::npos)
        target = path.substr(0, slash + 1) + target;
    }
    path = std::move(target);
  }
}

/// Writes into the existing non-regular file at `path` (a device, a FIFO):
/// replacing it would destroy it. Returns 0 or an errno.
int writeInPlace(const std::string &path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int error = writeAll(fd, text);
  if (close(fd) != 0 && error == 0)
    error = errno;
  return error;
}

/// Writes a temporary file next to `path` and renames it over `path`, so
/// that a reader (or a failed run) never sees a partial file. `mode` is the
/// permissions of the file it replaces, or none for a new file. Returns 0 or
/// an errno.
int replaceAtomically(const std::string &path, std::string_view text, std::optional<mode_t> mode) {
  std::string tempPath = path + ".tmp.XXXXXX";
  int fd = mkstemp(tempPath.data());
  if (fd < 0)
    return errno;
  if (!mode) {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  int error = writeAll(fd, text);
  // mkstemp creates the file readable by its owner only.
  if (error == 0 && fchmod(fd, *mode) != 0)
    error = errno;
  if (close(fd) != 0 && error == 0)
    error = errno;
  // The path was checked before; it must still not be a device or a FIFO
  // now that it is about to be replaced.
  struct stat st;
  if (error == 0 && lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    error = EEXIST;
  if (error == 0 && std::rename(tempPath.c_str(), path.c_str()) != 0)
    error = errno;
  if (error != 0)
    unlink(tempPath.c_str());
  return error;
}

bool writeStandardOutput(std::string_view text, DiagnosticEngine &diags) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    diags.report({}, DiagId::CannotWriteOutput, "<stdout>", std::strerror(errno ? errno : EIO));
    return false;
  }
  return true;
}

} // namespace

std::optional<InputFile> readInputFile(const std::string &path, DiagnosticEngine &diags) {
  int fd = path == "-" ? STDIN_FILENO : open(path.c_str(), O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    diags.report({}, DiagId::CannotOpenInput, displayName(path), std::strerror(errno));
    return std::nullopt;
  }
  InputFile input;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    input.identity = identityOf(st);
    input.text.reserve(std::min<size_t>(static_cast<size_t>(st.st_size), kMaxInputBytes) + 1);
  }
  int error = 0;
  bool tooLarge = false;
  char chunk[1 << 16];
  while (true) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      error = errno;
    if (n <= 0)
      break;
    input.text.append(chunk, static_cast<size_t>(n));
    if (input.text.size() > kMaxInputBytes) {
      tooLarge = true;
      break;
    }
  }
  if (fd != STDIN_FILENO)
    close(fd);
  if (tooLarge) {
    diags.report({}, DiagId::InputTooLarge, displayName(path), kMaxInputBytes);
    return std::nullopt;
  }
  if (error != 0) {
    diags.report({}, DiagId::CannotOpenInput, displayName(path), std::strerror(error));
    return std::nullopt;
  }
  return input;
}

bool writeOutputFile(const std::string &path, std::string_view text, const InputFile *input,
                     DiagnosticEngine &diags) {
  if (path == "-")
    return writeStandardOutput(text, diags);
  std::string target = path;
  int error = resolveLinks(target);
  struct stat st;
  bool exists = false;
  if (error == 0) {
    exists = stat(target.c_str(), &st) == 0;
    if (!exists && errno != ENOENT)
      error = errno;
  }
  if (error == 0 && exists && input && input->identity && *input->identity == identityOf(st)) {
    diags.report({}, DiagId::OutputIsInput, path);
    return false;
  }
  if (error == 0) {
    if (exists && !S_ISREG(st.st_mode))
      error = writeInPlace(target, text);
    else
      error = replaceAtomically(target, text, exists ? std::optional<mode_t>(st.st_mode & 07777) : std::nullopt);
  }
  if (error != 0) {
    diags.report({}, DiagId::CannotWriteOutput, path, std::strerror(error));
    return false;
  }
  return true;
}

} // namespace tkc
