"""The workflow as a researcher runs it: presets/test.yaml end to end (the `test_run` fixture of
conftest.py; what reruns after a change is in test_reruns.py), lint, the full-study DAG."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from plan_configs import language_berts, preset_plan
from workflow_helpers import REPO, TEST_PRESET, job_counts, snakemake

pytestmark = pytest.mark.workflow


def test_test_preset_runs_end_to_end(test_run):
    results = test_run / "results/test"
    html = (results / "report.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in html
    assert not re.search(r"""(src|href)=["']https?://""", html)
    table = pd.read_parquet(results / "eval/word_retrieval.parquet")
    config = yaml.safe_load((REPO / "presets/test.yaml").read_text())
    grid = table[table.window.isin(config["windows"])].groupby(["model", "size", "window", "pair"]).size()
    assert len(grid) == 3 * len(config["corpus"]["sizes"]) * len(config["windows"]) * 2
    bert_layers = table[table.model == "bert"].layer.unique()
    assert sorted(bert_layers) == list(range(config["bert"]["num_layers"] + 1))
    for column in ("metric", "dictionary_split", "min_count", "seed", "dim", "hparams"):
        assert table[column].notna().all(), column


def test_window_sweep_rows_are_marked_and_reported(test_run):
    """The test preset's Word2Vec sweep: its own window (4) trained beside the grid's, at the smallest size;
    the gathered table marks exactly the sweep's rows, and the report shows them."""
    results = test_run / "results/test"
    config = yaml.safe_load((REPO / "presets/test.yaml").read_text())
    table = pd.read_parquet(results / "eval/word_retrieval.parquet")
    swept = table[table.window_sweep]
    size = min(config["corpus"]["sizes"])
    assert set(zip(swept.model, swept["size"], swept.window, strict=True)) == {
        ("word2vec", size, window) for window in config["window_sweep"]["windows"]
    }
    assert set(swept.pair) == {"en-xa", "en-xe"} and swept.mrr.between(0, 1).all()
    assert not table[~table.window_sweep & ~table.window.isin(config["windows"])].shape[0]
    assert (results / "figures/word_retrieval_window_sweep.png").stat().st_size > 0
    assert "Window sweep of the static models" in (results / "report.html").read_text(encoding="utf-8")


def test_copy_of_english_is_retrieved_perfectly_by_static_models(test_run):
    table = pd.read_parquet(test_run / "results/test/eval/word_retrieval.parquet")
    copy = table[(table.pair == "en-xe") & table.model.isin(["glove", "word2vec"])]
    assert len(copy) == 8 + 1  # the grid's, and the window sweep's own Word2Vec (w4)
    assert (copy.mrr == 1.0).all() and (copy.coverage > 0.5).all()


def test_mrr_by_part_of_speech_partitions_every_retrieval_row(test_run):
    """The POS table of the run: open, closed and untagged queries make up each word-retrieval row (same
    queries, the MRR their weighted mean). The synthetic dictionaries pair content words only, and the gold
    trees tag them so: every tagged query is a noun, verb or adjective."""
    keys = ["model", "size", "window", "layer", "pair"]
    table = pd.read_parquet(test_run / "results/test/eval/word_retrieval.parquet").set_index(keys)
    pos = pd.read_parquet(test_run / "results/test/eval/word_retrieval_pos.parquet")
    parts = pos[pos.pos.isin(["open", "closed", "untagged"])]
    n = parts.groupby(keys)["n_queries"].sum()
    mrr = (parts.mrr * parts.n_queries).groupby([parts[k] for k in keys]).sum() / n
    assert n.sort_index().to_dict() == table["n_queries"].sort_index().to_dict()
    assert mrr.sort_index().to_numpy() == pytest.approx(table["mrr"].sort_index().to_numpy())
    assert set(pos.pos_treebank) == {"synthetic gold"} and set(pos.pos_class) == {"open", "untagged"}
    assert set(pos.pos) == {"NOUN", "VERB", "ADJ", "open", "untagged"}
    assert parts[parts.pos == "untagged"].n_queries.sum() < 0.5 * n.sum()
    assert (test_run / "results/test/eval/word_retrieval_pos.csv").exists()


def test_word_pairs_and_contextual_retrieval_of_the_test_run(test_run):
    """The alignment study's tables (rules/align.smk): word pairs of each synthetic pair with their AER against
    the generator's gold links, and contextual retrieval of every BERT of the language experiments. xe is a
    copy of English: its word pairs are exact, and every test pair is an exact string match, so nothing is left
    to score once the test filter excludes them."""
    config = yaml.safe_load((REPO / "presets/test.yaml").read_text())
    align = config["alignment"]
    eval_dir = test_run / "results/test/eval"
    pairs = pd.read_parquet(eval_dir / "word_pairs.parquet")
    intersection = pairs[pairs.links_from == "pairs"].set_index(["lang", "split"])
    assert intersection.loc[("xa", "test"), "sentence_pairs"] == align["test_sentences"]
    assert intersection.loc[("xa", f"train{max(align['train_sentences'])}"), "sentence_pairs"] == max(
        align["train_sentences"]
    )
    assert (intersection.aer < 0.3).all() and (intersection.loc["xe"].aer < 0.05).all()
    table = pd.read_parquet(eval_dir / "contextual_retrieval.parquet")
    lms = language_berts(preset_plan("test"))
    base = table[table.lm.isin(lms) & (table.method == "none")]
    assert len(base) == len(lms) * 2 * 2  # lms x pairs x (contextual or not)
    # beside them: the aligned model, the rotations of its base and the fastText baseline (their own tests)
    assert set(table.method) == {"none", "rotation-word", "rotation-sentence"}
    assert table.lm.str.startswith("aligned/").any() and table.lm.str.startswith("fasttext/").any()
    scored = table[table.lang == "xa"]
    assert scored.accuracy.between(0, 1).all() and (scored.n_queries > 0).all()
    copy = table[table.lang == "xe"]
    assert (copy.n_queries == 0).all() and copy.accuracy.isna().all() and (copy.n_exact > 0).all()
    frequency = pd.read_parquet(eval_dir / "contextual_retrieval_frequency.parquet")
    assert frequency.accuracy.dropna().between(0, 1).all() and frequency.n_queries.sum() > 0
    pos = pd.read_parquet(eval_dir / "contextual_retrieval_pos.parquet")
    assert set(pos.group) <= {"lexical_overlap", "closed_class", "open_class"} and "NOUN" in set(pos.pos)
    assert set(pos.pos_treebank) == {"synthetic gold"}


def test_bert_pretraining_left_a_resumable_checkpoint_and_a_log(test_run):
    model = test_run / "results/test/models/bert/1500-w32"
    log = pd.read_csv(model / "training_log.tsv", sep="\t")
    assert log.step.max() == 60 and log.loss.notna().all()
    assert any((test_run / "results/test/checkpoints/bert/1500-w32").glob("*/ckpt-*.pt"))


def test_snakemake_report_collects_the_figures(test_run, tmp_path):
    """`snakemake --report` embeds every figure the report rule declared and wrote, our report.html, the findings
    and the gathered tables (one of them checked), each under its path with its data (written beside the run, not
    in it: the shared run is read-only)."""
    out = tmp_path / "snakemake-report.html"
    done = snakemake("--configfile", str(REPO / "presets/test.yaml"), "--report", str(out), cwd=test_run)
    assert done.returncode == 0, done.stderr[-3000:]
    html = out.read_text(encoding="utf-8")
    figures = sorted((test_run / "results/test/figures").glob("*.png"))
    assert figures, "the report rule wrote no figure"
    tables = [test_run / f"results/test/eval/{table}.csv" for table in ("findings", "word_retrieval")]
    for path in [*figures, test_run / "results/test/report.html", *tables]:
        assert f'"{path.relative_to(test_run)}": {{"name": ' in html, path.name
        assert f";filename={path.name};base64," in html, path.name
    assert html.count('"mime_type": "image/png"') == len(figures)


@pytest.mark.parametrize("preset", [None, "demo", "test", "mini"])
def test_lint_is_clean(preset, tmp_path):
    args = ["--lint"] + (["--configfile", str(REPO / f"presets/{preset}.yaml")] if preset else [])
    done = snakemake(*args, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Congratulations" in done.stdout + done.stderr


@pytest.fixture(scope="module")
def full_study_dry_run():
    """The full study's dry run (config.yaml) through the SLURM profile, once for the tests below: its DAG is
    the one a local run builds, and its job blocks show the resources each job asks SLURM for."""
    dry = snakemake("-n", "-p", "--profile", "profiles/slurm", cwd=REPO, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    return dry


def test_full_study_dag_builds_offline_with_every_pretraining_job(full_study_dry_run):
    dry = full_study_dry_run
    counts = job_counts(dry.stdout)
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    grid = len(config["corpus"]["sizes"]) * len(config["windows"])
    for model in ("glove", "bert_pretrain"):
        assert counts[model] == grid, model
    # the window sweep (Liu et al.'s Figure 4): Word2Vec at its own windows too, at the smallest size
    sweep = config["window_sweep"]
    assert sweep["models"] == ["word2vec"] and sweep["sizes"] is None
    sweep_only = set(sweep["windows"]) - set(config["windows"])
    assert counts["word2vec"] == grid + len(sweep_only) and sweep_only
    for window in sweep_only:
        assert f"models/word2vec/{min(config['corpus']['sizes'])}-w{window}/vectors.bin" in dry.stdout
    assert counts["fetch"] > 0
    assert re.search(r"fetch \S+ <- https://", dry.stdout)


def test_full_study_extracts_the_six_low_resource_treebanks_and_parses_them(full_study_dry_run):
    """Liu et al. short §5.2 (transfer.parsing.low_resource): one job extracts the six treebanks' train and test
    splits from the UD tarball, and each parsing fine-tuning of the language experiments reads their test split to
    score and their train split for the language means (zero-mean, MDS)."""
    from plan_configs import make_config

    dry = full_study_dry_run.stdout
    langs = list(make_config()["transfer"]["parsing"]["low_resource"]["treebanks"])  # the schema's default
    assert sorted(langs) == ["bxr", "ga", "hsb", "kk", "kmr", "sme"] and job_counts(dry)["ud_low_resource"] == 1
    (block,) = re.findall(r"^rule ud_low_resource:\n((?:    .*\n)+)", dry, re.M)
    assert "ud/ud-treebanks-v2.5.tgz" in block
    output = re.search(r"^    output: (.*)$", block, re.M)[1]
    written = sorted(re.findall(r"data/ud/(\w+)\.(\w+)\.conllu", output))
    assert written == sorted((lang, split) for lang in langs for split in ("test", "train")), "never dev"
    parsing = re.findall(
        r"^rule finetune:\n((?:    .*\n)*?    wildcards: task=parsing, lm=bert/.*, variant=f\d+,.*\n)", dry, re.M
    )
    assert parsing and all(
        f"data/ud/{lang}.{split}.conllu" in job for job in parsing for lang in langs for split in ("train", "test")
    )


def test_hf_checkpoint_joins_every_representation_experiment(tmp_path):
    """A local checkpoint in language.hf_models (its own vocabulary: the test preset trains one) gets the store's
    map/reduce over the largest corpus sample, word retrieval into the gathered table, token translation,
    Tatoeba/BUCC and fine-tuning, beside the models trained from scratch."""
    checkpoint = tmp_path / "tiny-bert"
    checkpoint.mkdir()
    (tmp_path / "hf.yaml").write_text(yaml.safe_dump({"language": {"hf_models": [str(checkpoint)]}}), "utf-8")
    dry = snakemake("-n", "--configfile", str(TEST_PRESET), str(tmp_path / "hf.yaml"), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    config = yaml.safe_load(TEST_PRESET.read_text())
    grid, shards = len(config["corpus"]["sizes"]) * len(config["windows"]), config["represent"]["shards"]
    pairs, berts = len(config["languages"]) - 1, len(language_berts(preset_plan("test")))
    counts = job_counts(dry.stdout)
    assert counts["bert_extract"] == (grid + 1) * shards and counts["bert_reduce"] == grid + 1
    sweep_only = set(config["window_sweep"]["windows"]) - set(config["windows"])  # Word2Vec's extra windows
    assert counts["word_retrieval"] == 3 * grid + len(sweep_only) + 1
    assert counts["token_translation"] == (berts + 1) * pairs
    assert counts["sentence_retrieval"] == 2 * (berts + 1) * pairs  # Tatoeba and BUCC
    jobs = dry.stdout.split("\n\n")
    extract = [j for j in jobs if "rule bert_extract:" in j and "reps/hf/tiny-bert/shards/en.0." in j]
    assert len(extract) == 1 and f"results/test/corpus/{max(config['corpus']['sizes'])}/en.txt" in extract[0]
    assert any("rule gather_table:" in j and "results/test/eval/retrieval/hf/tiny-bert.parquet" in j for j in jobs)
    assert "results/test/finetuned/xnli/hf/tiny-bert/" in dry.stdout


def test_aligned_model_joins_every_experiment(tmp_path):
    """aligned/{n}/{base} is a model of the run: the run fine-tunes XNLI on it, and word retrieval (through the
    store), token translation and Tatoeba take it as a target, each from the one alignment job, which reads the
    base BERT and every language's train{n} word pairs."""
    config = yaml.safe_load(TEST_PRESET.read_text())
    n = config["alignment"]["finetune"]["sizes"][0]
    base = f"bert/{max(config['language']['sizes'])}-w{max(config['windows'])}"
    lm, lang = f"aligned/{n}/{base}", config["languages"][1]
    dry = snakemake("-n", "--configfile", str(TEST_PRESET), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert job_counts(dry.stdout)["align_finetune"] == 1
    assert f"results/test/finetuned/xnli/{lm}/f{config['transfer']['freeze'][0]}-cao/seed1" in dry.stdout
    targets = [
        f"results/test/eval/retrieval/{lm}.parquet",
        f"results/test/eval/token_translation/{lm}/en-{lang}.parquet",
        f"results/test/eval/sentence_retrieval/tatoeba/{lm}/{lang}.parquet",
    ]
    dry = snakemake("-n", *targets, "--configfile", str(TEST_PRESET), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    counts = job_counts(dry.stdout)
    assert counts["align_finetune"] == 1 and counts["bert_reduce"] == 1 and counts["bert_pretrain"] == 1
    jobs = dry.stdout.split("\n\n")
    align = [j for j in jobs if "rule align_finetune:" in j][0]
    assert f"results/test/models/{base}," in align
    assert all(f"results/test/data/align/en-{x}/train{n}.align" in align for x in config["languages"][1:])
    assert any("rule bert_extract:" in j and f"results/test/models/{lm}," in j for j in jobs)


def dry_run_over_test_preset(tmp_path, override: str, timeout: int):
    """A dry run of the test preset with `override` (YAML) merged over it."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(override)
    return snakemake("-n", "--configfile", str(REPO / "presets/test.yaml"), str(bad), cwd=tmp_path, timeout=timeout)


def test_wrong_config_key_stops_with_its_name(tmp_path):
    dry = dry_run_over_test_preset(tmp_path, "retrieval: {metrc: cosine}\n", timeout=120)
    assert dry.returncode != 0
    assert "metrc" in dry.stdout + dry.stderr


def test_alignment_splits_beyond_the_synthetic_parallel_text_stop_at_plan_time(tmp_path):
    """test 60 + dev 20 + train 121 > the test preset's 200 pairs: the dry run fails naming both keys."""
    dry = dry_run_over_test_preset(tmp_path, "alignment: {train_sentences: [60, 121]}\n", timeout=300)
    assert dry.returncode != 0
    assert "= 201 sentence pairs, but synthetic.parallel_sentences is 200" in dry.stdout + dry.stderr


def test_full_study_on_slurm_profile_requests_gpus_for_gpu_rules(full_study_dry_run):
    dry = full_study_dry_run
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    for rule in ("bert_pretrain", "bert_extract", "token_translation", "finetune"):
        block = re.search(rf"rule {rule}:.*?resources: ([^\n]*)", dry.stdout, re.S)
        assert block, rule
        shown = dict(kv.split("=", 1) for kv in block.group(1).split(", "))
        assert shown["gpu"] == str(profile["set-resources"][rule]["gpu"]), rule
        assert shown["slurm_partition"] == profile["set-resources"][rule]["slurm_partition"], rule


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """The demo preset's acceptance targets: every static model, token translation by its BERT at the
    largest size and window (the papers' setting), and contextual retrieval by its aligned BERT and that BERT,
    built in a fresh working directory."""
    config = yaml.safe_load((REPO / "presets/demo.yaml").read_text())
    sizes, windows, langs = config["corpus"]["sizes"], config["windows"], config["languages"]
    targets = [
        f"results/demo/eval/retrieval/{model}/{size}-w{window}.parquet"
        for model in ("glove", "word2vec")
        for size in sizes
        for window in windows
    ]
    targets += [
        f"results/demo/eval/token_translation/bert/{max(sizes)}-w{max(windows)}/{langs[0]}-{lang}.parquet"
        for lang in langs[1:]
    ]
    targets += [f"results/demo/eval/contextual_retrieval/{lm}.parquet" for lm in demo_aligned_and_base(config)]
    workdir = tmp_path_factory.mktemp("demo")
    done = snakemake(
        *targets, "--configfile", str(REPO / "presets/demo.yaml"), "--cores", "2", cwd=workdir, timeout=1800
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return workdir / "results/demo/eval"


def test_demo_static_models_retrieve_clearly_above_chance(demo_run):
    parts = [p for p in (demo_run / "retrieval").glob("*/*.parquet") if not p.name.endswith(".ranks.parquet")]
    table = pd.concat([pd.read_parquet(p) for p in parts])
    assert set(table.model) == {"glove", "word2vec"} and len(table) == 2 * 2 * 2 * 3
    too_low = table[table.mrr < 2 * table.chance_mrr]
    assert too_low.empty, too_low[["model", "size", "window", "pair", "mrr", "chance_mrr"]].to_string()


def test_demo_convert_rate_rises_with_alpha(demo_run):
    from test_translation import check_language_switch

    parts = [
        p
        for p in (demo_run / "token_translation").glob("bert/*/*.parquet")
        if not {".samples", ".items"} & set(p.suffixes)
    ]  # the tables, not their samples or per-sentence items
    table = pd.concat([pd.read_parquet(p) for p in parts])
    config = yaml.safe_load((REPO / "presets/demo.yaml").read_text())
    assert sorted(table.alpha.unique()) == sorted(config["language"]["alphas"])
    check_language_switch(table)


def demo_aligned_and_base(config: dict) -> tuple[str, str]:
    """The {lm} ids of the demo's aligned model and of its base (alignment.finetune.models null: the BERT of the
    language experiments at the largest size and the longest window)."""
    base = f"bert/{max(config['language']['sizes'])}-w{max(config['windows'])}"
    return f"aligned/{config['alignment']['finetune']['sizes'][0]}/{base}", base


def test_demo_alignment_raises_contextual_retrieval(demo_run):
    """Issue 11's acceptance: fine-tuning alignment (Cao et al. 2020) lifts contextual word retrieval above the base
    model's for every language, on the run's own word pairs (fast_align) and the paper's test score (pairs seen in
    training and exact matches left out: 60-100 queries per language). The demo's BERT scores 0-6 %; aligned
    on 700 pairs per language (700 steps at lr 5e-3, the last layer, the layer retrieval reads) it reached
    32 / 4 / 3 % (18 / 7 / 6 % tested on 400 pairs): each language must at least double and gain 2 points, and
    the languages 5 points on average, which leaves room for the few queries."""
    config = yaml.safe_load((REPO / "presets/demo.yaml").read_text())
    aligned, base = demo_aligned_and_base(config)

    def accuracy(lm):
        table = pd.read_parquet(demo_run / "contextual_retrieval" / f"{lm}.parquet")
        return table[(table.method == "none") & table.contextual].set_index("lang")["accuracy"].sort_index()

    before, after = accuracy(base), accuracy(aligned)
    assert list(after.index) == sorted(config["languages"][1:])
    shown = pd.DataFrame({"base": before, "aligned": after}).to_string()
    assert ((after > 2 * before) & (after > before + 0.02)).all() and (after - before).mean() > 0.05, shown
