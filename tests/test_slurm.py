"""SLURM execution: what profiles/slurm asks sbatch for, and real runs through a SLURM cluster.

Three layers:
- profile tests (always run, no SLURM needed): the profile parses, and its resource expressions
  evaluate. A fake `sbatch` on PATH records the command the executor plugin builds for a GPU rule.
- toy-workflow tests (need a cluster): a four-rule Snakefile goes through real SLURM jobs, using the
  profile with the CI overrides. The tests check that jobs really ran under SLURM with the
  requested resources, and that a failed job is retried with a longer runtime and resumes from its
  checkpoint.
- the real workflow (need a cluster; marked `workflow`): one branch of presets/test.yaml through SLURM, continuing
  the suite's shared run.

The cluster tests run only when `sinfo` reaches a usable node of the throw-away CI cluster that
`.ci/slurm-up` starts (ClusterName xlingci); they skip without one, or fail when XLING_REQUIRE_SLURM=1
(as in CI, where a missing cluster is a broken setup, not a reason to skip). Set XLING_SLURM_TESTS=1
to allow them on another cluster. Every subprocess has a timeout, so a stuck run fails the test
instead of hanging it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml
from workflow_helpers import REPO, TEST_PRESET, copy_run

PROFILE = REPO / "profiles" / "slurm"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]

# How the CI cluster is driven. It has no accounting database, so the default status command
# (sacct) fails on every poll and the run waits forever instead of failing; squeue works because
# MinJobAge keeps finished jobs listed. --slurm-no-account is accepted but not read by plugin 2.8.0,
# which guesses the account (and gives up quietly); it is passed for versions that honour it.
CI_FLAGS = [
    "--executor", "slurm",
    "--slurm-status-command", "squeue",
    "--slurm-no-account",
    "--slurm-init-seconds-before-status-checks", "1",
    "--latency-wait", "5",
]  # fmt: skip
GPU_RULES = ("bert_pretrain", "bert_extract", "token_translation", "sentence_retrieval")


def run(cmd, timeout, **kwargs) -> subprocess.CompletedProcess:
    """Run a command with a hard timeout; the output is kept for the assertion messages.

    On timeout the command gets SIGINT first: snakemake then cancels its SLURM jobs (scancel),
    which SIGKILL would leave queued. It is killed if it has not exited 30 s later.
    """
    cmd = [str(c) for c in cmd]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            pytest.fail(f"timed out after {timeout}s: {' '.join(cmd)}\n{out[-3000:]}\n{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def tail(proc: subprocess.CompletedProcess, n: int = 6000) -> str:
    return f"rc={proc.returncode}\n--- stdout\n{proc.stdout[-n:]}\n--- stderr\n{proc.stderr[-n:]}"


def rule_names(list_rules_output: str) -> set[str]:
    """Rule names from `snakemake --list-rules` (docstrings are the indented lines)."""
    lines = list_rules_output.splitlines()
    return {line.strip() for line in lines if line.strip() and not line[0].isspace()}


def profile(path: Path = PROFILE) -> dict:
    return yaml.safe_load((path / "config.yaml").read_text())


def evaluate(value, attempt: int = 1, threads: int = 1):
    """A profile resource value as Snakemake evaluates it (a number, or an expression over attempt)."""
    if isinstance(value, str):
        try:
            return eval(value, {"attempt": attempt, "threads": threads})  # noqa: S307 - our own profile
        except (NameError, SyntaxError):
            return value.strip("'\"")
    return value


# --- the profile, without SLURM -------------------------------------------------------------------


def test_profile_gpu_rules_start_one_process_per_job():
    """GPU rules ask for GPUs and never for tasks: `tasks` would become --ntasks-per-gpu (a copy per GPU)."""
    resources = profile()["set-resources"]
    for rule in GPU_RULES:
        res = resources[rule]
        assert isinstance(res["gpu"], int) and res["gpu"] >= 1, rule
        assert "tasks" not in res and "tasks_per_gpu" not in res, rule
        assert "cpus_per_task" not in res, f"{rule}: cpus_per_task would override cpus_per_gpu"
    assert "cpus_per_task" not in profile()["default-resources"]


def test_profile_runtimes_grow_with_attempt():
    for rule, res in profile()["set-resources"].items():
        if "runtime" in res:
            first, second = evaluate(res["runtime"], 1), evaluate(res["runtime"], 2)
            assert isinstance(first, int) and first > 0, rule
            assert second >= first, rule
    runtime = profile()["set-resources"]["bert_pretrain"]["runtime"]
    assert evaluate(runtime, 2) > evaluate(runtime, 1)


TOY_GPU = """
rule all:
    input: "pretrained.done", "glove.done"

rule bert_pretrain:   # named like the workflow's GPU rule, so the profile's set-resources apply
    output: "pretrained.done"
    threads: 4
    resources: gpu=0
    shell: "touch {output}"

rule glove:
    output: "glove.done"
    threads: 3
    shell: "touch {output}"
"""


def test_profile_dry_run(tmp_path):
    """`snakemake -n --profile profiles/slurm` parses the profile and evaluates each resource."""
    (tmp_path / "Snakefile").write_text(TOY_GPU)
    proc = run([*SNAKEMAKE, "-n", "--profile", PROFILE, "--directory", tmp_path], timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, tail(proc)
    out = proc.stdout + proc.stderr
    block = re.search(r"rule bert_pretrain:.*?resources: ([^\n]*)", out, re.S)
    assert block, tail(proc)
    shown = dict(kv.split("=", 1) for kv in block.group(1).split(", "))
    expect = profile()["set-resources"]["bert_pretrain"]
    assert shown["gpu"] == str(expect["gpu"])
    assert shown["cpus_per_gpu"] == str(expect["cpus_per_gpu"])
    assert shown["runtime"] == str(evaluate(expect["runtime"], 1))
    assert shown["slurm_partition"] == expect["slurm_partition"]


def test_profile_sbatch_command_for_gpu_rule(tmp_path):
    """The sbatch line the installed plugin builds from the profile: all GPUs, one task, no task geometry."""
    (tmp_path / "Snakefile").write_text(TOY_GPU)
    shim = tmp_path / "shim"
    shim.mkdir()
    record = tmp_path / "sbatch-args.txt"
    (shim / "sbatch").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {record}\necho "sbatch: test shim" >&2\nexit 1\n')
    # no other SLURM command either, so this behaves the same with or without a cluster
    for name in ("squeue", "sacct", "sacctmgr", "sshare", "sinfo", "scontrol", "srun", "scancel"):
        (shim / name).write_text('#!/bin/sh\necho "not available (test shim)" >&2\nexit 1\n')
    for f in shim.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    proc = run(
        [*SNAKEMAKE, "--profile", PROFILE, "--directory", tmp_path, "bert_pretrain",
         "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1",
         "--retries", "0"],
        timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode != 0, "the shim refuses every submission"
    assert record.exists(), tail(proc)
    args = record.read_text().split(" --wrap=")[0]
    res = profile()["set-resources"]["bert_pretrain"]
    gpus = f"{res['gpu_model']}:{res['gpu']}" if res.get("gpu_model") else str(res["gpu"])
    assert f"--gpus={gpus}" in args, args
    assert f"--cpus-per-gpu={res['cpus_per_gpu']}" in args, args
    assert f"-t {evaluate(res['runtime'], 1)}" in args, args
    assert f"-p {res['slurm_partition']}" in args, args
    assert f"--mem {res['mem_mb']}" in args, args
    assert "--ntasks" not in args, f"task geometry would start one copy per GPU: {args}"
    if "slurm_extra" in res:
        assert evaluate(res["slurm_extra"]) in args, args


@pytest.fixture(scope="module")
def workflow_rules(tmp_path_factory) -> set[str]:
    """The workflow's rules on real data (config.yaml) and on synthetic data (presets/test.yaml)."""
    work = tmp_path_factory.mktemp("list-rules")
    rules = set()
    for configs in ([REPO / "config.yaml"], [REPO / "config.yaml", REPO / "presets" / "test.yaml"]):
        proc = run(
            [
                *SNAKEMAKE,
                "--list-rules",
                "--snakefile",
                REPO / "Snakefile",
                "--configfile",
                *configs,
                "--directory",
                work,
            ],
            timeout=120,
            cwd=work,
        )
        assert proc.returncode == 0, tail(proc)
        rules |= rule_names(proc.stdout)
    return rules


def unknown_rules(profile_config: dict, rules: set[str]) -> list[str]:
    """Rules the profile configures that the workflow does not have (a typo configures nothing)."""
    return sorted(set(profile_config.get("set-resources", {})) - rules)


@pytest.mark.slow
def test_profile_names_workflow_rules(workflow_rules):
    unknown = unknown_rules(profile(), workflow_rules)
    assert not unknown, f"{PROFILE / 'config.yaml'} configures rules the workflow does not have: {unknown}"


@pytest.mark.slow
def test_profile_naming_an_unknown_rule_is_caught(workflow_rules, tmp_path):
    """A planted profile with a rule that does not exist (yet), beside the real profile's entries."""
    text = (PROFILE / "config.yaml").read_text()
    planted = text.replace("set-resources:\n", "set-resources:\n  xnli_finetune:\n    gpu: 1\n", 1)
    assert planted != text
    (tmp_path / "config.yaml").write_text(planted)
    assert unknown_rules(profile(tmp_path), workflow_rules) == ["xnli_finetune"]


# --- a real SLURM cluster -------------------------------------------------------------------------


@cache
def cluster_problem() -> str | None:
    """Why the SLURM tests cannot run here, or None when a usable CI cluster answers."""
    if shutil.which("sinfo") is None:
        return "no SLURM here (sinfo not found); start the CI cluster with .ci/slurm-up"
    try:  # without a controller each command gives up after ~10 s
        info = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
        if info.returncode != 0:
            return f"sinfo failed: {info.stderr.strip()[:300]}"
        conf = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo/scontrol timed out"
    states = [s.rstrip("*~#!%$@^-+") for s in info.stdout.split()]
    if not {"idle", "mixed", "allocated", "completing"} & set(states):
        return f"no usable SLURM node (sinfo: {states})"
    name = re.search(r"^ClusterName\s*=\s*(\S+)", conf.stdout, re.M)
    if (not name or name.group(1) != "xlingci") and os.environ.get("XLING_SLURM_TESTS") != "1":
        return "SLURM answers but is not the .ci/slurm-up cluster; XLING_SLURM_TESTS=1 submits to it anyway"
    return None


def skip_or_fail(problem: str):
    """Skip a test that needs the cluster, or fail it where XLING_REQUIRE_SLURM=1 (CI) says it must run."""
    if os.environ.get("XLING_REQUIRE_SLURM") == "1":
        pytest.fail(f"XLING_REQUIRE_SLURM=1 but {problem}")
    pytest.skip(problem)


@pytest.fixture(scope="module")
def slurm_cluster():
    problem = cluster_problem()
    if problem:
        skip_or_fail(problem)


@pytest.mark.parametrize("required", [False, True])
def test_missing_cluster_skips_or_fails_as_required(tmp_path, required):
    """A cluster test in a fresh pytest where `sinfo` fails: skipped, or failed under XLING_REQUIRE_SLURM=1."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sinfo").write_text('#!/bin/sh\necho "sinfo: error: no controller (test shim)" >&2\nexit 1\n')
    (shim / "sinfo").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "XLING_REQUIRE_SLURM"}
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    if required:
        env["XLING_REQUIRE_SLURM"] = "1"
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         f"{Path(__file__).resolve()}::test_toy_workflow_runs_through_slurm"],
        timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    if required:
        assert proc.returncode != 0 and "1 error" in out, tail(proc)
        assert "XLING_REQUIRE_SLURM=1 but sinfo failed: sinfo: error: no controller" in out, tail(proc)
    else:
        assert proc.returncode == 0 and "1 skipped" in out, tail(proc)
        assert "sinfo failed: sinfo: error: no controller" in out, tail(proc)


def ci_profile_args(set_resources: list[str]) -> list[str]:
    """The real profile, with what the CI cluster cannot honour replaced (partition, sizes, GPUs)."""
    return [
        "--profile", PROFILE, *CI_FLAGS,
        # a command-line key replaces the profile's whole key
        "--default-resources", "slurm_partition=debug", "mem_mb=500", "runtime=10",
        "--set-resources", *set_resources,
    ]  # fmt: skip


TOY = """
localrules: summary


rule all:
    input:
        "out/summary.txt",
        "out/train.done",


rule probe:  # records the SLURM job it ran in and what SLURM granted it
    output:
        "out/probe/{name}.txt",
    resources:
        cpus_per_task=1,
        mem_mb=200,
        runtime=7,
    shell:
        "(echo SLURM_JOB_ID=${{SLURM_JOB_ID:-none}};"
        " scontrol show job $SLURM_JOB_ID | grep -oE '(Partition|TimeLimit|NumCPUs|MinMemoryNode)=[^ ]+'"
        ") > {output}"


rule summary:  # a local rule: runs on the submit host, outside SLURM
    input:
        expand("out/probe/{name}.txt", name=["a", "b"]),
    output:
        "out/summary.txt",
    shell:
        "(cat {input}; echo LOCAL_SLURM_JOB_ID=${{SLURM_JOB_ID:-none}}) > {output}"


rule train:  # stopped in its first job (as at a time limit), resumes from its checkpoint in the retry
    output:
        "out/train.done",
    params:
        ckpt="ckpt/state.txt",
    resources:
        mem_mb=200,
    shell:
        '''
        mkdir -p ckpt
        echo "job=$SLURM_JOB_ID runtime={resources.runtime}" \\
            "$(scontrol show job $SLURM_JOB_ID | grep -oE 'TimeLimit=[^ ]+')" >> ckpt/history.txt
        if [ ! -e {params.ckpt} ]; then
            echo step=5 > {params.ckpt}
            exit 3
        fi
        (echo "resumed from $(cat {params.ckpt})"; cat ckpt/history.txt) > {output}
        '''
"""


@pytest.fixture(scope="module")
def toy_run(slurm_cluster, tmp_path_factory):
    """The toy workflow through SLURM, once for the tests below."""
    work = tmp_path_factory.mktemp("slurm-toy")
    (work / "Snakefile").write_text(TOY)
    proc = run(
        [*SNAKEMAKE, "--directory", work, "--jobs", "4", "--retries", "1",
         *ci_profile_args(["train:runtime=attempt*2"])],
        timeout=300, cwd=work,
    )  # fmt: skip
    return work, proc


def fields(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().split() if "=" in line)


def test_toy_workflow_runs_through_slurm(toy_run):
    work, proc = toy_run
    assert proc.returncode == 0, tail(proc)
    a = fields(work / "out/probe/a.txt")
    b = fields(work / "out/probe/b.txt")
    assert a["SLURM_JOB_ID"].isdigit() and b["SLURM_JOB_ID"].isdigit(), (a, b)
    assert a["SLURM_JOB_ID"] != b["SLURM_JOB_ID"], "one SLURM job per Snakemake job"
    # what the rule's resources became in SLURM
    assert a["Partition"] == "debug"
    assert a["TimeLimit"] == "00:07:00"
    assert a["NumCPUs"] == "1"
    assert a["MinMemoryNode"] == "200M"


def test_toy_local_rule_stays_on_submit_host(toy_run):
    work, proc = toy_run
    assert proc.returncode == 0, tail(proc)
    summary = (work / "out/summary.txt").read_text()
    assert f"LOCAL_SLURM_JOB_ID={os.environ.get('SLURM_JOB_ID', 'none')}" in summary


def test_toy_retry_grows_runtime_and_resumes(toy_run):
    work, proc = toy_run
    assert proc.returncode == 0, tail(proc)
    lines = (work / "out/train.done").read_text().splitlines()
    assert lines[0] == "resumed from step=5"
    history = [fields_of(line) for line in lines[1:]]
    assert len(history) == 2, lines
    assert history[0]["job"] != history[1]["job"], "the retry is a new SLURM job"
    assert [h["runtime"] for h in history] == ["2", "4"], "runtime = attempt * 2"
    assert [h["TimeLimit"] for h in history] == ["00:02:00", "00:04:00"]


def fields_of(line: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


# --- the real workflow ----------------------------------------------------------------------------


@pytest.mark.workflow
def test_workflow_test_preset_on_slurm(slurm_cluster, test_run, tmp_path):
    """One BERT of presets/test.yaml from its pretraining to its word retrieval and its XNLI transfer, every job a
    SLURM job: pretraining and fine-tuning (GPU rules, `python -m` and `script:`), extraction and reduction,
    scoring. It continues a copy of the suite's shared run (the test_run fixture, which ran every rule locally):
    the branch's pretraining is forced, so it and everything the two targets build from it run again, through
    SLURM, where each job costs seconds of scheduling (the toy workflow above covers local rules and resume after
    a time limit).

    The copy is the --directory (results/<run>/ land there), so the workflow must find its own files (schemas,
    resources, reports) through workflow.basedir, not the working directory.
    """
    run_dir = copy_run(test_run, tmp_path / "run")
    run_name = yaml.safe_load(TEST_PRESET.read_text()).get("run", "test")
    lm = "bert/500-w8"
    targets = [
        f"results/{run_name}/eval/retrieval/{lm}.parquet",
        f"results/{run_name}/eval/transfer/xnli/{lm}/f0/seed1.parquet",
    ]
    before = {target: (run_dir / target).stat().st_mtime for target in targets}
    base = [
        "--snakefile",
        REPO / "Snakefile",
        "--configfile",
        REPO / "config.yaml",
        TEST_PRESET,
        "--directory",
        run_dir,
    ]
    listed = run([*SNAKEMAKE, *base, "--list-rules"], timeout=120, cwd=run_dir)
    assert listed.returncode == 0, tail(listed)
    node_cpus = int(run(["sinfo", "-h", "-o", "%c"], timeout=15).stdout.split()[0])
    # CPU-only cluster: GPU rules run on CPU (gpu=0 from the rules); sizes that fit one small node
    small = [f"{rule}:{key}" for rule in rule_names(listed.stdout) for key in ("mem_mb=2000", "runtime=30")]
    proc = run(
        [*SNAKEMAKE, *base, *targets, "--forcerun", "bert_pretrain", "--jobs", "20", "--max-threads", node_cpus,
         *ci_profile_args(small)],
        timeout=1200, cwd=run_dir,
    )  # fmt: skip
    assert proc.returncode == 0, tail(proc)
    for target in targets:
        assert (run_dir / target).stat().st_size > 0, tail(proc)
        assert (run_dir / target).stat().st_mtime > before[target], f"{target} not made again"
    # every job of the branch went through SLURM (none of its rules is a localrule)
    log = proc.stdout + proc.stderr
    finished = re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", log)
    submitted = re.findall(r"has been submitted with SLURM jobid", log)
    assert {"bert_pretrain", "bert_extract", "finetune", "word_retrieval"} <= set(finished), tail(proc)
    assert len(submitted) == len(finished), tail(proc)
