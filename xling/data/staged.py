"""Pre-staged copies in a layout other than the release a rule parses (data.paths.<dataset> a directory in that
layout): which layout a directory holds, and the files a run reads from it. The rules of rules/sources.smk read
such a copy with the layout's own parser (xling.data.upstream.xtreme, or ud_to_canonical for treebank folders)."""

from __future__ import annotations

from pathlib import Path

#: dataset -> (layout, a file pattern that marks a directory as holding it)
STAGED_LAYOUTS = {
    "xnli": ("xtreme", "dev-*.tsv"),
    "wikiann": ("xtreme", "dev-*.tsv"),
    "ud": ("folders", "UD_*/*-ud-*.conllu*"),
}


def staged_dir(data_config: dict, name: str) -> Path | None:
    """data.paths.<name> as a directory (relative to data.staged), or None."""
    value = data_config.get("paths", {}).get(name)
    if not isinstance(value, str):
        return None
    path = Path(value).expanduser()
    if not path.is_absolute() and data_config.get("staged"):
        path = Path(data_config["staged"]).expanduser() / path
    return path if path.is_dir() else None


def staged_layout(data_config: dict, name: str) -> str | None:
    """The layout of dataset `name`'s staged directory, when it holds one of STAGED_LAYOUTS (not the release)."""
    folder = staged_dir(data_config, name)
    if folder is None or name not in STAGED_LAYOUTS:
        return None
    layout, marker = STAGED_LAYOUTS[name]
    return layout if any(folder.glob(marker)) else None


def staged_files(data_config: dict, name: str, relative: list[str]) -> list[str]:
    """Paths of these files of the staged directory; a missing one is an error that names it."""
    folder = staged_dir(data_config, name)
    paths = [folder / rel for rel in relative]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(
            f"data.paths.{name} ({staged_layout(data_config, name)} layout): missing {', '.join(missing)}"
        )
    return [str(p) for p in paths]


def ud_folder_files(data_config: dict, treebanks: dict[str, list[str]], splits: dict[str, list[str]]) -> list[str]:
    """The staged treebank files a run reads (`<ud>/<treebank>/<code>-ud-<split>.conllu[.gz]`), one per treebank
    and split; a missing one is an error naming the folder and split."""
    folder = staged_dir(data_config, "ud")
    found = []
    for lang, names in treebanks.items():
        for split in splits[lang]:
            hits = [path for tb in names for path in sorted((folder / tb).glob(f"*-ud-{split}.conllu*"))]
            if not hits:
                raise FileNotFoundError(
                    f"data.paths.ud (treebank folders): no {split} file for {lang} in "
                    f"{', '.join(str(folder / tb) for tb in names)}"
                )
            found += hits
    return [str(path) for path in found]


def staged_languages(sources, name: str, languages: list[str]) -> list[str]:
    """Of `languages` (those dataset `name` has), the ones the run can read. A directory in another layout stands
    for the whole release: only the languages it has files (or treebank folders) for. Under data.offline, only
    languages with a pre-staged copy of a file of theirs (MUSE: of some split); otherwise all (downloads)."""
    folder, layout = staged_dir(sources.config, name), staged_layout(sources.config, name)
    if layout == "xtreme":
        return [lang for lang in languages if (folder / f"dev-{lang}.tsv").exists()]
    if layout == "folders":
        return [lang for lang in languages if all((folder / tb).is_dir() for tb in sources.treebanks(lang))]
    if not sources.config["offline"]:
        return languages
    if name == "ud":
        return languages if sources.file("ud", str(sources.config["ud_release"])).staged else []
    return [
        lang for lang in languages if any(ref.staged for ref in sources.files(name, lang=lang) or sources.files(name))
    ]


def ud_folder_splits(data_config: dict, treebanks: list[str], splits: list[str]) -> list[str]:
    """Of `splits`, those the staged folders of these treebanks hold (e.g. test only for most but English EWT)."""
    folder = staged_dir(data_config, "ud")
    return [split for split in splits if any(any((folder / tb).glob(f"*-ud-{split}.conllu*")) for tb in treebanks)]


#: what stands in for the unstaged part of a dataset staged in another layout (the report's overview says it)
STAND_INS = {
    "xnli": "XNLI 1.0's dev sets alone (XTREME's layout), cut by premise: 60 % English pairs for MultiNLI's training "
    "set, 20 % dev, 20 % test in every language",
    "wikiann": "no labelled test sets: each WikiAnn dev set cut in half, dev / test",
    "muse": "MUSE's full dictionaries alone: train / test are their source words of frequency ranks 0-5000 / 5000-6500",
}


def stand_ins(sources) -> dict[str, str]:
    """Dataset -> its stand-in, for the datasets this run reads in a stand-in form: XNLI and WikiAnn in XTREME's
    layout, a MUSE train or test split staged as the full dictionary."""
    found = {name: STAND_INS[name] for name in ("xnli", "wikiann") if staged_layout(sources.config, name) == "xtreme"}
    muse = sources.config.get("paths", {}).get("muse") or {}
    if any(
        isinstance(node, dict) and Path(str(node.get("path", ""))).name.removesuffix(".gz") == f"en-{lang}.txt"
        for split in ("train", "test")
        for lang, node in (muse.get(split) or {}).items()
    ):
        found["muse"] = STAND_INS["muse"]  # read by upstream.muse_full_to_split
    return found
