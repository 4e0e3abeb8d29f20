#!/usr/bin/env bash
# A real 2-rank DDP job's merged trace opens in headless Chromium's trace viewer (DevTools'
# Performance panel, tools/gradwire_trace/view_trace.py): it shows both ranks, every slice of the
# file and no import error, and the viewer draws it into a PNG. Skipped (77) without Chromium.
# Usage: viewer_test.sh VIEW_TRACE TRACE   (TRACE: the trace timeline.ddp_job leaves, fixture
# timeline_ddp_trace)
set -euo pipefail
view=$1 trace=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if [ ! -f "$trace" ]; then
  echo "viewer_test: $trace is absent: timeline.ddp_job (fixture timeline_ddp_trace) leaves it" >&2
  exit 1
fi

status=0
python3 "$view" "$trace" --expect-process "rank 0" --expect-process "rank 1" \
  --screenshot "$dir/timeline.png" --timeout 90 > "$dir/out.txt" || status=$?
cat "$dir/out.txt"
[ $status -eq 0 ] || exit $status

# Both ranks' threads show slices, and the PNG is a 1600-pixel-wide picture of the timeline.
python3 - "$dir/out.txt" "$dir/timeline.png" <<'PY'
import re, struct, sys
out = open(sys.argv[1]).read()
for rank in ("rank 0", "rank 1"):
    shown = re.search(r"^  %s \(pid \d+\): (\d+) slices shown" % rank, out, re.M)
    assert shown and int(shown.group(1)) > 0, (rank, out)
png = open(sys.argv[2], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", png[16:24])
assert width == 1600 and height >= 100, (width, height)
print("ok: the viewer shows rank 0 and rank 1; timeline.png %dx%d, %d bytes"
      % (width, height, len(png)))
PY
