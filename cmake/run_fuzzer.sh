#!/usr/bin/env bash
# The fuzz tier's test for one libFuzzer target (cmake/unet_fuzz.cmake adds one per target):
#   run_fuzzer.sh BINARY SEED-CORPUS WORK-DIR
# Runs BINARY for UNET_FUZZ_SECONDS (default 20) from the checked-in seeds plus WORK-DIR/corpus,
# which keeps what it finds for the next run. Exits non-zero on a crash, a sanitizer report, a
# leak or a hung input; the crashing input is kept in WORK-DIR/artifacts/ and named in the output.
# libFuzzer's own log goes to WORK-DIR/last.log; this prints its closing statistics only (all of
# its tail on failure).
set -uo pipefail
bin=$1 seeds=$2 work=$3
seconds=${UNET_FUZZ_SECONDS:-20}
mkdir -p "$work/corpus" "$work/artifacts"
log="$work/last.log"
"$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" >"$log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$log"
  echo "run_fuzzer.sh: $(basename "$bin") failed (exit $rc); inputs kept in $work/artifacts/"
  exit "$rc"
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
echo "$(basename "$bin"): ${runs:-?} executions in ${seconds} s, no crash" \
  "(corpus: $(find "$work/corpus" -type f | wc -l) inputs)"
