#!/usr/bin/env bash
# Reproduce the three shipped models (assets/bert-eltec, elmo-eltec, static-eltec) and their measured cards,
# the compact SemCor copy (assets/semcor) and the fine-tuned example (assets/bert-eltec-pos).
#
#   bash assets/reproduce.sh            # train (or resume) in runs/, ship to assets/, measure, write the cards
#   STAGE=measure bash assets/reproduce.sh   # only ship + measure + cards, from finished runs
#
# The corpus and SemCor come from $CTXMODELS_DATA (default ../shared/data). BERT's first two runs and ELMo train
# side by side, one CPU thread each (on a 2-core machine one thread per job is much faster than two competing
# threads), then the static vectors, then BERT's long last run with both threads. Every run writes checkpoints:
# run the script again after an interruption and it resumes.
# The exact recipes and wall times of the shipped models are in their cards; these are those recipes.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${CTXMODELS_DATA:-../shared/data}
CORPUS=$DATA/corpus/eltec-eng.txt
RUNS=${RUNS:-runs}
STAGE=${STAGE:-all}
CLI=${CLI:-ctxmodels}
COMMON=(--corpus "$CORPUS" --threads 1 --no-progress)

resume_flag() { [ -f "$1/checkpoint/trainer_state.pt" ] && echo --resume || true; }

# The compact SemCor + WordNet glosses copy (assets/semcor) the app reads without the shared data: the shared
# tables gzipped, byte for byte, with the WordNet licence; the same bytes on every run (assets/semcor/README.md).
${PYTHON:-python} -m ctxmodels.release.semcor_copy "$DATA" assets/semcor

if [ "$STAGE" = all ]; then
  # The WordPiece vocabulary is the shipped one when present: the tokenizers library orders equally frequent
  # pieces differently from run to run, and a model is tied to its piece ids. Without it a new one is trained.
  TOKENIZER=()
  # (run.json, or train_args.json for runs started before it, marks a started run)
  if [ -f assets/bert-eltec/tokenizer.json ] && [ ! -f "$RUNS/bert-stage1/run.json" ] \
     && [ ! -f "$RUNS/bert-stage1/train_args.json" ]; then
    mkdir -p "$RUNS/tokenizer" && cp assets/bert-eltec/tokenizer.json "$RUNS/tokenizer/"
  fi
  [ -f "$RUNS/tokenizer/tokenizer.json" ] && TOKENIZER=(--tokenizer "$RUNS/tokenizer/tokenizer.json")

  # BERT in three runs: the tiny preset (the most updates per CPU-hour; it left the unigram plateau after about
  # 8,000 steps), then twice continued from the previous run's weights with a fresh schedule; the last, long one
  # runs alone with both cores, after ELMo and the static vectors.
  ( $CLI train bert "${COMMON[@]}" --out "$RUNS/bert-stage1" "${TOKENIZER[@]}" \
      --preset tiny --batch-size 16 --lr 2e-3 --warmup 300 --steps 12000 --dropout 0 --sinusoidal-positions \
      --eval-every 500 --save-every 500 $(resume_flag "$RUNS/bert-stage1")
    [ -f "$RUNS/tokenizer/tokenizer.json" ] || { mkdir -p "$RUNS/tokenizer"; cp "$RUNS/bert-stage1/tokenizer.json" "$RUNS/tokenizer/"; }
    $CLI train bert "${COMMON[@]}" --out "$RUNS/bert-stage2" --tokenizer "$RUNS/tokenizer/tokenizer.json" \
      --init-from "$RUNS/bert-stage1" --preset tiny --batch-size 16 --lr 1e-3 --warmup 100 --steps 5000 --dropout 0 \
      --eval-every 500 --save-every 500 $(resume_flag "$RUNS/bert-stage2") ) &
  bert=$!
  $CLI train elmo "${COMMON[@]}" --out "$RUNS/elmo-eltec" \
    --preset mini --steps 5000 --eval-every 500 --save-every 250 $(resume_flag "$RUNS/elmo-eltec") &
  elmo=$!
  wait $elmo
  $CLI train static "${COMMON[@]}" --out "$RUNS/static-eltec" $(resume_flag "$RUNS/static-eltec")
  wait $bert
  $CLI train bert --corpus "$CORPUS" --threads 2 --no-progress --out "$RUNS/bert-eltec" \
    --tokenizer "$RUNS/tokenizer/tokenizer.json" --init-from "$RUNS/bert-stage2" --preset tiny --batch-size 16 \
    --lr 1e-3 --warmup 500 --steps 54000 --dropout 0 --eval-every 1000 --save-every 1000 \
    $(resume_flag "$RUNS/bert-eltec")
fi

# BERT stays float32: in fp16 its held-out top-1 moved by 0.008 points; ELMo's and the static figures do not move
$CLI ship --fp32 "$RUNS/bert-eltec" assets/bert-eltec
for name in elmo-eltec static-eltec; do
  $CLI ship "$RUNS/$name" "assets/$name"
done
# fp32 figures of the training runs, for the fp16-vs-fp32 comparison in the cards
$CLI quality --model "$RUNS/bert-eltec" --model "$RUNS/elmo-eltec" --corpus "$CORPUS" --no-senses \
  --threads 2 --out "$RUNS/quality-fp32.json"
MEASURE="ctxmodels quality --model bert-eltec --model elmo-eltec --model static-eltec --corpus $CORPUS"
$CLI quality --model bert-eltec --model elmo-eltec --model static-eltec --corpus "$CORPUS" \
  --semcor "$DATA/semcor" --fp32-report "$RUNS/quality-fp32.json" --threads 2 --out assets/quality.json
$CLI ship --cards assets/quality.json --command "$MEASURE" assets/bert-eltec assets/elmo-eltec assets/static-eltec

# The fine-tuned example for the "What fine-tuning changes" page: the shipped BERT fine-tuned on SemCor's coarse
# parts of speech (`pos`), from the shipped assets/bert-eltec (named by its short name, so finetune.json records no
# path of this machine). Its card holds the dev/test figures the run measured on SemCor's held-out Brown files.
if [ "$STAGE" = all ]; then
  $CLI finetune --model bert-eltec --task pos --out "$RUNS/bert-eltec-pos" --steps 1500 --batch-size 32 --seed 0 \
    --threads 1 --no-progress $([ -f "$RUNS/bert-eltec-pos/run.json" ] && echo --resume || true)
fi
$CLI ship --fp32 "$RUNS/bert-eltec-pos" assets/bert-eltec-pos
