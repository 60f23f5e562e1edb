"""What Proctor does with each field of an ADK criterion (google-adk 2.13.0 eval_metrics.py:
`BaseCriterion`, `LlmAsAJudgeCriterion`, `RubricsBasedCriterion`, `HallucinationsCriterion`,
`ToolTrajectoryCriterion`, `LlmBackedUserSimulatorCriterion`, `JudgeModelOptions`) and of the
EvalConfig around `criteria`.

A field the named metric reads becomes its argument. A field ADK defines that the metric does
not read is dropped with a warning naming it: ADK accepts it on any criterion and ignores it
without a word, Proctor says so. A `judge_model_config` field a judge call cannot carry is
named the same way. Any other key reaches the metric, which refuses it (an unknown key is an
error). docs/suites/adk.md lists every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proctor.judges.genai_config import unsent_fields
from proctor.metrics.registry import REGISTRY
from proctor.models.adk_config import set_fields
from proctor.models.agentflow import CriterionConfig, EvalConfig

# ADK criterion fields handed to the metrics that read them (`adk_rubrics`: ADK-style rubrics)
CRITERION_ARGS = (
    "include_intermediate_responses_in_final",
    "evaluate_intermediate_nl_responses",
    "stop_signal",
    "ignore_args",
    "rubrics",
)
JUDGE_OPTION_ARGS = ("num_samples", "judge_model_config", "parallelism_limit")
# ADK 2.13.0 reads include_intermediate_responses_in_final in these two only (final_response_match_v2.py,
# rubric_based_final_response_quality_v1.py); every criterion accepts it
READS_INTERMEDIATE = frozenset({"final_response_match_v2", "rubric_based_final_response_quality_v1"})


@dataclass
class CriterionReading:
    """A criterion as a metric takes it: its arguments, and what was set but is not used."""

    args: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _judge_options(name: str, criterion: CriterionConfig, metric: Any, reading: CriterionReading) -> None:
    options = criterion.judge_model_options
    if options is None:
        return
    where = f"criteria.{name}.judge_model_options"
    if options.judge_model is not None and metric.kind != "llm":
        reading.notes.append(f"{where}.judge_model: {name} calls no judge; ignored")
    unused = getattr(metric, "unused_judge_options", frozenset())
    for key in JUDGE_OPTION_ARGS:
        value = getattr(options, key)
        if value is None:
            continue
        if key not in metric.model_fields or key in unused:
            reason = "ADK's evaluator does not read it either" if key in unused else "it does not read it"
            reading.notes.append(f"{where}.{key}: not used by {name} ({reason}); ignored")
            continue
        reading.args[key] = set_fields(value) if key == "judge_model_config" else value
        if key == "judge_model_config":
            reading.notes += [
                f"{where}.judge_model_config.{unsent}: not sent to the judge (a judge call carries "
                "temperature, top_p, max_output_tokens, stop_sequences, seed, presence_penalty, "
                "frequency_penalty, system_instruction and response_mime_type); ignored"
                for unsent in unsent_fields(reading.args[key])
            ]


def read_criterion(name: str, criterion: CriterionConfig) -> CriterionReading:
    """The metric's arguments from a criterion, and notes on the fields it does not use."""
    args = dict(criterion.model_extra or {})
    if "adk_rubrics" in args:
        args["rubrics"] = args.pop("adk_rubrics")
    reading = CriterionReading(args)
    if name not in REGISTRY:  # an unknown metric is refused when the specs are checked
        return reading
    metric = REGISTRY.get(name)
    fields = metric.model_fields
    for key in CRITERION_ARGS:
        if key not in args:
            continue
        if key not in fields:
            args.pop(key)
            reading.notes.append(f"criteria.{name}.{key}: not read by {name} (ADK ignores it too); ignored")
        elif (
            key == "include_intermediate_responses_in_final" and args[key] and name not in READS_INTERMEDIATE
        ):
            reading.notes.append(
                f"criteria.{name}.{key}: {name} scores without the intermediate responses, as ADK's "
                f"(ADK reads it in {' and '.join(sorted(READS_INTERMEDIATE))} only)"
            )
    if "match_type" in criterion.model_fields_set and "match_type" not in fields:
        reading.notes.append(f"criteria.{name}.match_type: not read by {name}; ignored")
    if criterion.rubrics and "rubrics" not in fields:
        reading.notes.append(f"criteria.{name}.rubrics: not read by {name}; ignored")
    if "judge_model" in criterion.model_fields_set and metric.kind != "llm":
        reading.notes.append(f"criteria.{name}.judge_model: {name} calls no judge; ignored")
    _judge_options(name, criterion, metric, reading)
    return reading


def config_notes(config: EvalConfig) -> list[str]:
    """Every field of the config that is set and not used, as `where: why` notes."""
    notes = [note for name, spec in config.criteria.items() for note in read_criterion(name, spec).notes]
    if config.live_model_config is not None:
        notes.append(
            "live_model_config: not used: ADK reads it only to evaluate Live API models in bidirectional "
            "streaming mode, and Proctor runs agents turn by turn"
        )
    return notes
