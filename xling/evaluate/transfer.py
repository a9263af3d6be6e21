"""Zero-shot transfer: score a fine-tuned model (xling.tune.finetune) on every language, as it is and with
the language-mean transforms of Liu et al. (2020) at one layer, through the shared shift hook.

  none       the fine-tuned model as it is
  zero_mean  for a model fine-tuned with zero-mean (English mean subtracted at `layer`): each language's
             own mean subtracted at `layer` when testing. Means by the pretrained model (short paper §5.1).
  mds        h + alpha * (R_en - R_xx) at `layer` when testing (Liu et al. 2020, Table 4), alpha chosen per
             language on that language's dev split from a grid, then applied to its test split. Means by the
             fine-tuned model (short paper §5.1).
  rotation-word, rotation-sentence
             h @ W_xx at the rotation's layer when testing a language other than the pivot (Cao et al. 2020,
             Table 1): W_xx the orthogonal map of the pretrained model's vectors of that language onto the
             pivot's, learned on word-aligned or sentence-aligned parallel text (xling.represent.rotation), so
             the classifier trained on the pivot reads rotated states.

Language means R_L are the mean hidden state at `layer` over the first `n` sentences of each language's
corpus sample (xling.evaluate.translation.sentence_means: `token` = over all positions chosen, `sentence` =
mean of per-sentence means).

Rows: one per (language, split, transform, alpha, metric), the columns of the transfer table (README); values
in percent. For mds, every alpha of the grid has dev rows (the curve alpha is chosen on) and the chosen one
has selected=True on dev and test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import torch

from xling.data.formats import iter_corpus_documents
from xling.data.transfer_tasks import TASK_METRIC
from xling.encode.encoder import Shift
from xling.evaluate.tasks import accuracy, attachment_scores, span_f1, upos_accuracy
from xling.evaluate.transfer_items import transfer_checks
from xling.models.ablation import is_language_specific, read_spec
from xling.represent.rotation import rotate_layer
from xling.tune.finetune import predict
from xling.tune.heads import build_model, load_bert, load_static

if TYPE_CHECKING:  # pandas only where the table is built: fine-tuning imports this module for score()
    import pandas as pd

logger = logging.getLogger(__name__)
#: the columns that name a row of one model's transfer table (its items carry them)
ITEM_KEYS = ("lang", "split", "transform", "alpha", "metric")


def score(task: str, examples: list, predictions: list, labels: Sequence[str], ner_repair: bool = True) -> dict:
    """{metric: (percent, n)} of predictions (label ids, as the heads return them) against the gold examples."""
    if task == "xnli":
        return {"accuracy": accuracy([e[2] for e in examples], [labels[p] for p in predictions])}
    if task == "pos":
        return {
            "upos": upos_accuracy(
                [[t["upos"] for t in s] for s in examples], [[labels[i] for i in p] for p in predictions]
            )
        }
    if task == "parsing":
        s = attachment_scores(
            examples, [heads for heads, _ in predictions], [[labels[i] for i in rels] for _, rels in predictions]
        )
        return {"uas": (s.uas, s.n), "las": (s.las, s.n)}
    if task == "ner":
        s = span_f1([tags for _, tags in examples], [[labels[i] for i in p] for p in predictions], repair=ner_repair)
        return {"f1": (s.f1, s.n), "precision": (s.precision, s.n), "recall": (s.recall, s.n)}
    raise ValueError(f"unknown task {task!r}")


def corpus_sentences(path, n: int | None, max_tokens: int | None = None) -> list[str]:
    """The first sentences of a corpus file (documents of one sentence per line): at most `n` of them, and no
    more once their whitespace tokens reach `max_tokens` (the sentence that reaches it is kept, so the text
    is never empty); None = no such cap. Liu et al. (2020, short, §5.1) count the language mean's text in
    tokens (~5M per language), so a token cap keeps languages of short and long sentences comparable."""
    out: list[str] = []
    tokens = 0
    for document in iter_corpus_documents(path):
        for sentence in document:
            if (n is not None and len(out) >= n) or (max_tokens is not None and tokens >= max_tokens):
                return out
            out.append(sentence)
            tokens += len(sentence.split())
    return out


def treebank_sentences(path, n: int | None, max_tokens: int | None = None) -> list[str]:
    """The first sentences of a CoNLL-U file as text, capped as corpus_sentences: each sentence's `# text` (its
    words joined by spaces where it has none). The language mean of a low-resource treebank, whose language has no
    pinned corpus, is taken over its own train split (transfer.parsing.low_resource)."""
    from xling.data.formats import read_conllu

    out: list[str] = []
    tokens = 0
    for sentence in read_conllu(path):
        if (n is not None and len(out) >= n) or (max_tokens is not None and tokens >= max_tokens):
            break
        text = sentence.metadata.get("text") or " ".join(token["form"] for token in sentence)
        out.append(text)
        tokens += len(text.split())
    return out


def alpha_without_dev(rule: str | float, selected: Sequence[float], grid: Sequence[float]) -> float | None:
    """The MDS alpha of a language without a dev split (the paper states no rule; transfer.parsing.low_resource
    .alpha): a number is used as it is; `dev_languages` = the mean of the alphas the same model `selected` on the
    other languages' dev splits, rounded to the nearest alpha of `grid` (ties: the smaller); None when no language
    selected one."""
    if not isinstance(rule, str):
        return float(rule)
    if rule != "dev_languages":
        raise ValueError(f"unknown alpha rule {rule!r} (known: dev_languages, or a number)")
    if not selected:
        return None
    mean = float(np.mean(selected))
    return min(grid, key=lambda alpha: (round(abs(alpha - mean), 9), alpha))


def language_means(
    model_path,
    sentences: dict[str, list[str]],
    layer: int,
    *,
    stat: str,
    positions: str,
    batch_size: int,
    device,
    max_length: int | None = None,
    revision: str | None = None,
) -> dict[str, np.ndarray]:
    """{lang: mean [H] at `layer`} of a BERT directory or checkpoint over each language's sentences."""
    from xling.encode.encoder import Encoder
    from xling.evaluate.translation import sentence_means

    encoder = Encoder.from_pretrained(model_path, device=device, revision=revision, max_length=max_length)
    return {
        lang: sentence_means(encoder, texts, batch_size, positions)[stat][layer] for lang, texts in sentences.items()
    }


def load_finetuned(path, vectors=None, vocab=None, lowercase: bool = False, pretrained=None, language=None):
    """(record, model, backbone) of a fine-tuned output directory; static models also need their vectors and
    the run's vocabulary (the frozen embedding is not stored twice). pretrained, language: an ablated model
    (xling.models.ablation) tested on `language`: its view of that language with the fine-tuned shared
    parameters (the view's own were frozen while fine-tuning on the pivot's view)."""
    path = Path(path)
    record = json.loads((path / "finetune.json").read_text(encoding="utf-8"))
    if record["backbone"] == "bert":
        backbone = load_bert(path / "encoder")
        spec = read_spec(pretrained) if pretrained is not None else None
        if spec is not None and language != record["pivot"]:
            backbone = _on_view(backbone, pretrained, language, spec["spec"], path)
    else:
        backbone = load_static(vectors, vocab, lowercase)
    model = build_model(record["task"], backbone, len(record["labels"]), record["settings"])
    missing, unexpected = model.load_state_dict(
        torch.load(path / "head.pt", map_location="cpu", weights_only=True), strict=False
    )
    stray = [k for k in missing if not (k.startswith("encoder.") or k == "embed.weight")]
    if stray or unexpected:
        raise ValueError(
            f"{path}/head.pt does not fit the {record['task']} model: missing {stray}, unexpected {unexpected}"
        )
    return record, model, backbone


def _on_view(tuned, pretrained, language: str, spec: dict, path: Path):
    """`language`'s view of the ablated model `pretrained` carrying the shared parameters of `tuned`."""
    view = load_bert(pretrained, language=language)
    shared = {k: v for k, v in tuned.encoder.bert.state_dict().items() if not is_language_specific(k, spec)}
    missing, unexpected = view.encoder.bert.load_state_dict(shared, strict=False)
    stray = [k for k in missing if not is_language_specific(k, spec)]
    if stray or unexpected:
        raise ValueError(
            f"{path}/encoder does not fit the {language} view of {pretrained}: missing {stray}, unexpected {unexpected}"
        )
    return view


@dataclass(frozen=True)
class TransferTest:
    """How a fine-tuned model is tested (module docstring): the `pivot`; the `layer` and `positions` of the
    zero-mean or MDS shift; pretrained_means ({lang: R_lang at layer}, for a model fine-tuned with zero-mean);
    `mds` with finetuned_means and the `alphas` to choose from on dev; `rotations` ({kind: {lang: W}}) at
    `rotation_layer`; NER repair; batch size and device. `low_resource`: test-only languages without a dev split
    (their rows carry low_resource = True), scored after the others, MDS at the alpha alpha_without_dev gives by
    `low_resource_alpha`."""

    pivot: str
    layer: int = -1
    alphas: Sequence[float] = ()
    positions: str = "all"
    mds: bool = False
    pretrained_means: dict[str, np.ndarray] | None = None
    finetuned_means: dict[str, np.ndarray] | None = None
    batch_size: int = 64
    device: str | torch.device = "cpu"
    ner_repair: bool = True
    rotations: Mapping[str, Mapping[str, np.ndarray]] | None = None
    rotation_layer: int = -1
    low_resource: Sequence[str] = ()
    low_resource_alpha: str | float = "dev_languages"


def evaluate(
    path,
    data: dict[str, dict[str, list]],
    test: TransferTest,
    *,
    vectors=None,
    vocab=None,
    lowercase: bool = False,
    pretrained=None,
) -> pd.DataFrame:
    """The table of `evaluate_items` (its arguments), without the items."""
    return evaluate_items(path, data, test, vectors=vectors, vocab=vocab, lowercase=lowercase, pretrained=pretrained)[0]


def evaluate_items(
    path,
    data: dict[str, dict[str, list]],
    test: TransferTest,
    *,
    vectors=None,
    vocab=None,
    lowercase: bool = False,
    pretrained=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, items): score the fine-tuned model at `path` on data = {lang: {"dev": examples, "test": examples}}.

    A model fine-tuned with zero-mean is tested with zero-mean (test.pretrained_means). Otherwise it is tested
    as it is and, when test.mds (a BERT), with MDS toward the pivot for every other language (finetuned_means),
    alpha chosen on dev, and with each of test.rotations for the languages that have one. vectors, vocab,
    lowercase: a static-vector model's (`load_finetuned`). pretrained: the pretrained model's directory; an
    ablated one tests each language on its own view (`load_finetuned`).

    Each row also gets its `chance`, `chance_how` and the predictions' `flag` (xling.evaluate.transfer_items);
    `learn_check` marks the pivot's dev row of the task's metric, on which the gather step judges whether the
    fine-tuning learned. items: one row per (table row, test item) with the row's keys (lang, split, transform,
    alpha, metric), `item` (example or sentence index), `numerator`, `denominator`."""
    pivot, layer, alphas, positions, mds = test.pivot, test.layer, test.alphas, test.positions, test.mds
    pretrained_means, finetuned_means, rotations = test.pretrained_means, test.finetuned_means, test.rotations
    batch_size, ner_repair, rotation_layer = test.batch_size, test.ner_repair, test.rotation_layer
    record, model, backbone = load_finetuned(path, vectors, vocab, lowercase)
    ablated = pretrained is not None and read_spec(pretrained) is not None
    models = {
        lang: load_finetuned(path, pretrained=pretrained, language=lang)[1:]
        if ablated and lang != pivot
        else (model, backbone)
        for lang in data
    }
    device = torch.device(test.device)
    task, labels = record["task"], record["labels"]
    features = {}
    for lang, splits in data.items():
        models[lang][0].to(device)
        featurize = models[lang][1].featurizer(task, record["settings"]["max_length"], labels)
        features[lang] = {split: featurize(examples) for split, examples in splits.items()}
    encoder = backbone.encoder
    import pandas as pd  # here, not at the top: fine-tuning imports this module for score() alone

    rows: list[dict] = []
    items: list[pd.DataFrame] = []

    def run(
        lang: str,
        split: str,
        transform: str,
        delta: np.ndarray | None,
        alpha: float | None,
        selected: bool,
        rotation: np.ndarray | None = None,
    ) -> float:
        model, backbone = models[lang]
        encoder = backbone.encoder
        if encoder is not None:
            encoder.shift = (
                None if delta is None else Shift(layer, torch.as_tensor(delta, dtype=torch.float32), positions)
            )
        with rotate_layer(encoder.bert, rotation_layer, rotation) if rotation is not None else nullcontext():
            predictions = predict(model, task, features[lang][split], batch_size, device, backbone.pad_id)
        scores = score(task, data[lang][split], predictions, labels, ner_repair)
        checks = transfer_checks(task, data[lang][split], predictions, labels, ner_repair)
        at = rotation_layer if rotation is not None else (-1 if delta is None else layer)
        for metric, (value, n) in scores.items():
            level = checks.chances.get(metric)
            rows.append(
                {
                    "lang": lang,
                    "split": split,
                    "transform": transform,
                    "layer": at,
                    "alpha": np.nan if alpha is None else float(alpha),
                    "selected": selected,
                    "metric": metric,
                    "value": float(value),
                    "n": int(n),
                    "chance": np.nan if level is None else level.value,
                    "chance_how": None if level is None else level.how,
                    "flag": checks.flag,
                    "learn_check": lang == pivot
                    and split == "dev"
                    and transform in ("none", "zero_mean")
                    and metric == TASK_METRIC[task],
                    "low_resource": lang in low_resource,
                }
            )
            keys = {key: rows[-1][key] for key in ITEM_KEYS}
            counts = np.asarray(checks.items[metric], dtype=np.int64).reshape(-1, 2)
            items.append(
                pd.DataFrame(
                    {**keys, "item": np.arange(len(counts)), "numerator": counts[:, 0], "denominator": counts[:, 1]}
                )
            )
        return scores[TASK_METRIC[task]][0]

    low_resource, chosen = set(test.low_resource), []  # chosen: the alphas selected on dev, for the rule
    for lang in sorted(data, key=lambda lang: (lang in low_resource, lang)):  # the low-resource ones last
        if record["zero_mean"]:
            for split in data[lang]:
                run(lang, split, "zero_mean", -np.asarray(pretrained_means[lang]), None, True)
            continue
        for split in data[lang]:
            run(lang, split, "none", None, None, True)
        for kind, by_lang in (rotations or {}).items():
            if lang != pivot and lang in by_lang and encoder is not None:
                for split in data[lang]:
                    run(lang, split, f"rotation-{kind}", None, None, True, rotation=by_lang[lang])
        if not (mds and encoder is not None and lang != pivot):
            continue
        if "dev" not in data[lang] and lang in low_resource:  # no dev split: alpha by the rule
            alpha = alpha_without_dev(test.low_resource_alpha, chosen, alphas)
            if alpha is None:
                logger.warning("%s: no dev split and no other language's alpha: no MDS rows", lang)
            elif "test" in data[lang]:
                shift = np.asarray(finetuned_means[pivot]) - np.asarray(finetuned_means[lang])
                run(lang, "test", "mds", alpha * shift, alpha, True)
            continue
        if "dev" not in data[lang]:  # alpha is chosen on dev only: no dev split, no MDS row
            logger.warning("%s: no dev split, so no alpha can be chosen: no MDS rows", lang)
            continue
        shift = np.asarray(finetuned_means[pivot]) - np.asarray(finetuned_means[lang])
        curve = {alpha: run(lang, "dev", "mds", alpha * shift, alpha, False) for alpha in alphas}
        best = max(curve.items(), key=lambda item: (item[1], -abs(item[0])))[0]  # ties: the smaller shift
        chosen.append(best)
        for row in rows:
            if row["lang"] == lang and row["transform"] == "mds" and row["alpha"] == best:
                row["selected"] = True
        logger.info(
            "%s: MDS alpha %s chosen on dev (%s %.2f; unshifted %.2f)",
            lang,
            best,
            TASK_METRIC[task],
            curve[best],
            next(
                r["value"]
                for r in rows
                if r["lang"] == lang
                and r["split"] == "dev"
                and r["transform"] == "none"
                and r["metric"] == TASK_METRIC[task]
            ),
        )
        if "test" in data[lang]:
            run(lang, "test", "mds", best * shift, best, True)
    if encoder is not None:
        encoder.shift = None
    table = pd.DataFrame(rows)
    table["task"] = task
    table["freeze"] = record["freeze"]
    table["train_transform"] = "zero_mean" if record["zero_mean"] else "none"
    table["seed"] = record["seed"]
    table["selection"] = record["selection"]
    table["best_epoch"] = record["best_epoch"]
    table["finetune_settings"] = json.dumps(record["settings"], sort_keys=True)
    return table, pd.concat(items, ignore_index=True)
