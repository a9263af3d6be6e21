"""Fine-tuning throughput of xling.tune.finetune against the Hugging Face Trainer with the run_glue.py recipe.

Both fine-tune the same from-scratch BERT (saved once, loaded by each) on the same synthetic XNLI-like
pairs (random wordpiece sentences, 3 labels) for the same number of optimizer steps and batch size, in one
epoch: AdamW with a linear warm-up and decay, gradients clipped at 1, dropout 0.1, fp32 on both (finetune
has no mixed precision). Pairs are cut to --max-length (longest first) and padded per batch to the
batch's longest pair (ours: xling.tune.heads.collate; HF: DataCollatorWithPadding). No grouping by
length on either side: the Trainer reads the pairs in finetune's shuffled order for the seed with its
sequential sampler, so both train on the same batches, tokens and padding (checked). The two differ
only where their recipes do: BertForSequenceClassification adds the pooler (one H x H layer on [CLS])
and the Trainer uses its default optimizer, fused AdamW for torch >= 2.8; finetune puts a linear layer
on [CLS] and uses torch's default AdamW (--hf-optim adamw_torch gives the Trainer the same, to compare
the loops alone).

Timing: the steps after the first --warmup, on both sides from the end of step --warmup to the end of
the last step (CUDA synchronised), taken by a callback after the optimizer step: finetune's `on_step`
and a TrainerCallback's on_step_end. tokens/s counts non-pad input positions (the attention mask's sum,
as finetune's progress counts them and the Trainer's include_num_input_tokens_seen="non_padding").
Nothing else runs inside the timed steps: finetune checkpoints at the epoch end only (checkpoint_every
> steps) and scores its one-example English dev set after the last step; the Trainer never evaluates
or saves. The two take turns to go first in the process (neither gains from a process the other has
warmed up) and each side's best repeat is reported. Not a test: a script that prints figures.

    python benchmarks/finetune_throughput.py --device cpu --threads 2 --hidden 64 --layers 2 --batch 32 --steps 40
    python benchmarks/finetune_throughput.py --device cuda --hidden 768 --layers 12 --vocab-size 119547 --steps 100
"""

from __future__ import annotations

import functools
import json
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.data.formats import XNLI_LABELS  # noqa: E402
from xling.evaluate.transfer import score  # noqa: E402
from xling.models import bert  # noqa: E402
from xling.tune import finetune  # noqa: E402
from xling.tune.heads import load_bert  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark's shared arguments
from pretrain_throughput import model_arguments  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SEED = 1  # of the model's initialisation and of fine-tuning, both sides


def synthetic_pairs(vocab_size: int, n: int, seed: int = 0) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Wordpieces p0.. and n (premise, hypothesis, label) of 10-70 and 5-30 random pieces (about the
    lengths of MultiNLI's sentences in wordpieces)."""
    rng = random.Random(seed)
    pieces = [f"p{i}" for i in range(vocab_size - len(SPECIALS))]
    pairs = [
        (
            " ".join(rng.choices(pieces, k=rng.randint(10, 70))),
            " ".join(rng.choices(pieces, k=rng.randint(5, 30))),
            rng.choice(XNLI_LABELS),
        )
        for _ in range(n)
    ]
    return pieces, pairs


def save_model(d: Path, pieces: list[str], hp: dict) -> Path:
    """A from-scratch BERT with its tokenizer, as xling.models.bert writes one; both sides load it."""
    from transformers import BertForMaskedLM, BertTokenizerFast

    d.mkdir(parents=True)
    (d / "vocab.txt").write_text("\n".join(SPECIALS + pieces) + "\n")
    BertTokenizerFast(vocab=str(d / "vocab.txt"), do_lower_case=False, strip_accents=False).save_pretrained(d)
    torch.manual_seed(SEED)
    BertForMaskedLM(bert.model_config(hp, len(SPECIALS) + len(pieces))).save_pretrained(d)
    return d


def timed(marks: dict, warmup: int, steps: int) -> dict:
    """Steps, tokens and seconds between the marks (time, tokens so far) at the ends of steps warmup and steps."""
    (t0, n0), (t1, n1) = marks[warmup], marks[steps]
    return {"steps": steps - warmup, "tokens": n1 - n0, "seconds": t1 - t0}


def rate(run: dict) -> float:
    return run["tokens"] / run["seconds"]


def run_ours(model_dir: Path, train: list, settings: dict, warmup: int, device: str, work: Path) -> dict:
    steps = len(train) // settings["batch_size"]
    marks = {}

    def on_step(state: dict) -> None:
        if state["step"] in (warmup, steps):
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            marks[state["step"]] = (time.perf_counter(), state["pieces"])

    finetune.finetune(
        "xnli",
        load_bert(model_dir),
        train,
        {"en": train[:1]},
        work / "ours",
        work / "ours_ckpt",
        settings,
        finetune.FinetuneRun(seed=SEED, device=device, checkpoint_every=10 * steps),
        score=score,
        on_step=on_step,
    )
    return timed(marks, warmup, steps)


def run_hf(
    model_dir: Path, train: list, settings: dict, warmup: int, device: str, work: Path, optim: str | None = None
) -> dict:
    """HF run_glue.py: tokenize the pairs (truncation, no padding), DataCollatorWithPadding,
    BertForSequenceClassification, Trainer with AdamW + linear schedule."""
    from transformers import (
        BertForSequenceClassification,
        BertTokenizerFast,
        DataCollatorWithPadding,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    tok = BertTokenizerFast.from_pretrained(model_dir)
    encoded = tok(
        [p for p, _, _ in train], [h for _, h, _ in train], truncation=True, max_length=settings["max_length"]
    )
    label_id = {label: i for i, label in enumerate(XNLI_LABELS)}
    examples = [
        {**{k: encoded[k][i] for k in encoded}, "labels": label_id[train[i][2]]}
        for i in finetune.epoch_order(len(train), SEED, 0)
    ]  # finetune's first epoch, read in order

    cuda = device.startswith("cuda")
    steps = len(train) // settings["batch_size"]
    model = BertForSequenceClassification.from_pretrained(model_dir, num_labels=len(XNLI_LABELS))
    marks = {}

    class Timer(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step in (warmup, steps):
                if cuda:
                    torch.cuda.synchronize()
                marks[state.global_step] = (time.perf_counter(), state.num_input_tokens_seen)

    args = TrainingArguments(
        output_dir=str(work / "hf"),
        per_device_train_batch_size=settings["batch_size"],
        max_steps=steps,
        learning_rate=settings["learning_rate"],
        warmup_steps=round(settings["warmup"] * steps),
        weight_decay=settings["weight_decay"],
        max_grad_norm=1.0,
        lr_scheduler_type="linear",
        train_sampling_strategy="sequential",
        eval_strategy="no",
        save_strategy="no",
        logging_steps=steps,
        report_to=[],
        disable_tqdm=True,
        seed=SEED,
        use_cpu=not cuda,
        include_num_input_tokens_seen="non_padding",
        **({"optim": optim} if optim else {}),
    )
    Trainer(
        model=model, args=args, train_dataset=examples, data_collator=DataCollatorWithPadding(tok), callbacks=[Timer()]
    ).train()
    return {**timed(marks, warmup, steps), "optim": str(args.optim.value)}


def main() -> None:
    p = model_arguments(__doc__.split("\n\n")[0])
    p.add_argument("--vocab-size", type=int, default=1000, help="synthetic vocabulary size")
    p.add_argument("--max-length", type=int, default=128, help="pieces per pair with [CLS] and 2 [SEP]")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=40, help="optimizer steps (one epoch of steps x batch pairs)")
    p.add_argument("--warmup", type=int, default=5, help="untimed first steps")
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument(
        "--hf-optim",
        default=None,
        help="the Trainer's optimizer (default: its own, adamw_torch_fused for torch >= 2.8); "
        "adamw_torch is torch's default AdamW, as finetune uses: compares the loops alone",
    )
    p.add_argument("--only", choices=["ours", "hf"], default=None)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="run both this often, ours first on odd repeats, HF first on even; report the best of each",
    )
    a = p.parse_args()
    if not 0 < a.warmup < a.steps:
        p.error("--warmup must be in 1 .. --steps - 1")
    if a.threads:
        torch.set_num_threads(a.threads)
    logging.basicConfig(level=logging.WARNING)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # HF's classifier and pooler are new, as expected
    hf_logging.disable_progress_bar()
    hp = bert.resolve_hparams(
        {
            "hidden_size": a.hidden,
            "num_layers": a.layers,
            "num_heads": a.heads or max(1, a.hidden // 64),
            "intermediate_size": a.intermediate or 4 * a.hidden,
            "window": a.max_length,
        }
    )
    settings = {
        "epochs": 1,
        "batch_size": a.batch,
        "learning_rate": a.learning_rate,
        "warmup": 0.1,
        "weight_decay": 0.01,
        "dropout": 0.1,
        "max_length": a.max_length,
        "max_train": None,
    }
    pieces, train = synthetic_pairs(a.vocab_size, a.steps * a.batch)
    print(
        json.dumps(
            {
                "device": a.device,
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                **{k: hp[k] for k in ("hidden_size", "num_layers", "num_heads", "intermediate_size")},
                "vocab": a.vocab_size,
                "max_length": a.max_length,
                "batch_size": a.batch,
                "steps": a.steps,
                "timed_steps": a.steps - a.warmup,
                "learning_rate": a.learning_rate,
            }
        ),
        flush=True,
    )
    runners = {"xling finetune": run_ours, "HF Trainer (run_glue)": functools.partial(run_hf, optim=a.hf_optim)}
    if a.only:
        runners = {name: run for name, run in runners.items() if name.startswith("xling") == (a.only == "ours")}
    results: dict[str, list[dict]] = {name: [] for name in runners}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = save_model(work / "model", pieces, hp)
        for r in range(a.repeats):
            for name in list(runners)[:: -1 if r % 2 else 1]:
                results[name].append(runners[name](model_dir, train, settings, a.warmup, a.device, work / f"run{r}"))
            if len(runners) == 2:
                ours, hf = (runs[-1] for runs in results.values())
                if ours["tokens"] != hf["tokens"]:  # same batches on both sides, so this is a bug
                    raise SystemExit(f"the timed steps saw {ours['tokens']} vs {hf['tokens']} tokens")
                print(
                    f"repeat {r + 1}: {rate(ours):,.0f} vs {rate(hf):,.0f} tokens/s, ratio {rate(ours) / rate(hf):.2f}",
                    flush=True,
                )
    best = {name: max(runs, key=rate) for name, runs in results.items()}
    for name, run in best.items():
        optim = f"  ({run['optim']})" if "optim" in run else ""
        print(
            f"{name:22s} {rate(run):12,.0f} tokens/s  {run['steps'] / run['seconds']:7.2f} steps/s  "
            f"{run['tokens'] / run['steps'] / a.batch:.1f} tokens/pair{optim}"
        )
    if len(best) == 2:
        ours, hf = best.values()
        print(f"ratio xling finetune / HF Trainer: {rate(ours) / rate(hf):.2f} (best of {a.repeats})")


if __name__ == "__main__":
    main()
