"""Snakemake entry point: contextual retrieval accuracy against the difference in frequency rank of the two words
of each pair (Cao et al. Figure 3), from every model's queries; ranks over each language's aligned text."""

from pathlib import Path

import pandas as pd

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.formats import numbered_lines  # noqa: E402
from xling.evaluate.contextual_retrieval import accuracy_by_rank_difference, frequency_ranks  # noqa: E402
from xling.evaluate.intervals import Bootstrap  # noqa: E402
from xling.io import atomic_write  # noqa: E402
from xling.tables import with_settings, write_parquet  # noqa: E402

params = snakemake.params
words = {}  # (lang, side) -> sentences of words, over every split
for path in snakemake.input.text:  # {DATA}/align/{pivot}-{lang}/{split}.{pivot or lang}
    lang, side = Path(path).parent.name.split("-", 1)[1], Path(path).suffix[1:]
    words.setdefault((lang, side), []).extend(line.split() for _, line in numbered_lines(path))
queries = pd.concat([pd.read_parquet(path) for path in snakemake.input.queries], ignore_index=True)
tables = [
    accuracy_by_rank_difference(
        queries[(queries["lang"] == lang) & queries["contextual"]],
        frequency_ranks(words[(lang, params.pivot)]),
        frequency_ranks(words[(lang, lang)]),
        params.bins,
        by=params.by,
        bootstrap=Bootstrap(**params.bootstrap),
        **params.exclusions,
    )
    for lang in params.langs
]
table = with_settings(
    pd.concat(tables, ignore_index=True),
    contextual=True,
    rank_bins=",".join(map(str, params.bins)),
    **params.exclusions,
)
write_parquet(table, snakemake.output.parquet)
with atomic_write(snakemake.output.csv) as handle:
    table.to_csv(handle, index=False)
