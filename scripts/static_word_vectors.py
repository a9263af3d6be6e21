"""Snakemake entry point: word-type vectors of a static model in the representation-store schema."""

from pathlib import Path

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.io import atomic_path  # noqa: E402
from xling.models.static import word_vectors  # noqa: E402

words = {Path(p).stem: Path(p).read_text(encoding="utf-8").split("\n") for p in snakemake.input.words}
words = {lang: [w for w in ws if w] for lang, ws in words.items()}
table = word_vectors(snakemake.input.vectors, snakemake.input.vocab, words, lowercase=snakemake.params.lowercase)
with atomic_path(snakemake.output[0]) as tmp:
    table.to_parquet(tmp, index=False)
