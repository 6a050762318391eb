// The manual pages stay in step with the program: every subcommand that
// `zcal --help` lists has a page zcal-SUBCOMMAND(1), built by
// docs/man/meson.build and named in zcal(1), and each page documents exactly
// the options (and the positionals) of its --help; libzcal(3) declares
// exactly the functions of zcal.h. A subcommand added
// without a page, an option added, renamed or removed on one side only, and
// a page left behind by a removed subcommand all fail here.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace zcal::agent::testing::man_pages_test {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

fs::path ManSource() { return fs::path(Env("ZCAL_SOURCE_ROOT")) / "docs/man"; }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::set<std::string> Words(const std::string& text) {
  std::set<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.insert(word);
  return words;
}

// What CLI11 prints for `zcal [SUBCOMMAND] --help`: the first word of each
// entry line (indented by exactly two spaces) of each "Section:" block.
struct Help {
  std::set<std::string> options;      // "-c", "--config", "--help", ...
  std::set<std::string> positionals;  // "FILE"
  std::vector<std::string> subcommands;
};

Help ParseHelp(const std::string& text) {
  Help help;
  std::string section;
  for (const std::string& line : Lines(text)) {
    if (!line.empty() && line[0] != ' ' && line.back() == ':') {
      section = line.substr(0, line.size() - 1);
      continue;
    }
    if (line.size() < 3 || line.compare(0, 2, "  ") != 0 || line[2] == ' ') continue;
    const std::string first = line.substr(2, line.find(' ', 2) - 2);
    if (section == "Options") {
      std::istringstream names(first);
      for (std::string name; std::getline(names, name, ',');) help.options.insert(name);
    } else if (section == "Positionals") {
      help.positionals.insert(first);
    } else if (section == "Subcommands") {
      help.subcommands.push_back(first);
    }
  }
  return help;
}

Help RunHelp(const std::vector<std::string>& subcommand) {
  std::vector<std::string> argv = {Env("ZCAL")};
  argv.insert(argv.end(), subcommand.begin(), subcommand.end());
  argv.push_back("--help");
  const CommandResult result = RunCommand(argv);
  EXPECT_EQ(result.status, 0) << result.err;
  return ParseHelp(result.out);
}

// An scdoc page: the text of each "# SECTION", and the options its OPTIONS
// section defines (the "*-x*, *--name* _ARG_" term lines, not the indented
// descriptions, which may mention other options).
struct Page {
  std::map<std::string, std::string> sections;
  std::set<std::string> options;

  std::string Section(const std::string& name) const {
    const auto it = sections.find(name);
    return it != sections.end() ? it->second : std::string();
  }
};

Page ParsePage(const fs::path& file) {
  Page page;
  std::string section;
  for (const std::string& line : Lines(ReadFile(file))) {
    if (line.starts_with("# ")) {
      section = line.substr(2);
      continue;
    }
    page.sections[section] += line + "\n";
    if (section != "OPTIONS" || !line.starts_with("*-")) continue;
    for (std::size_t at = line.find("*-"); at != std::string::npos;
         at = line.find("*-", at)) {
      const std::size_t end = line.find('*', at + 1);
      if (end == std::string::npos) break;
      page.options.insert(line.substr(at + 1, end - at - 1));
      at = end + 1;
    }
  }
  return page;
}

std::string Join(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : " ") + name;
  return text;
}

// Options on one side only, as a message that says which side to fix.
void ExpectSameOptions(const std::string& page_name, const Help& help,
                       const Page& page) {
  std::set<std::string> undocumented, stale;
  for (const std::string& o : help.options)
    if (!page.options.contains(o)) undocumented.insert(o);
  for (const std::string& o : page.options)
    if (!help.options.contains(o)) stale.insert(o);
  EXPECT_TRUE(undocumented.empty())
      << page_name << " does not document " << Join(undocumented)
      << " (listed by --help): add a term line \"*--name* _ARG_\" under "
         "# OPTIONS in docs/man/"
      << page_name << ".scd";
  EXPECT_TRUE(stale.empty())
      << page_name << " documents " << Join(stale)
      << ", which --help no longer lists: remove or rename it in docs/man/"
      << page_name << ".scd";
}

TEST(ManPages, HelpListsSubcommandsAndOptions) {
  // Guards the parser below: an empty parse would make every check pass.
  const Help top = RunHelp({});
  EXPECT_GE(top.subcommands.size(), 4u);
  EXPECT_TRUE(top.options.contains("--help"));
  EXPECT_TRUE(top.options.contains("--version"));
  const Help agent = RunHelp({"agent"});
  EXPECT_TRUE(agent.options.contains("-c"));
  EXPECT_TRUE(agent.options.contains("--config"));
  EXPECT_TRUE(RunHelp({"analyze"}).positionals.contains("FILE"));
}

TEST(ManPages, EverySubcommandHasAPageThatDocumentsItsOptions) {
  const std::set<std::string> built = Words(Env("ZCAL_MAN_PAGES"));
  for (const std::string& subcommand : RunHelp({}).subcommands) {
    const std::string name = "zcal-" + subcommand + ".1";
    const fs::path source = ManSource() / (name + ".scd");
    if (!fs::exists(source)) {
      ADD_FAILURE() << "`zcal " << subcommand << "` has no manual page: write "
                    << "docs/man/" << name << ".scd (modelled on the other pages), add '"
                    << name << "' to man_pages in docs/man/meson.build and name "
                    << "it in zcal.1.scd";
      continue;
    }
    EXPECT_TRUE(built.contains(name))
        << name << " is not in man_pages in docs/man/meson.build";
    const Help help = RunHelp({subcommand});
    const Page page = ParsePage(source);
    ExpectSameOptions(name, help, page);
    for (const std::string& positional : help.positionals) {
      EXPECT_NE(page.Section("SYNOPSIS").find("_" + positional + "_"), std::string::npos)
          << name << ": the SYNOPSIS lacks the positional _" << positional << "_";
    }
    EXPECT_NE(page.Section("SYNOPSIS").find("*zcal " + subcommand + "*"),
              std::string::npos)
        << name << ": the SYNOPSIS does not start with *zcal " << subcommand << "*";
  }
}

TEST(ManPages, ZcalPageDocumentsItsOptionsAndEverySubcommand) {
  const Help help = RunHelp({});
  const Page page = ParsePage(ManSource() / "zcal.1.scd");
  ExpectSameOptions("zcal.1", help, page);
  for (const std::string& subcommand : help.subcommands) {
    EXPECT_NE(page.Section("COMMANDS").find("*zcal " + subcommand + "*"),
              std::string::npos)
        << "zcal.1.scd: # COMMANDS lacks *zcal " << subcommand << "*";
    EXPECT_NE(page.Section("SEE ALSO").find("*zcal-" + subcommand + "*(1)"),
              std::string::npos)
        << "zcal.1.scd: # SEE ALSO lacks *zcal-" << subcommand << "*(1)";
  }
}

TEST(ManPages, NoPageOutlivesItsSubcommand) {
  std::set<std::string> subcommands;
  for (const std::string& s : RunHelp({}).subcommands) subcommands.insert(s);
  for (const fs::directory_entry& entry : fs::directory_iterator(ManSource())) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("zcal-") || !file.ends_with(".1.scd")) continue;
    const std::string subcommand = file.substr(5, file.size() - 5 - 6);
    EXPECT_TRUE(subcommands.contains(subcommand))
        << "docs/man/" << file << " documents `zcal " << subcommand
        << "`, which `zcal --help` does not list";
  }
}

TEST(ManPages, MesonBuildsEverySourceAndNothingElse) {
  std::set<std::string> sources;
  for (const fs::directory_entry& entry : fs::directory_iterator(ManSource())) {
    const std::string file = entry.path().filename().string();
    if (file.ends_with(".scd")) sources.insert(file.substr(0, file.size() - 4));
  }
  EXPECT_EQ(Words(Env("ZCAL_MAN_PAGES")), sources)
      << "man_pages in docs/man/meson.build and the .scd files in docs/man differ";
}

// The C functions declared at the start of a line: "int zcal_open(...".
std::set<std::string> CFunctions(const std::string& text) {
  std::set<std::string> names;
  for (const std::string& line : Lines(text)) {
    if (line.empty() || line[0] == ' ' || line[0] == '*' || line[0] == '/' ||
        line[0] == '#') {
      continue;
    }
    for (std::size_t at = line.find("zcal_"); at != std::string::npos;
         at = line.find("zcal_", at + 1)) {
      std::size_t end = at;
      while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) ||
                                   line[end] == '_')) {
        ++end;
      }
      if (end < line.size() && line[end] == '(') {
        names.insert(line.substr(at, end - at));
        break;
      }
    }
  }
  return names;
}

TEST(ManPages, LibzcalPageDeclaresEveryFunctionOfTheHeader) {
  // zcal.h and the header of codes and names it includes.
  const fs::path include = fs::path(Env("ZCAL_SOURCE_ROOT")) / "client/include/zcal";
  const std::set<std::string> header =
      CFunctions(ReadFile(include / "zcal.h") + "\n" + ReadFile(include / "zcal_codes.h"));
  ASSERT_GE(header.size(), 15u);
  const std::set<std::string> page =
      CFunctions(ParsePage(ManSource() / "libzcal.3.scd").Section("SYNOPSIS"));
  std::set<std::string> missing, stale;
  for (const std::string& f : header)
    if (!page.contains(f)) missing.insert(f);
  for (const std::string& f : page)
    if (!header.contains(f)) stale.insert(f);
  EXPECT_TRUE(missing.empty()) << "libzcal.3.scd's SYNOPSIS lacks " << Join(missing)
                               << " (declared in zcal.h or zcal_codes.h)";
  EXPECT_TRUE(stale.empty()) << "libzcal.3.scd's SYNOPSIS declares " << Join(stale)
                             << ", which zcal.h and zcal_codes.h do not";
}

TEST(ManPages, GeneratedPagesAreManualPages) {
  const std::string dir = Env("ZCAL_MAN_BUILD_DIR");
  if (dir.empty()) GTEST_SKIP() << "manual pages disabled (-Dman_pages, scdoc missing)";
  for (const std::string& name : Words(Env("ZCAL_MAN_PAGES"))) {
    const std::string roff = ReadFile(fs::path(dir) / name);
    const std::string title = name.substr(0, name.rfind('.'));
    EXPECT_NE(roff.find(".TH \"" + title + "\""), std::string::npos)
        << dir << "/" << name << " is not the manual page " << title;
  }
}

}  // namespace
}  // namespace zcal::agent::testing::man_pages_test
