// Unit (no device): unet_perf's test table as the built program shows it. --list-tests prints
// every row's name, one a line, in the table's order (bench/compare/compare.py reads it);
// --help's text of --test names every test; an unknown or missing --test is refused, naming
// them all.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "perf_process.h"
#include "test_table.h"

namespace unet::test {
namespace {

std::vector<std::string> table_names() {
  std::vector<std::string> names;
  for (const perf::TestInfo& t : perf::all_tests()) names.emplace_back(t.name);
  return names;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(PerfCli, ListTestsPrintsEveryTestOfTheTable) {
  Perf list("list_tests", {"--list-tests"});
  ASSERT_EQ(list.wait(30s), 0) << list.err();
  EXPECT_EQ(lines_of(list.out()), table_names());
  EXPECT_EQ(list.err(), "");
}

TEST(PerfCli, UnknownOrMissingTestIsRefusedNamingTheKnownOnes) {
  Perf unknown("unknown_test", {"--test", "ep_latency"});
  EXPECT_EQ(unknown.wait(30s), 1);
  Perf missing("missing_test", {});
  EXPECT_EQ(missing.wait(30s), 1);
  const std::string said = unknown.err(), none = missing.err();
  EXPECT_NE(said.find("unknown --test 'ep_latency' (one of "), std::string::npos) << said;
  EXPECT_NE(none.find("--test is required ("), std::string::npos) << none;
  for (const std::string& name : table_names()) {
    EXPECT_NE(said.find(name), std::string::npos) << name << " missing from: " << said;
    EXPECT_NE(none.find(name), std::string::npos) << name << " missing from: " << none;
  }
  EXPECT_EQ(unknown.out(), "") << "nothing on stdout";
}

TEST(PerfCli, HelpOfTestNamesEveryTest) {
  Perf help("help", {"--help"});
  ASSERT_EQ(help.wait(30s), 0) << help.err();
  // The lines under "  --test (...)" until the next flag.
  std::string text;
  bool in = false;
  for (const std::string& line : lines_of(help.out())) {
    if (line.starts_with("  -"))
      in = line.starts_with("  --test ");
    else if (in)
      text += line + " ";
  }
  ASSERT_FALSE(text.empty()) << help.out();
  for (const std::string& name : table_names())
    EXPECT_NE(text.find(name), std::string::npos) << name << " missing from: " << text;
  EXPECT_NE(help.out().find("  --list_tests "), std::string::npos) << help.out();
}

}  // namespace
}  // namespace unet::test
