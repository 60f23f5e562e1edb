"""Everything checked before a run starts: the suite, the agent, the selection, limits and keys.

Plain functions: `proctor validate`, `proctor run` (before any flow starts) and the flow itself
call the same checks, so a request that passes one passes the others.
"""

from __future__ import annotations

import difflib
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.agents import AgentLoadError, load_target
from proctor.judges import CredentialError, resolve_api_key
from proctor.judges.credentials import resolve_reference
from proctor.loaders import Problem, SuiteError, load_suite, slug
from proctor.loaders.references import resolve_relative_target
from proctor.metrics import REGISTRY
from proctor.models.case import Case, MetricSpec, Suite
from proctor.models.notify import NotifyPolicy
from proctor.models.request import EvaluationRequest

DEFAULT_REPORT_ROOT = Path(".proctor") / "reports"


def select_cases(
    suite: Suite, tags: list[str], case_ids: list[str], metadata: dict[str, str] | None = None
) -> list[Case]:
    """Cases with any of the tags, among the ids, and with every metadata value (compared as text)."""
    cases = suite.cases
    if metadata:
        cases = [
            case
            for case in cases
            if all(str(case.metadata.get(key)) == value for key, value in metadata.items())
        ]
    if tags:
        wanted = set(tags)
        cases = [case for case in cases if wanted & set(case.tags)]
    if case_ids:
        unknown = sorted(set(case_ids) - {case.case_id for case in suite.cases})
        if unknown:
            raise SuiteError([Problem(suite.path, "", f"no case with id {', '.join(map(repr, unknown))}")])
        cases = [case for case in cases if case.case_id in set(case_ids)]
    if not cases:
        raise SuiteError([Problem(suite.path, "", "no case matches the selection (--tag / --case / --meta)")])
    return cases


def prepare(request: EvaluationRequest) -> tuple[Suite, list[Case], str]:
    """Load and check everything before a run starts; raises `SuiteError` or `AgentLoadError`.

    Returns the suite, the selected cases and the agent target to import: a `file.py`
    named by the suite is found beside the suite, one named by `--agent` from here.
    """
    suite = load_suite(request.suite, config_path=request.config)
    if request.agent:
        agent = request.agent
        note_agent_override(suite, agent)
    elif suite.agent:
        agent = resolve_relative_target(suite.agent, Path(suite.path).parent)
    elif request.variants:  # each variant names its own agent: no other one is called
        agent = request.variants[0].agent
    else:
        raise SuiteError(
            [
                Problem(
                    suite.path,
                    "metadata.agent",
                    "no agent: pass --agent module:attr (or file.py:attr, openai:agent.yaml, "
                    "http:endpoint.yaml), or set metadata.agent in the suite"
                    + _agent_misspelt(suite.metadata),
                )
            ]
        )
    if not request.variants or request.agent or suite.agent:
        suite.warnings += agent_warnings(load_target(agent))
    names = [variant.name for variant in request.variants]
    if len(set(names)) != len(names):
        raise SuiteError([Problem(suite.path, "variants", f"variant names must be unique; got {names}")])
    for variant in request.variants:
        try:
            suite.warnings += agent_warnings(load_target(variant.agent))
        except AgentLoadError as error:  # named as the user gave it, not as the suite's agent
            raise SuiteError(
                [
                    Problem(
                        suite.path,
                        f"--variant {variant.name}={variant.agent}",
                        f"{error}; expected NAME=TARGET, TARGET as --agent takes it",
                    )
                ]
            ) from None
    suite.warnings = list(dict.fromkeys(suite.warnings))  # an agent shared by variants says it once
    cases = select_cases(suite, request.tags, request.cases, request.metadata)
    if request.model_call_limit:
        check_concurrency_limit(suite, request.model_call_limit)
    check_judge_credentials(suite, cases)
    check_run_settings(request, suite)
    check_baseline(request, suite)
    from proctor.storage.rows import STORED_FILE_CHARS_VARIABLE, stored_file_chars

    try:
        stored_file_chars()
    except ValueError as error:
        raise SuiteError([Problem("environment", STORED_FILE_CHARS_VARIABLE, str(error))]) from None
    return suite, cases, agent


def check_baseline(request: EvaluationRequest, suite: Suite) -> None:
    """A pinned baseline must be a stored run of this suite: a run of another suite shares
    no history with this one, and comparing across suites would call every case added."""
    if request.baseline_run_id is None or request.resume_run_id is not None:
        return
    from sqlmodel import Session

    from proctor.models.tables import EvalRun
    from proctor.storage import default_database_url, get_engine

    with Session(get_engine(request.database_url or default_database_url())) as session:
        baseline = session.get(EvalRun, request.baseline_run_id)
    if baseline is None:
        problem = f"run {request.baseline_run_id} is not in the results database"
    elif baseline.suite_id != suite.suite_id:
        problem = (
            f"run {str(baseline.id)[:8]} is a run of suite {baseline.suite_id!r}, not of {suite.suite_id!r}: "
            "a baseline must be a run of the same suite"
        )
    else:
        return
    raise SuiteError([Problem(suite.path, "baseline_run_id", problem)])


def note_agent_override(suite: Suite, agent: str) -> None:
    """Say once what `--agent` replaces of an agent.yaml that defines its own agent."""
    fields = suite.metadata.get("agent_fields") or []
    suite.warnings = [w for w in suite.warnings if not w.endswith("; pass --agent")]
    if fields:
        suite.warnings.append(
            f"{suite.path}: --agent {agent} replaces the agent.yaml's {', '.join(fields)}; they are not used"
        )


def preflight_problems(suite: Suite) -> list[Problem]:
    """What `run` would refuse before any call, for `validate`: the suite's own agent must load
    (model, provider, instructions, tools, ${VAR}s) and every judged metric needs a key."""
    problems: list[Problem] = []
    if suite.agent:
        try:
            agent = load_target(resolve_relative_target(suite.agent, Path(suite.path).parent))
            suite.warnings = list(dict.fromkeys([*suite.warnings, *agent_warnings(agent)]))
        except AgentLoadError as error:
            problems.append(Problem(suite.path, "agent", str(error)))
    try:
        check_judge_credentials(suite, suite.cases)
    except SuiteError as error:
        problems += error.problems
    return problems


def check_concurrency_limit(suite: Suite, name: str) -> None:
    """A named concurrency limit must exist: Prefect would otherwise skip it silently."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            raise SuiteError(
                [
                    Problem(
                        suite.path,
                        "model_call_limit",
                        f"no Prefect global concurrency limit named {name!r}; "
                        f"create it: prefect gcl create {name} --limit N",
                    )
                ]
            ) from None


def _default_note(suite: Suite) -> str:
    """For a judge the user never wrote: where it came from, and how to choose others."""
    source = suite.metadata.get("criteria_source")
    if not source:
        return ""
    return (
        f". This metric is one of agentflow's default criteria ({source}: trajectory_match, "
        "response_match, llm_judge), used because the suite names none: to run without a judge, "
        "choose the criteria in metadata.eval_config.criteria, an eval_config.json beside the "
        'suite, or --config FILE (e.g. {"criteria": {"response_match": 0.7}})'
    )


def _model_line(suite: Suite, spec: MetricSpec) -> str:
    """` (line N)` in a HoloDeck agent.yaml: the line where the judge's model is written."""
    if suite.source_format != "holodeck":
        return ""
    from proctor.loaders.holodeck.lines import judge_model_line

    line = judge_model_line(suite.path, spec.label, spec.name)
    return f" (line {line})" if line else ""


def check_judge_credentials(suite: Suite, cases: list[Case]) -> None:
    """A judged metric without an API key is a configuration error, found before the run."""
    problems = []
    seen: set[int] = set()
    if any("user_simulator" in case.metadata or "conversation_scenario" in case.metadata for case in cases):
        try:
            resolve_api_key(None)
        except CredentialError as error:
            problems.append(Problem(suite.path, "user simulator", str(error)))
    for case in cases:
        turn_specs = [spec for turn in case.turns for spec in turn.metrics or []]
        for spec in [*case.metrics, *turn_specs]:
            if id(spec) in seen or not spec.enabled or REGISTRY.get(spec.name).kind != "llm":
                continue
            seen.add(id(spec))
            try:  # a Prefect Secret block is read now too: a missing one fails no case later
                resolve_api_key(spec.model)
            except CredentialError as error:
                problems.append(
                    Problem(
                        suite.path,
                        f"metric {spec.name!r}",
                        str(error) + _model_line(suite, spec) + _default_note(suite),
                    )
                )
            if spec.model is not None and spec.model.provider != "openai":
                from proctor.agents.providers import provider_problem  # imports openai: on use

                problem = provider_problem(spec.model)
                if problem:
                    problems.append(
                        Problem(suite.path, f"metric {spec.name!r}", problem + _model_line(suite, spec))
                    )
    if problems:
        unique = {str(problem): problem for problem in problems}
        raise SuiteError(list(unique.values()))


def check_run_settings(request: EvaluationRequest, suite: Suite) -> None:
    """Settings that would fail only after every case ran: where reports go and the Slack
    secret. Found now, so a nightly run does not spend its budget to lose its summary."""
    problems = []
    if request.report_dir:
        problem = report_dir_problem(Path(request.report_dir))
        if problem:
            problems.append(Problem(suite.path, "report_dir (--output)", problem))
    slack = request.slack
    if slack is not None and slack.notify != NotifyPolicy.NEVER:
        field, reference = ("token", slack.token) if slack.channel else ("webhook_url", slack.webhook_url)
        try:
            resolve_reference(reference or "", field=f"slack.{field}")
        except CredentialError as error:
            needs = "a bot token to post to a channel" if slack.channel else "an incoming webhook URL"
            problems.append(Problem(suite.path, f"slack.{field}", f"Slack needs {needs}: {error}"))
    if problems:
        raise SuiteError(problems)


def report_dir_problem(folder: Path) -> str | None:
    """Why reports could not be written under `folder`, or None: the nearest part of the path
    that exists must be a folder Proctor may write in."""
    for existing in (folder, *folder.parents):
        if not existing.exists():
            continue
        if not existing.is_dir():
            return f"{existing} is a file; expected a folder for the reports (or a path to create one)"
        if not os.access(existing, os.W_OK | os.X_OK):
            return f"{existing} is not writable; expected a folder Proctor may write reports in"
        return None
    return None


def default_report_dir(suite: Suite, run_id: uuid.UUID) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return DEFAULT_REPORT_ROOT / slug(suite.suite_id) / f"{stamp}-{str(run_id)[:8]}"


def agent_warnings(agent: object) -> list[str]:
    """What loading the agent had to say (an `openai:` agent's tools it cannot fully honour),
    shown with the suite's own warnings."""
    return list(getattr(agent, "warnings", None) or [])


def _agent_misspelt(metadata: dict[str, Any]) -> str:
    """The suite's metadata key that was probably meant as `agent` ('agnet', 'Agent')."""
    keys = [str(key) for key in metadata if key != "agent"]
    close = difflib.get_close_matches("agent", [key.lower() for key in keys], n=1, cutoff=0.75)
    if not close:
        return ""
    key = next(key for key in keys if key.lower() == close[0])
    return f" (its metadata has {key!r}: rename it 'agent')"
