#!/usr/bin/env bash
# A 2-rank DDP job under gradwire-run --timeline: each rank writes its file into TRACE.d/, and the
# launcher merges them into TRACE when the job ends: one trace holding both ranks' forward,
# backward, buckets, allreduces and waits, rank 1 on rank 0's clock (one kernel: wall clocks, not
# measured; Note [timeline clocks]). TRACE stays in the build tree for the tests that read a real
# trace (fixture timeline_ddp_trace). Then a restarted rank 1 whose rendezvous times out records
# the instants "restart" and "timeout" (read with gradwire-trace dump).
# Usage: ddp_job_test.sh GRADWIRE_RUN EXAMPLE_DDP_TRAIN TRACE GRADWIRE_TRACE
set -euo pipefail
run=$1 example=$2 out=$3 trace_tool=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rm -rf "$out" "$out.d"
mkdir -p "$(dirname "$out")"

OMP_NUM_THREADS=1 timeout 120 \
  "$run" --timeline "$out" --nproc-per-node 2 "$example" 3 > "$dir/job.log" 2>&1 || {
  cat "$dir/job.log"
  exit 1
}
ls "$out.d"
grep -F "gradwire-run: wrote timeline $out: 2 processes" "$dir/job.log" || {
  cat "$dir/job.log"
  exit 1
}

python3 - "$out" "$out.d" "$trace_tool" <<'PY'
import json, os, subprocess, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events
         if e.get("ph") == "M" and e.get("name") == "process_name"}
ranks = {pid: name for pid, name in names.items() if name.startswith("rank ")}
assert sorted(ranks.values()) == ["rank 0", "rank 1"], names
for pid, rank in ranks.items():
    mine = [e for e in events if e.get("pid") == pid]
    spans = [e["name"] for e in mine if e.get("ph") == "X"]
    begun = [e["name"] for e in mine if e.get("ph") == "b"]
    for name in ("forward", "backward", "ddp wait", "comm hook"):
        assert name in spans, (rank, name, sorted(set(spans)))
    assert any(n.startswith("bucket ") for n in begun), (rank, sorted(set(begun)))
    assert "allreduce" in begun and "broadcast" in begun, (rank, sorted(set(begun)))
    # every async span that began also ended
    ends = [e["name"] for e in mine if e.get("ph") == "e"]
    assert len(ends) == len(begun), (rank, len(begun), len(ends))
    collective = next(e for e in mine if e.get("ph") == "b" and e["name"] == "allreduce")
    assert collective["args"]["algorithm"], collective
    assert "float" in collective["args"]["what"].lower(), collective
    assert all(e.get("ts", 0) >= 0 for e in mine)
# rank 1 runs on rank 0's kernel: its file says it keeps its wall-clock offset, unmeasured
dump = subprocess.run([sys.argv[3], "dump", os.path.join(sys.argv[2], "rank-1.gwtl")],
                      check=True, capture_output=True, text=True).stdout
sources = [e["args"]["source"] for e in map(json.loads, dump.splitlines())
           if e.get("name") == "gradwire_clock"]
assert any("kernel" in s for s in sources) and not any("through the store" in s for s in sources), sources
print("ok:", len(events), "events,", ", ".join(sorted(ranks.values())))
PY

# Rank 1 of a restarted job whose rank 0 never comes: nobody listens on the port just closed.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
if RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GRADWIRE_RENDEZVOUS_TIMEOUT=200ms \
  TORCHELASTIC_RESTART_COUNT=1 GRADWIRE_TIMELINE="$dir/alone.json" OMP_NUM_THREADS=1 \
  timeout 60 "$example" 1 > "$dir/alone.log" 2>&1; then
  echo "rank 1 alone should have timed out"
  cat "$dir/alone.log"
  exit 1
fi
"$trace_tool" dump "$dir/alone.json.d/rank-1.restart-1.gwtl" > "$dir/alone.jsonl"
python3 - "$dir/alone.jsonl" <<'PY'
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
instants = {e["name"]: e for e in lines if e.get("ph") == "i" and e.get("cat") == "launch"}
assert instants["restart"]["args"]["incarnation"] == 1, instants
assert instants["timeout"]["args"]["timeout_ms"] == 200, instants
assert "rendezvous" in instants["timeout"]["args"]["waited_for"], instants
print("ok: restart and timeout instants")
PY
