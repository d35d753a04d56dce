//===- LargeStack.cpp -----------------------------------------------------===//
#include "support/LargeStack.h"

#include <exception>
#include <pthread.h>

namespace kiln {

namespace {
struct Job {
  const std::function<int()> *fn;
  int result = 0;
  std::exception_ptr error;
};

void *trampoline(void *arg) {
  Job *job = static_cast<Job *>(arg);
  try {
    job->result = (*job->fn)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}
} // namespace

int runOnLargeStack(const std::function<int()> &fn, size_t stackBytes) {
  Job job{&fn, 0, nullptr};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0)
    return fn();
  pthread_t thread;
  bool started = pthread_attr_setstacksize(&attr, stackBytes) == 0 &&
                 pthread_create(&thread, &attr, trampoline, &job) == 0;
  pthread_attr_destroy(&attr);
  if (!started)
    return fn();
  pthread_join(thread, nullptr);
  if (job.error)
    std::rethrow_exception(job.error);
  return job.result;
}

} // namespace kiln
