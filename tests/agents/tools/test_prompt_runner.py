"""HoloDeck `prompt` tools: the model is offered the tool with its parameters, the template is
filled with the model's arguments and sent to the tool's model, and its reply is the result the
model receives and the turn records."""

from __future__ import annotations

import textwrap

import pytest

from proctor.loaders import load_suite
from tests.agents.tools.retrieval.test_vectorstore import _ask
from tests.fakes import FakeOpenAI, Fault


def _agent(tmp_path, api, tools: str, monkeypatch):
    monkeypatch.setenv("WRITER_KEY", "sk-writer")
    path = tmp_path / "agent.yaml"
    path.write_text(
        f"name: writer\nmodel: {{name: agent-model, endpoint: '{api.base_url}', api_key: '${{WRITER_KEY}}', temperature: 0.2}}\n"
        "instructions: Use your tools.\ntools:\n" + textwrap.indent(textwrap.dedent(tools), "  "),
        encoding="utf-8",
    )
    return path


def _model(body: dict):
    if body["model"] == "summarizer":
        return "SUMMARY: " + body["messages"][0]["content"].upper()
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return {
            "tool_calls": [{"name": "summarize", "arguments": {"text": "cats sleep a lot", "style": "brief"}}]
        }
    return results[-1]


def test_the_filled_template_goes_to_the_tools_model_and_its_reply_is_the_result(tmp_path, monkeypatch):
    with FakeOpenAI(default=_model) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - name: summarize
              type: prompt
              description: Summarize text
              template: "Summarize{{#if style}} ({{style}}){{/if}}: {{text}}{{#if audience}} for {{audience}}{{/if}}"
              model: {name: summarizer, temperature: 0.0, max_tokens: 50}
              parameters:
                text: {type: string, description: Text to summarize}
                style: {type: string, default: plain}
                audience: {type: string, default: everyone}
            """,
            monkeypatch,
        )
        request = _ask(path, "Summarize: cats sleep a lot")
        offered = api.completions[0]["body"]["tools"][0]["function"]
        tool_call = next(r["body"] for r in api.completions if r["body"]["model"] == "summarizer")
    assert offered["name"] == "summarize" and offered["description"] == "Summarize text"
    assert offered["parameters"]["required"] == ["text"]
    assert offered["parameters"]["properties"]["text"] == {
        "type": "string",
        "description": "Text to summarize",
    }
    assert tool_call["messages"] == [{"role": "user", "content": "Summarize (brief): cats sleep a lot"}]
    assert (tool_call["temperature"], tool_call["max_tokens"]) == (0.0, 50)
    (call,) = request.recorded_tool_calls
    assert call.result == "SUMMARY: SUMMARIZE (BRIEF): CATS SLEEP A LOT"
    assert request.recorded_model_calls == 3  # the agent's two calls and the tool's


def test_a_failing_tool_model_is_the_tools_result_and_the_conversation_goes_on(tmp_path, monkeypatch):
    def model(body: dict):
        if body["model"] == "summarizer":
            return Fault.status(503)
        return _model(body)

    with FakeOpenAI(default=model) as api:
        path = _agent(
            tmp_path,
            api,
            """\
            - {name: summarize, type: prompt, description: s, file: prompts/summarize.txt,
               model: {name: summarizer}, parameters: {text: {type: string}}}
            """,
            monkeypatch,
        )
        (tmp_path / "prompts").mkdir()
        (tmp_path / "prompts" / "summarize.txt").write_text("Summarize: {{ text }}", encoding="utf-8")
        request = _ask(path, "Summarize: cats")
    (call,) = request.recorded_tool_calls
    assert call.result.startswith("Error: the prompt tool's model failed:") and "sk-writer" not in call.result


def test_loading_says_holodeck_itself_does_not_run_prompt_tools(tmp_path):
    (tmp_path / "agent.yaml").write_text(
        "name: w\nmodel: {name: m}\ninstructions: i\ntools:\n"
        "  - {name: summarize, type: prompt, description: s, template: 'S: {{text}}', parameters: {text: {type: string}}}\n"
        "evaluations: {metrics: [{type: standard, metric: equality}]}\ntest_cases: [{input: q, ground_truth: a}]\n",
        encoding="utf-8",
    )
    warnings = "\n".join(load_suite(tmp_path / "agent.yaml").warnings)
    assert "prompt tools are not run by HoloDeck 0.7.1" in warnings
    assert "not run yet" not in warnings


def test_a_template_that_does_not_parse_is_refused_when_the_agent_loads(tmp_path, monkeypatch):
    from proctor.agents.openai_agent import load_openai_agent

    with FakeOpenAI(default=_model) as api:
        path = _agent(
            tmp_path,
            api,
            "- {name: summarize, type: prompt, description: s, template: 'S: {{text', parameters: {text: {type: string}}}\n",
            monkeypatch,
        )
        with pytest.raises(ValueError, match=r"tools\[0\] \(summarize, type prompt\): template: .*line 1"):
            load_openai_agent(path)
