#include "program_flags.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace unet::cli {
namespace {

constexpr std::size_t kWidth = 100;  // columns of the help text
constexpr std::string_view kIndent = "      ";

// gflags defines its own flags in its gflags.cc, gflags_reporting.cc and gflags_completions.cc.
bool defined_by_gflags(const gflags::CommandLineFlagInfo& f) {
  const std::size_t slash = f.filename.rfind('/');
  return f.filename.compare(slash == std::string::npos ? 0 : slash + 1, 6, "gflags") == 0;
}

// The description, word-wrapped under its flag.
void print_wrapped(std::string_view text) {
  std::string line(kIndent);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t space = std::min(text.find(' ', at), text.size());
    const std::string_view word = text.substr(at, space - at);
    if (line.size() > kIndent.size() && line.size() + 1 + word.size() > kWidth) {
      std::printf("%s\n", line.c_str());
      line = kIndent;
    }
    if (line.size() > kIndent.size()) line += ' ';
    line += word;
    at = space + 1;
  }
  if (line.size() > kIndent.size()) std::printf("%s\n", line.c_str());
}

void print_help(const char* argv0, const char* usage) {
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  std::erase_if(flags, defined_by_gflags);
  // By name, case aside: -a, --batch, -c, ..., -I, --json.
  const auto key = [](const std::string& name) {
    std::string k = name;
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
    return k + '\0' + name;
  };
  std::sort(flags.begin(), flags.end(),
            [&](const auto& a, const auto& b) { return key(a.name) < key(b.name); });
  const char* slash = std::strrchr(argv0, '/');
  std::printf("%s: %s\n\nflags:\n", slash ? slash + 1 : argv0, usage);
  for (const gflags::CommandLineFlagInfo& f : flags) {
    // As the command line spells them: perftest's one-letter flags -d, the others --name.
    const std::string name = (f.name.size() == 1 ? "-" : "--") + f.name;
    const std::string value = f.type == "string" ? '"' + f.default_value + '"' : f.default_value;
    std::printf("  %s (%s, default %s)\n", name.c_str(), f.type.c_str(), value.c_str());
    print_wrapped(f.description);
  }
  std::printf("\n--helpfull lists gflags' own flags too.\n");
}

}  // namespace

bool parse_flags(int* argc, char*** argv, const char* usage) {
  gflags::SetUsageMessage(usage);  // for --helpfull
  bool help = false;
  for (int i = 1; i < *argc && std::strcmp((*argv)[i], "--") != 0; ++i)
    help = help || std::strcmp((*argv)[i], "-h") == 0;  // gflags has no -h
  if (!help) {
    gflags::ParseCommandLineNonHelpFlags(argc, argv, true);
    help = gflags::GetCommandLineFlagInfoOrDie("help").current_value == "true";
  }
  if (help) {
    print_help((*argv)[0], usage);
    return false;
  }
  gflags::HandleCommandLineHelpFlags();  // gflags' others: --helpfull, --helpshort, --version, ...
  return true;
}

}  // namespace unet::cli
