// Host discovery for elastic jobs (gradwire-run --host-discovery SCRIPT; launch-internal): how many
// workers this node should run, from a script's output in horovodrun's format.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace gradwire::launch::detail {

// Pure: the slots of `host` in a discovery script's output, one "HOST" or "HOST:SLOTS" per line
// (blank lines and lines starting with '#' ignored; a host without ":SLOTS" has 1). The entries
// of the same host add up. A host that is not listed has 0. Throws InvalidArgument naming the
// line for anything else.
int discovered_slots(const std::string& output, const std::string& host);

// The names this node answers to in a discovery script's output: its hostname, "localhost" and
// "127.0.0.1" (the slots of all of them count).
std::vector<std::string> local_host_names();

// Runs `command` with /bin/sh -c as a worker is started (spawn_worker: its own process group)
// and returns its standard output. Throws gradwire::Error naming the command (and the first line
// of its stderr) when it cannot run, exits non-zero, or runs longer than `limit` (then its process
// group is killed).
std::string run_discovery_script(const std::string& command, std::chrono::milliseconds limit);

}  // namespace gradwire::launch::detail
