"""Universal Dependencies from its release archive -> ud/{lang}.{split}.conllu: the configured treebanks of each
language and split, validated as they are copied.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePosixPath
from typing import IO, Iterable, Iterator

from xling.data.formats import FormatError, PathLike, iter_conllu
from xling.data.upstream.archives import _display, _log_counts, archive_errors, iter_members, member_lines
from xling.io import atomic_write, scratch

_UD_FILE = re.compile(r"[a-z_]+-ud-(train|dev|test)\.conllu")


def ud_to_canonical(
    source: PathLike,
    out_dir: PathLike,
    treebanks: dict[str, str | list[str]],
    splits: Iterable[str] | dict[str, Iterable[str]] = ("train", "dev", "test"),
) -> dict:
    """UD release (`ud-treebanks-v2.x.tgz`: `ud-treebanks-v2.x/UD_<Lang>-<TB>/<code>_<tb>-ud-<split>.conllu`,
    or a directory of treebank folders) -> `{out_dir}/{lang}.{split}.conllu`.

    `treebanks` maps a language to a treebank folder name (or a list, concatenated in order);
    `splits` is the splits to write, for all languages or per language (PUD treebanks have only
    test). A requested split that no listed treebank has is an error. Files are copied verbatim
    and validated on the way with formats.iter_conllu.
    """
    tb_lists = {lang: [tb] if isinstance(tb, str) else list(tb) for lang, tb in treebanks.items()}
    split_of = {lang: tuple(splits[lang] if isinstance(splits, dict) else splits) for lang in tb_lists}
    wanted = {tb: lang for lang, tbs in tb_lists.items() for tb in tbs}
    parts: dict[tuple[str, str], dict[str, Path]] = {}  # (lang, split) -> treebank -> temp file
    counts: dict[str, int] = {}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def want(name: str) -> bool:
        path = PurePosixPath(name)
        m = _UD_FILE.fullmatch(path.name)
        return (
            m is not None
            and len(path.parts) >= 2
            and path.parts[-2] in wanted
            and m.group(1) in split_of[wanted[path.parts[-2]]]
        )

    with scratch(Path(out_dir) / "ud") as tmp:
        with archive_errors(source):
            for name, handle in iter_members(source, want):
                path = PurePosixPath(name)
                tb, split = path.parts[-2], _UD_FILE.fullmatch(path.name).group(1)
                lang = wanted[tb]
                part = Path(tmp, f"{tb}.{split}.conllu")
                with open(part, "w", encoding="utf-8") as dest:
                    lines = _tee(member_lines(handle, _display(source, name)), dest)
                    n = sum(1 for _ in iter_conllu(lines, _display(source, name)))
                parts.setdefault((lang, split), {})[tb] = part
                counts[f"{tb}.{split}"] = n
        for lang, tbs in tb_lists.items():
            for split in split_of[lang]:
                found = parts.get((lang, split), {})
                if not found:
                    have = sorted(k for k in counts if k.split(".")[0] in tbs)
                    raise FormatError(
                        f"{source}: no {split} file for {lang} in {', '.join(tbs)} "
                        f"(found: {', '.join(have) or 'nothing'})"
                    )
                with atomic_write(out_dir / f"{lang}.{split}.conllu") as out:
                    for tb in tbs:  # configured order, whatever the archive order
                        if tb in found:
                            with open(found[tb], encoding="utf-8") as part:
                                shutil.copyfileobj(part, out)
                counts[f"{lang}.{split}"] = sum(counts[f"{tb}.{split}"] for tb in found)
    return _log_counts(f"UD {source} -> {out_dir} (sentences)", counts)


def _tee(lines: Iterator[tuple[int, str]], dest: IO[str]) -> Iterator[tuple[int, str]]:
    """Pass lines through while copying them; ends the copy with a blank line (the CoNLL-U sentence
    terminator) if the source lacks it, so concatenated treebanks never merge two sentences."""
    line = ""
    for lineno, line in lines:
        dest.write(line + "\n")
        yield lineno, line
    if line.strip():
        dest.write("\n")
