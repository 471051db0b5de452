#!/usr/bin/env bash
# Fit a model's confidence calibration (format/calibration.py) on code that is neither its training
# nor its evaluation data: the calibration split of a dataset's held-out programs and the real
# scripts kept for fitting (benchmarks/calibration_real/fit, agent_programs, real_programs), never
# CRUXEval. SHARDS processes score them at once (one CPU thread each), then `eval calibrate` fits
# on all their values and writes MODEL/calibration.json, which every client of MODEL applies.
#   MODEL=run/model DATA=data [LIMIT=300] [SHARDS=$(nproc)] bash scripts/fit_calibration.sh
set -euo pipefail
: "${MODEL:?}" "${DATA:?}"
PY=${PY:-python3}
SHARDS=${SHARDS:-$(nproc)}
LIMIT=${LIMIT:-300}  # held-out programs of the calibration split
REAL=(benchmarks/calibration_real/fit benchmarks/agent_programs benchmarks/real_programs)
work=$(mktemp -d)
pids=()
for k in $(seq 0 $((SHARDS - 1))); do
    $PY -m neural_dap eval nextstate --model "$MODEL" --calibration none --data "$DATA" --split calibration \
        --limit "$LIMIT" "${REAL[@]/#/--real=}" --shard "$k/$SHARDS" --values "$work/values-$k.jsonl" \
        --quiet --json > /dev/null &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
# prints, per set, the ECE before and after the fit (in sample) and where it wrote the calibration
$PY -m neural_dap eval calibrate --model "$MODEL" $(printf -- "--from-values %s " "$work"/values-*.jsonl)
rm -rf "$work"
