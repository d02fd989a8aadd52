#include "Ptx.h"

#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>

namespace tkc {

namespace {

/// The first of --nvcc, $NVCC, nvcc on PATH and CUDA's default place that
/// exists; the same order the Python package uses.
std::optional<std::string> findNvcc(const std::string &explicitPath) {
  if (!explicitPath.empty())
    return llvm::sys::fs::can_execute(explicitPath) ? std::optional(explicitPath) : std::nullopt;
  if (const char *env = std::getenv("NVCC"); env && *env)
    return llvm::sys::fs::can_execute(env) ? std::optional<std::string>(env) : std::nullopt;
  if (auto onPath = llvm::sys::findProgramByName("nvcc"))
    return *onPath;
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/nvcc"))
    return std::string("/usr/local/cuda/bin/nvcc");
  return std::nullopt;
}

/// The folder holding tkc_host.h: $TKC_RUNTIME_DIR, the installed
/// `<prefix>/include/tkc` beside `<prefix>/bin/tkc`, or the source tree's
/// runtime/ for a tkc run from its build folder.
std::optional<std::string> findRuntimeDir() {
  auto holdsRuntime = [](llvm::StringRef dir) {
    llvm::SmallString<256> header(dir);
    llvm::sys::path::append(header, "tkc_host.h");
    return llvm::sys::fs::exists(header);
  };
  if (const char *env = std::getenv("TKC_RUNTIME_DIR"); env && *env)
    return holdsRuntime(env) ? std::optional<std::string>(env) : std::nullopt;
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable("tkc", &anchor);
  if (!exe.empty()) {
    llvm::SmallString<256> installed(llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
    llvm::sys::path::append(installed, "include", "tkc");
    if (holdsRuntime(installed))
      return installed.str().str();
  }
  if (holdsRuntime(TKC_SOURCE_RUNTIME_DIR))
    return std::string(TKC_SOURCE_RUNTIME_DIR);
  return std::nullopt;
}

/// nvcc's messages, cut to what a diagnostic line can carry.
std::string firstLines(llvm::StringRef text, int lines) {
  std::string kept;
  for (int i = 0; i < lines && !text.empty(); ++i) {
    auto [line, rest] = text.split('\n');
    kept += (i ? "\n  " : "") + line.rtrim().str();
    text = rest;
  }
  return kept.empty() ? "(no message)" : kept;
}

} // namespace

std::optional<std::string> compileToPtx(const std::string &cuda, const PtxOptions &options, DiagnosticEngine &diags) {
  std::optional<std::string> nvcc = findNvcc(options.nvcc);
  if (!nvcc) {
    const char *env = std::getenv("NVCC");
    diags.report({}, DiagId::NvccNotFound, !options.nvcc.empty() ? options.nvcc : env && *env ? env : "nvcc");
    return std::nullopt;
  }
  std::optional<std::string> runtimeDir = findRuntimeDir();
  if (!runtimeDir) {
    diags.report({}, DiagId::RuntimeHeadersNotFound);
    return std::nullopt;
  }

  llvm::SmallString<128> cudaPath, ptxPath, logPath;
  auto removeTemporaries = llvm::make_scope_exit([&] {
    for (auto *path : {&cudaPath, &ptxPath, &logPath})
      if (!path->empty())
        llvm::sys::fs::remove(*path);
  });
  int cudaFd = -1;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("tkc", "cu", cudaFd, cudaPath)) {
    diags.report({}, DiagId::CannotWriteOutput, "a temporary file", ec.message());
    return std::nullopt;
  }
  {
    llvm::raw_fd_ostream stream(cudaFd, /*shouldClose=*/true);
    stream << cuda;
  }
  for (auto [path, suffix] : {std::pair{&ptxPath, "ptx"}, std::pair{&logPath, "log"}})
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("tkc", suffix, *path)) {
      diags.report({}, DiagId::CannotWriteOutput, "a temporary file", ec.message());
      return std::nullopt;
    }

  std::string arch = "-arch=" + options.targetName;
  std::string include = "-I" + *runtimeDir;
  llvm::SmallVector<llvm::StringRef> args = {*nvcc, "-std=c++17", "-ptx", "-lineinfo", arch, include,
                                             "-o", ptxPath, cudaPath};
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), logPath, logPath};
  std::string error;
  int exitCode = llvm::sys::ExecuteAndWait(*nvcc, args, std::nullopt, redirects, 0, 0, &error);
  if (exitCode != 0) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    std::string message = !error.empty() ? error : log ? firstLines((*log)->getBuffer(), 8) : "(no message)";
    diags.report({}, DiagId::NvccFailed, *nvcc, exitCode, message);
    return std::nullopt;
  }
  auto ptx = llvm::MemoryBuffer::getFile(ptxPath);
  if (!ptx) {
    diags.report({}, DiagId::NvccFailed, *nvcc, 0, "it wrote no PTX");
    return std::nullopt;
  }
  return (*ptx)->getBuffer().str();
}

} // namespace tkc
