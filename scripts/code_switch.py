"""Snakemake entry point: code-switch one language's token file with the pair's dictionary (extra anchors)."""

from xling.logs import setup_logging

setup_logging(snakemake.log[0])
from xling.data.formats import read_dictionary  # noqa: E402
from xling.data.wordpiece import load_tokenizer, normalize_word, word_pieces  # noqa: E402
from xling.models.anchors import code_switch, translations  # noqa: E402

inp, params, lang = snakemake.input, snakemake.params, snakemake.wildcards.lang
lowercase, settings = params.lowercase, params.settings
pairs = [(normalize_word(a, lowercase), normalize_word(b, lowercase)) for a, b in read_dictionary(inp.dictionary)]
tokenizer = load_tokenizer(inp.vocab, lowercase)
code_switch(
    inp.tokens,
    snakemake.output[0],
    translations(pairs, reverse=lang != params.pivot),
    lambda word: word_pieces(tokenizer, word),
    rate=settings["rate"],
    max_fraction=settings["max_fraction"],
    seed=(settings["seed"], int(lang != params.pivot)),
)
