// PhaseTimer: wall-clock time per named phase, printed as the examples' breakdown; bytes_text()
// for the sizes beside it.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace unet::uam::examples {

// "512.0 KiB", "16.0 MiB".
inline std::string bytes_text(double bytes) {
  char s[32];
  if (bytes < (1 << 20))
    std::snprintf(s, sizeof s, "%.1f KiB", bytes / 1024);
  else
    std::snprintf(s, sizeof s, "%.1f MiB", bytes / (1 << 20));
  return s;
}

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
  // The seconds of phase `name` (0 if there is none).
  double seconds(const std::string& name) const {
    for (const auto& p : phases_)
      if (p.name == name) return p.seconds;
    return 0;
  }
  double total() const {
    double s = 0;
    for (const auto& p : phases_) s += p.seconds;
    return s;
  }
  // To 0.1 ms: a phase of a few messages (the sort's sample phase) lasts a few milliseconds.
  void print(std::FILE* out) const {
    std::fprintf(out, "  %-14s %10s\n", "phase", "seconds");
    for (const auto& p : phases_)
      std::fprintf(out, "  %-14s %10.4f%s%s\n", p.name.c_str(), p.seconds,
                   p.note.empty() ? "" : "   ", p.note.c_str());
    std::fprintf(out, "  %-14s %10.4f\n", "total", total());
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
