"""The keys of the agent.yaml sections HoloDeck reads and Proctor does not use (`execution`,
`observability`, `deployment`, `claude`, `openai`): HoloDeck's models refuse any other key
(`extra="forbid"`), so a misspelt one is refused here too, with its line, although the section
changes nothing in a Proctor run.

The table is HoloDeck 0.7.1's models, mapping by mapping (free-form mappings such as
`deployment.environment` are not in it); `tests/loaders/holodeck/test_sections.py` derives it
again from holodeck-ai's own models when they are installed.
"""

from __future__ import annotations

from typing import Any

from proctor.loaders.errors import Problem
from proctor.loaders.holodeck.keys import unknown_keys

SECTION_KEYS: dict[str, frozenset[str]] = {  # location -> the keys HoloDeck's model there accepts
    "execution": frozenset(
        {
            "cache_dir",
            "cache_enabled",
            "download_timeout",
            "file_timeout",
            "llm_timeout",
            "parallel_test_cases",
            "quiet",
            "verbose",
        }
    ),  # ExecutionConfig
    "observability": frozenset(
        {
            "disable_provider_tracing",
            "enabled",
            "exporters",
            "logs",
            "metrics",
            "resource_attributes",
            "service_name",
            "traces",
        }
    ),  # ObservabilityConfig
    "observability.traces": frozenset(
        {
            "capture_content",
            "capture_evaluation_content",
            "enabled",
            "max_export_batch_size",
            "max_queue_size",
            "redaction_patterns",
            "sample_rate",
            "schedule_delay_millis",
        }
    ),  # TracingConfig
    "observability.metrics": frozenset({"enabled", "export_interval_ms"}),  # MetricsConfig
    "observability.logs": frozenset(
        {"enabled", "filter_namespaces", "include_trace_context", "level"}
    ),  # LogsConfig
    "observability.exporters": frozenset(
        {"azure_monitor", "console", "otlp", "prometheus"}
    ),  # ExportersConfig
    "observability.exporters.console": frozenset(
        {"enabled", "include_timestamps", "pretty_print"}
    ),  # ConsoleExporterConfig
    "observability.exporters.otlp": frozenset(
        {"compression", "enabled", "endpoint", "headers", "insecure", "protocol", "timeout_ms"}
    ),  # OTLPExporterConfig
    "observability.exporters.prometheus": frozenset(
        {"enabled", "host", "path", "port"}
    ),  # PrometheusExporterConfig
    "observability.exporters.azure_monitor": frozenset(
        {"connection_string", "disable_offline_storage", "enabled", "storage_directory"}
    ),  # AzureMonitorExporterConfig
    "deployment": frozenset(
        {"environment", "health_check_path", "platform", "port", "protocol", "registry", "runtime", "target"}
    ),  # DeploymentConfig
    "deployment.registry": frozenset(
        {"credentials_env_prefix", "custom_tag", "repository", "tag_strategy", "url"}
    ),  # RegistryConfig
    "deployment.target": frozenset({"aws", "azure", "gcp", "provider"}),  # CloudTargetConfig
    "deployment.target.aws": frozenset(
        {
            "auto_scaling_max",
            "auto_scaling_min",
            "cpu",
            "ecr_role_arn",
            "health_check_path",
            "memory",
            "region",
        }
    ),  # AWSAppRunnerConfig
    "deployment.target.gcp": frozenset(
        {"concurrency", "cpu", "max_instances", "memory", "min_instances", "project_id", "region", "timeout"}
    ),  # GCPCloudRunConfig
    "deployment.target.azure": frozenset(
        {
            "cpu",
            "environment_name",
            "ingress_external",
            "location",
            "max_replicas",
            "memory",
            "min_replicas",
            "resource_group",
            "subscription_id",
        }
    ),  # AzureContainerAppsConfig
    "claude": frozenset(
        {
            "agents",
            "allowed_tools",
            "bash",
            "disable_default_hooks",
            "disable_subprocess_env_scrub",
            "disallowed_tools",
            "effort",
            "extended_thinking",
            "fallback_model",
            "file_system",
            "i_understand_this_is_unsafe",
            "max_budget_usd",
            "max_concurrent_sessions",
            "max_turns",
            "permission_mode",
            "session_memory_estimate_mib",
            "setting_sources",
            "web_search",
            "working_directory",
        }
    ),  # ClaudeConfig
    "claude.extended_thinking": frozenset({"budget_tokens", "enabled"}),  # ExtendedThinkingConfig
    "claude.bash": frozenset({"allow_unsafe", "enabled", "excluded_commands"}),  # BashConfig
    "claude.file_system": frozenset({"edit", "read", "write"}),  # FileSystemConfig
    "openai": frozenset(
        {
            "disable_default_hooks",
            "disable_subprocess_env_scrub",
            "disallowed_tools",
            "effort",
            "fallback_model",
            "i_understand_this_is_unsafe",
            "max_budget_usd",
            "max_concurrent_sessions",
            "max_turns",
            "permissions",
            "session_memory_estimate_mib",
        }
    ),  # OpenAIConfig
    "openai.permissions": frozenset({"allowed_tools", "disallowed_tools"}),  # OpenAIPermissionsConfig
}


def _at(document: Any, location: str) -> Any:
    for part in location.split("."):
        if not isinstance(document, dict):
            return None
        document = document.get(part)
    return document


def section_key_problems(file: str, document: dict[str, Any]) -> list[Problem]:
    """One problem per key of these sections HoloDeck's models would refuse, with its line."""
    problems: list[Problem] = []
    for location, valid in SECTION_KEYS.items():
        mapping = _at(document, location)
        if isinstance(mapping, dict):
            problems += unknown_keys(file, location, mapping, valid)
    return problems
