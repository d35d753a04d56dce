//===- ChildProcess.cpp - Running a command with limits ---------------------===//
#include "agent/ChildProcess.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kiln::agent {

namespace {

constexpr size_t kMaxCapture = size_t(1) << 20;

/// Reads what is left in `fd` (a temporary file), up to kMaxCapture bytes.
std::string slurp(int fd) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  ssize_t n;
  while (out.size() < kMaxCapture && (n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  if (out.size() > kMaxCapture)
    out.resize(kMaxCapture);
  return out;
}

int tempFile() {
  char name[] = "/tmp/kiln-agent-XXXXXX";
  int fd = ::mkstemp(name);
  if (fd >= 0)
    ::unlink(name);
  return fd;
}

} // namespace

ChildResult runChild(const std::vector<std::string> &argv, const ChildLimits &limits) {
  ChildResult r;
  if (argv.empty()) {
    r.error = "no command";
    return r;
  }
  const int outFd = tempFile(), errFd = tempFile();
  if (outFd < 0 || errFd < 0) {
    r.error = std::string("cannot make a temporary file: ") + std::strerror(errno);
    if (outFd >= 0)
      ::close(outFd);
    if (errFd >= 0)
      ::close(errFd);
    return r;
  }
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    ::close(outFd);
    ::close(errFd);
    return r;
  }
  if (pid == 0) {
    // The child: its own group (so the whole of it can be killed), its limits, its output.
    ::setpgid(0, 0);
    if (limits.memoryBytes) {
      struct rlimit bound{limits.memoryBytes, limits.memoryBytes};
      ::setrlimit(limits.dataOnly ? RLIMIT_DATA : RLIMIT_AS, &bound);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(outFd, 1);
    ::dup2(errFd, 2);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  r.started = true;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid)
      break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > limits.seconds) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.timedOut) {
    if (WIFEXITED(status))
      r.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      r.signal = WTERMSIG(status);
  }
  r.out = slurp(outFd);
  r.err = slurp(errFd);
  ::close(outFd);
  ::close(errFd);
  return r;
}

} // namespace kiln::agent
