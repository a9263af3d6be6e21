"""Snakemake entry point: one upstream format -> canonical files (xling.data.upstream), by params.kind."""

import tempfile
from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data import upstream  # noqa: E402

inp, out, params, lang = snakemake.input, snakemake.output, snakemake.params, snakemake.wildcards.get("lang")
kind = params.kind

if kind == "wikipedia":
    try:
        upstream.wikipedia_to_corpus(
            list(inp.shards), out[0], lang, params.n_sentences, min_fraction=params.min_fraction
        )
    except ValueError as err:  # too few sentences (not a format error): say which setting reads more
        if isinstance(err, upstream.FormatError):
            raise
        raise ValueError(f"{err}; read from {len(inp.shards)} shard(s): raise data.wikipedia.max_shards") from err
elif kind == "leipzig":
    upstream.leipzig_to_corpus(inp[0], out[0])
elif kind == "muse":  # via a folder holding just this file: a gzipped copy (en-xx.txt.gz) reads as en-xx.txt
    split = snakemake.wildcards.split
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, Path(inp[0]).name).symlink_to(Path(inp[0]).resolve())
        if split != "full" and Path(inp[0]).name.removesuffix(".gz") == f"en-{lang}.txt":  # only the full one staged
            upstream.muse_full_to_split(tmp, lang, split, out[0])
        else:
            upstream.muse_to_canonical(tmp, lang, {split: out[0]})
elif kind == "europarl":
    upstream.europarl_to_parallel(inp[0], lang, out.en, out.xx, tokenize=params.tokenize, max_pairs=params.max_pairs)
elif kind == "opus":
    upstream.opus_to_parallel(
        inp[0],
        params.corpus,
        lang,
        out.en,
        out.xx,
        tokenize=params.tokenize,
        tokenize_xx=params.tokenize_xx,
        max_pairs=params.max_pairs,
    )
elif kind in ("ud", "ud_folders"):  # the release archive, or staged treebank folders (read from their parent)
    source = inp[0] if kind == "ud" else Path(inp[0]).parent.parent
    upstream.ud_to_canonical(source, Path(out[0]).parent, params.treebanks, params.splits)
elif kind == "xnli_xtreme":  # staged dev sets: dev and test (and the train stand-in, below) cut from them
    out_dir = Path(out[0]).parent
    upstream.xtreme_xnli_stand_in(
        Path(inp[0]).parent,
        {(split, lang): out_dir / f"{split}-{lang}.tsv" for split in ("dev", "test") for lang in params.languages},
    )
elif kind == "xnli_xtreme_train":
    upstream.xtreme_xnli_stand_in(Path(inp[0]).parent, {("train", Path(out[0]).stem.split("-", 1)[1]): out[0]})
elif kind == "wikiann_xtreme":
    upstream.xtreme_wikiann_stand_in(Path(inp[0]).parent, Path(out[0]).parent, params.languages)
elif kind == "xnli":
    upstream.xnli_to_canonical(inp[0], Path(out[0]).parent, params.languages)
elif kind == "wikiann":
    upstream.wikiann_to_canonical(inp[0], Path(out[0]).parent, params.languages)
elif kind == "multinli":
    upstream.multinli_to_train(inp[0], out[0])
elif kind == "tatoeba":  # the folder holding both LASER files
    upstream.tatoeba_to_canonical(Path(inp[0]).parent, lang, Path(out.xx).parent)
elif kind == "bucc":
    upstream.bucc_to_canonical(inp[0], lang, Path(out.en).parent)
elif kind == "mbert_vocab":
    upstream.mbert_vocab(inp[0], out[0])
else:
    raise ValueError(f"unknown source kind {kind!r}")
