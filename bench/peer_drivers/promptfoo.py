"""promptfoo in the peers bench: `promptfoo eval -c config.json -o results.json` with the `echo`
provider and an `equals` assertion, cache and sharing off; its SQLite database and the JSON
output. In process: its Node API `evaluate`.

In the quota bench (`bench/quota.py`): the same agent-plus-judge workload as Proctor's, through
the Node API `evaluate` with the `openai:chat` provider pointed at the quota server and an
`llm-rubric` assertion graded by a judge model there. Nothing is set about concurrency, delays
or retries: promptfoo's defaults (4 at once; a 429 waits for Retry-After or the rate-limit
reset headers, up to 4 retries). The cache is off, as for every other run here: the grading
prompts are all alike, and a cached verdict would skip the judge call the workload makes."""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .common import PROMPTFOO_ENV, Framework, RunFailed, base_env, check_all_passed, driver_result, run, tail

PROMPTFOO_DRIVER = """
import { readFileSync } from 'node:fs';

const [indexUrl, configPath, work, runs, concurrency, settle] = process.argv.slice(2);
let started = performance.now();
const promptfoo = await import(indexUrl);
const importS = (performance.now() - started) / 1000;
const config = JSON.parse(readFileSync(configPath, 'utf8'));
const results = [];
for (let k = 0; k < Number(runs); k++) {
  if (k) await new Promise((resolve) => setTimeout(resolve, Number(settle) * 1000));
  started = performance.now();
  // writeLatestResults: persist to promptfoo's database, as the CLI does.
  const record = await promptfoo.evaluate(
    { ...config, writeLatestResults: true, outputPath: `${work}/results${k}.json` },
    { maxConcurrency: Number(concurrency), cache: false, showProgressBar: false },
  );
  const seconds = (performance.now() - started) / 1000;
  const stats = (await record.toEvaluateSummary()).stats;
  results.push({ seconds, total: stats.successes + stats.failures + stats.errors, passed: stats.successes });
}
console.log('PEERS_RESULT ' + JSON.stringify({ import_s: importS, runs: results }));
process.exit(0);
"""


QUOTA_DRIVER = """
import { readFileSync } from 'node:fs';

const [indexUrl, configPath, work] = process.argv.slice(2);
let started = performance.now();
const promptfoo = await import(indexUrl);
const importS = (performance.now() - started) / 1000;
const config = JSON.parse(readFileSync(configPath, 'utf8'));
started = performance.now();
// No maxConcurrency, delay or retry option: promptfoo's defaults.
const record = await promptfoo.evaluate(
  { ...config, writeLatestResults: true, outputPath: `${work}/results.json` },
  { cache: false, showProgressBar: false },
);
const seconds = (performance.now() - started) / 1000;
const stats = (await record.toEvaluateSummary()).stats;
const total = stats.successes + stats.failures + stats.errors;
console.log('PEERS_RESULT ' + JSON.stringify({
  import_s: importS, seconds, total, passed: stats.successes, errored: stats.errors,
}));
process.exit(0);
"""


def write_files(folder: Path, cases: list[dict[str, str]], n: int, concurrency: int) -> None:
    """promptfoo's copy of the workload: the prompt is the input itself, so `echo` returns it;
    one `equals` assertion."""
    config = {
        "description": f"peers echo {n}",
        "prompts": ["{{input}}"],
        "providers": ["echo"],
        "sharing": False,
        "evaluateOptions": {"cache": False, "maxConcurrency": concurrency, "showProgressBar": False},
        "tests": [
            {
                "description": f"case_{i}",
                "vars": {"input": case["input"]},
                "assert": [{"type": "equals", "value": case["expected"]}],
            }
            for i, case in enumerate(cases)
        ],
    }
    (folder / "promptfooconfig.json").write_text(json.dumps(config))


def write_quota_files(
    folder: Path, cases: list[dict[str, str]], instructions: str, base_url: str, api_key: str
) -> None:
    """The quota bench's workload for promptfoo: a chat prompt (the same system instructions and
    question as Proctor's), the agent and the judge as `openai:chat` models on the quota server,
    one `llm-rubric` assertion per case."""

    def model(name: str) -> dict:
        return {
            "id": f"openai:chat:{name}",
            "config": {"apiBaseUrl": base_url, "apiKey": api_key, "temperature": 0},
        }

    prompt = [{"role": "system", "content": instructions}, {"role": "user", "content": "{{input}}"}]
    config = {
        "description": f"quota bench, {len(cases)} cases",
        "prompts": [json.dumps(prompt)],
        "providers": [model("agent-model")],
        "defaultTest": {"options": {"provider": model("judge-model")}},
        "sharing": False,
        "tests": [
            {
                "description": f"c{i}",
                "vars": {"input": case["input"]},
                "assert": [{"type": "llm-rubric", "value": f"The answer is {case['expected']}"}],
            }
            for i, case in enumerate(cases)
        ],
    }
    (folder / "promptfoo_quota.json").write_text(json.dumps(config))


@dataclass
class Promptfoo(Framework):
    cli: str = ""
    node: str = ""
    index_url: str = ""
    concurrency: int = 32
    settle: float = 4.0
    env: dict[str, str] = field(default_factory=dict)

    def _env(self, out: Path) -> dict[str, str]:
        # A fresh promptfoo home (database, logs) per process, as Proctor gets a fresh database.
        return {**self.env, "PROMPTFOO_CONFIG_DIR": str(out / "promptfoo-home")}

    def command(self, workload: Path, out: Path, cases: int) -> float:
        results = out / "results.json"
        seconds, output, code = run(
            [
                self.cli,
                "eval",
                "-c",
                str(workload / "promptfooconfig.json"),
                "-o",
                str(results),
                "--no-cache",
                "--no-share",
                "--no-table",
                "--no-progress-bar",
                "-j",
                str(self.concurrency),
            ],
            cwd=out,
            env=self._env(out),
            timeout=self.timeout,
        )
        if code != 0 or not results.exists():
            raise RunFailed(f"promptfoo eval exited {code}:\n{tail(output)}")
        stats = json.loads(results.read_text())["results"]["stats"]
        total = stats["successes"] + stats["failures"] + stats["errors"]
        check_all_passed("promptfoo eval", total, stats["successes"], cases)
        if not (out / "promptfoo-home" / "promptfoo.db").exists():
            raise RunFailed("promptfoo eval wrote no database")
        return seconds

    def in_process(self, workload: Path, out: Path, cases: int, runs: int) -> dict:
        driver = out / "promptfoo_driver.mjs"
        driver.write_text(PROMPTFOO_DRIVER)
        args = [self.index_url, str(workload / "promptfooconfig.json"), str(out), str(runs)]
        _, output, code = run(
            [self.node, str(driver), *args, str(self.concurrency), str(self.settle)],
            cwd=out,
            env=self._env(out),
            timeout=self.timeout * runs,
        )
        return driver_result(output, code)

    def quota(self, workload: Path, out: Path) -> dict:
        """The quota workload in one `evaluate` at promptfoo's defaults: seconds of the call,
        tests, passed, errored."""
        driver = out / "promptfoo_quota_driver.mjs"
        driver.write_text(QUOTA_DRIVER)
        _, output, code = run(
            [self.node, str(driver), self.index_url, str(workload / "promptfoo_quota.json"), str(out)],
            cwd=out,
            env=self._env(out),
            timeout=self.timeout,
        )
        return driver_result(output, code)


def promptfoo_package(cli: Path) -> tuple[Path, str] | None:
    """The promptfoo package folder behind the CLI and its version."""
    folder = cli.resolve().parent
    for candidate in (folder, *folder.parents):
        manifest = candidate / "package.json"
        if manifest.exists():
            try:
                data = json.loads(manifest.read_text())
            except ValueError:
                continue
            if data.get("name") == "promptfoo":
                return candidate, data.get("version", "?")
    return None


def promptfoo_index(package: Path) -> Path:
    data = json.loads((package / "package.json").read_text())
    entry = data.get("exports", {}).get(".", {})
    target = entry.get("import") if isinstance(entry, dict) else entry
    return package / (target or data.get("main", "dist/src/index.js"))


def find(args: argparse.Namespace, common: dict) -> Promptfoo | None:
    """promptfoo at --promptfoo (node_modules/.bin/promptfoo), run by the `node` on PATH."""
    cli = Path(args.promptfoo) if args.promptfoo else None
    node = shutil.which("node")
    package = promptfoo_package(cli) if cli and cli.exists() else None
    if cli is None:
        print(f"note: no --promptfoo (or ${PROMPTFOO_ENV}): promptfoo skipped")
        return None
    if package is None:
        print(f"note: promptfoo skipped: no promptfoo at {cli}")
        return None
    if node is None:
        print("note: promptfoo skipped: no `node` on PATH")
        return None
    folder, version = package
    return Promptfoo(
        "promptfoo",
        version,
        cli=str(cli),
        node=node,
        index_url=promptfoo_index(folder).as_uri(),
        env=base_env(),
        **common,
    )
