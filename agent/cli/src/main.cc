#include "zcal/agent/cli/commands.h"

int main(int argc, char** argv) {
  using namespace zcal::agent;
  static constexpr CommandFactory kCommands[] = {
      AddAnalyzeCommand, AddCalibrateCommand, AddReportCommand, AddShowCommand,
      AddAgentCommand,   AddKeygenCommand,    AddSinkCommand,      AddExportCommand,
      AddExecCommand,    AddDoctorCommand,
  };
  return RunCli(argc, argv, kCommands);
}
