// Which servers a gradwire-ps-server process runs, as the timeline names them (docs/timeline.md):
// the index of its first server and its process track's label. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gradwire::ps_server {

// The index of the process's first server (the others follow in the order of --listen): `given`
// (--index) when set; else the position of listen.front() in `ps_addrs`, the comma-separated
// GRADWIRE_PS_ADDRS that gradwire-run gives its servers (every server's address, in order); else
// 0 (a server started alone).
int first_server_index(const std::optional<int>& given, const std::vector<std::string>& listen,
                       const std::string& ps_addrs);

// The name of one server on the timeline: "ps server 3".
std::string server_timeline_name(int index);

// The process track of `count` servers from `first`: "ps server 3" (one), "ps servers 2-3".
std::string process_label(int first, int count);

}  // namespace gradwire::ps_server
