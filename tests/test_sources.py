"""resources/sources.yaml and xling.data.sources: the registry validates, and a run's `data:` config
resolves to the right files to fetch (URL or pre-staged copy, checksum, cache path)."""

from __future__ import annotations

import copy
import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest
import yaml
from workflow_helpers import snakemake

from xling.data import download as dl
from xling.data import sources as src

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def registry() -> dict:
    return src.load()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the registry ------------------------------------------------------------------------------


def test_sources_yaml_validates_and_documents_every_file(registry):
    for name, ds in registry["datasets"].items():
        assert ds["license"] and ds["homepage"] and ds["canonical"], name
        for key, f in ds["files"].items():
            assert f.get("url") or f.get("reason"), f"{name}.{key}"
            assert f["checksum"] in src.POLICIES, f"{name}.{key}"
            if f["checksum"] == "published":
                assert f["sha256"] and "checksum_source" in f, f"{name}.{key}"
            if f["checksum"] == "trust-on-first-download":
                assert f["sha256"] is None, f"{name}.{key}"


def test_registry_covers_the_study(registry):
    sources = src.Sources({}, registry)
    study = ["en", "fr", "es", "de", "el", "bg", "ru", "tr", "ar", "vi", "th", "zh", "hi", "sw", "ur"]
    assert sources.languages("wikipedia") == sorted(study)
    assert sources.languages("tatoeba") == sorted(set(study) - {"en"})
    assert set(sources.languages("muse")) == set(study) - {"en", "sw", "ur"}
    assert sources.languages("europarl") == sorted(["de", "fr", "es", "bg", "el"])
    assert sources.languages("bucc") == sorted(["de", "fr", "ru", "zh"])
    assert sources.languages("xnli") == sorted(study)  # one zip for all 15: listed, or no XNLI fine-tuning is planned
    assert "sw" not in sources.languages("ud")
    wikiann = sources.languages("wikiann")  # one zip for all: the languages are listed, not per file
    assert len(wikiann) == 176 and set(study) <= set(wikiann) and "no" in wikiann
    assert sources.available("wikiann", ["sw", "xa", "en"]) == ["sw", "en"]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["datasets"]["muse"].pop("license"), "muse: missing 'license'"),
        (
            lambda d: d["datasets"]["muse"]["files"]["full/de"].update(sha256="a" * 64),
            "muse.files.full/de: policy 'trust-on-first-download' must have sha256: null",
        ),
        (
            lambda d: d["datasets"]["xnli"]["files"]["xnli"].update(sha256=None),
            "xnli.files.xnli: policy 'published' needs",
        ),
        (lambda d: d["datasets"]["xnli"]["files"]["xnli"].update(sha256="XYZ"), "64 lowercase hex"),
        (lambda d: d["datasets"]["xnli"]["files"]["xnli"].pop("checksum_source"), "checksum_source"),
        (lambda d: d["datasets"]["bucc"]["files"]["de/dev"].update(url=None), "no url and no 'reason'"),
        (lambda d: d["datasets"]["bucc"]["files"]["de/dev"].update(checksum="md5"), "checksum policy must be"),
        (lambda d: d["datasets"]["wikiann"]["languages"].append(False), "wikiann: 'languages' must be a list"),
    ],
)
def test_validate_rejects_bad_entries(registry, mutate, message):
    bad = copy.deepcopy(registry)
    mutate(bad)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        src.validate(bad, "sources.yaml")


# -- config -> resolved jobs -------------------------------------------------------------------


def test_needed_files_follow_the_languages(registry):
    sources = src.Sources({"cache": "cache"}, registry)
    needed = sources.needed(["en", "de", "sw", "ur"])
    langs = {name: {r.lang for r in refs} for name, refs in needed.items()}
    assert langs["wikipedia"] == {"en", "de", "sw", "ur"}
    assert langs["muse"] == {"de"}  # MUSE has no en-sw / en-ur
    assert langs["europarl"] == {"de"}
    assert langs["tatoeba"] == {"de", "sw", "ur"}
    assert langs["bucc"] == {"de"}
    assert [r.key for r in needed["ud"]] == ["2.5"]
    assert [r.key for r in needed["wikiann"]] == ["panx"]
    assert sources.needed(["xa", "xb"], pivot="xa")["wikiann"] == []  # no language WikiAnn has
    table = sources.fetch_table(["en", "de", "sw", "ur"])
    assert "cache/ud/ud-treebanks-v2.5.tgz" in table
    assert all(local.startswith("cache/") for local in table)


def test_wikipedia_shards_and_unknown_counts(registry):
    sources = src.Sources({"wikipedia": {"max_shards": 3}}, registry)
    en = sources.wikipedia("en")
    assert [r.key for r in en] == ["en/0", "en/1", "en/2"]
    assert en[2].url.endswith("/b04c8d1ceb2f5cd4588862100d08de323dccfbaa/20231101.en/train-00002-of-00041.parquet")
    assert en[0].sha256 is not None and en[1].sha256 is None
    assert en[0].local == "results/downloads/wikipedia/20231101.en/train-00000.parquet"
    ur = sources.wikipedia("ur")
    assert len(ur) == 1  # only one shard exists
    sw = sources.wikipedia("sw")[0]
    assert sw.url is None and "tree/b04c8d1c" in sw.tree_api and sw.name_glob == "train-00000-of-*.parquet"
    assert "file name from" in sw.shown
    pinned = src.Sources({"wikipedia": {"shards": {"sw": 2}}}, registry).wikipedia("sw")[0]
    assert pinned.url.endswith("20231101.sw/train-00000-of-00002.parquet")


def test_other_snapshot_drops_pinned_counts_and_checksums(registry):
    sources = src.Sources({"wikipedia": {"snapshot": "20240101"}}, registry)
    en = sources.wikipedia("en")[0]
    assert en.url is None and en.sha256 is None and "20240101.en" in en.tree_api


def test_mirror_and_lock_location(registry):
    sources = src.Sources({"mirror": "https://mirror.example.org/data", "cache": "/scratch/dl"}, registry)
    ref = sources.file("xnli", "xnli")
    assert ref.url == "https://dl.fbaipublicfiles.com/XNLI/XNLI-1.0.zip"
    assert ref.shown == "https://mirror.example.org/data/dl.fbaipublicfiles.com/XNLI/XNLI-1.0.zip"
    assert sources.lock == Path("/scratch/dl/sources.lock.yaml")
    assert src.Sources({"lock": "my.lock"}, registry).lock == Path("my.lock")


def test_ud_release_and_treebanks_from_config(registry):
    sources = src.Sources({"ud_release": "2.4", "treebanks": {"en": ["UD_English-GUM"]}}, registry)
    assert [r.key for r in sources.needed(["en", "de"])["ud"]] == ["2.4"]
    assert sources.treebanks("en") == ["UD_English-GUM"]
    assert sources.treebanks("de") == ["UD_German-GSD"]


def test_staged_directory_file_and_mapping(registry, tmp_path):
    (tmp_path / "tatoeba").mkdir()
    (tmp_path / "tatoeba" / "tatoeba.deu-eng.deu").write_text("x\n")
    (tmp_path / "tatoeba" / "tatoeba.deu-eng.eng").write_text("y\n")
    (tmp_path / "en-de.txt.gz").write_bytes(b"gz")
    config = {
        "staged": str(tmp_path),
        "paths": {
            "tatoeba": "tatoeba",  # a directory of upstream-named files
            "muse": {"full": {"de": {"path": "en-de.txt.gz", "sha256": sha(b"gz")}}},  # another form
        },
    }
    sources = src.Sources(config, registry)
    deu = sources.file("tatoeba", "de/de")
    assert deu.staged == str(tmp_path / "tatoeba" / "tatoeba.deu-eng.deu")
    assert deu.staged_sha256 == deu.sha256  # same artifact: checked against the published sha256
    assert deu.local == "results/downloads/tatoeba/tatoeba.deu-eng.deu"
    muse = sources.file("muse", "full/de")
    assert muse.staged_sha256 == sha(b"gz")
    assert muse.local == "results/downloads/muse/en-de.txt.gz"  # keeps the staged copy's form
    assert sources.file("muse", "test/de").staged is None  # not staged: downloaded


def test_staged_missing_file_is_a_clear_error(registry, tmp_path):
    config = {"staged": str(tmp_path), "paths": {"muse": {"full": {"de": {"path": "nope.txt"}}}}}
    with pytest.raises(FileNotFoundError, match=r"data\.paths\.muse.*nope\.txt"):
        src.Sources(config, registry).file("muse", "full/de")
    with pytest.raises(ValueError, match="data.paths.musee: unknown dataset"):
        src.Sources({"paths": {"musee": "x"}}, registry)


# -- fetching ------------------------------------------------------------------------------------


def test_fetch_staged_copy_is_verified(registry, tmp_path):
    (tmp_path / "v.txt").write_text("[PAD]\n")
    config = {
        "cache": str(tmp_path / "cache"),
        "staged": str(tmp_path),
        "paths": {"mbert_vocab": {"cased": {"path": "v.txt", "sha256": sha(b"[PAD]\n")}}},
    }
    ref = src.Sources(config, registry).file("mbert_vocab", "cased")
    out = src.fetch(ref.as_dict(), lock=tmp_path / "lock.yaml")
    assert out.read_text() == "[PAD]\n"
    bad = {**config, "paths": {"mbert_vocab": {"cased": {"path": "v.txt", "sha256": "0" * 64}}}}
    ref = src.Sources({**bad, "cache": str(tmp_path / "c2")}, registry).file("mbert_vocab", "cased")
    with pytest.raises(dl.ChecksumError, match="v.txt"):
        src.fetch(ref, lock=None)


class Hub:
    """A fake hub: a tree listing (JSON, with LFS oids) and the files themselves."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path.startswith("/api/tree/"):
                    folder = self.path.removeprefix("/api/tree/")
                    body = json.dumps(
                        [
                            {"type": "file", "path": p, "size": len(b), "lfs": {"oid": sha(b), "size": len(b)}}
                            for p, b in hub.files.items()
                            if p.startswith(folder + "/")
                        ]
                    ).encode()
                else:
                    body = hub.files.get(self.path.removeprefix("/resolve/"))
                    if body is None:
                        self.send_response(404)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


def _hub_registry(hub_url: str, shards, sha0=None) -> dict:
    entry = {
        "lang": "xx",
        "url": hub_url + "/resolve/{snapshot}.xx/train-{shard:05d}-of-{shards:05d}.parquet",
        "tree_api": hub_url + "/api/tree/{snapshot}.xx",
        "dest": "wiki/{snapshot}.xx/train-{shard:05d}.parquet",
        "shards": shards,
        "checksum": "hf-lfs",
        "sha256": None,
    }
    if sha0:
        entry.update(sha256={0: sha0}, checksum_source="test")
    return {
        "datasets": {
            "wikipedia": {
                "title": "t",
                "license": "l",
                "homepage": "h",
                "canonical": ["c"],
                "snapshot": "s1",
                "revision": "r",
                "files": {"xx": entry},
            }
        }
    }


def test_fetch_hf_lfs_resolves_name_and_checksum(tmp_path):
    data = b"parquet bytes"
    hub = Hub({"s1.xx/train-00000-of-00003.parquet": data, "s1.xx/train-00001-of-00003.parquet": b"other"})
    try:
        registry = _hub_registry(hub.url, shards=None)
        src.validate(registry)
        ref = src.Sources({"cache": str(tmp_path)}, registry).wikipedia("xx")[0]
        assert ref.url is None
        out = src.fetch(ref, lock=tmp_path / "lock.yaml")
        assert out.read_bytes() == data
        lock = yaml.safe_load((tmp_path / "lock.yaml").read_text())["files"]
        assert lock[hub.url + "/resolve/s1.xx/train-00000-of-00003.parquet"]["sha256"] == sha(data)
        # a sources.yaml checksum that disagrees with the hub's LFS oid is an error
        registry = _hub_registry(hub.url, shards=3, sha0="1" * 64)
        ref = src.Sources({"cache": str(tmp_path / "again")}, registry).wikipedia("xx")[0]
        with pytest.raises(dl.ChecksumError, match="LFS oid"):
            src.fetch(ref, lock=None)
    finally:
        hub.httpd.shutdown()
        hub.httpd.server_close()


def test_parallel_text_where_europarl_has_no_language(registry):
    """Cao et al.'s Table 5: MultiUN for ar and zh, Tanzil for ur, Europarl for the rest."""
    sources = src.Sources({}, registry)
    assert sources.languages("multiun") == ["ar", "zh"] and sources.languages("tanzil") == ["ur"]
    study = ["fr", "es", "de", "el", "bg", "ru", "tr", "ar", "vi", "th", "zh", "hi", "sw", "ur"]
    assert sources.parallel_sources(study) == {
        "fr": "europarl",
        "es": "europarl",
        "de": "europarl",
        "el": "europarl",
        "bg": "europarl",
        "ar": "multiun",
        "zh": "multiun",
        "ur": "tanzil",
    }
    needed = sources.needed(["en", "ar", "ur"])
    assert [r.url for r in needed["multiun"]] == ["https://object.pouta.csc.fi/OPUS-MultiUN/v1/moses/ar-en.txt.zip"]
    assert [r.url for r in needed["tanzil"]] == ["https://object.pouta.csc.fi/OPUS-Tanzil/v1/moses/en-ur.txt.zip"]
    # data.opus.languages: the OPUS languages a run takes; the others have no parallel text and nothing to fetch
    only_zh = src.Sources({"opus": {"languages": ["zh"]}}, registry)
    assert only_zh.parallel_sources(["fr", "ar", "zh", "ur"]) == {"fr": "europarl", "zh": "multiun"}
    none = src.Sources({"opus": {"languages": []}}, registry).needed(["en", "fr", "ar", "ur"])
    assert none["multiun"] == none["tanzil"] == [] and [r.lang for r in none["europarl"]] == ["fr"]


def test_opus_downloads_through_a_local_server_then_parse(registry, tmp_path):
    """The pinned OPUS URLs fetched from a local HTTP server standing in as the mirror: the first download's sha256
    goes into the lock (trust on first download), the archive parses into parallel text, and a changed upstream
    file is refused."""
    import io
    import zipfile

    from xling.data import upstream
    from xling.data.formats import read_parallel

    def moses_zip(corpus, pair, lines):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as zf:
            zf.writestr("README", f"{corpus} from OPUS")
            for side, text in lines.items():
                zf.writestr(f"{corpus}.{pair}.{side}", text)
        return buffer.getvalue()

    served = {
        "/object.pouta.csc.fi/OPUS-MultiUN/v1/moses/en-zh.txt.zip": moses_zip(
            "MultiUN", "en-zh", {"en": "Peace and security.\n", "zh": "和平与安全。\n"}
        ),
        "/object.pouta.csc.fi/OPUS-Tanzil/v1/moses/en-ur.txt.zip": moses_zip(
            "Tanzil", "en-ur", {"en": "In the name of God.\n", "ur": "شروع اللہ کے نام سے۔\n"}
        ),
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = served.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        mirror = f"http://127.0.0.1:{httpd.server_address[1]}"
        sources = src.Sources({"cache": str(tmp_path / "dl"), "mirror": mirror}, registry)
        lock = tmp_path / "lock.yaml"
        for name, lang, tokenize_xx, expected in (
            ("multiun", "zh", "zh", ("Peace and security .", "和 平 与 安 全 。")),
            ("tanzil", "ur", "13a", ("In the name of God .", "شروع اللہ کے نام سے۔")),
        ):
            ref = sources.files(name, lang=lang)[0]
            out = src.fetch(ref, lock=lock, mirror=mirror)
            assert yaml.safe_load(lock.read_text())["files"][ref.url]["sha256"] == dl.sha256_file(out)
            upstream.opus_to_parallel(
                out,
                src.PARALLEL_OPUS[name],
                lang,
                tmp_path / f"en-{lang}.en",
                tmp_path / f"en-{lang}.{lang}",
                tokenize_xx=tokenize_xx,
            )
            assert read_parallel(tmp_path / f"en-{lang}.en", tmp_path / f"en-{lang}.{lang}") == [expected]
        served["/object.pouta.csc.fi/OPUS-Tanzil/v1/moses/en-ur.txt.zip"] = moses_zip(
            "Tanzil", "en-ur", {"en": "Changed.\n", "ur": "بدلا۔\n"}
        )
        again = src.Sources({"cache": str(tmp_path / "dl2"), "mirror": mirror}, registry).files("tanzil", lang="ur")[0]
        with pytest.raises(dl.ChecksumError):
            src.fetch(again, lock=lock, mirror=mirror)
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- the mini preset and the shared copies ----------------------------------------------------------


def test_mini_preset_reads_only_staged_copies(registry, shared_data):
    preset = yaml.safe_load((REPO / "presets" / "mini.yaml").read_text())
    data = dict(preset["data"], staged=str(shared_data))
    sources = src.Sources(data, registry)
    needed = sources.needed(preset["languages"])
    corpus = needed["leipzig"]
    assert [r.lang for r in corpus] == ["en", "ru"] and all(r.staged for r in corpus)
    full = [r for r in needed["muse"] if r.extra["split"] == "full"]
    vocab = needed["mbert_vocab"]
    for ref in corpus + full + vocab:
        assert ref.staged and dl.sha256_file(ref.staged) == ref.staged_sha256, ref.key


def test_published_tatoeba_checksums_match_the_shared_copies(registry, shared_data):
    """The checksums come from HF datasets' XTREME list (LASER master); the shared copies were
    taken from LASER at the pinned commit: both must be the same bytes."""
    sources = src.Sources({"staged": str(shared_data), "paths": {"tatoeba": "tatoeba"}}, registry)
    refs = [r for lang in sources.languages("tatoeba") for r in sources.files("tatoeba", lang=lang)]
    assert len(refs) == 28
    for ref in refs:
        assert dl.sha256_file(ref.staged) == ref.sha256, ref.key


# -- the rules, end to end ---------------------------------------------------------------------------


def test_fetch_published_file_through_a_local_mirror(registry, shared_data, tmp_path):
    """A mirror laid out as `wget -x` does (host/path): the file is verified against the sha256
    published for its canonical URL, and the log names both."""
    import shutil

    ref = src.Sources({"cache": str(tmp_path / "dl"), "mirror": str(tmp_path / "mirror")}, registry).file(
        "tatoeba", "de/de"
    )
    mirrored = tmp_path / "mirror" / ref.url.split("://", 1)[1]
    mirrored.parent.mkdir(parents=True)
    shutil.copy(shared_data / "tatoeba" / "tatoeba.deu-eng.deu", mirrored)
    out = src.fetch(ref, lock=tmp_path / "lock.yaml", mirror=str(tmp_path / "mirror"))
    assert dl.sha256_file(out) == ref.sha256
    mirrored.write_text("tampered\n")
    ref2 = src.Sources({"cache": str(tmp_path / "dl2")}, registry).file("tatoeba", "de/de")
    with pytest.raises(dl.ChecksumError, match=ref.sha256):
        src.fetch(ref2, lock=None, mirror=str(tmp_path / "mirror"))


def _fake_upstream(root: Path, panx_zip) -> dict:
    """Tiny files in each upstream format (as the releases pack them), and data.paths for them."""
    import io
    import tarfile
    import zipfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True)

    def tar(path, members, mode):
        with tarfile.open(path, mode) as tf:
            for name, text in members.items():
                data = text.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))

    for lang in ("en", "de"):
        texts = [
            f"Article {k} in {lang} says something true.\nIt has a second sentence here. And a third one."
            for k in range(12)
        ]
        pq.write_table(
            pa.table({"id": [str(k) for k in range(12)], "url": ["u"] * 12, "title": ["t"] * 12, "text": texts}),
            root / f"wiki-{lang}.parquet",
        )
    tar(
        root / "de-en.tgz",
        {
            "europarl-v7.de-en.en": "Hello , world .\nSecond line.\n",
            "europarl-v7.de-en.de": "Hallo, Welt.\nZweite Zeile.\n",
        },
        "w:gz",
    )
    sentence = (
        "# text = Hi there\n1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n2\tthere\tthere\tADV\t_\t_\t1\tadvmod\t_\t_\n\n"
    )
    tar(
        root / "ud.tgz",
        {
            f"ud-treebanks-v2.5/UD_{tb}/{code}-ud-{split}.conllu": sentence
            for tb, code in (("English-EWT", "en_ewt"), ("German-GSD", "de_gsd"))
            for split in ("train", "dev", "test")
        },
        "w:gz",
    )
    rows = "".join(
        f"{lang}\t{label}\tA premise in {lang}.\tA hypothesis.\n"
        for lang in ("en", "de", "fr")
        for label in ("entailment", "contradictory")
    )
    with zipfile.ZipFile(root / "XNLI-1.0.zip", "w") as zf:
        for split in ("dev", "test"):
            zf.writestr(f"XNLI-1.0/xnli.{split}.tsv", "language\tgold_label\tsentence1\tsentence2\n" + rows)
    with zipfile.ZipFile(root / "multinli_1.0.zip", "w") as zf:
        zf.writestr(
            "multinli_1.0/multinli_1.0_train.jsonl",
            "\n".join(
                json.dumps({"gold_label": g, "sentence1": "P.", "sentence2": "H."})
                for g in ("neutral", "-", "entailment")
            ),
        )
    tar(
        root / "bucc.tar.bz2",
        {
            "bucc2018/de-en/de-en.sample.de": "de-000000001\tHallo\n",
            "bucc2018/de-en/de-en.sample.en": "en-000000001\tHello\nen-000000002\tNo\n",
            "bucc2018/de-en/de-en.sample.gold": "de-000000001\ten-000000001\n",
        },
        "w:bz2",
    )
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (root / "vocab.txt").write_text("\n".join(specials + [f"w{i}" for i in range(119547 - 5)]) + "\n")
    panx_zip(
        root / "panx_dataset.zip",
        {
            lang: {split: f"{lang}:Berlin\tB-LOC\n{lang}:!\tO\n\n" for split in ("train", "dev", "test")}
            for lang in ("en", "de")
        },
    )
    (root / "tatoeba.deu-eng.deu").write_text("Hallo.\n")
    (root / "tatoeba.deu-eng.eng").write_text("Hello.\n")

    def unverified(name):
        return {"path": name, "sha256": None}

    return {
        "wikipedia": {lang: unverified(f"wiki-{lang}.parquet") for lang in ("en", "de")},
        "europarl": {"de": unverified("de-en.tgz")},
        "ud": {"2.5": unverified("ud.tgz")},
        "xnli": {"xnli": unverified("XNLI-1.0.zip"), "multinli": unverified("multinli_1.0.zip")},
        "bucc": {"de": {"dev": unverified("bucc.tar.bz2")}},
        "mbert_vocab": {"cased": unverified("vocab.txt")},
        "wikiann": {"panx": unverified("panx_dataset.zip")},
        "tatoeba": {"de": {"de": unverified("tatoeba.deu-eng.deu"), "eng": unverified("tatoeba.deu-eng.eng")}},
    }


@pytest.mark.workflow
def test_workflow_real_data_rules_end_to_end(tmp_path, panx_zip):
    """Every parse rule of rules/sources.smk on tiny upstream-format files (pre-staged, unverified),
    plus a MUSE dictionary through a local mirror (trust-on-first-download): canonical files out,
    URLs in the dry run, the first download's sha256 in the lock."""
    paths = _fake_upstream(tmp_path / "staged", panx_zip)
    muse = tmp_path / "mirror" / "dl.fbaipublicfiles.com" / "arrival" / "dictionaries"
    muse.mkdir(parents=True)
    (muse / "en-de.5000-6500.txt").write_text("house Haus\ndog\tHund\n")
    config = {
        "run": "t",
        "languages": ["en", "de"],
        "corpus": {"sizes": [10, 20]},
        "data": {
            "source": "real",
            "cache": "dl",
            "staged": str(tmp_path / "staged"),
            "paths": paths,
            "mirror": str(tmp_path / "mirror"),
        },
        "alignment": {"finetune": {"runs": []}},
    }  # no Table 5 model: one language pair here
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    data = "results/t/data"
    targets = [
        f"{data}/corpus/en.txt",
        f"{data}/corpus/de.txt",
        f"{data}/dict/en-de.test.txt",
        f"{data}/parallel/en-de.en",
        f"{data}/ud/de.test.conllu",
        f"{data}/xnli/dev-de.tsv",
        f"{data}/xnli/train-en.tsv",
        f"{data}/tatoeba/tatoeba.de-eng.de",
        f"{data}/bucc/de-en.dev.gold",
        f"{data}/vocab/mbert-cased.txt",
        f"{data}/wikiann/de.test.tsv",
    ]
    args = ["--directory", str(tmp_path), "-c2", *targets, "--configfile", str(tmp_path / "config.yaml")]
    dry = snakemake(*args, "-n", "-p", cwd=tmp_path, timeout=120)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "<- https://dl.fbaipublicfiles.com/arrival/dictionaries/en-de.5000-6500.txt" in dry.stdout
    assert "<- pre-staged copy" in dry.stdout
    run = snakemake(*args, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = tmp_path / data
    corpus = (out / "corpus" / "de.txt").read_text().split("\n\n")
    assert 8 <= len(corpus) <= 12 and corpus[0].startswith("Article 0 in de")  # stops once 24 sentences
    assert (out / "dict" / "en-de.test.txt").read_text() == "house Haus\ndog Hund\n"
    assert (out / "parallel" / "en-de.en").read_text().splitlines() == ["Hello , world .", "Second line ."]
    assert "Hi\thi\tINTJ" in (out / "ud" / "de.test.conllu").read_text()
    assert (out / "xnli" / "dev-de.tsv").read_text().splitlines()[1].endswith("\tcontradiction")
    assert len((out / "xnli" / "train-en.tsv").read_text().splitlines()) == 2
    assert (out / "tatoeba" / "tatoeba.de-eng.de").read_text() == "Hallo.\n"
    assert (out / "bucc" / "de-en.dev.gold").read_text() == "de-000000001\ten-000000001\n"
    assert len((out / "vocab" / "mbert-cased.txt").read_text().splitlines()) == 119547
    assert (out / "wikiann" / "de.test.tsv").read_text() == "Berlin\tB-LOC\n!\tO\n\n"
    assert (out / "wikiann" / "en.train.tsv").exists()
    lock = yaml.safe_load((tmp_path / "dl" / "sources.lock.yaml").read_text())["files"]
    assert list(lock) == ["https://dl.fbaipublicfiles.com/arrival/dictionaries/en-de.5000-6500.txt"]


def test_real_preset_reads_only_verified_staged_copies(registry, shared_data):
    """presets/real.yaml: each language's Leipzig sample (the registry has every staged one: en ru de es fr ar vi),
    MUSE dictionary and the mBERT vocabulary come from the shared copies, checked against the preset's sha256."""
    preset = yaml.safe_load((REPO / "presets" / "real.yaml").read_text())
    assert {"en", "ru", "de", "es", "fr", "ar", "vi"} <= set(src.Sources({}, registry).languages("leipzig"))
    sources = src.Sources(dict(preset["data"], staged=str(shared_data)), registry)
    needed = sources.needed(preset["languages"])
    assert [r.lang for r in needed["leipzig"]] == preset["languages"]
    full = [r for r in needed["muse"] if r.extra["split"] == "full"]  # the only split the preset reads
    for ref in needed["leipzig"] + full + needed["mbert_vocab"]:
        assert ref.staged and dl.sha256_file(ref.staged) == ref.staged_sha256, ref.key


@pytest.mark.workflow
def test_low_resource_treebanks_are_extracted_train_and_test_from_the_same_tarball(tmp_path):
    """transfer.parsing.low_resource (Liu et al. short §5.2): rule ud_low_resource copies each listed treebank's
    train and test splits out of the UD tarball the run languages' come from, never a dev split (Irish here has
    one, as a later release's might), after ud_treebanks (both extract through one scratch folder)."""
    import io
    import tarfile

    def sentence(form):
        return (
            f"# text = {form} .\n1\t{form}\t{form}\tNOUN\t_\t_\t0\troot\t_\t_\n2\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n"
        )

    members = {
        f"ud-treebanks-v2.5/UD_{tb}/{code}-ud-{split}.conllu": sentence(f"{code}-{split}")
        for tb, code, splits in (
            ("English-EWT", "en_ewt", ("train", "dev", "test")),
            ("German-GSD", "de_gsd", ("train", "dev", "test")),
            ("Kazakh-KTB", "kk_ktb", ("train", "test")),
            ("Irish-IDT", "ga_idt", ("train", "dev", "test")),
        )
        for split in splits
    }
    staged = tmp_path / "staged"
    staged.mkdir()
    with tarfile.open(staged / "ud.tgz", "w:gz") as tf:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    config = {
        "run": "t",
        "languages": ["en", "de"],
        "corpus": {"sizes": [10, 20]},
        "data": {
            "source": "real",
            "cache": "dl",
            "staged": str(staged),
            "paths": {"ud": {"2.5": {"path": "ud.tgz", "sha256": None}}},
        },
        "transfer": {"parsing": {"low_resource": {"treebanks": {"kk": ["UD_Kazakh-KTB"], "ga": ["UD_Irish-IDT"]}}}},
        "alignment": {"finetune": {"runs": []}},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    data = "results/t/data/ud"
    targets = [f"{data}/{lang}.{split}.conllu" for lang in ("kk", "ga") for split in ("train", "test")]
    args = ["--directory", str(tmp_path), "-c1", *targets, "--configfile", str(tmp_path / "config.yaml")]
    run = snakemake(*args, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = tmp_path / data
    for lang, code in (("kk", "kk_ktb"), ("ga", "ga_idt")):
        for split in ("train", "test"):
            assert f"# text = {code}-{split} ." in (out / f"{lang}.{split}.conllu").read_text(encoding="utf-8")
    assert sorted(path.name for path in out.glob("*.dev.conllu")) == ["de.dev.conllu", "en.dev.conllu"]
