//===- Timing.h - Wall-clock timing of compiler stages -----------*- C++ -*-===//
//
// `dslc --time-passes` reports every stage (parse, sema, each Tile IR pass, emission)
// in one table. Stages record into a TimingReport with a scoped timer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln {

class TimingReport {
public:
  void add(std::string name, double seconds) { entries_.push_back({std::move(name), seconds}); }
  /// Prints a table of the stages in order with their share of the total.
  void print(std::ostream &os) const;
  bool empty() const { return entries_.empty(); }

  /// Records the time between construction and destruction as one entry.
  class Scope {
  public:
    Scope(TimingReport *report, std::string name)
        : report_(report), name_(std::move(name)), start_(std::chrono::steady_clock::now()) {}
    ~Scope() {
      if (report_)
        report_->add(std::move(name_), std::chrono::duration<double>(
                                           std::chrono::steady_clock::now() - start_).count());
    }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    TimingReport *report_;
    std::string name_;
    std::chrono::steady_clock::time_point start_;
  };

private:
  struct Entry {
    std::string name;
    double seconds;
  };
  std::vector<Entry> entries_;
};

} // namespace kiln
