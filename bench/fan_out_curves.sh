#!/usr/bin/env bash
# The fan-out curves of bench/README.md ("Fan-out on a larger machine") in one command, in order
# of priority, each under its own time cap and all within one budget, so that a short loan of a
# large machine measures what matters first. Each bench runs its serial baseline itself.
#
# Usage: bash bench/fan_out_curves.sh OUT [BUDGET_SECONDS=540] [DATA=../shared/data]
#
# OUT gets one markdown file per bench (its stdout: the tables), log.txt (every bench's stderr,
# each under a header) and summary.md (the machine: cores, CPU, huge pages, the rate of first
# writes into new memory; then each bench's exit status and seconds: "skipped" when the budget
# had less than a minute left, "cut" when its cap or the budget stopped it). Progress on
# stderr. Run from the repository root with privopt, dask and distributed installed.
set -u
out=${1:?usage: bash bench/fan_out_curves.sh OUT [BUDGET_SECONDS] [DATA]}
budget=${2:-540}
data=${3:-../shared/data}
mkdir -p "$out"
start=$SECONDS
# The machine first: cores, CPU, huge pages, and what a fresh process pays to write into new
# memory (the part of a task's time that a first round adds)
{ echo "$(nproc) cores; $(grep -m1 "model name" /proc/cpuinfo)"
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
  python -c "import sys; sys.path.insert(0, 'bench'); import harness; print(harness.memory_write_text())"
  echo
} > "$out/summary.md" 2>> "$out/log.txt"
echo "| bench | status | seconds |" >> "$out/summary.md"
echo "|---|---|---|" >> "$out/summary.md"

run() {  # run NAME CAP_SECONDS COMMAND...
  local name=$1 cap=$2
  shift 2
  local left=$((budget - (SECONDS - start)))
  if ((left < 60)); then
    echo "| $name | skipped (budget) | 0 |" >> "$out/summary.md"
    echo "[fan-out] $name: skipped, $left s of the budget left" >&2
    return
  fi
  ((cap > left)) && cap=$left
  echo "[fan-out] $name (at most $cap s): $*" >&2
  echo "== $name: $*" >> "$out/log.txt"
  local t0=$SECONDS
  timeout --signal=INT --kill-after=20 "$cap" "$@" >> "$out/$name.md" 2>> "$out/log.txt"
  local rc=$?
  local status=$rc
  ((rc == 124 || rc == 137)) && status="cut at $cap s"
  echo "| $name | $status | $((SECONDS - t0)) |" >> "$out/summary.md"
}

run benders 240 python bench/benders_dask.py --rows 30 --cols 40 --iterations 2 --m 8 \
  --workers 1,2,4,8,16
run kanon 200 bash -c 'for w in 8 16 4 2 1; do
  python bench/kanon_scale.py split-carry --sizes 1000000 --workers $w; done'
run census-streamed 150 python bench/census_scale.py --sections streamed \
  --streamed-fanouts 100,1000,1000 --workers 16
run census-dask 200 bash -c 'for w in 8 16 4 2 1; do
  python bench/census_scale.py --sections dask --dask-leaves 10000000 --workers $w; done'
run dpm 240 python bench/dpm_scale.py disk --sizes 100000000 --workers 16 8 0
run geo 240 python bench/geo_service_bench.py --rome "$data/rome" --processes 1,2,4,8,16 \
  --concurrency 200 --sessions 2000 --client-processes 6
echo "[fan-out] done in $((SECONDS - start)) s; $out/summary.md" >&2
