#include "options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace unet::uam::examples {

Options::Options(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void Options::add(std::string name, std::string default_value, std::string help) {
  flags_[std::move(name)] = Flag{default_value, default_value, std::move(help)};
}

bool Options::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_usage();
      return false;
    }
    if (!arg.starts_with("--"))
      throw std::invalid_argument("unexpected argument '" + std::string(arg) + "'");
    arg.remove_prefix(2);
    std::string name, value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      name = arg;
      if (i + 1 >= argc) throw std::invalid_argument("--" + name + " needs a value");
      value = argv[++i];
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) throw std::invalid_argument("unknown flag --" + name);
    it->second.value = value;
  }
  return true;
}

void Options::print_usage() const {
  std::printf("%s: %s\n\nflags:\n", program_.c_str(), summary_.c_str());
  for (const auto& [name, f] : flags_)
    std::printf("  --%-14s %s (default: %s)\n", name.c_str(), f.help.c_str(),
                f.default_value.empty() ? "none" : f.default_value.c_str());
}

const std::string& Options::str(const std::string& name) const { return flags_.at(name).value; }

std::uint64_t Options::u64(const std::string& name, std::uint64_t min, std::uint64_t max) const {
  const std::string& v = str(name);
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 0);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno == ERANGE || n < min || n > max)
    throw std::invalid_argument("--" + name + " must be a number in [" + std::to_string(min) +
                                ", " + std::to_string(max) + "], not '" + v + "'");
  return n;
}

}  // namespace unet::uam::examples
