"""xling.cost: the estimate equals a hand computation on hand-made throughput figures; the job list read from a
real plan of presets/test.yaml; a rule without a figure refused by name, or costed by the printed fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from xling.cost import __main__ as cli
from xling.cost.check import compare
from xling.cost.estimate import MissingThroughput, critical_path_s, estimate_jobs, per_rule, schedule_s
from xling.cost.fit import fit
from xling.cost.jobs import PlannedJob, plan_jobs
from xling.cost.work import Context

ROOT = Path(__file__).resolve().parents[1]
HPARAMS = {
    "hidden_size": 8,
    "num_layers": 2,
    "intermediate_size": 16,
    "batch_size": 4,
    "max_steps": 10,
    "window": 16,
    "mlm_probability": 0.0,
}
THROUGHPUT = {
    "devices": {
        "gpu": {"flops_per_s": 1.0e6, "source": "hand"},
        "cpu": {
            "points": [
                {"hidden": 8, "flops_per_s": 1.0e5, "source": "hand"},
                {"hidden": 64, "flops_per_s": 1.0e5, "source": "hand"},
            ]
        },
    },
    "fallback": {"work": "fixed", "device": "cpu", "startup_s": 7.0},
    "data": {
        "pieces_per_sentence": {"real": 30, "synthetic": 10},
        "pieces_per_example": {"real": {}, "synthetic": {}},
        "examples": {},
        "source": "hand",
    },
    "rules": {
        "bert_pretrain": {"work": "pretrain", "device": "gpu", "startup_s": 5.0, "mem_mb": 100},
        "tokenize": {"work": "corpus_sentences", "device": "cpu", "startup_s": 1.0, "s_per_unit": 0.01},
        "report": {"work": "fixed", "device": "cpu", "startup_s": 2.0},
    },
}
CONFIG = {
    "data": {"source": "synthetic"},
    "tokenizer": {"vocab": "train", "vocab_size": 100},
    "corpus": {"sizes": [300]},
    "languages": ["en", "xa"],
}


def _jobs() -> list[PlannedJob]:
    """tokenize (300 sentences) -> bert_pretrain -> report, and a second pretraining beside the first."""
    pretrain = {"hparams": json.dumps(HPARAMS)}
    return [
        PlannedJob(1, "tokenize", {"size": "300", "lang": "en"}, {}, 2, {}, "b/tokenize.tsv"),
        PlannedJob(2, "bert_pretrain", {"size": "300", "window": "16"}, pretrain, 1, {}, "b/p1.tsv", (1,)),
        PlannedJob(3, "bert_pretrain", {"size": "300", "window": "16"}, pretrain, 1, {}, "b/p2.tsv", (1,)),
        PlannedJob(4, "report", {}, {}, 1, {}, None, (2, 3)),
    ]


def test_a_batch_in_tokens_is_costed_in_its_blocks():
    """bert.batch_tokens 70 at window 16: 70 // 16 = 4 blocks a step, the same work as batch_size 4."""
    jobs = _jobs()
    counted = {"hparams": json.dumps({**HPARAMS, "batch_size": 99, "batch_tokens": 70})}
    jobs[2] = PlannedJob(3, "bert_pretrain", {"size": "300", "window": "16"}, counted, 1, {}, "b/p2.tsv", (1,))
    estimates = estimate_jobs(jobs, Context(CONFIG, THROUGHPUT["data"]), THROUGHPUT)
    assert estimates[2].work.tokens == estimates[1].work.tokens == 10 * 4 * 16
    assert estimates[2].work.flops == estimates[1].work.flops


def test_estimate_equals_hand_computation():
    estimates = estimate_jobs(_jobs(), Context(CONFIG, THROUGHPUT["data"]), THROUGHPUT)
    # pretraining: 10 steps x 4 x 16 = 640 tokens; per token 6 x 2 x (4 x 64 + 2 x 8 x 16) + 12 x 2 x 16 x 8
    tokens = 10 * 4 * 16
    flops = tokens * (6 * 2 * (4 * 64 + 2 * 8 * 16) + 12 * 2 * 16 * 8)
    assert estimates[1].work.tokens == tokens and estimates[1].work.flops == flops
    pretrain_s = 5.0 + flops / 1.0e6
    assert estimates[1].seconds == pytest.approx(pretrain_s) and estimates[1].device == "gpu"
    tokenize_s = 1.0 + 300 * 0.01 / 2  # 300 sentences at 0.01 s each over 2 threads
    assert estimates[0].seconds == pytest.approx(tokenize_s)
    assert estimates[3].seconds == 2.0
    rows = {r["rule"]: r for r in per_rule(estimates)}
    assert rows["bert_pretrain"]["jobs"] == 2
    assert rows["bert_pretrain"]["gpu_h"] == pytest.approx(2 * pretrain_s / 3600)
    assert rows["tokenize"]["cpu_h"] == pytest.approx(2 * tokenize_s / 3600)  # core-hours: 2 threads
    # GPU memory: 16 bytes x (dense 2 x 512 + embeddings 100 x 8) + 34 x 64 batch tokens x (1024 / (12 x 8))
    assert estimates[1].gpu_mem_gb == pytest.approx((16 * (1024 + 800) + 34 * 64 * 1024 / 96) / 2**30)
    assert critical_path_s(estimates) == pytest.approx(tokenize_s + pretrain_s + 2.0)
    assert schedule_s(estimates, gpus=2, cores=4) == pytest.approx(tokenize_s + pretrain_s + 2.0)
    assert schedule_s(estimates, gpus=1, cores=4) == pytest.approx(tokenize_s + 2 * pretrain_s + 2.0)


def test_without_a_gpu_the_bert_rules_run_at_the_cpu_rate():
    estimates = estimate_jobs(_jobs(), Context(CONFIG, THROUGHPUT["data"]), THROUGHPUT, gpus_present=False)
    assert estimates[1].device == "cpu"
    assert estimates[1].seconds == pytest.approx(5.0 + estimates[1].work.flops / 1.0e5)


def test_a_rule_without_a_figure_is_refused_by_name_or_costed_by_the_fallback():
    jobs = _jobs() + [PlannedJob(5, "new_rule", {}, {}, 1, {}, None)]
    ctx = Context(CONFIG, THROUGHPUT["data"])
    with pytest.raises(MissingThroughput, match="new_rule.*--fallback"):
        estimate_jobs(jobs, ctx, THROUGHPUT)
    fallback = estimate_jobs(jobs, ctx, THROUGHPUT, allow_fallback=True)[-1]
    assert fallback.fallback and fallback.seconds == 7.0


def test_compare_with_benchmark_files(tmp_path):
    (tmp_path / "b").mkdir()
    for name, seconds in (("tokenize", 5.0), ("p1", 10.0), ("p2", 30.0)):
        (tmp_path / "b" / f"{name}.tsv").write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:01\t50.5\n")
    estimates = estimate_jobs(_jobs(), Context(CONFIG, THROUGHPUT["data"]), THROUGHPUT)
    rows, total = compare(estimates, tmp_path)
    by_rule = {r["rule"]: r for r in rows}
    assert by_rule["bert_pretrain"]["measured_s"] == 40.0 and by_rule["bert_pretrain"]["jobs"] == 2
    assert total["measured_s"] == 45.0 and total["max_rss_mb"] == 50.5
    assert total["estimated_s"] == pytest.approx(sum(e.seconds for e in estimates[:3]))


def test_fit_recovers_start_up_and_seconds_per_unit():
    # rule, measured s, units per thread, estimated FLOP seconds, peak RSS: 2 s start-up + 0.5 s a unit (+ FLOP s)
    jobs = ((10, 0, 100), (20, 1, 120), (40, 0, 90), (80, 3, 95))
    rows = [("glove", 2.0 + 0.5 * u + f, u, f, rss) for u, f, rss in jobs]
    rows.append(("report", 4.0, 0.0, 0.0, 50))
    rows.append(("report", 6.0, 0.0, 0.0, 60))
    fitted = fit(rows)
    assert fitted["glove"] == {"startup_s": 2.0, "s_per_unit": 0.5, "mem_mb": 120, "jobs": 4}
    assert fitted["report"] == {"startup_s": 5.0, "mem_mb": 60, "jobs": 2}


@pytest.fixture(scope="module")
def test_plan():
    return plan_jobs([ROOT / "presets" / "test.yaml"], ROOT / "Snakefile")


def test_plan_of_the_test_preset(test_plan):
    jobs = test_plan.jobs
    # 164: the calibration run's 175, less the 29 scoring jobs (fine-tuning and scoring are one job) and
    # code_switch x 2 (extra anchors drawn per batch), with the pair's vocabulary and its two token files, the
    # translations table and the CKA's Default bilingual MLM, the held-out dev text (corpus and tokens of en and
    # xa), the ablation's English dev text in the pair's vocabulary and Cao et al.'s XNLI fine-tunings; 154 since the
    # language experiments run on the window-32 BERT only (language.windows: 10 jobs of the window-8 one); 159 with
    # the Sep row's own vocabularies (Conneau et al.'s 40k/40k: two vocabularies, two token files, one dev file)
    assert len(jobs) == 159 and test_plan.config["run"] == "test"
    pretrain = sorted((j.wildcards["size"], j.wildcards["window"]) for j in jobs if j.rule == "bert_pretrain")
    assert pretrain == [("1500", "32"), ("1500", "8"), ("500", "32"), ("500", "8")]
    job = next(j for j in jobs if j.rule == "bert_pretrain" and j.wildcards == {"size": "500", "window": "8"})
    assert json.loads(job.params["hparams"])["max_steps"] == 60
    assert job.benchmark == "benchmarks/test/bert_pretrain/500-w8.tsv"
    by_id = {j.jobid: j for j in jobs}
    assert {by_id[d].rule for d in job.depends_on} >= {"tokenize", "train_vocab"}
    assert next(j for j in jobs if j.rule == "all").depends_on


def test_every_rule_of_the_test_preset_has_a_figure(test_plan, capsys):
    throughput = yaml.safe_load((ROOT / "resources" / "throughput.yaml").read_text())
    assert {j.rule for j in test_plan.jobs} <= set(throughput["rules"])
    ctx = Context(test_plan.config, throughput["data"])
    estimates = estimate_jobs(test_plan.jobs, ctx, throughput)
    assert all(e.seconds > 0 for e in estimates if e.job.rule != "all")


@pytest.mark.slow
def test_cli_refuses_a_rule_without_a_figure(tmp_path, capsys):
    throughput = yaml.safe_load((ROOT / "resources" / "throughput.yaml").read_text())
    del throughput["rules"]["glove"]
    path = tmp_path / "throughput.yaml"
    path.write_text(yaml.safe_dump(throughput))
    assert cli.main(["--configfile", str(ROOT / "presets" / "test.yaml"), "--throughput", str(path)]) == 2
    assert "no throughput figure for rule(s) glove" in capsys.readouterr().err
    assert (
        cli.main(
            [
                "--configfile",
                str(ROOT / "presets" / "test.yaml"),
                "--throughput",
                str(path),
                "--fallback",
                "--gpus",
                "2",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "glove *" in out and "On 2 GPU(s)" in out and "Assumptions" in out


@pytest.mark.slow
def test_every_rule_of_the_full_study_has_a_figure_and_pretraining_dominates():
    """config.yaml is what researchers cost before launch: no rule of it may need --fallback."""
    plan = plan_jobs([], ROOT / "Snakefile")
    throughput = yaml.safe_load((ROOT / "resources" / "throughput.yaml").read_text())
    assert {j.rule for j in plan.jobs} <= set(throughput["rules"])
    rows = {
        r["rule"]: r for r in per_rule(estimate_jobs(plan.jobs, Context(plan.config, throughput["data"]), throughput))
    }
    pretraining = sum(rows[r]["gpu_h"] for r in ("bert_pretrain", "ablation_pretrain", "mono_pretrain"))
    total = sum(r["gpu_h"] for r in rows.values())
    # pretraining first; Conneau et al.'s fine-tuning search (ablation.finetune) most of the rest
    assert pretraining > 0.5 * total and pretraining + rows["finetune"]["gpu_h"] > 0.95 * total
