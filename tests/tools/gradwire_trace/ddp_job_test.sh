#!/usr/bin/env bash
# A 2-rank DDP job with GRADWIRE_TIMELINE writes one file per rank, and gradwire-trace merge
# joins them into one trace holding both ranks' forward, backward, buckets, allreduces and waits,
# with rank 1's clock measured against rank 0's through the store (Note [timeline clocks]).
# Usage: ddp_job_test.sh GRADWIRE_RUN EXAMPLE_DDP_TRAIN GRADWIRE_TRACE
set -euo pipefail
run=$1 example=$2 trace=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

GRADWIRE_TIMELINE="$dir/job.json" OMP_NUM_THREADS=1 timeout 120 \
  "$run" --nproc-per-node 2 "$example" 3 > "$dir/job.log" 2>&1 || {
  cat "$dir/job.log"
  exit 1
}
ls "$dir/job.json.d"
"$trace" merge "$dir/job.json" "$dir/job.json.d"

python3 - "$dir/job.json" "$dir/job.json.d" <<'PY'
import json, os, sys
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
# rank 1's file records the offset measured through the store
with open(os.path.join(sys.argv[2], "rank-1.json")) as f:
    sources = [json.loads(line.lstrip("[,"))["args"]["source"] for line in f
               if '"gradwire_clock"' in line]
assert any("through the store" in s for s in sources), sources
print("ok:", len(events), "events,", ", ".join(sorted(ranks.values())))
PY
