"""BUCC 2018 bitext mining from its archives -> bucc/{lang}-en.{split}.{lang,en,gold} (sample: dev, training:
test, as XTREME).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from xling.data.formats import FormatError, PathLike
from xling.data.upstream.archives import _display, _log_counts, archive_errors, iter_members, member_lines
from xling.io import atomic_write

#: BUCC 2018 upstream split -> our split (as XTREME: sample is the dev set, training the test set)
BUCC_SPLITS = {"sample": "dev", "training": "test"}


def _bucc_ids(lines: list[str], display: str, prefix: str) -> list[str]:
    ids, seen = [], set()
    for lineno, line in enumerate(lines, start=1):
        sid, sep, sentence = line.partition("\t")
        if not sep or "\t" in sentence or not sid.startswith(prefix):
            raise FormatError(f"{display}:{lineno}: expected '{prefix}<number><TAB>sentence'")
        if sid in seen:
            raise FormatError(f"{display}:{lineno}: duplicate id {sid!r}")
        seen.add(sid)
        ids.append(sid)
    return ids


def bucc_to_canonical(source: PathLike, lang: str, out_dir: PathLike, splits: dict[str, str] = BUCC_SPLITS) -> dict:
    """BUCC 2018 archive (`bucc2018-{xx}-en.{sample,training}-gold.tar.bz2`, members
    `bucc2018/{xx}-en/{xx}-en.{split}.{xx,en,gold}`) or directory -> `{out_dir}/{xx}-en.{split}.*`.

    Upstream splits are renamed by `splits` (default as XTREME: sample -> dev, training -> test).
    Ids must carry the language prefix (`de-000000001`), be unique, and every gold id must exist.
    Only the blind `test` split may lack a gold file.
    """
    exts = (lang, "en", "gold")
    pattern = re.compile(rf"{lang}-en\.({'|'.join(map(re.escape, splits))})\.({'|'.join(exts)})")
    found: dict[str, dict[str, list[str]]] = {}
    with archive_errors(source):
        for name, handle in iter_members(source, lambda n: bool(pattern.fullmatch(PurePosixPath(n).name))):
            split, ext = pattern.fullmatch(PurePosixPath(name).name).groups()
            found.setdefault(split, {})[ext] = [line for _, line in member_lines(handle, _display(source, name))]
    if not found:
        raise FormatError(f"{source}: no BUCC {lang}-en files of splits {', '.join(splits)}")
    counts = {}
    out_dir = Path(out_dir)
    for split, files in found.items():
        missing = [ext for ext in exts if ext not in files and not (ext == "gold" and split == "test")]
        if missing:
            raise FormatError(f"{source}: BUCC {lang}-en {split} lacks its {', '.join(missing)} file")
        disp = {ext: _display(source, f"{lang}-en.{split}.{ext}") for ext in exts}
        src_ids = set(_bucc_ids(files[lang], disp[lang], f"{lang}-"))
        en_ids = set(_bucc_ids(files["en"], disp["en"], "en-"))
        for lineno, line in enumerate(files.get("gold", []), start=1):
            fields = line.split("\t")
            if len(fields) != 2:
                raise FormatError(f"{disp['gold']}:{lineno}: expected 'src_id<TAB>en_id'")
            for sid, ids in zip(fields, (src_ids, en_ids), strict=True):
                if sid not in ids:
                    raise FormatError(f"{disp['gold']}:{lineno}: unknown id {sid!r}")
        ours = splits[split]
        for ext, lines in files.items():
            with atomic_write(out_dir / f"{lang}-en.{ours}.{ext}") as out:
                out.writelines(line + "\n" for line in lines)
        counts.update(
            {f"{ours}.{lang}": len(src_ids), f"{ours}.en": len(en_ids), f"{ours}.gold": len(files.get("gold", []))}
        )
    return _log_counts(f"BUCC {lang}-en {source} -> {out_dir}", counts)
