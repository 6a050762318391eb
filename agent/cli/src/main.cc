#include "zcal/agent/cli/cli.h"

int main(int argc, char** argv) { return zcal::agent::RunCli(argc, argv); }
