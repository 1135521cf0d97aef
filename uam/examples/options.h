// Options: the examples' command lines. Every flag is declared with its default and a line of
// help; "--name value" and "--name=value" both work; --help prints the usage.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace unet::uam::examples {

class Options {
 public:
  Options(std::string program, std::string summary);

  // Declares --name with its default (as text) and help.
  void add(std::string name, std::string default_value, std::string help);
  // Parses the command line. False after --help (usage printed); throws std::invalid_argument for
  // an unknown flag, a missing value or a stray argument.
  bool parse(int argc, char** argv);
  void print_usage() const;
  const std::string& program() const noexcept { return program_; }

  const std::string& str(const std::string& name) const;
  // Throws std::invalid_argument when the value is not a number in [min, max].
  std::uint64_t u64(const std::string& name, std::uint64_t min = 0,
                    std::uint64_t max = UINT64_MAX) const;

 private:
  struct Flag {
    std::string value;
    std::string default_value;
    std::string help;
  };
  std::string program_;
  std::string summary_;
  std::map<std::string, Flag> flags_;
};

}  // namespace unet::uam::examples
