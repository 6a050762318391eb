// A zcal with `analyze` and `report` only, linked against those commands'
// libraries alone (check_links.py looks at what it needs and runs it): the
// proof that the offline commands need nothing of the service.
#include "zcal/agent/cli/commands.h"

int main(int argc, char** argv) {
  using namespace zcal::agent;
  static constexpr CommandFactory kCommands[] = {AddAnalyzeCommand, AddReportCommand};
  return RunCli(argc, argv, kCommands);
}
