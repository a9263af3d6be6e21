"""presets/real-download.yaml, the user's real-data run: presets/real.yaml's run with every file downloaded from the
pinned sources of resources/sources.yaml instead of read from ../shared/data. Its plan (a dry run: one fetch job
per pinned URL, no staged copy, no MultiUN), and its data rules run against a local HTTP server on 127.0.0.1 that
serves small files in the upstream formats at the URLs' paths (data.mirror), verified and parsed into the
canonical layout."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from test_download import Server
from workflow_helpers import REPO, job_counts, snakemake

from xling.data import sources as src

DOWNLOAD = REPO / "presets" / "real-download.yaml"
REAL = REPO / "presets" / "real.yaml"
FETCH_LINE = re.compile(r"^\s*(?:Job \d+: )?fetch (\S+) <- (\S+)$", re.M)
#: the rules that read the downloads into the canonical layout (where --until stops the run)
DATA_RULES = (
    "corpus_leipzig",
    "dict_muse",
    "tatoeba",
    "xnli_dev_test",
    "xnli_train",
    "wikiann",
    "ud_treebanks",
    "parallel_europarl",
    "mbert_vocab",
)


def preset(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_download_preset_is_the_real_preset_but_where_its_data_come_from():
    """Everything but `run` and `data` is the real preset's: the same languages, models and studies."""
    download, real = preset(DOWNLOAD), preset(REAL)
    assert {k: v for k, v in download.items() if k not in ("run", "data")} == {
        k: v for k, v in real.items() if k not in ("run", "data")
    }
    assert download["run"] != real["run"]
    assert not {"staged", "paths", "offline"} & set(download["data"])  # everything downloaded, nothing staged
    assert download["data"]["corpus"] == real["data"]["corpus"] == "leipzig"


def planned(*configfiles: Path, cwd: Path) -> tuple[dict[str, int], dict[str, str]]:
    """(jobs per rule, fetch target -> where it comes from) of a dry run in `cwd`."""
    dry = snakemake("-n", "--configfile", *map(str, configfiles), cwd=cwd, timeout=600)
    assert dry.returncode == 0, dry.stderr[-3000:]
    return job_counts(dry.stdout), dict(FETCH_LINE.findall(dry.stdout))


def test_the_download_preset_plans_its_downloads(tmp_path):
    """A dry run plans one fetch per file, each from its pinned URL in sources.yaml (none a staged copy), of the
    datasets the real preset reads, and the same rules as the real preset on the staged copies."""
    jobs, fetched = planned(DOWNLOAD, cwd=tmp_path)
    sources = src.Sources(preset(DOWNLOAD)["data"])
    pinned = {ref.local: ref.url for ref in sources.fetch_table(preset(DOWNLOAD)["languages"]).values()}
    assert fetched and all(pinned[local] == url and url.startswith("https://") for local, url in fetched.items())
    datasets = {sources_dataset(local) for local in fetched}
    assert datasets == {"leipzig", "muse", "tatoeba", "xnli", "wikiann", "ud", "europarl", "mbert"}
    assert jobs["fetch"] == len(fetched) == 16 and "parallel_opus" not in jobs  # data.opus.languages: []
    assert jobs["random_checkpoint"] == 1  # the "mBERT" row, written by the run
    shared = REPO.parent / "shared" / "data"
    # the downloaded UD 2.5 tarball holds Liu et al.'s six low-resource treebanks (transfer.parsing.low_resource);
    # the staged copies do not
    assert jobs["ud_low_resource"] == 1
    if shared.is_dir():  # the real preset on the staged copies plans the same rules but that one (its fetches link)
        override = tmp_path / "staged.yaml"
        override.write_text(yaml.safe_dump({"data": {"staged": str(shared), "paths": preset(REAL)["data"]["paths"]}}))
        assert set(planned(REAL, override, cwd=tmp_path)[0]) == set(jobs) - {"ud_low_resource"}


def sources_dataset(local: str) -> str:
    """The dataset folder of a fetched file under data.cache (results/downloads/<folder>/...)."""
    return Path(local).relative_to("results/downloads").parts[0]


# ------------------------------------------------------------------------------------- the local server's copy


def _tar(members: dict[str, bytes], mode: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _conllu(words: list[str]) -> bytes:
    rows = "".join(
        f"{i}\t{w}\t{w}\tNOUN\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_\n"
        for i, w in enumerate(words, 1)
    )
    return f"# text = {' '.join(words)}\n{rows}\n".encode()


WORDS = {
    "en": ["house", "water", "city", "river", "music"],
    "fr": ["maison", "eau", "ville", "fleuve", "musique"],
    "ar": ["بيت", "ماء", "مدينة", "نهر", "موسيقى"],
}
LABELS = ("entailment", "neutral", "contradictory")


def upstream_files(panx_zip, tmp_path: Path) -> dict[str, bytes]:
    """Each file the preset downloads, as its release packs it, small: URL without the scheme -> bytes."""
    files = {}
    for lang, code in (("en", "eng_wikipedia_2016"), ("fr", "fra_wikipedia_2010"), ("ar", "ara_wikipedia_2016")):
        lines = "".join(f"{k}\t{WORDS[lang][k % 5]} {k} {WORDS[lang][(k + 1) % 5]} .\n" for k in range(1, 41))
        files[f"downloads.wortschatz-leipzig.de/corpora/{code}_10K.tar.gz"] = _tar(
            {f"{code}_10K/{code}_10K-sentences.txt": lines.encode(), f"{code}_10K/{code}_10K-words.txt": b"1\tx\t1\n"},
            "w:gz",
        )
    muse = "dl.fbaipublicfiles.com/arrival/dictionaries"
    for lang in ("fr", "ar"):
        pairs = "".join(f"{en} {xx}\n" for en, xx in zip(WORDS["en"], WORDS[lang], strict=True)).encode()
        files[f"{muse}/en-{lang}.0-5000.txt"] = files[f"{muse}/en-{lang}.5000-6500.txt"] = pairs
    laser = "raw.githubusercontent.com/facebookresearch/LASER/74bc6ae7ffb7cba670fe0f428d0ede9f666fb821/data/tatoeba/v1"
    for lang, iso in (("fr", "fra"), ("ar", "ara")):
        files[f"{laser}/tatoeba.{iso}-eng.{iso}"] = "".join(f"{w} .\n" for w in WORDS[lang]).encode()
        files[f"{laser}/tatoeba.{iso}-eng.eng"] = "".join(f"{w} .\n" for w in WORDS["en"]).encode()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    files[
        "huggingface.co/google-bert/bert-base-multilingual-cased/resolve/3f076fdb1ab68d5b2880cb87a0886f315b8146f8/"
        "vocab.txt"
    ] = "".join(f"{t}\n" for t in specials + [f"w{i}" for i in range(119547 - 5)]).encode()
    rows = "".join(
        f"{lang}\t{LABELS[k % 3]}\tx\tx\tx\tx\t{WORDS[lang][k % 5]} est .\t{WORDS[lang][(k + 2) % 5]} .\n"
        for lang in ("en", "fr", "ar")
        for k in range(9)
    )
    header = (
        "language\tgold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse"
        "\tsentence1\tsentence2\n"
    )
    files["dl.fbaipublicfiles.com/XNLI/XNLI-1.0.zip"] = _zip(
        {f"XNLI-1.0/xnli.{split}.tsv": (header + rows).encode() for split in ("dev", "test")}
    )
    files["cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip"] = _zip(
        {
            "multinli_1.0/multinli_1.0_train.jsonl": "\n".join(
                json.dumps({"gold_label": g, "sentence1": "A man sleeps.", "sentence2": "He rests."})
                for g in ("neutral", "-", "entailment", "contradiction")
            ).encode()
        }
    )
    files["s3.amazonaws.com/datasets.huggingface.co/wikiann/1.1.0/panx_dataset.zip"] = panx_zip(
        tmp_path / "panx_dataset.zip",
        {
            lang: {split: f"{lang}:{WORDS[lang][0]}\tB-LOC\n{lang}:.\tO\n\n" for split in ("train", "dev", "test")}
            for lang in WORDS
        },
    ).read_bytes()
    files["lindat.mff.cuni.cz/repository/xmlui/bitstream/handle/11234/1-3105/ud-treebanks-v2.5.tgz"] = _tar(
        {
            f"ud-treebanks-v2.5/UD_{tb}/{code}-ud-{split}.conllu": _conllu(WORDS[lang][:3])
            for lang, tb, code in (
                ("en", "English-EWT", "en_ewt"),
                ("fr", "French-GSD", "fr_gsd"),
                ("ar", "Arabic-PADT", "ar_padt"),
            )
            for split in ("train", "dev", "test")
        },
        "w:gz",
    )
    files["www.statmt.org/europarl/v7/fr-en.tgz"] = _tar(
        {
            "europarl-v7.fr-en.en": "".join(f"The {w} .\n" for w in WORDS["en"]).encode(),
            "europarl-v7.fr-en.fr": "".join(f"Le {w} .\n" for w in WORDS["fr"]).encode(),
        },
        "w:gz",
    )
    return files


def local_registry(files: dict[str, bytes], path: Path) -> Path:
    """resources/sources.yaml with the published sha256 of each served file replaced by the served bytes' (the
    local copies are not the releases; the files trusted on first download keep null, and the lock records them)."""
    registry = src.load()
    for dataset in registry["datasets"].values():
        for entry in dataset["files"].values():
            served = files.get((entry.get("url") or "").split("://", 1)[-1])
            if served is not None and entry["checksum"] == "published":
                entry["sha256"] = hashlib.sha256(served).hexdigest()
    path.write_text(yaml.safe_dump(registry, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.workflow
def test_the_download_preset_runs_from_a_local_servers_copy(tmp_path, panx_zip):
    """The preset's data rules (--until: every fetch and every parse into the canonical layout) with data.mirror at
    a local server: each file is fetched once over HTTP, verified (the lock records the ones without a published
    sha256), and parsed; the real preset's stand-ins are not needed (real test sets, MultiNLI, ar's treebank)."""
    files = upstream_files(panx_zip, tmp_path)
    server = Server()
    try:
        server.files.update(files)
        override = tmp_path / "local.yaml"
        override.write_text(
            yaml.safe_dump(
                {
                    "data": {
                        "mirror": server.url,
                        "registry": str(local_registry(files, tmp_path / "sources.yaml")),
                        "download": {"retries": 1, "backoff": 0.01},
                    }
                }
            )
        )
        done = snakemake(
            "--configfile",
            str(DOWNLOAD),
            str(override),
            "--until",
            *DATA_RULES,
            "--cores",
            "2",
            cwd=tmp_path,
            timeout=900,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-5000:]
    asked = sorted(request["path"].lstrip("/") for request in server.requests)
    assert asked == sorted(set(asked)) and set(asked) <= set(files) and len(asked) == 16  # each file once
    data = tmp_path / "results" / "real-download" / "data"
    assert (data / "corpus" / "ar.txt").read_text(encoding="utf-8").count("\n\n") == 39  # 40 one-line documents
    assert (data / "dict" / "en-fr.test.txt").read_text() == "".join(
        f"{en} {fr}\n" for en, fr in zip(WORDS["en"], WORDS["fr"], strict=True)
    )
    assert (data / "xnli" / "test-ar.tsv").read_text(encoding="utf-8").splitlines()[2].endswith("\tcontradiction")
    assert len((data / "xnli" / "train-en.tsv").read_text().splitlines()) == 3  # MultiNLI less its "-" label
    assert (data / "wikiann" / "fr.test.tsv").read_text() == "maison\tB-LOC\n.\tO\n\n"
    assert "بيت" in (data / "ud" / "ar.test.conllu").read_text(encoding="utf-8")  # the treebank real.yaml lacks
    assert (data / "parallel" / "en-fr.fr").read_text().splitlines()[0] == "Le maison ."
    assert (data / "tatoeba" / "tatoeba.ar-eng.ar").read_text(encoding="utf-8").startswith("بيت")
    lock = yaml.safe_load((tmp_path / "results" / "downloads" / "sources.lock.yaml").read_text())["files"]
    published = ("dl.fbaipublicfiles.com/XNLI", "cims.nyu.edu", "s3.amazonaws.com", "lindat.", "raw.githubusercontent")
    assert {url.split("://", 1)[1] for url in lock} == {name for name in asked if not name.startswith(published)}
    assert not (tmp_path / "results" / "real-download" / "models").exists()  # --until: no model trained
