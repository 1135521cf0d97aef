// parse_flags(): the command line of every program in the tree (examples, bench, test peers)
// through gflags, with a --help that lists the program's own flags only: gflags' --help opens
// with its own dozen (--flagfile, --tab_completion_word, ...) and buries the program's.
// check_range(): a flag's value against its range, with a message that names the flag.
// It depends on gflags alone, below every layer, so any program may use it; it is not installed.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

namespace unet::cli {

// Parses and removes the flags of argv, leaving argv[0] and the positional arguments. Returns
// false after --help (or -h): it printed "PROGRAM: usage" and each flag the program defines (name,
// type, default, description; --helpfull still lists gflags' own too), and main returns 0.
// An unknown flag, or a value not of the flag's type, ends the program in gflags: its message on
// stderr, exit status 1.
[[nodiscard]] bool parse_flags(int* argc, char*** argv, const char* usage);

// `value` of flag `flag` when it lies in [min, max]; otherwise throws std::invalid_argument
// saying so (a one-letter flag spelled -f, as --help spells it), for main to report as a usage
// error.
template <class T>
T check_range(const char* flag, T value, std::type_identity_t<T> min, std::type_identity_t<T> max) {
  if (value < min || value > max)
    throw std::invalid_argument(std::string(flag[0] && !flag[1] ? "-" : "--") + flag +
                                " must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                                "], not " + std::to_string(value));
  return value;
}

}  // namespace unet::cli
