"""Training throughput of xling.models.bert.pretrain against the Hugging Face Trainer with the run_mlm.py recipe.

Same model config, data, batch size, steps and hardware for both; the first `--warmup` steps are not
timed. Prints tokens/s of each, their ratio, model TFLOP/s and, with --peak-tflops, the model FLOPs
utilisation (MFU). Not a test: a script that prints figures.

    python benchmarks/pretrain_throughput.py --device cpu --hidden 64 --layers 2 --window 128 --batch 32 --steps 30
    python benchmarks/pretrain_throughput.py --device cuda --hidden 768 --layers 12 --window 512 --batch 32 \\
        --steps 60 --vocab-size 119547 --peak-tflops 989    # H100 SXM dense bf16

Model FLOPs per token (training = 3 x forward): 6 x (per-layer 4H^2 + 2HI weights) x L + 12 x L x T x H
(attention scores and values) + 6 x p x (H^2 + H x V) (the MLM head, needed only at the p = 15%
masked positions). The HF recipe projects every position onto the vocabulary; that extra work is
not counted as useful, so at large vocabularies its MFU is lower than the work it actually does.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.models import bert, mlm_data  # noqa: E402


def synthetic_corpus(d: Path, vocab_size: int, n_tokens: int, seed: int = 0) -> tuple[list[Path], Path]:
    """Random wordpieces, two languages, documents of 10-300 pieces."""
    rng = random.Random(seed)
    pieces = [f"p{i}" for i in range(vocab_size - 5)]
    (d / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + pieces) + "\n")
    paths = []
    for lang in ("en", "xx"):
        docs, total = [], 0
        while total < n_tokens // 2:
            n = rng.randint(10, 300)
            docs.append(" ".join(rng.choices(pieces, k=n)))
            total += n
        (d / f"{lang}.txt").write_text("\n".join(docs) + "\n")
        paths.append(d / f"{lang}.txt")
    return paths, d / "vocab.txt"


def flops_per_token(h: int, layers: int, inter: int, window: int, vocab: int, p: float) -> float:
    return 6 * layers * (4 * h * h + 2 * h * inter) + 12 * layers * window * h + 6 * p * (h * h + h * vocab)


def run_ours(tokens, vocab, hp: dict, warmup: int, work: Path) -> float:
    """tokens/s from the training log rows at steps `warmup` and `max_steps` (log_every = warmup)."""
    bert.pretrain(tokens, vocab, work / "ours", work / "ours_ckpt", {**hp, "log_every": warmup})
    rows = [r.split("\t") for r in (work / "ours" / "training_log.tsv").read_text().splitlines()[1:]]
    first, last = rows[0], rows[-1]
    assert int(first[0]) == warmup and int(last[0]) == hp["max_steps"]
    steps = hp["max_steps"] - warmup
    return steps * hp["batch_size"] * hp["window"] / (float(last[5]) - float(first[5]))


def run_hf(tokens, vocab, hp: dict, warmup: int, device: str, work: Path) -> float:
    """HF run_mlm.py: tokenize each document with [CLS]/[SEP], concatenate, group_texts into blocks,
    DataCollatorForLanguageModeling, Trainer with AdamW + linear schedule."""
    from transformers import (
        BertForMaskedLM,
        BertTokenizerFast,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    tok = BertTokenizerFast(vocab=str(vocab), do_lower_case=False, strip_accents=False)
    vocab_ids = mlm_data.read_vocab(vocab)
    window = hp["window"]
    examples = []
    for path in tokens:  # group_texts per language file, as run_mlm does per dataset
        concatenated = []
        for line in Path(path).read_text().splitlines():
            concatenated += (
                [tok.cls_token_id] + [vocab_ids.get(p, tok.unk_token_id) for p in line.split()] + [tok.sep_token_id]
            )
        total = len(concatenated) // window * window
        examples += [{"input_ids": concatenated[i : i + window]} for i in range(0, total, window)]

    cuda = device.startswith("cuda")
    torch.manual_seed(hp["seed"])
    model = BertForMaskedLM(bert.model_config(hp, len(vocab_ids)))
    times = {}

    class Timer(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step in (warmup, hp["max_steps"]):
                if cuda:
                    torch.cuda.synchronize()
                times[state.global_step] = time.perf_counter()

    args = TrainingArguments(
        output_dir=str(work / "hf"),
        per_device_train_batch_size=hp["batch_size"],
        max_steps=hp["max_steps"],
        learning_rate=hp["learning_rate"],
        warmup_steps=hp["warmup_steps"],
        weight_decay=hp["weight_decay"],
        adam_epsilon=hp["adam_epsilon"],
        max_grad_norm=hp["max_grad_norm"],
        lr_scheduler_type="linear",
        logging_steps=hp["max_steps"],
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        seed=hp["seed"],
        use_cpu=not cuda,
        bf16=cuda,
        tf32=cuda or None,
        dataloader_drop_last=True,
    )
    collator = DataCollatorForLanguageModeling(tok, mlm_probability=hp["mlm_probability"])
    Trainer(model=model, args=args, train_dataset=examples, data_collator=collator, callbacks=[Timer()]).train()
    return (hp["max_steps"] - warmup) * hp["batch_size"] * window / (times[hp["max_steps"]] - times[warmup])


def model_arguments(description: str) -> argparse.ArgumentParser:
    """A parser with the device and the BERT's shape, the arguments every throughput benchmark takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=None, help="default: hidden / 64, at least 1")
    p.add_argument("--intermediate", type=int, default=None, help="default: 4 x hidden")
    return p


def main() -> None:
    p = model_arguments(__doc__.split("\n\n")[0])
    p.add_argument("--window", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5, help="untimed steps (log_every of our trainer)")
    p.add_argument("--vocab-size", type=int, default=1000, help="synthetic vocabulary size")
    p.add_argument("--tokens", nargs="*", help="token files instead of the synthetic corpus (needs --vocab)")
    p.add_argument("--vocab", help="vocab.txt for --tokens")
    p.add_argument("--peak-tflops", type=float, default=None, help="peak TFLOP/s of the device, for MFU")
    p.add_argument("--only", choices=["ours", "hf"], default=None)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument("--repeats", type=int, default=1, help="alternate the two runs this often; report the best")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    logging.basicConfig(level=logging.WARNING)
    steps = -(-a.steps // a.warmup) * a.warmup  # our log rows fall every `warmup` steps
    heads = a.heads or max(1, a.hidden // 64)
    hp = bert.resolve_hparams(
        {
            "hidden_size": a.hidden,
            "num_layers": a.layers,
            "num_heads": heads,
            "intermediate_size": a.intermediate or 4 * a.hidden,
            "window": a.window,
            "batch_size": a.batch,
            "max_steps": steps,
            "warmup_steps": max(1, steps // 10),
            "checkpoint_every": 10 * steps,
            "device": a.device,
            "seed": 1,
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if a.tokens:
            tokens, vocab = [Path(t) for t in a.tokens], Path(a.vocab)
        else:
            tokens, vocab = synthetic_corpus(work, a.vocab_size, n_tokens=max(200_000, 4 * a.batch * a.window))
        n_vocab = len(mlm_data.read_vocab(vocab))
        fpt = flops_per_token(a.hidden, a.layers, hp["intermediate_size"], a.window, n_vocab, hp["mlm_probability"])
        print(
            json.dumps(
                {
                    "device": a.device,
                    "torch": torch.__version__,
                    "threads": torch.get_num_threads(),
                    **{
                        k: hp[k]
                        for k in (
                            "hidden_size",
                            "num_layers",
                            "num_heads",
                            "intermediate_size",
                            "window",
                            "batch_size",
                            "max_steps",
                        )
                    },
                    "vocab": n_vocab,
                    "timed_steps": steps - a.warmup,
                }
            )
        )
        results = {}
        for r in range(a.repeats):
            run = work / f"run{r}"
            if a.only != "hf":
                rate = run_ours(tokens, vocab, hp, a.warmup, run)
                results["xling.models.bert"] = max(rate, results.get("xling.models.bert", 0))
            if a.only != "ours":
                rate = run_hf(tokens, vocab, hp, a.warmup, a.device, run)
                results["HF Trainer (run_mlm)"] = max(rate, results.get("HF Trainer (run_mlm)", 0))
    for name, rate in results.items():
        tflops = rate * fpt / 1e12
        mfu = f"  MFU {100 * tflops / a.peak_tflops:.1f}%" if a.peak_tflops else ""
        print(f"{name:22s} {rate:12,.0f} tokens/s  {tflops:8.3f} model TFLOP/s{mfu}")
    if len(results) == 2:
        ours, hf = results.values()
        print(f"ratio xling.models.bert / HF Trainer: {ours / hf:.2f}")


if __name__ == "__main__":
    main()
