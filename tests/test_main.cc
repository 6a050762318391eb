// The main() of the test executables that hold the test files of one
// directory. Each `meson test` entry runs the tests of the files it names:
//
//   agent_tests --source=config_test.cc [--source=...] [gtest flags]
//
// so that one executable (one link, one precompiled header) still gives
// each file its own entry, timeout and parallelism in `meson test`. A test
// belongs to the file its TEST() macro is in (testing::TestInfo::file()).
// A --gtest_filter given as well narrows the selection further.
//
// An entry that selects no test fails (exit 1) rather than passing empty:
// a file renamed without its meson entry, or a typo in --source, must not
// turn into a green test that ran nothing. Without --source every test runs
// (as with gtest_main), which is what a developer running the executable by
// hand expects.
#include <fnmatch.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

constexpr std::string_view kSourceFlag = "--source=";

bool EndsWithFile(std::string_view path, std::string_view file) {
  if (path.size() < file.size() || path.substr(path.size() - file.size()) != file) return false;
  return path.size() == file.size() || path[path.size() - file.size() - 1] == '/';
}

// One ':'-separated list of gtest patterns ('*' and '?'), as fnmatch(3)
// reads them without FNM_PATHNAME (so '*' also matches '.').
bool MatchesAny(const std::string& name, std::string_view patterns) {
  while (true) {
    const std::size_t colon = patterns.find(':');
    const std::string pattern(patterns.substr(0, colon));
    if (!pattern.empty() && fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
    if (colon == std::string_view::npos) return false;
    patterns.remove_prefix(colon + 1);
  }
}

// gtest's filter grammar: POSITIVE[-NEGATIVE], an empty POSITIVE meaning "*".
bool MatchesFilter(const std::string& name, std::string_view filter) {
  const std::size_t dash = filter.find('-');
  const std::string_view positive = filter.substr(0, dash);
  const bool in = positive.empty() || MatchesAny(name, positive);
  return in && (dash == std::string_view::npos || !MatchesAny(name, filter.substr(dash + 1)));
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleMock(&argc, argv);

  std::vector<std::string> sources;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kSourceFlag.size()) == kSourceFlag) {
      sources.emplace_back(arg.substr(kSourceFlag.size()));
    } else {
      std::fprintf(stderr, "%s: unknown argument %s (expected --source=FILE or gtest flags)\n",
                   argv[0], argv[i]);
      return 2;
    }
  }
  if (sources.empty()) return RUN_ALL_TESTS();

  const std::string user_filter = GTEST_FLAG_GET(filter);
  std::vector<bool> source_used(sources.size(), false);
  std::string selected;
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const testing::TestInfo& info = *suite.GetTestInfo(t);
      bool in_sources = false;
      for (std::size_t i = 0; i < sources.size(); ++i) {
        if (EndsWithFile(info.file(), sources[i])) source_used[i] = in_sources = true;
      }
      const std::string name = std::string(info.test_suite_name()) + "." + info.name();
      if (in_sources && MatchesFilter(name, user_filter)) {
        if (!selected.empty()) selected += ':';
        selected += name;
      }
    }
  }
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!source_used[i]) {
      std::fprintf(stderr, "%s: no test in this executable comes from %s\n", argv[0],
                   sources[i].c_str());
      return 1;
    }
  }
  // Nothing left after the user's own filter is the user's choice, not an
  // error: gtest then runs nothing and says so.
  GTEST_FLAG_SET(filter, selected.empty() ? "-*" : selected);
  return RUN_ALL_TESTS();
}
