// zcal keygen: prints a new line for a peer key file (docs/peer-protocol.md).
#include <iostream>
#include <memory>
#include <string>

#include "zcal/agent/cli/commands.h"
#include "zcal/probes/peer/peer_keys.h"

namespace zcal::agent {
namespace {

int RunKeygen(const std::string& id) {
  const Result<std::string> line = probes::peer::NewKeyLine(id);
  if (!line) {
    std::cerr << "zcal keygen: " << line.error().message << "\n";
    return ExitStatusOf(line.error());
  }
  std::cout << *line << "\n";
  return kExitOk;
}

}  // namespace

Command AddKeygenCommand(CLI::App& parent) {
  auto id = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand(
      "keygen",
      "Print a new peer key line, KEYID HEXSECRET (32 random bytes from "
      "libsodium), for the key files of sinks and peers. Append it with a "
      "umask that keeps others out: (umask 077; zcal keygen >> FILE).");
  app->add_option("--id", *id,
                  "Key id, 1 to 16 of [A-Za-z0-9_.-] (default: k and 8 random "
                  "hex digits)");
  return {app, [id] { return RunKeygen(*id); }};
}

}  // namespace zcal::agent
