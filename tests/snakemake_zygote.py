"""A warm Snakemake for the tests' many short runs: workflow_helpers.snakemake starts one per pytest process.

Most of a dry run is Snakemake's start-up: importing it and collecting its plugins takes about 1.4 s of CPU of the
2.7 s a dry run of the shared test-preset run takes. This process does that once, then forks a child for each run.
The child calls Snakemake's command-line entry point (snakemake.cli.main, what `python -m snakemake` calls) in the
run's directory, environment and arguments, writes its output to two files and exits with Snakemake's exit code.
A run leaves nothing behind here, so each one starts from the same state, as a fresh process would. The workflow's
own package (xling) is never imported here: a test that edits a copy of it runs its copy.

Protocol, one JSON object a line: the client sends {"argv", "cwd", "env", "stdout", "stderr"}; this process answers
{"pid"} when the child has started and {"returncode"} (negative: killed by that signal) when it has ended.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import traceback


def preload() -> None:
    """Import Snakemake and its installed plugins (each registry is a singleton that imports them when made)."""
    import snakemake.cli  # noqa: F401  (the API, the workflow, the DAG, the scheduler)
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry
    from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry
    from snakemake_interface_report_plugins.registry import ReportPluginRegistry
    from snakemake_interface_scheduler_plugins.registry import SchedulerPluginRegistry
    from snakemake_interface_storage_plugins.registry import StoragePluginRegistry

    for registry in (
        ExecutorPluginRegistry,
        StoragePluginRegistry,
        LoggerPluginRegistry,
        ReportPluginRegistry,
        SchedulerPluginRegistry,
    ):
        registry()


def run_child(request: dict) -> None:
    """In the forked child: become `python -m snakemake <argv>` in the request's directory, then exit."""
    import snakemake.cli
    import snakemake.workflow

    os.chdir(request["cwd"])
    # the one setting Snakemake takes from the directory it is imported in (a class attribute): the run's, as a
    # fresh process has it (tests/test_workflow_helpers.py compares the two)
    snakemake.workflow.Workflow._rundir = os.path.abspath(os.getcwd())
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # as `python -m` puts the working directory first
    sys.argv = [os.path.join(os.path.dirname(snakemake.cli.__file__), "__main__.py"), *request["argv"]]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdin = open(os.devnull)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(file, fd)
        os.close(file)
    code = 1
    try:
        snakemake.cli.main(request["argv"])
        code = 0
    except SystemExit as stop:  # what Python does with it at exit
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def serve() -> None:
    preload()
    if threading.active_count() != 1:  # a thread's locks would be copied held into every child
        raise SystemExit(f"snakemake_zygote: {threading.active_count()} threads after the imports; fork needs one")
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    serve()
