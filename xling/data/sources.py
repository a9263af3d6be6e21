"""Where each real dataset comes from: `resources/sources.yaml` + the run's `data:` config.

The YAML says what a file *is* (URL, sha256, license, how the checksum was obtained); the config
says where *this* run gets it: a download cache (`data.cache`), an optional mirror that rewrites
every URL (`data.mirror`), and pre-staged copies (`data.paths`, relative to `data.staged`) for
compute nodes without internet. `Sources` turns both into `FileRef`s - one per file to fetch -
which the Snakemake rules use for their outputs, params and messages; `fetch` carries one out.
Nothing here touches the network except `fetch` (and `hf_tree_lookup`, which it calls).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from xling.data import download as dl
from xling.data.staged import STAGED_LAYOUTS, staged_languages, staged_layout

logger = logging.getLogger(__name__)

DEFAULT_SOURCES = Path(__file__).resolve().parents[2] / "resources" / "sources.yaml"
POLICIES = ("published", "trust-on-first-download", "hf-lfs", "computed")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: OPUS corpora whose Moses downloads give parallel/en-{lang}.* where Europarl has no language (Cao et al. Table 5),
#: dataset -> OPUS corpus name (the members' prefix)
PARALLEL_OPUS = {"multiun": "MultiUN", "tanzil": "Tanzil"}

#: defaults of the `data:` config section (mirrored in spec/sources.schema.yaml)
DEFAULTS: dict[str, Any] = {
    "source": "synthetic",
    "cache": "results/downloads",
    "lock": None, "registry": None,  # None: <cache>/sources.lock.yaml; resources/sources.yaml
    "mirror": None,
    "staged": None,
    "paths": {},
    "offline": False,
    "stage_mode": "symlink",
    "corpus": "wikipedia",
    "wikipedia": {"snapshot": None, "revision": None, "max_shards": 1, "shards": {},
                  "margin": 1.2, "min_fraction": 0.9},
    "ud_release": "2.5",
    "treebanks": {},
    "ud_splits": {},
    "europarl": {"max_pairs": None, "tokenize": "13a"},
    "opus": {"max_pairs": None, "tokenize": "13a", "tokenize_lang": {"zh": "zh"}, "languages": None},
    "download": {"retries": 5, "backoff": 2.0, "timeout": 60},
}


def load(path: str | os.PathLike = DEFAULT_SOURCES) -> dict:
    """Read and validate sources.yaml; errors name the file and the dataset/file key."""
    path = Path(path)
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    validate(data, path)
    return data


def validate(data: dict, path: str | os.PathLike = "sources.yaml") -> None:
    """Every file has a URL (or a `reason` for none), a dest, a checksum policy and, where the policy
    needs one, a well-formed sha256 with its source; every dataset has a license and a title."""
    def fail(where: str, msg: str):
        raise ValueError(f"{path}: {where}: {msg}")

    if not isinstance(data, dict) or not isinstance(data.get("datasets"), dict):
        fail("top level", "expected a mapping with 'datasets'")
    for name, ds in data["datasets"].items():
        for key in ("title", "license", "homepage", "canonical", "files"):
            if not ds.get(key):
                fail(name, f"missing '{key}'")
        listed = ds.get("languages", [])
        if not isinstance(listed, list) or not all(isinstance(code, str) and code for code in listed):
            fail(name, f"'languages' must be a list of language codes (quote YAML booleans like 'no'): {listed!r}")
        for key, f in ds["files"].items():
            where = f"{name}.files.{key}"
            if f.get("url") is None and not f.get("reason"):
                fail(where, "no url and no 'reason' why")
            if not f.get("dest"):
                fail(where, "missing 'dest'")
            policy = f.get("checksum")
            if policy not in POLICIES:
                fail(where, f"checksum policy must be one of {', '.join(POLICIES)}, not {policy!r}")
            sha = f.get("sha256")
            values = list(sha.values()) if isinstance(sha, dict) else ([] if sha is None else [sha])
            for value in values:
                if not isinstance(value, str) or not _HEX64.match(value):
                    fail(where, f"sha256 must be 64 lowercase hex digits, not {value!r}")
            if policy in ("published", "computed") and not values:
                fail(where, f"policy {policy!r} needs a sha256")
            if policy == "trust-on-first-download" and values:
                fail(where, "policy 'trust-on-first-download' must have sha256: null")
            if values and not f.get("checksum_source"):
                fail(where, "a sha256 needs 'checksum_source' (how it was obtained)")
            sharded = "{shard" in f.get("url", "") or "{shard" in f["dest"]
            if sharded and "shards" not in f:
                fail(where, "a sharded entry ({shard} in url/dest) needs 'shards' (null if unknown)")


@dataclass(frozen=True)
class FileRef:
    """One file to fetch, fully resolved for this run's config."""

    dataset: str
    key: str
    local: str  # where the fetch job puts it (under data.cache): what parse rules read
    url: str | None  # canonical URL (None: a shard whose name the hub tree API gives)
    shown: str  # URL as fetched (mirror applied) or the staged path: for messages / dry runs
    sha256: str | None
    checksum: str
    lang: str | None = None
    staged: str | None = None
    staged_sha256: str | None = None
    tree_api: str | None = None
    name_glob: str | None = None  # file name pattern in the tree listing (sharded entries)
    url_dir: str | None = None
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def origin(self) -> str:
        """Where the file comes from, independent of mirror and cache: the URL or the staged copy."""
        if self.staged:
            return f"pre-staged copy {self.staged}"
        return self.url or f"{self.url_dir}/{self.name_glob} (file name from {self.tree_api})"


def _merge(base: dict, over: dict | None) -> dict:
    out = dict(base)
    for key, value in (over or {}).items():
        out[key] = _merge(base[key], value) if isinstance(base.get(key), dict) and isinstance(value, dict) else value
    return out


class Sources:
    """sources.yaml resolved against one run's `data:` config (see DEFAULTS)."""

    def __init__(self, data_config: dict | None = None, sources: dict | str | os.PathLike | None = None):
        self.config = _merge(DEFAULTS, data_config)
        if sources is None or isinstance(sources, (str, os.PathLike)):
            sources = load(sources or self.config["registry"] or DEFAULT_SOURCES)
        self.datasets: dict = sources["datasets"]
        self.cache = Path(self.config["cache"])
        self.lock = Path(self.config["lock"]) if self.config["lock"] else self.cache / "sources.lock.yaml"
        self.mirror = self.config["mirror"]
        staged = self.config["staged"]
        self.staged_base = Path(staged).expanduser() if staged else None
        for name in self.config["paths"]:
            if name not in self.datasets:
                raise ValueError(f"data.paths.{name}: unknown dataset (known: {', '.join(self.datasets)})")

    # -- what exists -------------------------------------------------------------------------
    def dataset(self, name: str) -> dict:
        if name not in self.datasets:
            raise KeyError(f"unknown dataset {name!r} (known: {', '.join(self.datasets)})")
        return self.datasets[name]

    def languages(self, name: str) -> list[str]:
        """Languages a dataset has files for (for `ud`: languages with a treebank; a dataset whose one
        file holds many languages, like WikiAnn, lists them under `languages`)."""
        if name == "ud":
            return sorted(self.treebanks_all())
        ds = self.dataset(name)
        if "languages" in ds:
            return sorted(ds["languages"])
        return sorted({f["lang"] for f in ds["files"].values() if f.get("lang")})

    def treebanks_all(self) -> dict[str, list[str]]:
        return {**self.dataset("ud").get("treebanks", {}), **self.config["treebanks"]}

    def treebanks(self, lang: str) -> list[str]:
        return self.treebanks_all().get(lang, [])

    def ud_splits(self, lang: str) -> list[str]:
        """UD splits written for `lang` (PUD treebanks have only test)."""
        splits = {**self.dataset("ud").get("splits", {}), **self.config["ud_splits"]}
        return list(splits.get(lang, ["train", "dev", "test"]))

    # -- resolution --------------------------------------------------------------------------
    def files(self, name: str, lang: str | None = None, **match) -> list[FileRef]:
        """All files of a dataset (optionally one language / matching extra fields), resolved."""
        refs = []
        for key, spec in self.dataset(name)["files"].items():
            if lang is not None and spec.get("lang") != lang:
                continue
            if any(spec.get(k) != v for k, v in match.items()):
                continue
            refs.extend(self._resolve(name, key, spec))
        return refs

    def file(self, name: str, key: str) -> FileRef:
        """One file by key; sharded keys are `<key>/<shard>` (e.g. wikipedia `en/0`)."""
        files = self.dataset(name)["files"]
        base, _, shard = key.rpartition("/")
        if key in files:
            refs = self._resolve(name, key, files[key])
        elif base in files and shard.isdigit():
            refs = [r for r in self._resolve(name, base, files[base], all_shards=True) if r.key == key]
        else:
            refs = []
        if len(refs) != 1:
            raise KeyError(f"{name}: no file {key!r} (known: {', '.join(files)})")
        return refs[0]

    def wikipedia(self, lang: str) -> list[FileRef]:
        """The Wikipedia shards this run reads for `lang` (the first data.wikipedia.max_shards)."""
        return self.files("wikipedia", lang=lang)

    def _template_values(self, name: str) -> dict:
        ds = self.dataset(name)
        values = {k: ds[k] for k in ("snapshot", "revision") if k in ds}
        if name == "wikipedia":
            over = {k: v for k, v in self.config["wikipedia"].items() if k in ("snapshot", "revision") and v}
            values.update(over)
        return values

    def _resolve(self, name: str, key: str, spec: dict, all_shards: bool = False) -> list[FileRef]:
        values = self._template_values(name)
        if "shards" not in spec:
            return [self._ref(name, key, spec, spec.get("url"), spec["dest"], spec.get("sha256"), None)]
        changed = name == "wikipedia" and values != {k: self.dataset(name).get(k) for k in values}
        shards = spec["shards"]
        lang_over = self.config["wikipedia"]["shards"].get(spec.get("lang")) if name == "wikipedia" else None
        if lang_over:
            shards = lang_over
        elif changed:
            shards = None  # another snapshot/revision: counts and checksums of sources.yaml do not apply
        limit = shards if all_shards and shards else self.config["wikipedia"]["max_shards"]
        if shards:
            limit = min(limit, shards)
        refs = []
        for i in range(limit):
            v = {**values, "shard": i, "shards": shards}
            url = spec["url"].format(**v) if shards else None
            sha = spec.get("sha256")
            sha = sha.get(i) if isinstance(sha, dict) and not changed else (None if isinstance(sha, dict) else sha)
            ref = self._ref(name, f"{key}/{i}", spec, url, spec["dest"].format(**v), sha, v)
            refs.append(ref)
        return refs

    def _ref(self, name, key, spec, url, dest, sha, values) -> FileRef:
        tree_api = spec["tree_api"].format(**values) if spec.get("tree_api") and values else None
        name_glob = url_dir = None
        if values is not None:
            template = spec["url"]
            url_dir = template.rpartition("/")[0].format(**values)
            name_glob = template.rpartition("/")[2].replace("{shards:05d}", "*").format(**values)
        staged, staged_sha = self._staged(name, key, dest, url, name_glob, sha)
        local = self.cache / dest
        if staged is not None and Path(staged).name != Path(dest).name and Path(staged).name != (
                Path(url).name if url else None):
            local = self.cache / Path(dest).parent / Path(staged).name
        if staged:
            shown = f"pre-staged copy {staged}"
        elif url:
            shown = dl.rewrite_url(url, self.mirror)
        else:
            shown = f"{url_dir}/{name_glob} (file name from {tree_api})"
        extra = {k: v for k, v in spec.items() if k in ("split", "side", "member")}
        return FileRef(dataset=name, key=key, local=str(local), url=url, shown=shown, sha256=sha,
                       checksum=spec["checksum"], lang=spec.get("lang"), staged=staged,
                       staged_sha256=staged_sha, tree_api=tree_api, name_glob=name_glob,
                       url_dir=url_dir, extra=extra)

    def _staged(self, name, key, dest, url, name_glob, sha) -> tuple[str | None, str | None]:
        """A pre-staged copy from data.paths.<dataset>[.<key parts>]: a file, a directory holding
        upstream-named files, or {path: FILE, sha256: HEX|null} for a copy in another form."""
        node = self.config["paths"].get(name)
        parts = key.split("/")
        for part in parts:
            if node is None or isinstance(node, str) or (isinstance(node, dict) and "path" in node):
                break
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return None, None
        own_sha = sha
        if isinstance(node, dict):
            if "path" not in node:
                return None, None  # data.paths covers other keys of this dataset, not this one
            path, own_sha = self._path(node["path"]), node.get("sha256")
        else:
            path = self._path(node)
        if path.is_dir():
            candidates = [n for n in (Path(url).name if url else None, Path(dest).name) if n]
            found = [path / n for n in candidates if (path / n).exists()]
            if not found and name_glob:
                found = sorted(path.glob(name_glob))
            if not found:
                raise FileNotFoundError(
                    f"data.paths.{name}: no file for {name}/{key} in pre-staged directory {path} "
                    f"(looked for {', '.join(candidates + ([name_glob] if name_glob else []))})")
            path = found[0]
        elif not path.exists():
            raise FileNotFoundError(f"data.paths.{name}: pre-staged copy of {name}/{key} not found: {path}")
        if own_sha is None and url and not isinstance(node, dict):
            own_sha = dl.Lock(self.lock).get(url) if self.lock.exists() else None
        return str(path), own_sha

    def _path(self, value: str) -> Path:
        path = Path(value).expanduser()
        if not path.is_absolute() and self.staged_base is not None:
            path = self.staged_base / path
        return path

    # -- the run's files -----------------------------------------------------------------------
    def needed(self, languages: list[str], pivot: str = "en") -> dict[str, list[FileRef]]:
        """Files per dataset that the configured languages can use (none for a dataset without
        the language, e.g. no MUSE for sw/ur, no Europarl beyond de fr es bg el, MultiUN ar zh, Tanzil ur)."""
        targets = [lang for lang in languages if lang != pivot]
        out: dict[str, list[FileRef]] = {}
        corpus = self.config["corpus"]
        out[corpus] = [r for lang in languages for r in self.files(corpus, lang=lang)]
        for name in ("muse", "europarl", *PARALLEL_OPUS, "tatoeba", "bucc"):
            langs = self.opus_languages(targets) if name in PARALLEL_OPUS else targets
            out[name] = [r for lang in langs for r in self.files(name, lang=lang)]
        laid_out = {name for name in STAGED_LAYOUTS if staged_layout(self.config, name)}  # read where they lie
        out["ud"] = ([self.file("ud", str(self.config["ud_release"]))]
                     if any(self.treebanks(lang) for lang in languages) and "ud" not in laid_out else [])
        out["xnli"] = self.files("xnli") if "xnli" not in laid_out else []
        out["wikiann"] = (self.files("wikiann") if self.available("wikiann", languages) and "wikiann" not in laid_out
                          else [])
        out["mbert_vocab"] = self.files("mbert_vocab")
        return out

    def locals(self, name: str, languages: list[str], pivot: str = "en", **match) -> list[str]:
        """Cache paths of a dataset's files for this run, e.g. locals("muse", L, lang="de", split="full")."""
        paths = [ref.local for ref in self.needed(languages, pivot).get(name, [])
                 if all((ref.lang if k == "lang" else ref.extra.get(k)) == v for k, v in match.items())]
        if not paths:
            raise ValueError(f"no {name} file for {match} in resources/sources.yaml / data.paths")
        return paths

    def available(self, name: str, languages: list[str]) -> list[str]:
        """The languages of `languages` that dataset `name` has files for (in that order), as staged (data.offline)."""
        have = set(self.languages(name))
        langs = [lang for lang in languages if lang in have]
        return staged_languages(self, name, langs)

    def parallel_sources(self, languages: list[str]) -> dict[str, str]:
        """{lang: the dataset its parallel/en-{lang}.* come from}: Europarl where it has the language, else the
        first OPUS corpus of PARALLEL_OPUS that does."""
        out: dict[str, str] = {}
        for name in ("europarl", *PARALLEL_OPUS):
            for lang in self.available(name, self.opus_languages(languages) if name in PARALLEL_OPUS else languages):
                out.setdefault(lang, name)
        return out

    def opus_languages(self, languages: list[str]) -> list[str]:
        """Of `languages`, those an OPUS corpus may give parallel text (data.opus.languages; null: all)."""
        chosen = self.config["opus"]["languages"]
        return [lang for lang in languages if chosen is None or lang in chosen]

    def fetch_options(self) -> dict:
        """Keyword arguments of `fetch` for this run (lock, mirror, stage mode, retries...)."""
        return dict(lock=str(self.lock), mirror=self.mirror, stage_mode=self.config["stage_mode"],
                    **self.config["download"])

    def fetch_table(self, languages: list[str], pivot: str = "en") -> dict[str, FileRef]:
        """local path -> FileRef for every file this run may fetch (one Snakemake job each)."""
        table = {}
        for refs in self.needed(languages, pivot).values():
            for ref in refs:
                table[ref.local] = ref
        return table


def hf_tree_lookup(tree_api: str, name_glob: str, timeout: float = 60.0) -> tuple[str, str | None, int | None]:
    """(file name, LFS sha256, size) of the file matching `name_glob` in a hub tree listing."""
    resp = requests.get(tree_api, timeout=timeout, headers={"User-Agent": dl.USER_AGENT})
    if resp.status_code != 200:
        raise dl.DownloadError(f"{tree_api}: HTTP {resp.status_code}")
    entries = resp.json()
    hits = [e for e in entries if fnmatch.fnmatch(e.get("path", "").rpartition("/")[2], name_glob)]
    if len(hits) != 1:
        names = sorted(e.get("path", "") for e in entries)
        raise dl.DownloadError(f"{tree_api}: expected one file matching {name_glob}, found {len(hits)} "
                               f"among: {', '.join(names) or 'nothing'}")
    hit, lfs = hits[0], hits[0].get("lfs") or {}
    return hit["path"].rpartition("/")[2], lfs.get("oid"), lfs.get("size", hit.get("size"))


def fetch(ref: FileRef | dict, lock: str | os.PathLike | None, mirror: str | None = None,
          stage_mode: str = "symlink", retries: int = 5, backoff: float = 2.0,
          timeout: float = 60.0) -> Path:
    """Produce `ref.local`: link/copy the pre-staged copy, or download (resumable, verified)."""
    if isinstance(ref, dict):
        ref = FileRef(**ref)
    label = f"{ref.dataset}/{ref.key}"
    if ref.staged:
        return dl.stage(ref.staged, ref.local, sha256=ref.staged_sha256, mode=stage_mode, label=label)
    url, sha = ref.url, ref.sha256
    if ref.checksum == "hf-lfs" and ref.tree_api:
        if mirror and url:
            logger.info("%s: mirror in use; hub LFS checksum not looked up (lock file applies)", label)
        else:
            try:
                name, lfs_sha, size = hf_tree_lookup(ref.tree_api, ref.name_glob, timeout)
            except (dl.DownloadError, requests.RequestException, ValueError) as err:
                if url is None:
                    raise dl.DownloadError(
                        f"{label}: shard file name unknown offline and the hub tree API failed ({err}); "
                        f"set data.wikipedia.shards.{ref.lang} to the number of shards") from err
                logger.warning("%s: hub tree API failed (%s); falling back to the lock file", label, err)
            else:
                listed = f"{ref.url_dir}/{name}"
                if url and url != listed:
                    logger.warning("%s: sources.yaml names %s but the hub lists %s at this revision; "
                                   "using the hub's (fix the shard count in sources.yaml)", label, url, listed)
                url = listed
                if sha and lfs_sha and sha != lfs_sha:
                    raise dl.ChecksumError(url, sha, lfs_sha, "sources.yaml vs the hub's LFS oid")
                sha = sha or lfs_sha
                logger.info("%s: %s, %s bytes, LFS sha256 %s", label, name, size, lfs_sha)
    if url is None:
        raise dl.DownloadError(f"{label}: no URL (see resources/sources.yaml)")
    out = dl.download(url, ref.local, sha256=sha, lock=lock, mirror=mirror,
                      retries=retries, backoff=backoff, timeout=timeout)
    if lock is not None and sha and sha != ref.sha256:
        # A checksum the hub listed: keep it, so a later download through a mirror is checked too.
        lock = lock if isinstance(lock, dl.Lock) else dl.Lock(lock)
        if lock.get(url) is None:
            lock.record(url, sha, out.stat().st_size, how="hf-lfs")
    return out


def main(argv: list[str] | None = None) -> None:
    """`python -m xling.data.sources [--config data.yaml] [--languages en de ...]`: print the plan."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--config", help="YAML file with a `data:` section (e.g. a preset)")
    parser.add_argument("--languages", nargs="+")
    args = parser.parse_args(argv)
    config = yaml.safe_load(open(args.config)) if args.config else {}
    sources = Sources(config.get("data"))
    for local, ref in sources.fetch_table(args.languages or config.get("languages") or ["en"]).items():
        print(f"{ref.dataset:12} {ref.key:12} {ref.checksum:24} {local}\n{'':12} <- {ref.shown}")


if __name__ == "__main__":
    main()
