//===- JitTestUtil.h - Shared helpers of the JIT tests ------------*- C++ -*-===//
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kiln::jit::test {

/// A fresh directory under the system's temporary directory, removed with the object.
class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-jit-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : "";
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Files under `dir` (recursively) whose name ends in `suffix`, sorted.
inline std::vector<std::string> filesEndingIn(const std::string &dir, const std::string &suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::string name = it->path().string();
    if (it->is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

/// A FIFO at `path` in place of a cache entry, and a guard for the test: a reader that
/// blocks on it is let go after a few seconds (the FIFO is opened for writing and closed,
/// so the reader sees an empty file), and fired() says so. A test thus fails, instead of
/// hanging, when something still reads the FIFO.
class FifoInPlace {
public:
  explicit FifoInPlace(std::string path) : path_(std::move(path)) {
    EXPECT_EQ(::mkfifo(path_.c_str(), 0644), 0) << path_;
    watchdog_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stopped_.wait_for(lock, std::chrono::seconds(10), [this] { return stop_; }))
        return;
      fired_ = true;
      // Succeeds without blocking once a reader has it open, or waits to: retry a while.
      for (int i = 0; i < 100; ++i) {
        if (int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC); fd >= 0) {
          ::close(fd);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  ~FifoInPlace() { fired(); }
  FifoInPlace(const FifoInPlace &) = delete;
  FifoInPlace &operator=(const FifoInPlace &) = delete;

  /// Stops the guard; whether it had to let a blocked reader go.
  bool fired() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    stopped_.notify_all();
    if (watchdog_.joinable())
      watchdog_.join();
    return fired_;
  }

private:
  std::string path_;
  std::mutex mutex_;
  std::condition_variable stopped_;
  bool stop_ = false;
  bool fired_ = false;
  std::thread watchdog_;
};

/// Whether `path` names a regular file (not following a symbolic link).
inline bool isRegularFile(const std::string &path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace kiln::jit::test
