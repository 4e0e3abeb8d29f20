// `gradwire-bench ddp --trace DIR`: which configuration is traced, and its trace's entry added to
// the results once the ranks exited (docs/benchmarks.md, "--trace DIR").
#pragma once

#include <string>

#include "cases/ddp_settings.h"

namespace gradwire::bench {

// The traced configuration (the first model on the largest world size with the first backend
// and comm hook), named for its file: "ddp-resnet18-gloo-2ranks".
std::string ddp_trace_name(const DdpSettings& settings);

// In the gradwire-bench that started the ranks, once they exited and the launcher merged their
// files into `path`: the trace's entry (harness/traces.h) printed and added to the results'
// JSON (and HTML) when settings name them.
void add_ddp_trace(const DdpSettings& settings, const std::string& name, const std::string& path);

}  // namespace gradwire::bench
