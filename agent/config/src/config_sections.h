// Readers of the configuration's output sections (config_outputs.cc) and of
// the sink (config_sink.cc), used by
// ParseConfig in config.cc. Each reads one top-level section into `config`
// and records every problem in `reader`.
#pragma once

#include <yaml-cpp/yaml.h>

#include "config_reader.h"
#include "zcal/agent/config/config.h"

namespace zcal::agent {

void ReadSegment(ConfigReader& reader, const YAML::Node& node, Config& config);
void ReadMetrics(ConfigReader& reader, const YAML::Node& node, Config& config);
void ReadState(ConfigReader& reader, const YAML::Node& node, Config& config);
void ReadLog(ConfigReader& reader, const YAML::Node& node, Config& config);
void ReadHost(ConfigReader& reader, const YAML::Node& node, Config& config);
/// config_sink.cc; the key file is read to check it.
void ReadSink(ConfigReader& reader, const YAML::Node& node, Config& config);
/// config_exports.cc; each entry's directory must exist.
void ReadExports(ConfigReader& reader, const YAML::Node& node, Config& config);
/// config_peers.cc; read after `sink:` (peers.key_file defaults to
/// sink.key_file when the config is turned into a round).
void ReadPeers(ConfigReader& reader, const YAML::Node& node, Config& config);
/// config_apps.cc: the applications' report objects.
void ReadApps(ConfigReader& reader, const YAML::Node& node, Config& config);

}  // namespace zcal::agent
