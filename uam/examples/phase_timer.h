// PhaseTimer: wall-clock time per named phase, printed as the examples' breakdown.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace unet::uam::examples {

class PhaseTimer {
 public:
  PhaseTimer() : last_(Clock::now()) {}

  // Ends the current phase: it lasted from the previous end (or construction) until now.
  void end(std::string name, std::string note = {}) {
    const auto t = Clock::now();
    phases_.push_back({std::move(name), std::chrono::duration<double>(t - last_).count(), std::move(note)});
    last_ = t;
  }
  // A line under the previous phase: part of it, measured by the caller (not counted in the total).
  void detail(std::string name, double seconds, std::string note = {}) {
    phases_.push_back({"  " + std::move(name), seconds, std::move(note), true});
  }
  double total() const {
    double s = 0;
    for (const auto& p : phases_)
      if (!p.detail) s += p.seconds;
    return s;
  }
  void print(std::FILE* out) const {
    std::fprintf(out, "  %-14s %10s\n", "phase", "seconds");
    for (const auto& p : phases_)
      std::fprintf(out, "  %-14s %10.3f%s%s\n", p.name.c_str(), p.seconds, p.note.empty() ? "" : "   ",
                   p.note.c_str());
    std::fprintf(out, "  %-14s %10.3f\n", "total", total());
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Phase {
    std::string name;
    double seconds;
    std::string note;
    bool detail = false;
  };
  Clock::time_point last_;
  std::vector<Phase> phases_;
};

}  // namespace unet::uam::examples
