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

// The interpreters tried, in order: `preferred` alone when given; else the `environments'`
// interpreters (virtual environments' bin/python that exist: the active one, $VIRTUAL_ENV, then
// the project's .venv, where scripts/setup --torch-wheel puts PyTorch 2.x), then python3 on PATH,
// then /usr/bin/python3 (where Debian's python3-torch, PyTorch 1.13, lives when PATH has another
// python3 first). Pure.
std::vector<std::string> python_candidates(const std::string& preferred,
                                           const std::vector<std::string>& environments = {});

// The virtual environments' interpreters that exist here: $VIRTUAL_ENV/bin/python, then the
// project's .venv/bin/python (the source tree this gradwire-bench was built from).
std::vector<std::string> environment_pythons();

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

// What a case's PyTorch reference runs with, and where to look for it.
struct ReferenceNeeds {
  std::string python;  // --python; empty: python_candidates' defaults
  std::string module;  // imported besides torch (e.g. "torch.distributed.rpc"); empty: none
  ScriptPlaces script;
};
struct ReferenceRunner {
  PythonTorch python;
  std::string script;
};

// The one error policy of references: the interpreter and the script, or nullopt with why in
// `why_not`: "no Python interpreter with torch[ and MODULE]: tried ...; install python3-torch
// (scripts/bench does) or pass --python", or find_reference_script's reason. The case decides
// whether that skips its reference (ddp) or stops the run (require_reference, hybrid). Blocks a
// second or two per interpreter tried.
std::optional<ReferenceRunner> find_reference(const ReferenceNeeds& needs, std::string& why_not);
// find_reference, throwing ConfigError with the reason when something is missing.
ReferenceRunner require_reference(const ReferenceNeeds& needs);

}  // namespace gradwire::bench
