# Sourced by the torchrun tests: find_torchrun SOURCE_DIR NAME sets `torchrun` and its `python` to
# a torchrun of PyTorch 2.x (the project's .venv, else torchrun on PATH), or prints why NAME is
# skipped and exits 77 (ctest: skipped, with the reason).
find_torchrun() {
  local source_dir=$1 name=$2 candidate
  torchrun=""
  for candidate in "$source_dir/.venv/bin/torchrun" "$(command -v torchrun || true)"; do
    if [ -z "$candidate" ] || [ ! -x "$candidate" ]; then continue; fi
    python=$(head -1 "$candidate" | sed 's/^#!//')
    if "$python" -c 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null; then
      torchrun=$candidate
      return 0
    fi
  done
  echo "$name: skipped: no torchrun of PyTorch 2.x (scripts/setup --torch-wheel installs one into .venv)"
  exit 77
}
