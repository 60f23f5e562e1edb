"""Proctor against its peers on one zero-latency workload: pydantic-evals, Inspect AI, DeepEval, promptfoo.

The same N cases (default 1,000) go through each framework: every case is an input string and
an expected output, the "agent" returns its input at once (the expected output equals the
input), one deterministic exact-match metric scores it, and every result is persisted where
the framework persists it:

  proctor    `proctor run SUITE --db sqlite:///… --output DIR` on a generated agentflow
             `.evalset.json` with an echo agent module and the `equality` metric: every case and
             metric row in a fresh SQLite database, plus the five reports Proctor always renders
  pydantic-evals  `Dataset.evaluate_sync(task)` with the `EqualsExpected` evaluator, from a small
             driver script (it has no command of its own); it keeps its report in memory
  inspect    `inspect eval task.py`: the `mockllm/model` with scripted outputs (a function
             returning the sample's expected output), `generate()`, the `exact()` scorer; the
             `.eval` log file
  deepeval   `evaluate(test_cases, [ExactMatch()])` with a custom BaseMetric (no LLM) and
             `CacheConfig(write_cache=False)`; DeepEval still writes `.deepeval/.latest_run_full.json`
  promptfoo  `promptfoo eval -c config.json -o results.json` with the `echo` provider and an
             `equals` assertion, cache and sharing off; its SQLite database and the JSON output

Each framework is measured three ways, each the median of --repeats runs:

  command         wall time of the whole command as a subprocess (interpreter start-up, imports,
                  the run, exit)
  in-process      the evaluation call alone, timed inside a driver process after the imports
                  (Proctor: `proctor.run.local_run.evaluate_in_process`, what `proctor run` runs with
                  no Prefect server; pydantic-evals: `Dataset.evaluate_sync`; Inspect:
                  `inspect_ai.eval`; DeepEval: `evaluate`, test-case construction included;
                  promptfoo: its Node API `evaluate`)
  in-process warm a second evaluation in the same driver process, after a pause: what is left once
                  one-time costs (Prefect's ephemeral API start, lazy imports, DB migrations) are
                  paid

and the ratio printed is Proctor's per-case time divided by the peer's, for the same measure.
Every framework runs once on 10 cases first, untimed, and the frameworks take turns within each
repeat. All runs go through one concurrency setting (--concurrency, default 32).

Peers are found, never installed: Python peers (pydantic-evals, Inspect AI, DeepEval) in the Python
named by --peer-python or $PROCTOR_PEER_PYTHON, promptfoo at --promptfoo or $PROCTOR_PROMPTFOO;
neither has a default tied to a machine's folders. A missing or unnamed one is skipped with a note.

First, Proctor's bundled 5-case example as a user runs it (`proctor run
examples/weather/weather.evalset.json`, whole command, median of --example-repeats): with no Prefect
server configured, and against a running one (--prefect-api-url URL, or --start-server to start one).

Telemetry, sharing and update checks are switched off for all of them; Prefect gets a
temporary PREFECT_HOME.

Usage: python bench/peers.py [--cases 5,100,1000] [--repeats 3] [--concurrency 32]
                             [--peer-python PATH] [--promptfoo PATH] [--only NAME,...]
                             [--start-server | --prefect-api-url URL] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from peer_drivers import deepeval, example, inspect_ai, proctor, promptfoo, pydantic_evals
from peer_drivers.common import (
    MEASURES,
    PEER_PYTHON_ENV,
    PROJECT,
    PROMPTFOO_ENV,
    WARMUP_CASES,
    Framework,
    base_env,
    cases_for,
    check_all_passed,
    python_peers,
)

FRAMEWORKS = ("proctor", "pydantic-evals", "inspect", "deepeval", "promptfoo")
PEERS = (proctor, pydantic_evals, inspect_ai, deepeval, promptfoo)  # each writes its copy of the workload


def write_workload(folder: Path, n: int, concurrency: int) -> Path:
    """Every framework's copy of the same n cases, in folder."""
    folder.mkdir(parents=True)
    cases = cases_for(n)
    (folder / "cases.json").write_text(json.dumps(cases))
    for peer in PEERS:
        peer.write_files(folder, cases, n, concurrency)
    return folder


def discover(args: argparse.Namespace, tmp: Path) -> list[Framework]:
    """The wanted frameworks that are installed, in FRAMEWORKS order; a note for each skipped."""
    wanted = set(args.only.split(",")) if args.only else set(FRAMEWORKS)
    common = {"timeout": args.timeout, "concurrency": args.concurrency, "settle": args.settle}
    found: list[Framework | None] = []
    if "proctor" in wanted:
        found.append(proctor.find(args, tmp, common))
    peer_python, versions = python_peers(args, wanted)
    env = base_env()
    for name, module in (("pydantic-evals", pydantic_evals), ("inspect", inspect_ai), ("deepeval", deepeval)):
        if name in wanted:
            found.append(module.find(args, peer_python, versions, env, common))
    if "promptfoo" in wanted:
        found.append(promptfoo.find(args, common))
    return [fw for fw in found if fw is not None]


# ---------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------


def measure(fw: Framework, workload: Path, out: Path, cases: int, label: str) -> None:
    """One repeat of one framework: its command, then its driver with a first and a warm run."""
    (out / "command").mkdir(parents=True)
    (out / "driver").mkdir()
    try:
        seconds = fw.command(workload, out / "command", cases)
        fw.samples["command"].append(seconds)
        print(f"  {label} {fw.name:<9} command          {seconds:7.2f} s", flush=True)
    except Exception as exc:  # a failing framework is reported, never stops the benchmark
        print(f"  {label} {fw.name:<9} command          FAILED: {exc}", flush=True)
    try:
        result = fw.in_process(workload, out / "driver", cases, 2)
        fw.import_s.append(result["import_s"])
        for measure_name, one in zip(("in-process", "in-process warm"), result["runs"], strict=False):
            check_all_passed(f"{fw.name} {measure_name}", one["total"], one["passed"], cases)
            fw.samples[measure_name].append(one["seconds"])
            print(f"  {label} {fw.name:<9} {measure_name:<16} {one['seconds']:7.2f} s", flush=True)
    except Exception as exc:
        print(f"  {label} {fw.name:<9} in-process       FAILED: {exc}", flush=True)


def warm_up(fw: Framework, workload: Path, out: Path) -> None:
    out.mkdir(parents=True)
    try:
        seconds = fw.command(workload, out, WARMUP_CASES)
        print(f"  warm-up {fw.name:<9} {WARMUP_CASES} cases         {seconds:7.2f} s", flush=True)
    except Exception as exc:
        print(f"  warm-up {fw.name:<9} FAILED: {exc}", flush=True)


def report(frameworks: list[Framework], cases: int, repeats: int) -> None:
    proctor = next((fw for fw in frameworks if fw.name == "proctor"), None)

    def per_case_ms(fw: Framework, measure_name: str) -> float | None:
        values = fw.samples[measure_name]
        return statistics.median(values) / cases * 1000 if values else None

    header = ("framework", "version", "measure", "cases", "total s", "per-case ms", "Proctor ÷ peer", "runs")
    rows = []
    for measure_name in MEASURES:
        base = per_case_ms(proctor, measure_name) if proctor else None
        for fw in frameworks:
            values = fw.samples[measure_name]
            ms = per_case_ms(fw, measure_name)
            if ms is None:
                rows.append((fw.name, fw.version, measure_name, str(cases), "-", "-", "-", "0"))
                continue
            ratio = f"{base / ms:.2f}" if base is not None and ms > 0 else "-"
            rows.append(
                (
                    fw.name,
                    fw.version,
                    measure_name,
                    str(cases),
                    f"{statistics.median(values):.2f}",
                    f"{ms:.3f}",
                    ratio,
                    str(len(values)),
                )
            )
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    print()
    print(
        f"Medians of {repeats} repeat(s); per-case = total / {cases}; "
        "Proctor ÷ peer = Proctor's per-case time / the peer's"
    )
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print(line)
    previous = None
    for row in rows:
        if previous is not None and row[2] != previous:
            print(line)
        previous = row[2]
        cells = [
            c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells))
    imports = [f"{fw.name} {statistics.median(fw.import_s):.2f} s" for fw in frameworks if fw.import_s]
    if imports:
        print(f"\nImport time in the drivers (not in 'in-process'): {', '.join(imports)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cases", default="5,100,1000", help="comma-separated suite sizes (default 5,100,1000)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32, help="cases at once, for every framework")
    parser.add_argument(
        "--peer-python",
        default=os.environ.get(PEER_PYTHON_ENV),
        help=f"Python with inspect-ai, deepeval, pydantic-evals (default ${PEER_PYTHON_ENV})",
    )
    parser.add_argument(
        "--promptfoo",
        default=os.environ.get(PROMPTFOO_ENV),
        help=f"promptfoo's command, node_modules/.bin/promptfoo (default ${PROMPTFOO_ENV})",
    )
    parser.add_argument(
        "--proctor-python",
        default=str(PROJECT / ".venv" / "bin" / "python"),
        help="Python of Proctor's environment (its `proctor` command beside it)",
    )
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(FRAMEWORKS)}")
    parser.add_argument("--settle", type=float, default=4.0, help="pause before each warm in-process run (s)")
    parser.add_argument("--timeout", type=float, default=900.0, help="limit per run (s)")
    parser.add_argument("--example-repeats", type=int, default=5, help="runs of the bundled example (median)")
    parser.add_argument("--prefect-api-url", help="a running Prefect server for the example's second figure")
    parser.add_argument(
        "--start-server", action="store_true", help="start a Prefect server for that figure (and stop it)"
    )
    parser.add_argument("--no-example", action="store_true", help="skip the bundled example's figures")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder with every output")
    args = parser.parse_args()
    try:
        sizes = [int(size) for size in args.cases.split(",")]
    except ValueError:
        parser.error("--cases takes sizes separated by commas, e.g. 5,100,1000")
    if min(sizes) < 1 or args.repeats < 1 or args.example_repeats < 1:
        parser.error("--cases, --repeats and --example-repeats must be at least 1")

    tmp = Path(tempfile.mkdtemp(prefix="proctor-peers-"))
    try:
        load = os.getloadavg()
        print(
            f"sizes {args.cases}, zero latency, exact match, concurrency {args.concurrency}, "
            f"{args.repeats} repeat(s); {os.cpu_count()} CPUs, "
            f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            f"{platform.platform()}, Python {platform.python_version()}; work folder {tmp}"
        )
        if not args.no_example and (args.only is None or "proctor" in args.only.split(",")):
            example.example_section(args, tmp)
        frameworks = discover(args, tmp)
        if not frameworks:
            print("nothing to measure")
            return
        print("measuring: " + ", ".join(f"{fw.name} {fw.version}" for fw in frameworks), flush=True)
        small = write_workload(tmp / f"workload-{WARMUP_CASES}", WARMUP_CASES, args.concurrency)
        for fw in frameworks:
            warm_up(fw, small, tmp / "warm-up" / fw.name)
        for cases in sizes:
            for fw in frameworks:
                fw.samples = {m: [] for m in MEASURES}
                fw.import_s = []
            workload = write_workload(tmp / f"workload-n{cases}", cases, args.concurrency)
            for i in range(args.repeats):
                for fw in frameworks:
                    label = f"[{cases} cases {i + 1}/{args.repeats}]"
                    measure(fw, workload, tmp / f"n{cases}-repeat-{i}" / fw.name, cases, label)
            report(frameworks, cases, args.repeats)
        load = os.getloadavg()
        print(f"\nload at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        if args.keep:
            print(f"\noutputs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
