// kernel_files: small reads and writes of the kernel's files (sysfs, procfs, cgroupfs) for the
// fault tests: device counters and port states, neighbour settings, cgroup controls.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace unet::test {

// The whole file; "" when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first line, without its newline; "" when the file cannot be read.
inline std::string read_first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The number the file starts with; -1 when it cannot be read or does not start with one.
inline long read_long(const std::filesystem::path& path) {
  std::ifstream in(path);
  long v = -1;
  return in >> v ? v : -1;
}

// Writes `text` (one write, as `echo text > path` does); false if the kernel refused it.
inline bool write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();  // the kernel answers a control file's write when it is flushed
  return !out.fail();
}

}  // namespace unet::test
