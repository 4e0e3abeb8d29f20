// Finding what a PyTorch reference needs: a Python interpreter that imports torch (and the
// modules the reference script uses), and the script itself. Expected outcomes: a missing
// interpreter or script is a value with the reason, and each case decides whether that skips its
// reference (ddp) or stops the run (hybrid, where the user asked for it).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gradwire::bench {

struct PythonTorch {
  std::string python;         // the interpreter, e.g. "/usr/bin/python3"
  std::string torch_version;  // torch.__version__ as it reports it
};

// The interpreters tried, in order: `preferred` alone when given; else python3 on PATH, then
// /usr/bin/python3 (where Debian's python3-torch lives when PATH has another python3 first).
std::vector<std::string> python_candidates(const std::string& preferred);

struct PythonSearch {
  std::optional<PythonTorch> found;
  // When not found: each candidate with why it failed, "python3 (cannot import torch), ...".
  std::string tried;
};

// The first candidate that imports torch and `module` (e.g. "torch.distributed.rpc"; empty:
// torch alone). Blocks a second or two per candidate.
PythonSearch find_python_with_torch(const std::string& preferred, const std::string& module = "");

// Where a reference script may be: `preferred` (its flag) when given, else the source tree's
// copy, else the installed one.
struct ScriptPlaces {
  std::string preferred;
  std::string source;
  std::string installed;
};

// The first readable place. nullopt, with the reason in `why_not` ("reference script P cannot be
// read", or "NAME is neither at S nor at I: pass --reference-script"), when there is none.
std::optional<std::string> find_reference_script(const ScriptPlaces& places, std::string& why_not);

}  // namespace gradwire::bench
