"""A run's summary posted to Slack: Block Kit through the Web API, or an incoming webhook.

The Web API path posts the summary with `chat.postMessage` and the failing cases as a reply
in its thread; the webhook path posts one message. Slack's 429 (after its `Retry-After`),
5xx and dropped connections are retried by slack_sdk's own retry handlers. Whatever Slack
does, `notify_slack` returns a `NotificationResult` and never raises: results and reports are
stored before it runs, and the run records what became of its notification.

Everything that came from the agent or the suite is escaped for Slack's mrkdwn, so a reply
containing `<!channel>` or `*bold*` shows as text. Tokens are resolved from references at
the last moment and never appear in a result, a log line or an error message.
"""

from __future__ import annotations

import logging
import random
import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from proctor.judges.credentials import CredentialError, redact, resolve_reference
from proctor.models.notify import NotifyPolicy, SlackSettings
from proctor.notify.digest import Digest
from proctor.secrets import scrub

# slack_sdk logs a webhook's URL (its secret) on every post and retry: its own logger is
# kept at WARNING, where it says nothing about URLs.
SDK_LOGGER = logging.getLogger("proctor.notify.slack_sdk")
SDK_LOGGER.setLevel(logging.WARNING)

TEXT_LIMIT = 2900  # a section's text may hold 3000 characters
MAX_BLOCKS = 50  # Slack's limit per message


def escape_mrkdwn(text: str) -> str:
    """Text shown literally in mrkdwn: Slack's three control characters escaped, and the
    formatting characters broken by a zero-width space so agent text cannot format itself."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for mark in ("*", "_", "~", "`"):
        escaped = escaped.replace(mark, mark + "\u200b")
    return escaped


def escape_keeping_commands(text: str) -> str:
    """Proctor's own message (a run's error) with its `command` spans as code spans, which
    copy as typed: escaped as any text, a `createdb proctor_db` would carry zero-width spaces
    after its `_` and fail when pasted into a shell. The rest is escaped as `escape_mrkdwn`."""
    parts = re.split(r"(`[^`\n]+`)", text)
    return "".join(code(part[1:-1]) if index % 2 else escape_mrkdwn(part) for index, part in enumerate(parts))


def code(text: str) -> str:
    """An identifier as inline code: mrkdwn does not format inside it, so only Slack's control
    characters are escaped and a backtick (which would end the span) is replaced."""
    return "`" + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "'") + "`"


def _clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def should_notify(policy: NotifyPolicy, digest: Digest) -> bool:
    """Whether the policy asks for a message about this run. A run that did not complete
    counts as a failure (and so as worth a regression alert too)."""
    if policy is NotifyPolicy.ALWAYS:
        return True
    if policy is NotifyPolicy.FAILURE:
        return digest.has_failures
    if policy is NotifyPolicy.REGRESSION:
        return digest.regressed or digest.status != "completed"
    return False


def _headline(digest: Digest) -> str:
    if digest.status != "completed":
        icon = ":boom:"
    elif digest.regressed:
        icon = ":rotating_light:"
    elif digest.has_failures:
        icon = ":warning:"
    else:
        icon = ":white_check_mark:"
    variant = f" ({digest.variant})" if digest.variant else ""
    verdict = " · Regressed" if digest.regressed and digest.status == "completed" else ""
    return f"{icon} {digest.suite_name} · {digest.agent}{variant}{verdict}"


def _pass_rate(digest: Digest) -> str:
    if digest.run_id is None:
        return "no case ran"
    rate = "n/a" if digest.pass_rate is None else f"{digest.pass_rate:.1f}%"
    return f"{rate} ({digest.passed}/{digest.total} passed, {digest.failed} failed, {digest.errored} errored)"


def _change_line(digest: Digest) -> str:
    regression = digest.regression
    if regression is None:
        return escape_mrkdwn(digest.no_history) if digest.no_history else "no baseline yet"
    delta = regression.pass_rate_delta
    arrow = ":arrow_down:" if delta < 0 else ":arrow_up:" if delta > 0 else ":left_right_arrow:"
    verdict = "*regressed*" if regression.regressed else "no regression"
    return (
        f"{arrow} {delta:+.1f} points vs baseline `{str(regression.baseline_id)[:8]}` "
        f"({regression.pass_rate_before:.1f}% → {regression.pass_rate_after:.1f}%): {verdict}\n"
        f"{escape_mrkdwn(regression.history_line)}"
    )


def summary_text(digest: Digest) -> str:
    """The plain-text fallback (notifications, screen readers), also the webhook's `text`."""
    words = f"{digest.suite_name} · {digest.agent}: {_pass_rate(digest)}"
    if digest.regressed:
        words += " — regressed against its history"
    if digest.status != "completed":
        words += f" — run {digest.status}"
    if digest.run_id is None and digest.error:
        words += f": {_clip(digest.error, 300)}"
    return escape_mrkdwn(words)


def _case_line(case: Any) -> str:
    mark = " *(significant)*" if case.significant else ""
    return f"• {code(case.case_id)} — {escape_mrkdwn(case.evidence)}{mark}"


def _regression_lines(digest: Digest, limit: int = 5) -> list[str]:
    """What made the run regress: the significant cases, the metrics whose mean fell (by a
    visible amount), and, for a broad drop, the failure count against what history expected.
    Empty when the run did not regress: nothing is listed under "Regressions" then."""
    regression = digest.regression
    if regression is None or not regression.regressed:
        return []
    lines = [_case_line(case) for case in regression.cases if case.significant][:limit]
    if len(regression.significant_cases) > limit:
        lines.append(f"• … and {len(regression.significant_cases) - limit} more")
    if regression.broad_p_value < regression.significance / 2:
        lines.append(
            f"• {regression.observed_failures} failed attempts where history expected "
            f"{regression.expected_failures:.1f} (p = {regression.broad_p_value:.2g})"
        )
    for metric in regression.worst_metrics(limit=3):
        if round(metric.delta or 0.0, 2) < 0:
            lines.append(
                f"• {code(metric.name)}: {metric.before:.2f} → {metric.after:.2f} ({metric.delta:+.2f})"
            )
    return lines


def _label_lines(digest: Digest, limit: int = 5) -> list[str]:
    """Every label's count (zeros too, as the terminal and the reports show them), then the
    newly failing cases with their evidence and the flaky ones apart (never regressions)."""
    from proctor.models.comparison import LABEL_NAMES, LABELS

    regression = digest.regression
    if regression is None:
        return []
    counts = regression.counts
    lines = [" · ".join(f"{LABEL_NAMES[label]} {counts[label]}" for label in LABELS)]
    for label, title in (("newly_failing", "Newly failing"), ("flaky", "Flaky (not regressions)")):
        listed = [case for case in regression.cases if case.label == label]
        if listed:
            lines.append(f"*{title}*")
            lines += [_case_line(case) for case in listed[:limit]]
            if len(listed) > limit:
                lines.append(f"• … and {len(listed) - limit} more")
    return lines


def _links(digest: Digest) -> list[str]:
    links = []
    if digest.flow_run_link:
        links.append(f"<{digest.flow_run_link}|Prefect flow run>")
    if digest.report_link:
        links.append(f"<{digest.report_link}|Report>")
    if digest.run_id is not None:
        links.append(f"run `{digest.run_id}`")
    return links


def summary_blocks(digest: Digest) -> list[dict[str, Any]]:
    """Block Kit for the summary: headline, pass rate, change against the baseline, the worst
    regressions, then links to the Prefect flow run and the report."""
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(_headline(digest), 150), "emoji": True},
        },
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": f"*Pass rate*\n{_pass_rate(digest)}"},
                {"type": "mrkdwn", "text": f"*Against baseline*\n{_change_line(digest)}"},
            ],
        },
    ]
    if digest.error:
        blocks.append(  # the reason a run did not complete: the first thing to read in the morning
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": _clip(f"*Run {digest.status}:* {escape_keeping_commands(digest.error)}"),
                },
            }
        )
    lines = _regression_lines(digest)
    if lines:
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": _clip("*Regressions*\n" + "\n".join(lines))},
            }
        )
    labels = _label_lines(digest)
    if labels:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _clip("\n".join(labels))}})
    if digest.regression is not None:
        blocks.append(
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": _clip(escape_mrkdwn(digest.regression.method))}],
            }
        )
    if digest.totals is not None:
        spent = escape_mrkdwn(digest.totals.line())
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(spent)}]})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(_links(digest))}]})
    return blocks


def failure_blocks(digest: Digest) -> list[dict[str, Any]]:
    """The failing cases, one section each, for the thread reply (within Slack's 50 blocks)."""
    header = f"*{digest.cases_not_passed} case(s) did not pass{' every repeat' if digest.repeat > 1 else ''}*"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": header}}]
    for case in digest.failing[: MAX_BLOCKS - 2]:
        passes = f", passed {case.passes[0]} of {case.passes[1]}" if case.passes else ""
        label = f", {case.label}: {case.evidence}" if case.label else ""
        about = escape_mrkdwn(case.state + passes + label)
        text = f"{code(case.case_id)} ({about})\n{escape_mrkdwn(case.reason)}"
        if case.response:
            text += f"\n>{escape_mrkdwn(case.response).replace(chr(10), chr(10) + '>')}"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _clip(text)}})
    hidden = digest.more_failing + max(0, len(digest.failing) - (MAX_BLOCKS - 2))
    if hidden:
        blocks.append(
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": f"… and {hidden} more in the report"}],
            }
        )
    return blocks


@dataclass
class NotificationResult:
    """What became of a notification; stored with the run as JSON."""

    status: str  # "sent" | "partial" (summary out, thread reply failed) | "skipped" | "failed"
    via: str | None = None  # "web_api" | "webhook"
    channel: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    attempts: int = 0
    error: str | None = None
    reason: str | None = None  # why it was skipped
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _retry_handlers(settings: SlackSettings, attempts: list[int]) -> list[Any]:
    from slack_sdk.http_retry.builtin_handlers import (
        ConnectionErrorRetryHandler,
        RateLimitErrorRetryHandler,
        ServerErrorRetryHandler,
    )
    from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
    from slack_sdk.http_retry.handler import RetryHandler
    from slack_sdk.http_retry.jitter import Jitter

    class ProportionalJitter(Jitter):
        """Up to a quarter of the wait added at random (slack_sdk's default adds up to 1 s)."""

        def recalculate(self, duration: float) -> float:
            return duration * (1 + random.random() / 4)

    class Counting(RetryHandler):
        """Counts each retry slack_sdk decides on, so the run can record the attempts."""

        def __init__(self, inner: RetryHandler) -> None:
            super().__init__(
                max_retry_count=inner.max_retry_count, interval_calculator=inner.interval_calculator
            )
            self.inner = inner

        def _can_retry(self, *, state, request, response=None, error=None) -> bool:  # type: ignore[no-untyped-def]
            decided = self.inner._can_retry(state=state, request=request, response=response, error=error)
            if decided:
                attempts[0] += 1
            return decided

        def prepare_for_next_attempt(self, *, state, request, response=None, error=None) -> None:  # type: ignore[no-untyped-def]
            self.inner.prepare_for_next_attempt(state=state, request=request, response=response, error=error)

    backoff = BackoffRetryIntervalCalculator(settings.retry_backoff, jitter=ProportionalJitter())
    retries = settings.max_retries
    return [
        Counting(RateLimitErrorRetryHandler(max_retry_count=retries, interval_calculator=backoff)),
        Counting(ServerErrorRetryHandler(max_retry_count=retries, interval_calculator=backoff)),
        Counting(ConnectionErrorRetryHandler(max_retry_count=retries, interval_calculator=backoff)),
    ]


def _safe_error(error: BaseException, *secrets: str | None) -> str:
    """An error message with every secret value cut out, whatever the library put in it."""
    message = f"{type(error).__name__}: {error}"
    from slack_sdk.errors import SlackApiError

    if isinstance(error, SlackApiError):
        message = f"Slack API error {error.response.status_code}: {error.response.get('error')}"
    return redact(message, *secrets)[:500]


def _post_web_api(settings: SlackSettings, digest: Digest) -> NotificationResult:
    from slack_sdk import WebClient

    token = resolve_reference(settings.token, field="slack.token")
    attempts = [1]
    client = WebClient(
        token=token,
        base_url=settings.api_url or WebClient.BASE_URL,
        timeout=10,
        retry_handlers=_retry_handlers(settings, attempts),
    )
    result = NotificationResult(status="failed", via="web_api", channel=settings.channel)
    try:
        posted = client.chat_postMessage(
            channel=settings.channel or "",
            text=summary_text(digest),
            blocks=summary_blocks(digest),
            unfurl_links=False,
        )
        result.ts, result.channel = posted.get("ts"), posted.get("channel") or settings.channel
        result.status = "sent"
        if digest.failing or digest.more_failing:
            reply = client.chat_postMessage(
                channel=result.channel or "",
                thread_ts=result.ts,
                text=f"{digest.cases_not_passed} case(s) did not pass",
                blocks=failure_blocks(digest),
                unfurl_links=False,
            )
            result.thread_ts = reply.get("ts")
    except Exception as error:  # noqa: BLE001 - any failure is recorded, none is raised
        result.error = _safe_error(error, token)
        if result.ts:  # the summary is out; only the thread reply failed
            result.status = "partial"
    result.attempts = attempts[0]
    return result


def _post_webhook(settings: SlackSettings, digest: Digest) -> NotificationResult:
    from slack_sdk.webhook import WebhookClient

    url = resolve_reference(settings.webhook_url or "", field="slack.webhook_url")
    attempts = [1]
    client = WebhookClient(
        url, timeout=10, retry_handlers=_retry_handlers(settings, attempts), logger=SDK_LOGGER
    )
    result = NotificationResult(status="failed", via="webhook")
    try:
        summary = summary_blocks(digest)
        failures = failure_blocks(digest) if digest.failing or digest.more_failing else []
        response = client.send(text=summary_text(digest), blocks=(summary + failures)[:MAX_BLOCKS])
        if response.status_code == 200:
            result.status = "sent"
        else:
            body = redact(response.body or "", url)  # a server may echo the webhook's secret path
            result.error = f"webhook answered {response.status_code}: {_clip(body, 200)}"
    except Exception as error:  # noqa: BLE001
        result.error = _safe_error(error, url)
    result.attempts = attempts[0]
    return result


def notify_slack(settings: SlackSettings, digest: Digest) -> NotificationResult:
    """Post the digest if the policy asks for it; never raises."""
    if not should_notify(settings.notify, digest):
        return NotificationResult(status="skipped", reason=f"notify policy '{settings.notify}'")
    started = time.monotonic()
    try:
        result = _post_web_api(settings, digest) if settings.channel else _post_webhook(settings, digest)
    except CredentialError as error:
        result = NotificationResult(
            status="failed", via="web_api" if settings.channel else "webhook", error=str(error)
        )
    result.seconds = round(time.monotonic() - started, 3)
    result.error = scrub(result.error) if result.error else result.error
    return result
