"""Settings that reach a rule's shell command cannot split or extend it: every value is quoted (`:q`), and the
schema gives bert.device (the one free-text setting there) a pattern. A dry run that prints the commands
(`snakemake -n -p`) shows the quoting."""

from __future__ import annotations

import shlex

from workflow_helpers import TEST_PRESET, snakemake


def _bert_commands(output: str) -> list[list[str]]:
    """The arguments of every `python -m xling.models.bert` command a dry run printed, up to the redirection."""
    lines = [line for line in output.splitlines() if "-m xling.models.bert" in line]
    return [shlex.split(line.partition("exec $launch ")[2].rpartition(" > ")[0]) for line in lines]


def test_a_resource_with_a_space_stays_one_argument(tmp_path):
    evil = "cpu --evil; touch pwned"
    result = snakemake(
        "-n",
        "-p",
        "--configfile",
        TEST_PRESET,
        "--set-resources",
        f"bert_pretrain:device={evil}",
        f"ablation_pretrain:device={evil}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    commands = _bert_commands(result.stdout + result.stderr)
    planted = [args for args in commands if evil in args]
    assert planted, "the dry run printed no bert_pretrain command"
    for args in planted:
        assert args[args.index("--device") + 1] == evil
        assert "--evil" not in args and "touch" not in args
    switched = [args for args in commands if "--switch" in args]
    assert switched and all(args[args.index("--switch") + 1].endswith(".json") for args in switched)


def test_schema_refuses_a_device_that_is_not_one(tmp_path):
    overlay = tmp_path / "bad.yaml"
    overlay.write_text('bert:\n  device: "cpu; touch pwned"\n')
    result = snakemake("-n", "--configfile", TEST_PRESET, overlay, cwd=tmp_path)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "device" in message and "cpu; touch pwned" in message
    assert not (tmp_path / "pwned").exists()
