#!/usr/bin/env bash
# gradwire workers under PyTorch 2.x's torchrun (Debian's 1.13 torchrun is broken): the DDP example
# on 2 workers with torchrun's default rendezvous and with --rdzv-backend c10d (both through the
# store torchrun's agent hosts) ends with the same parameters on both ranks as under gradwire-run;
# with --max-restarts 1, a worker that dies in the first attempt is restarted by torchrun, sees
# TORCHELASTIC_RESTART_COUNT=1 (its keys under the next attempt's prefix), and the job finishes.
# A gradwire built against libtorch 1.13 is refused by both rendezvous with an error saying why.
# Exit 77 (ctest: skipped, with the reason) when no torchrun of PyTorch 2.x is found: the project's
# .venv (scripts/setup --torch-wheel), else torchrun on PATH.
# Usage: torchrun_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail
source_dir=$1
bin=$2
# shellcheck source=tests/launch/find_torchrun.sh
source "$(dirname "${BASH_SOURCE[0]}")/find_torchrun.sh"
find_torchrun "$source_dir" torchrun_test
echo "torchrun_test: $torchrun ($("$python" -c 'import torch; print(torch.__version__)'))"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
checksums() { grep -o "rank [0-9] parameter checksum .*" "$1" | sort; }
export OMP_NUM_THREADS=1 GRADWIRE_BACKEND=gloo

"$bin/gradwire-run" --nproc-per-node 2 --master-port "$(port)" "$bin/example-ddp-train" 5 \
  >"$scratch/gradwire-run.txt" 2>&1
want=$(checksums "$scratch/gradwire-run.txt" | sed 's/^rank [0-9] //' | sort -u)
[ "$(wc -l <<<"$want")" = 1 ] || { cat "$scratch/gradwire-run.txt"; echo "ranks differ under gradwire-run" >&2; exit 1; }

check() {  # NAME TORCHRUN-ARGS...: the example under torchrun ends with gradwire-run's parameters
  local name=$1
  shift
  timeout 240 "$torchrun" "$@" --no-python "$bin/example-ddp-train" 5 >"$scratch/$name.txt" 2>&1 ||
    { cat "$scratch/$name.txt"; echo "torchrun $name failed" >&2; exit 1; }
  local got
  got=$(checksums "$scratch/$name.txt")
  if [ "$(wc -l <<<"$got")" != 2 ] || [ "$(sed 's/^rank [0-9] //' <<<"$got" | sort -u)" != "$want" ]; then
    cat "$scratch/$name.txt"
    echo "torchrun $name: checksums '$got', gradwire-run's '$want'" >&2
    exit 1
  fi
  echo "torchrun $name: both ranks end with gradwire-run's parameters ($want)"
}
# torchrun 2.x hosts the rendezvous store in its agent (TORCHELASTIC_USE_AGENT_STORE=True, with
# the default static rendezvous and with c10d's). A gradwire built against libtorch 1.13 cannot
# talk to that 2.x store: each way must be refused with an error that says so.
if "$bin/gradwire-run" --version | grep -q "libtorch 1\."; then
  for args in "--master-addr 127.0.0.1 --master-port $(port)" \
              "--rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$(port)"; do
    # shellcheck disable=SC2086
    if timeout 120 "$torchrun" --nproc-per-node 2 $args --no-python "$bin/example-ddp-train" 5 \
        >"$scratch/refused.txt" 2>&1 || ! grep -q "cannot talk to a libtorch 2.x store" "$scratch/refused.txt"; then
      cat "$scratch/refused.txt"
      echo "torchrun $args with libtorch 1.13: expected the error naming the store" >&2
      exit 1
    fi
    echo "torchrun $args: refused with libtorch 1.13, saying why"
  done
  exit 0
fi
check default --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$(port)"
check c10d --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$(port)"

# A worker that dies in the first attempt: torchrun restarts the group once.
cat >"$scratch/dies_once.sh" <<SCRIPT
#!/usr/bin/env bash
echo "attempt \$TORCHELASTIC_RESTART_COUNT rank \$RANK"
if [ "\$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "\$RANK" = 1 ]; then kill -9 \$\$; fi
exec "$bin/example-ddp-train" 5
SCRIPT
chmod +x "$scratch/dies_once.sh"
timeout 240 "$torchrun" --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d \
  --rdzv-endpoint "127.0.0.1:$(port)" --no-python "$scratch/dies_once.sh" >"$scratch/restart.txt" 2>&1 ||
  { cat "$scratch/restart.txt"; echo "torchrun --max-restarts 1 failed" >&2; exit 1; }
grep -q "attempt 1 rank 1" "$scratch/restart.txt" ||
  { cat "$scratch/restart.txt"; echo "no second attempt with TORCHELASTIC_RESTART_COUNT=1" >&2; exit 1; }
[ "$(checksums "$scratch/restart.txt" | sed 's/^rank [0-9] //' | sort -u)" = "$want" ] ||
  { cat "$scratch/restart.txt"; echo "the restarted job ended elsewhere" >&2; exit 1; }
echo "torchrun --max-restarts 1: rank 1 killed in attempt 0, restarted with TORCHELASTIC_RESTART_COUNT=1, same parameters"
