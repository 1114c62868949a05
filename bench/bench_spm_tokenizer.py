"""What reading a tokenizer from a SentencePiece model costs (DeBERTa-v3 ships only spm.model, so transformers
converts it on every load), next to reading the tokenizer.json the conversion could have been saved as.

The SentencePiece model: a small Unigram model trained here, padded with made-up pieces to DeBERTa-v3's 128,000
(conversion walks every piece; training a real 128k model takes minutes). Run in a fresh process; prints a table of
medians:

    python bench/bench_spm_tokenizer.py [--pieces 128000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

TEXT = """The old bank by the river was steep and muddy after the long winter rains.
She deposited the cheque at the bank yesterday morning before walking to work.
Children played football in the park while their parents watched from benches.
Seven brave explorers crossed frozen mountains looking for a hidden valley.
Vivid yellow flowers grew along the edge of the zigzagging country road.
"""


def _spm_model(folder: Path, pieces: int) -> Path:
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2

    (folder / "text.txt").write_text(TEXT)
    sentencepiece.SentencePieceTrainer.train(
        input=str(folder / "text.txt"), model_prefix=str(folder / "small"), vocab_size=60, model_type="unigram",
        pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]",
        unk_piece="[UNK]", minloglevel=2, num_threads=1)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString((folder / "small.model").read_bytes())
    lowest = min(p.score for p in proto.pieces if p.type == p.NORMAL)
    for i in range(pieces - len(proto.pieces)):
        piece = proto.pieces.add()
        piece.piece, piece.score = f"\u2581w{i:06d}", lowest - 1 - i / pieces
    model = folder / "spm.model"
    model.write_bytes(proto.SerializeToString())
    return model


def _timed(fn, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pieces", type=int, default=128_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import transformers

    from ctxmodels.formats.transformers_models import load_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spm_only = root / "spm-only"
        spm_only.mkdir()
        _spm_model(spm_only, args.pieces)
        for f in (spm_only / "text.txt", spm_only / "small.model", spm_only / "small.vocab"):
            f.unlink()
        (spm_only / "config.json").write_text(json.dumps({"model_type": "deberta-v2"}))
        (spm_only / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "vocab_type": "spm"}))

        start = time.perf_counter()
        fast = transformers.AutoTokenizer.from_pretrained(spm_only, local_files_only=True)
        first = time.perf_counter() - start
        with_json = root / "with-tokenizer-json"
        fast.save_pretrained(with_json)
        (with_json / "spm.model").unlink(missing_ok=True)
        (with_json / "config.json").write_text(json.dumps({"model_type": "deberta-v2"}))

        rows = [("first conversion in this process (imports included)", first, [first])]
        rows.append(("spm.model -> fast tokenizer (transformers)",
                     *_timed(lambda: transformers.AutoTokenizer.from_pretrained(spm_only, local_files_only=True),
                             args.repeat)))
        rows.append(("tokenizer.json (transformers)",
                     *_timed(lambda: transformers.AutoTokenizer.from_pretrained(with_json, local_files_only=True),
                             args.repeat)))
        rows.append(("spm.model through ctxmodels' load_tokenizer",
                     *_timed(lambda: load_tokenizer(spm_only), args.repeat)))
        print(f"{len(fast):,} pieces (spm.model {(spm_only / 'spm.model').stat().st_size / 1e6:.1f} MB, "
              f"tokenizer.json {(with_json / 'tokenizer.json').stat().st_size / 1e6:.1f} MB), "
              f"{args.repeat} runs, median seconds")
        print(f"{'what':55} {'median s':>9}  runs")
        for what, median, times in rows:
            print(f"{what:55} {median:9.3f}  {' '.join(f'{t:.3f}' for t in times)}")


if __name__ == "__main__":
    main()
