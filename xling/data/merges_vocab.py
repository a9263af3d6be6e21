"""A WordPiece vocabulary sized in BPE merges, as Conneau et al. (2020) size theirs ("80k BPE merges", §3.1): the
bilingual ablations' vocabularies (ablation.vocab). `tokenizers`' WordPiece trainer learns by BPE merges (it wraps
its BPE trainer); it starts from the special tokens, the alphabet and the alphabet's "##" continuation forms,
and every merge adds one entry, so `merges` merges are a vocabulary of that start plus `merges` entries (fewer
where no pair is frequent enough). Segmentation stays WordPiece's greedy longest match, as every model's here."""

from __future__ import annotations

from xling.data.wordpiece import SPECIAL_TOKENS, _alphabet, _bert_tokenizer, train_vocab


def start_size(corpus_paths, lowercase: bool, limit_alphabet: int) -> int:
    """Entries of the vocabulary before the first merge: the special tokens, the alphabet and its "##" forms."""
    normalizer = _bert_tokenizer(None, lowercase)._tokenizer.normalizer
    return len(SPECIAL_TOKENS) + 2 * len(_alphabet([str(p) for p in corpus_paths], normalizer, limit_alphabet))


def train_merges_vocab(
    corpus_paths, out_vocab, merges: int, min_frequency: int, lowercase: bool, limit_alphabet: int
) -> None:
    """train_vocab (xling.data.wordpiece) with the size given as merges."""
    size = start_size(corpus_paths, lowercase, limit_alphabet) + merges
    train_vocab(
        corpus_paths,
        out_vocab,
        vocab_size=size,
        min_frequency=min_frequency,
        lowercase=lowercase,
        limit_alphabet=limit_alphabet,
    )
