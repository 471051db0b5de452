#!/usr/bin/env bash
# The one prepared training run for a lent GPU machine (see docs/training.md): trains, then fits the
# new model's confidence calibration (scripts/fit_calibration.sh), which ships inside the model.
# Runs in the repository root there; DATA and TOKENIZER are carried folders; results go to $OUT.
#   DATA=.ndscratch/data-v1 TOKENIZER=.ndscratch/tok BUDGET=480 bash scripts/gpu_train.sh
set -euo pipefail
: "${DATA:?}" "${TOKENIZER:?}" "${OUT:?}"
BUDGET=${BUDGET:-480}
PRESET=${PRESET:-gpu}
PY=${PY:-python3}
# .whl/ holds the wheels the machine lacks (nothing installs there from an index): msgspec, anyio's
# deps, accelerate, peft...: `pip download --only-binary=:all: --no-deps -d .whl msgspec accelerate peft ...`
if ! $PY -c "import msgspec, accelerate" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
$PY - <<'PY' 2>&1 | tee "$OUT/env.txt"
import sys, torch, transformers, tokenizers
print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")
PY
DATA_ARG=$DATA
GEN_PID=
if [ -n "${GENERATE:-}" ]; then
    # fresh programs from the machine's spare cores while it trains (seed 1: not the carried ones);
    # shards appear when complete and join the next epoch
    mkdir -p /tmp/more
    nice -n 19 $PY -m neural_dap dataset --out /tmp/more --programs "$GENERATE" --seed 1 --trajectories 6 \
        --workers "${GEN_WORKERS:-10}" --shard-size 5000 --quiet > "$OUT/generate.txt" 2>&1 &
    GEN_PID=$!
    DATA_ARG="$DATA,/tmp/more"
fi
set +e
$PY -m neural_dap train --data "$DATA_ARG" --out /tmp/ndrun --preset "$PRESET" --tokenizer "$TOKENIZER" \
    --time-budget "$BUDGET" --checkpoint-every 1000000 --eval-every 500 ${COMPILE:+--compile} ${EXTRA:-} 2>&1 \
    | tr '\r' '\n' | grep -v "^\s*$" | tail -n 60 | tee "$OUT/train.txt"
status=${PIPESTATUS[0]}
[ -n "$GEN_PID" ] && kill "$GEN_PID" 2>/dev/null
ls /tmp/more 2>/dev/null | grep -c train- | sed 's/^/device shards: /' | tee -a "$OUT/generate.txt"
set -e
cp /tmp/ndrun/train_log.json "$OUT/" 2>/dev/null || true
if [ -d /tmp/ndrun/model ]; then
    # the new model's confidence calibration, fitted in the same run on the machine's CPUs (a minute
    # or two): without it the model's raw probabilities would be shown, over-confident on real code
    MODEL=/tmp/ndrun/model DATA="${DATA%%,*}" PY=$PY LIMIT="${CAL_LIMIT:-300}" bash scripts/fit_calibration.sh \
        2>&1 | tail -n 80 | tee "$OUT/calibration.txt" || true
    cp /tmp/ndrun/model/calibration.json "$OUT/" 2>/dev/null || true
    (cd /tmp/ndrun && tar cf - model) | split -b 15000000 - "$OUT/model.tar.part-"
fi
ls -la "$OUT"
exit "$status"
