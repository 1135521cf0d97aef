// Unit: --help of the built programs (unet_cli's parse_flags): the usage line, then the program's
// own flags and nothing else, none of gflags' own (--flagfile, --tab_completion_word, ...);
// exit status 0.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "child_process.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

struct Help {
  std::vector<std::string> lines;
  int status = -1;  // exit status; -1 when it did not exit by itself within the limit
};

// Runs `program` with `flag` and reads its whole stdout.
Help run_help(const std::string& program, const std::string& flag) {
  ChildProcess child({program, flag});
  Help h;
  while (std::optional<std::string> line = child.read_line(10s)) h.lines.push_back(*line);
  const std::optional<int> ws = child.wait(10s);
  if (ws && WIFEXITED(*ws)) h.status = WEXITSTATUS(*ws);
  return h;
}

// The flags a help lists: its lines "  -d (string, default ...)" or "  --name (...)".
std::set<std::string> listed_flags(const Help& h) {
  std::set<std::string> flags;
  for (const std::string& l : h.lines)
    if (l.starts_with("  -")) flags.insert(l.substr(2, l.find(' ', 2) - 2));
  return flags;
}

std::string text(const Help& h) {
  std::string t;
  for (const std::string& l : h.lines) t += l + "\n";
  return t;
}

struct Program {
  const char* name;  // as its usage line starts
  const char* path;
  std::set<std::string> flags;  // exactly these; empty: only check `some`
  std::set<std::string> some;   // at least these
};

void PrintTo(const Program& p, std::ostream* os) { *os << p.name; }

class ProgramHelp : public ::testing::TestWithParam<Program> {};

TEST_P(ProgramHelp, ListsTheProgramsOwnFlagsOnly) {
  const Program& p = GetParam();
  for (const char* flag : {"--help", "-h"}) {
    SCOPED_TRACE(std::string(p.name) + " " + flag);
    const Help h = run_help(p.path, flag);
    EXPECT_EQ(h.status, 0) << text(h);
    ASSERT_GE(h.lines.size(), 4u) << text(h);
    // The usage line first, then at once the program's flags.
    EXPECT_TRUE(h.lines[0].starts_with(std::string(p.name) + ": ")) << text(h);
    std::size_t at = 1;
    while (at < h.lines.size() && h.lines[at] != "flags:") ++at;
    ASSERT_LT(at + 1, h.lines.size()) << text(h);
    EXPECT_TRUE(h.lines[at + 1].starts_with("  -")) << text(h);
    const std::set<std::string> listed = listed_flags(h);
    if (!p.flags.empty()) {
      EXPECT_EQ(listed, p.flags) << text(h);
    }
    for (const std::string& f : p.some) EXPECT_TRUE(listed.count(f)) << f << "\n" << text(h);
    // Nothing of gflags' own.
    for (const char* gflag :
         {"--help", "--helpfull", "--helpshort", "--flagfile", "--fromenv", "--tryfromenv",
          "--undefok", "--tab_completion_columns", "--tab_completion_word", "--version"})
      EXPECT_FALSE(listed.count(gflag)) << gflag << "\n" << text(h);
    const std::string all = text(h);
    EXPECT_EQ(all.find("tab_completion_word"), std::string::npos) << all;
    EXPECT_EQ(all.find("flagfile"), std::string::npos) << all;
  }
}

std::vector<Program> programs() {
  std::vector<Program> list;
#ifdef UNET_CAT_PATH
  list.push_back({"unet_cat", UNET_CAT_PATH, {"-d", "-g", "-l", "-v"}, {}});
#endif
#ifdef UAM_SAMPLE_SORT_PATH
  list.push_back({"sample_sort",
                  UAM_SAMPLE_SORT_PATH,
                  {"--chunk", "--corrupt", "--device", "--keys", "--kill_rank", "--launcher",
                   "--procs", "--samples", "--seed", "--stats", "--timeout"},
                  {}});
#endif
#ifdef UNET_PERF_PATH
  list.push_back({"unet_perf", UNET_PERF_PATH, {}, {"--test", "-d", "-s", "-n", "--json", "-R"}});
#endif
  return list;
}

std::string name_of(const ::testing::TestParamInfo<Program>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Built, ProgramHelp, ::testing::ValuesIn(programs()), name_of);

}  // namespace
}  // namespace unet::test
