"""Accept code changes without rerunning: the switch a refactor needs ("code changes rerun nothing this time").

    python -m xling.plan.accept_code --configfile presets/demo.yaml      # or: make accept-code ARGS="..."

A dry run lists the jobs Snakemake would run and why. When every one of them runs only because its code
version (the `code` param, xling.plan.code) changed, or because a job upstream of it runs, `snakemake --touch`
marks them all done: their outputs keep their contents and the recorded params become the new ones, so the
next ordinary run plans nothing. Any other reason (a setting, a missing or updated input, a new software
environment) refuses the whole run and names the jobs: those need to run, so run them first.
"""

from __future__ import annotations

import re
import subprocess
import sys

from xling.plan.code import PREFIX

CODE_PARAM = re.compile(rf"'{PREFIX}[0-9a-f]{{64}}'")
PARAMS_CHANGED = "Params have changed since last execution: "
PARAMS_DIFF = re.compile(r"^Union of exclusive params before and now across all output: before: (.*) now: (.*)$", re.S)
SOFTWARE = "Software environment definition has changed since last execution"
UPSTREAM = "Input files updated by another job: "


def planned_jobs(dry_run: str) -> list[tuple[str, str]]:
    """(rule, reason) of each job in the text of `snakemake -n`."""
    jobs, rule = [], None
    for line in dry_run.splitlines():
        if head := re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line):
            rule = head[1]
        elif rule and (reason := re.match(r"^\s+reason: (.*)$", line)):
            jobs.append((rule, reason[1]))
            rule = None
    return jobs


def other_changes(reason: str) -> list[str]:
    """The parts of a job's reason that are not a code version change or a job upstream of it."""
    other = []
    if SOFTWARE in reason:
        other.append(SOFTWARE)
        reason = reason.replace(f"; {SOFTWARE}", "").replace(SOFTWARE, "")
    reason, _, params = reason.partition(PARAMS_CHANGED)
    if params and not _only_code(params.strip()):
        other.append(PARAMS_CHANGED + params.strip())
    return other + [part for part in reason.strip().strip(";").split("; ") if part and not part.startswith(UPSTREAM)]


def _only_code(params_change: str) -> bool:
    diff = PARAMS_DIFF.match(params_change)
    if not diff:
        return False
    return all(CODE_PARAM.sub("", side).strip(" ,") in ("", "<nothing exclusive>") for side in diff.groups())


def snakemake(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], capture_output=True, text=True)


def main(args: list[str]) -> int:
    dry = snakemake("-n", *args)
    if dry.returncode:
        print(dry.stdout + dry.stderr, file=sys.stderr)
        return dry.returncode
    jobs = planned_jobs(dry.stdout)
    if not jobs and "Nothing to be done" in dry.stdout + dry.stderr:
        print("Nothing planned: every result is current.")
        return 0
    if not jobs:
        print("The dry run lists no job with its reason (leave out --quiet); nothing was touched.", file=sys.stderr)
        return 2
    blocked = [(rule, part) for rule, reason in jobs for part in other_changes(reason)]
    if blocked:
        print(
            "Refused: these jobs must run for another reason than a code change (nothing was touched):",
            *(f"  {rule}: {part[:300]}" for rule, part in blocked),
            sep="\n",
            file=sys.stderr,
        )
        return 1
    cores = [] if any(arg in ("--cores", "-c") or arg.startswith("--cores=") for arg in args) else ["--cores", "1"]
    touch = snakemake("--touch", *cores, *args)
    if touch.returncode:
        print(touch.stdout + touch.stderr, file=sys.stderr)
        return touch.returncode
    print(f"Accepted the new code of {len(jobs)} jobs: they are marked current, nothing was rerun.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
