"""The `proctor` command line's arguments: one subcommand per job."""

from __future__ import annotations

import argparse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="proctor", description="Evaluate LLM agents against suites.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")

    run = commands.add_parser("run", help="evaluate a suite with an agent")
    run.add_argument(
        "suite",
        help="a suite file (.evalset.json, .test.json, agent.yaml, Vanna dataset) or a folder of them; "
        "FILE:id1,id2 runs only those cases, as adk eval does",
    )
    run.add_argument("--agent", help="agent target 'module:attr' or 'file.py:attr' (default: the suite's)")
    run.add_argument("--config", help="EvalConfig JSON with criteria (agentflow evalsets)")
    run.add_argument("--db", dest="database_url", help="results database URL (default .proctor/proctor.db)")
    run.add_argument("--output", dest="report_dir", help="report folder (default .proctor/reports/…)")
    run.add_argument(
        "--concurrency",
        type=int,
        help="cases running at once (default: 8, and more while the model provider's quota has room)",
    )
    run.add_argument("--chunk-size", type=int, help="cases per Prefect task run (default: automatic)")
    run.add_argument("--timeout", dest="agent_timeout_s", type=float, default=300.0, help="per-turn seconds")
    run.add_argument("--case-timeout", dest="case_timeout_s", type=float, help="seconds for a whole case")
    run.add_argument(
        "--model-call-limit",
        metavar="NAME",
        help="Prefect global concurrency limit capping model calls across workers",
    )
    run.add_argument(
        "--rate-limit",
        dest="rate_limit_args",
        action="append",
        default=[],
        metavar="[ENDPOINT=]Nrpm,Ntpm",
        help="the model provider's quota, if known (repeat per endpoint), e.g. 600rpm,90000tpm; "
        "default: learned from the provider's rate-limit headers and 429s (also PROCTOR_RATE_LIMITS)",
    )
    run.add_argument(
        "--quota-patience",
        dest="quota_patience_s",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="how long one model call may wait out the provider's 429s before it is an error (default 600)",
    )
    run.add_argument("--tag", dest="tags", action="append", default=[], help="only cases with this tag")
    run.add_argument("--case", dest="cases", action="append", default=[], help="only this case id")
    run.add_argument(
        "--variant",
        dest="variant_args",
        action="append",
        default=[],
        metavar="NAME=TARGET",
        help="an agent variant to compare (repeat); each runs the whole suite",
    )
    run.add_argument(
        "--meta",
        dest="metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only cases whose metadata KEY equals VALUE",
    )
    run.add_argument(
        "--no-cache",
        dest="judge_cache",
        action="store_false",
        help="call judges again even for identical calls",
    )
    run.add_argument(
        "--repeat", type=int, default=1, help="run every case N times; report passes k of n (default 1)"
    )
    run.add_argument(
        "--baseline",
        dest="baseline_run_id",
        metavar="RUN_ID",
        help="judge against the history up to this run of the same suite (default: the last completed runs)",
    )
    run.add_argument(
        "--significance",
        type=float,
        default=0.05,
        help="chance of a false 'regressed' verdict on a night when nothing changed (default 0.05)",
    )
    run.add_argument(
        "--history-window",
        type=int,
        default=30,
        metavar="K",
        help="judge each case against its last K runs of this suite and agent (default 30)",
    )
    run.add_argument(
        "--agent-version",
        metavar="LABEL",
        help="the agent's version: once a run of a new version exists, older versions' runs are not history",
    )
    run.add_argument(
        "--min-pass-rate",
        type=float,
        metavar="PERCENT",
        help="exit 0 when the pass rate reaches this (default: every case must pass)",
    )
    run.add_argument(
        "--slack-channel", help="post the summary to this Slack channel (token: SLACK_BOT_TOKEN)"
    )
    run.add_argument(
        "--slack-webhook",
        metavar="REF",
        help="post through an incoming webhook: '${ENV_VAR}' or 'secret:<prefect-secret-block>'",
    )
    run.add_argument(
        "--notify",
        choices=("always", "failure", "regression", "never"),
        default="failure",
        help="when to post to Slack (default: failure)",
    )
    run.add_argument(
        "--dask-address",
        metavar="ADDRESS",
        help="run case chunks on a Dask cluster: tcp://scheduler:8786, or 'local:N' (N worker processes)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("-v", "--verbose", action="store_true", help="show Prefect's logs")
    add_prefect_choice(run)

    resume = commands.add_parser(
        "resume", help="finish a run that stopped (killed, crashed, database lost): finished cases are kept"
    )
    resume.add_argument("run_id", help="the run's id, or its first characters as `history` shows them")
    resume.add_argument("--db", dest="database_url", help="results database URL (the run's)")
    resume.add_argument("--output", dest="report_dir", help="report folder (default: as the run asked)")
    resume.add_argument("--concurrency", type=int, help="cases whose agent runs at once (default: as before)")
    resume.add_argument("--no-progress", action="store_true", help="no progress bar")
    resume.add_argument("-v", "--verbose", action="store_true", help="show Prefect's logs")
    add_prefect_choice(resume)

    validate = commands.add_parser(
        "validate", help="check suites (a file or a folder) without running anything"
    )
    validate.add_argument("suite")
    validate.add_argument("--config", help="EvalConfig JSON with criteria (agentflow evalsets)")
    history = commands.add_parser("history", help="recent runs, newest first")
    history.add_argument("--suite", help="only runs of this suite id")
    history.add_argument("--limit", type=int, default=20)
    history.add_argument("--db", dest="database_url", help="results database URL")

    report = commands.add_parser("report", help="render a stored run's report")
    report.add_argument("run_id")
    report.add_argument("--format", choices=("md", "json", "html", "junit", "vanna"), default="md")
    report.add_argument("--db", dest="database_url", help="results database URL")

    compare = commands.add_parser("compare", help="what changed between two runs (RUN_A is the baseline)")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--db", dest="database_url", help="results database URL")
    compare.add_argument("--significance", type=float, default=0.05, help="chance of a false 'regressed'")
    compare.add_argument(
        "--history-window",
        type=int,
        default=30,
        metavar="K",
        help="judge RUN_B against RUN_A and the runs before it, K in all (default 30; 1: RUN_A alone)",
    )

    reset = commands.add_parser(
        "reset-history",
        help="start a suite's history afresh (the agent changed): later verdicts ignore earlier runs",
    )
    reset.add_argument("suite_id", help="the suite id, as `history` shows it")
    reset.add_argument("--agent", help="only this agent's history (default: every agent of the suite)")
    reset.add_argument("--variant", help="only this variant's history")
    reset.add_argument("--reason", help="why, kept with the reset")
    reset.add_argument("--db", dest="database_url", help="results database URL")

    warm = commands.add_parser(
        "warm",
        help="keep Proctor and Prefect imported in a process of their own, so commands start in "
        "a fraction of a second (docs/service.md, 'A warm process')",
    )
    warm.add_argument("action", choices=("start", "stop", "status"))

    schema = commands.add_parser("schema", help="print the JSON Schema of the native suite format")
    schema.add_argument("kind", nargs="?", choices=("evalset", "config"), default="evalset")
    return parser


def add_prefect_choice(command: argparse.ArgumentParser) -> None:
    """Whether the run is a Prefect flow run: by default only when a Prefect API is configured."""
    choice = command.add_mutually_exclusive_group()
    choice.add_argument(
        "--prefect",
        dest="prefect",
        action="store_true",
        default=None,
        help="always a Prefect flow run (with no PREFECT_API_URL, Prefect starts a temporary server)",
    )
    choice.add_argument(
        "--no-prefect",
        dest="prefect",
        action="store_false",
        help="never a Prefect flow run, even with a Prefect API configured",
    )
