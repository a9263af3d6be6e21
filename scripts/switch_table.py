"""Snakemake entry point: the translations table of a pair's extra anchors drawn per batch, both directions."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.formats import read_dictionary  # noqa: E402
from xling.data.wordpiece import load_tokenizer, normalize_word, word_pieces  # noqa: E402
from xling.models.anchors import translations  # noqa: E402
from xling.models.switching import write_table  # noqa: E402

inp, params = snakemake.input, snakemake.params
pairs = [
    (normalize_word(a, params.lowercase), normalize_word(b, params.lowercase))
    for a, b in read_dictionary(inp.dictionary)
]
tokenizer = load_tokenizer(inp.vocab, params.lowercase)
langs = snakemake.wildcards.pair.split("-")
write_table(
    snakemake.output[0],
    {lang: translations(pairs, reverse=lang != params.pivot) for lang in langs},
    lambda word: word_pieces(tokenizer, word),
)
