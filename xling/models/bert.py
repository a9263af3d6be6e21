"""BERT masked-LM pretraining from scratch, made to survive cluster time limits and preemption.

The studies compare small BERTs trained on controlled corpora, so the trainer is deliberately plain
(HF `run_mlm.py` recipe: packed blocks, 80/10/10 dynamic masking, AdamW with linear warm-up and a linear or
inverse-square-root decay; the final model, or the checkpoint of the best dev perplexity: xling.models.selection)
but every source of randomness is a pure function of (seed, step[, rank]). That is what makes a
killed-and-resumed run reach bit-identical weights on CPU, and a DDP run follow the same trajectory
as a single process with the same global batch:

* data order: a permutation per epoch from (seed, epoch); step t takes positions [t*B, (t+1)*B) of
  the endless concatenation of those permutations, each rank a contiguous slice of them;
* masking: one generator seeded from (seed, step) masks the whole global batch on every rank;
* dropout: the torch RNG is re-seeded from (seed, step, rank) before each step.

Checkpoints (model, optimizer, scheduler, RNG states, data position, step) are single files written
atomically; SIGTERM/SIGUSR1 finish the current step, save, and exit with 128 + signal number.

Run as `python -m xling.models.bert ...` or `torchrun --standalone --nproc_per_node=N -m xling.models.bert ...`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Sequence

import torch

from xling.io import atomic_write
from xling.models.anchors import view_vocabularies_of
from xling.models.bert_hparams import (
    adamw,
    as_before,
    blocks_per_batch,
    learning_rate_schedule,
    load_hparams,
    model_config,
    resolve_hparams,
)
from xling.models.bert_output import restart_log, save_final, save_model_dir, save_views
from xling.models.devices import job_device
from xling.models.checkpoints import (
    RESUMABLE_CHANGES,
    Interrupted,
    StopSignal,
    checkpoint_key,
    hms,
    rng_state,
    set_rng_state,
    trajectory,
)
from xling.models.loop import Progress, TrainingLoop
from xling.models.mlm import MaskedLMLoss, build_views
from xling.models.mlm_data import (
    SPECIAL_TOKENS,
    BatchOrder,
    LanguageOrder,
    load_blocks,
    mask_tokens,
    read_vocab,
    seed_of,
)
from xling.models.selection import DevSelection
from xling.models.switching import BatchSwitch

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# training


def _distributed() -> tuple[int, int, int]:
    """(rank, world size, local rank) from the torchrun environment; (0, 1, 0) otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    return int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0"))


def _device(h: dict, local_rank: int) -> torch.device:
    name = h["device"] if h["device"] not in (None, "auto") else ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", local_rank)
    return device


def pretrain(token_paths: Sequence, vocab_path, out_dir, checkpoint_dir, hparams: dict, log_path=None,
             lowercase: bool = False, dev_path=None, switch_table=None) -> None:
    """Pretrain a BertForMaskedLM from scratch on the token files and write it to out_dir.

    hparams: the `bert` config object plus "window" (block length) and, for a Conneau et al. (2020) ablation,
    "ablation" (xling.models.ablation.check_spec: batches of one language, language-specific parameters or
    vocabularies; out_dir then holds one view per language). switch_table: the translations of extra anchors
    drawn per batch (xling.models.switching; the spec's code_switch). lowercase: the tokenizer setting the
    token files were made with (tokenizer.lowercase), recorded in out_dir's tokenizer files so that
    inference tokenizes text the same way. Checkpoints go to a subdirectory of
    checkpoint_dir named by `checkpoint_key` (settings and data): a rerun with the same settings and data
    resumes from its last complete checkpoint, a changed one trains beside it. The live log is
    training_log.tsv in that subdirectory; on completion it is copied into out_dir and to log_path (when
    given). Under torchrun (WORLD_SIZE > 1) this runs DDP; only rank 0 writes. Raises Interrupted (exit
    code 128 + signal) after a SIGTERM/SIGUSR1. dev_path: the token file of held-out text that selection
    dev_perplexity scores (its language is the file's name: the pivot's, or a monolingual model's own).
    """
    import torch.distributed as dist

    h = resolve_hparams(hparams)
    if "window" not in h:
        raise ValueError("hparams must give 'window' (block length in tokens, from the windows grid)")
    batch, max_steps = blocks_per_batch(h), int(h["max_steps"])
    if (h["selection"] == "dev_perplexity") != (dev_path is not None):
        raise ValueError(f"selection {h['selection']} with {'a' if dev_path else 'no'} dev token file: "
                         "dev_perplexity needs one (--dev-tokens), final none")
    out_dir, checkpoint_dir = Path(out_dir), Path(checkpoint_dir)
    rank, world, local_rank = _distributed()
    device = _device(h, local_rank)
    if batch % world:
        raise ValueError(f"the batch of {batch} blocks is not divisible by the {world} DDP processes")
    per_rank = batch // world
    micro = int(h["micro_batch_size"] or per_rank)
    if per_rank % micro:
        raise ValueError(f"per-process batch {per_rank} ({batch} blocks / {world} processes) "
                         f"is not a multiple of micro_batch_size {micro}")
    if h["warmup_steps"] >= max_steps:
        logger.warning("warmup_steps %d >= max_steps %d: the learning rate never reaches its peak",
                       h["warmup_steps"], max_steps)

    with StopSignal() as stop:
        control = None
        if world > 1:
            backend = "nccl" if device.type == "cuda" else "gloo"
            if device.type == "cuda":
                torch.cuda.set_device(device)
            dist.init_process_group(backend, **({"device_id": device} if device.type == "cuda" else {}))
            # the stop flag goes through gloo on the CPU so checking it every step never syncs the GPU
            control = dist.new_group(backend="gloo") if backend != "gloo" else None
        try:
            _train(h, token_paths, vocab_path, out_dir, checkpoint_dir, log_path, device, rank, world,
                   per_rank, micro, stop, control, lowercase, dev_path, switch_table)
        finally:
            if world > 1 and dist.is_initialized():
                dist.destroy_process_group()


def _train(h, token_paths, vocab_path, out_dir, checkpoint_dir, log_path, device, rank, world, per_rank,
           micro, stop, control, lowercase, dev_path=None, switch_table=None) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from transformers import BertForMaskedLM

    window, batch, seed, max_steps = int(h["window"]), blocks_per_batch(h), int(h["seed"]), int(h["max_steps"])
    cuda = device.type == "cuda"
    # bf16 autocast of the forward and loss on CPU and CUDA alike; weights, gradients, AdamW state and
    # checkpoints stay fp32. A number-changing setting, so it is part of the checkpoint key.
    bf16 = h["precision"] == "bf16"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    spec = h.get("ablation")
    vocab_paths = [vocab_path] if isinstance(vocab_path, (str, Path)) else list(vocab_path)
    vocab_path = vocab_paths[0]
    vocabularies = None if spec is None else view_vocabularies_of(spec["anchors"], vocab_paths, token_paths,
                                                                  SPECIAL_TOKENS)
    if vocabularies is not None:
        views_vocab = {lang: {p: i for i, p in enumerate(pieces)} for lang, pieces in vocabularies.items()}
        vocab = next(iter(views_vocab.values()))  # the special ids and the size are every language's
        blocks, languages = load_blocks(token_paths, vocab_path, window, vocabs=views_vocab,
                                        blocks=h["blocks"], seed=seed)
    else:
        views_vocab = None
        vocab = read_vocab(vocab_path)
        blocks, languages = load_blocks(token_paths, vocab_path, window, blocks=h["blocks"], seed=seed)
    codes = list(dict.fromkeys(languages))
    n_blocks = len(blocks)
    fingerprint = zlib.crc32(blocks.numpy().tobytes())
    dev_blocks = dev_language = None
    if dev_path is not None:  # its blocks in the fingerprint: another dev text selects afresh
        dev_blocks, dev_languages = load_blocks([dev_path], vocab_path, window, vocabs=views_vocab,
                                                 blocks=h["blocks"], seed=seed)
        dev_language = dev_languages[0]
        if spec is not None and dev_language not in codes:
            raise ValueError(f"dev text {dev_path} is in {dev_language}, which the model {codes} has no view of")
        fingerprint = zlib.crc32(dev_blocks.numpy().tobytes(), fingerprint)
    if switch_table:  # per-batch code-switching: its translations are data too
        fingerprint = zlib.crc32(Path(switch_table).read_bytes(), fingerprint)
    checkpoint_dir = checkpoint_dir / checkpoint_key(as_before(h), n_blocks, fingerprint, len(vocab))
    special = [vocab[t] for t in SPECIAL_TOKENS]
    logger.info("%d blocks of %d tokens (%s); global batch %d = %d process(es) x %d x %d accumulation; "
                "device %s, %s", n_blocks, window, ", ".join(f"{l} {languages.count(l)}" for l in dict.fromkeys(languages)),
                batch, world, micro, per_rank // micro, device, "bf16 autocast" if bf16 else "fp32")

    torch.manual_seed(seed)
    config = model_config(h, len(vocab))
    config.pad_token_id = vocab["[PAD]"]
    mlm = (BertForMaskedLM(config) if spec is None else build_views(config, codes, spec)).to(device)
    mlm.train()
    optimizer = adamw(mlm, h, fused=cuda)
    scheduler = learning_rate_schedule(optimizer, h)
    logger.info("BertForMaskedLM with %.1fM parameters; checkpoints in %s",
                sum(p.numel() for p in mlm.parameters()) / 1e6, checkpoint_dir)

    live_log = checkpoint_dir / "training_log.tsv"

    def content() -> dict:
        epoch, index = order.position(loop.step)
        return {"epoch": epoch, "index": index, "model": mlm.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": rng_state(), "hparams": trajectory(as_before(h)),
                "n_blocks": n_blocks, "fingerprint": fingerprint, "vocab_size": len(vocab), "world_size": world,
                **({"selection": dev.state()} if dev else {})}

    def restore(state: dict) -> str:  # the directory's name says what it holds; these checks catch one moved by hand
        changed = {k: (state["hparams"].get(k), v) for k, v in trajectory(as_before(h)).items() if state["hparams"].get(k) != v}
        if changed:
            raise ValueError(f"{path}: hyper-parameters differ from the checkpoint (checkpoint, now): {changed}; "
                             f"{checkpoint_dir} holds another setting's checkpoints: delete it")
        if (state["n_blocks"], state["fingerprint"], state["vocab_size"]) != (n_blocks, fingerprint, len(vocab)):
            raise ValueError(f"{path}: the token files or vocabulary differ from this checkpoint's "
                             f"({state['n_blocks']} blocks then, {n_blocks} now); delete {checkpoint_dir} to restart")
        mlm.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        if dev:
            dev.restore(state.get("selection"))
        return f"epoch {state['epoch']}, index {state['index']} (saved on {state['reason']})"

    def agree(signum: int) -> int:  # every rank stops at the same step; gloo on the CPU never syncs the GPU
        flag = torch.tensor([signum])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=control)
        return int(flag)

    loop = TrainingLoop(checkpoint_dir, max_steps, content, checkpoint_every=h["checkpoint_every"],
                        keep=h["keep_checkpoints"], log=logger, log_every_steps=h["log_every"], writer=rank == 0,
                        stop=stop, agree=agree if world > 1 else None, barrier=dist.barrier if world > 1 else None)
    dev = None
    if dev_blocks is not None:
        dev = DevSelection(dev_blocks, special, vocab["[MASK]"], len(vocab), h["mlm_probability"], seed,
                           h["dev_every"], checkpoint_dir, micro, writer=rank == 0)
        logger.info("selection: the best dev perplexity on %d %s blocks, every %d steps", len(dev_blocks),
                    dev_language, h["dev_every"])
    path = loop.latest()
    if world > 1:  # rank 0 decides, so a lagging shared file system cannot split the ranks
        chosen = [path]
        dist.broadcast_object_list(chosen, src=0, group=control)
        path = chosen[0]
    loop.resume(restore, path=path)
    if dev and loop.step == 0:
        dev.restore(None)  # a fresh start: no best file of an attempt that died before its first checkpoint
    if rank == 0:
        restart_log(live_log, loop.step)

    switch = None
    if spec is not None and spec.get("code_switch"):  # extra anchors drawn anew in every batch
        table = json.loads(Path(switch_table).read_text(encoding="utf-8"))
        switch, switched = BatchSwitch(table, vocab, **spec["code_switch"]), Counter()
    padded = switch is not None or h["blocks"]["short_seq_prob"] > 0  # blocks that end in [PAD]: masked out
    net = MaskedLMLoss(mlm, pad=vocab["[PAD]"] if padded else None)
    dev_language = dev_language if spec is not None else None

    def dev_score(x, positions, targets):  # the dev blocks' summed loss, through the language's view
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return MaskedLMLoss(mlm, pad=vocab["[PAD]"] if padded else None)(x, positions, targets, dev_language)

    separate = spec is not None and (spec["separate_embeddings"] or spec["separate_layers"] > 0)
    if world > 1:  # a batch of one language leaves the other languages' own parameters without gradient
        net = DistributedDataParallel(net, device_ids=[device.index] if cuda else None, gradient_as_bucket_view=True,
                                      find_unused_parameters=separate)
    if spec is None:
        order, candidates = BatchOrder(n_blocks, batch, seed), {}
    else:
        # the paper's sentence share: every corpus of a pair holds the same `sentences` (ablation.size)
        sentences = dict.fromkeys(languages, spec["sentences"]) if spec["sampling_share"] == "sentences" else None
        order = LanguageOrder(languages, batch, seed, float(spec["sampling_exponent"]), max_steps, sentences)
        logger.info("batches of one language, sampled with probabilities %s (%s share ** %s)",
                    dict(zip(order.codes, order.probabilities.round(4).tolist(), strict=True)), spec["sampling_share"],
                    spec["sampling_exponent"])
        # random replacement words from the batch's language where its embeddings are its own
        candidates = {}
        if spec["separate_embeddings"]:
            for lang in codes:
                ids = blocks[order.blocks[lang]].unique()
                candidates[lang] = ids[~torch.isin(ids, torch.tensor(special))]
    params = [p for p in mlm.parameters() if p.requires_grad]
    loss_sum = torch.zeros((), device=device)

    lr = scheduler.get_last_lr()[0]

    def report(progress: Progress) -> None:  # every rank: the loss is summed over them
        if world > 1:
            dist.all_reduce(loss_sum)
        mean_loss = float(loss_sum) / progress.steps
        loss_sum.zero_()
        if rank == 0:
            epoch = progress.step * batch / n_blocks
            row = (progress.step, f"{epoch:.4f}", f"{mean_loss:.6f}", f"{lr:.6e}", f"{progress.rate:.1f}",
                   f"{progress.elapsed:.2f}")
            log_handle.write("\t".join(map(str, row)) + "\n")
            log_handle.flush()
            logger.info("step %d/%d (%.1f%%) epoch %.2f loss %.4f lr %.2e, %s", progress.step, max_steps,
                        100 * progress.step / max_steps, epoch, mean_loss, lr, progress.text("tokens"))

    log_handle = open(live_log, "a", encoding="utf-8") if rank == 0 else None
    try:
        loop.check_stop()
        while loop.step < max_steps:
            step = loop.step
            idx = order.indices(step)
            language = order.language(step) if spec is not None else None
            batch_ids = blocks[idx]
            if switch is not None:
                batch_ids, counts = switch(batch_ids.numpy(), language, step)
                batch_ids = torch.from_numpy(batch_ids)
                switched.update(counts)
            inputs, labels = mask_tokens(batch_ids, special, vocab["[MASK]"], len(vocab), h["mlm_probability"],
                                         torch.Generator().manual_seed(seed_of(seed, "mask", step)),
                                         candidates.get(language))
            # every rank masks the whole global batch, so the loss normaliser is known everywhere
            n_masked = max(int((labels != -100).sum()), 1)
            inputs, labels = inputs[rank * per_rank : (rank + 1) * per_rank], labels[rank * per_rank : (rank + 1) * per_rank]
            torch.manual_seed(seed_of(seed, "dropout", step, rank))
            lr = scheduler.get_last_lr()[0]
            for start in range(0, per_rank, micro):
                x, y = inputs[start : start + micro], labels[start : start + micro]
                positions = (y.reshape(-1) != -100).nonzero().squeeze(1)
                targets = y.reshape(-1)[positions]
                if cuda:
                    x, positions, targets = (t.pin_memory().to(device, non_blocking=True) for t in (x, positions, targets))
                last = start + micro >= per_rank
                with (net.no_sync() if world > 1 and not last else contextlib.nullcontext()):
                    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                        loss = net(x, positions, targets, language)
                    (loss * (world / n_masked)).backward()
                loss_sum += loss.detach() / n_masked
            if h["max_grad_norm"]:
                torch.nn.utils.clip_grad_norm_(params, h["max_grad_norm"])
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            loop.advance()
            if dev and dev.due(loop.step, max_steps):  # the checkpoint after it records the best so far
                dev.evaluate(loop.step, mlm, dev_score, device)
                loop.save("dev evaluation")
                dev.prune()
            loop.after_step(report, work=batch * window)
    finally:
        if log_handle:
            log_handle.close()

    if switch is not None:
        logger.info("code-switched per batch: %s", dict(switched))
    if rank == 0:
        if dev:
            mlm.load_state_dict(dev.best_weights())
            logger.info("selected step %d of %d: dev perplexity %.3f", dev.best_step, max_steps, dev.best_perplexity)

        def write(tmp: Path) -> None:
            if spec is None:
                save_model_dir(mlm, vocab_path, tmp, lowercase)
            else:
                save_views(mlm, vocabularies, vocab_path, tmp, spec, lowercase)
            if dev:
                dev.write_log(tmp / "dev_log.tsv")

        save_final(write, out_dir, live_log)
        if log_path:
            with atomic_write(log_path) as handle:
                handle.write(live_log.read_text(encoding="utf-8"))
        logger.info("saved %s after %d steps in %s; checkpoints left in %s", out_dir, loop.step, hms(loop.elapsed),
                    checkpoint_dir)
    if world > 1:
        dist.barrier()


# ----------------------------------------------------------------------------------------------
# command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xling.models.bert", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", nargs="+", required=True, help="wordpiece token files, one per language")
    parser.add_argument("--vocab", nargs="+", required=True,
                        help="vocab.txt; an ablation with language-specific vocabularies: one per token file")
    parser.add_argument("--out", required=True, help="output model directory (HF save_pretrained)")
    parser.add_argument("--checkpoint-dir", required=True,
                        help="checkpoints, one subdirectory per setting; a rerun resumes from its own")
    parser.add_argument("--hparams", required=True, help="JSON object or JSON/YAML file (bert config + window)")
    parser.add_argument("--dev-tokens", default=None,
                        help="held-out token file the checkpoint of the best dev perplexity is selected on "
                             "(selection dev_perplexity)")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=False,
                        help="the token files are lowercased and accent-stripped (tokenizer.lowercase)")
    parser.add_argument("--switch", default=None,
                        help="translations table of extra anchors drawn per batch (xling.models.switching)")
    # --log-file: the same option under a name torchrun's own parser cannot mistake for an abbreviation
    # of its --log-dir/--logs-specs (argparse rejects `torchrun ... -m xling.models.bert --log F` as ambiguous)
    parser.add_argument("--log", "--log-file", dest="log", default=None,
                        help="also copy training_log.tsv here (use --log-file under torchrun)")
    # the workflow's job: one that asked for GPUs stops before training on the CPU (xling.models.devices)
    parser.add_argument("--rule", default="python -m xling.models.bert", help="the rule this job runs, for messages")
    parser.add_argument("--gpus", type=int, default=0, help="GPUs the job asked for (resources gpu)")
    runtime = sorted(RESUMABLE_CHANGES - {"threads"})  # threads: OMP_NUM_THREADS
    for key in runtime:
        parser.add_argument(f"--{key.replace('_', '-')}", dest=key, type=str if key == "device" else int,
                            help=f"bert.{key}, replacing --hparams' (changes no weight: a checkpoint resumes across it)")
    args = parser.parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"%(asctime)s [rank {rank}] %(levelname)s %(name)s: %(message)s")
    hparams = load_hparams(args.hparams)
    hparams.update({key: getattr(args, key) for key in runtime if getattr(args, key) is not None})
    job_device(args.rule, args.gpus, hparams.get("device"))
    try:
        pretrain(args.tokens, args.vocab, args.out, args.checkpoint_dir, hparams, args.log, lowercase=args.lowercase,
                 dev_path=args.dev_tokens, switch_table=args.switch)
    except Interrupted as e:
        logger.warning("interrupted; exiting with %d (rerun to resume)", e.code)
        return int(e.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
