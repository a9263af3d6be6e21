"""Parsers from each upstream release format into the canonical layout (spec: "Canonical data layout").

One function per upstream format: `(input file / archive / directory, output paths, options) ->
counts dict`. Each streams its input, validates it with the canonical readers' rules
(xling.data.formats), writes its outputs atomically and logs what it kept and what it skipped, so a
truncated download or a changed upstream layout fails with the file (and line) named instead of
producing a silently smaller dataset. Upstream layouts are documented in spec/data.md.

Sources may be a release archive (tar of any compression, or zip; members are read by name in
one streaming pass), a directory holding the files (an unpacked release or pre-staged copies;
`x.gz` is read as `x`), or, where one file is enough, that file.

The package: `archives` reads releases (archives or directories, member by member) and holds the helpers every
parser shares; one module per upstream source: `corpora` (Wikipedia, Leipzig), `parallel` (Europarl, OPUS), `ud`,
`muse`, `xnli` (XNLI, MultiNLI, XTREME copies), `wikiann`, `tatoeba`, `bucc`, `mbert_vocab`;
`xtreme`: copies staged in XTREME's per-language layout, the splits it lacks cut from its dev sets (stand-ins).
"""

from xling.data.formats import FormatError  # noqa: F401  (what every parser raises)
from xling.data.upstream.archives import archive_errors, is_archive, iter_members, member_lines
from xling.data.upstream.bucc import BUCC_SPLITS, bucc_to_canonical
from xling.data.upstream.corpora import leipzig_to_corpus, wikipedia_to_corpus
from xling.data.upstream.mbert_vocab import MBERT_CASED_VOCAB_SIZE, mbert_vocab
from xling.data.upstream.muse import MUSE_RANKS, muse_annotated_to_test, muse_full_to_split, muse_to_canonical
from xling.data.upstream.parallel import europarl_to_parallel, opus_to_parallel
from xling.data.upstream.tatoeba import TATOEBA_CODES, tatoeba_code, tatoeba_to_canonical
from xling.data.upstream.ud import ud_to_canonical
from xling.data.upstream.wikiann import WIKIANN_SPLITS, wikiann_to_canonical
from xling.data.upstream.xnli import multinli_to_train, xnli_to_canonical, xtreme_xnli_copy
from xling.data.upstream.xtreme import xtreme_wikiann_stand_in, xtreme_xnli_stand_in

__all__ = [
    "archive_errors",
    "iter_members",
    "member_lines",
    "is_archive",
    "wikipedia_to_corpus",
    "leipzig_to_corpus",
    "europarl_to_parallel",
    "opus_to_parallel",
    "ud_to_canonical",
    "muse_to_canonical",
    "muse_annotated_to_test",
    "muse_full_to_split",
    "MUSE_RANKS",
    "xnli_to_canonical",
    "multinli_to_train",
    "xtreme_xnli_copy",
    "wikiann_to_canonical",
    "WIKIANN_SPLITS",
    "tatoeba_to_canonical",
    "tatoeba_code",
    "TATOEBA_CODES",
    "bucc_to_canonical",
    "BUCC_SPLITS",
    "mbert_vocab",
    "MBERT_CASED_VOCAB_SIZE",
    "xtreme_xnli_stand_in",
    "xtreme_wikiann_stand_in",
]
