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

  // Ends the current phase, which lasted from the previous end (or construction); returns seconds.
  double end(std::string name, std::string note = {}) {
    const auto t = Clock::now();
    const double seconds = std::chrono::duration<double>(t - last_).count();
    phases_.push_back({std::move(name), seconds, std::move(note)});
    last_ = t;
    return seconds;
  }
  // Sets the note printed beside phase `name`.
  void annotate(const std::string& name, std::string note) {
    for (auto& p : phases_)
      if (p.name == name) p.note = std::move(note);
  }
  double total() const {
    double s = 0;
    for (const auto& p : phases_) s += p.seconds;
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
  };
  Clock::time_point last_;
  std::vector<Phase> phases_;
};

}  // namespace unet::uam::examples
