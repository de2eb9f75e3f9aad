"""A stand-in for the model APIs the real agent binaries talk to, on 127.0.0.1, so the tests can
run Claude Code, Codex and Gemini CLI offline (docs/design.md §15: "tested with the real binaries").

It plays three wire protocols, each the way its agent reads it:
- Anthropic Messages (`POST /v1/messages`, streamed server-sent events; Claude Code);
- OpenAI Responses (`POST /v1/responses`, streamed events; Codex);
- Gemini (`POST /v1beta/models/M:streamGenerateContent` and `:generateContent`; Gemini CLI).

What it answers is scripted by *rules*: a rule matches the newest user text of a request (a
substring), then calls the tools it lists, one per request, and ends with its reply text. Where a
request is in that exchange is read from the request itself (how many tool results follow the
matching user text), so the side calls an agent makes (titles, quota checks) change nothing. A
rule's reply may be a command run with the newest user text on stdin: the model of a pass; a
tool's input may be a command's JSON output, run with the tool results so far (`input_from`) or the
user text (`input_from_user`) on stdin: a model that reads what its previous call printed (the
prompt `converge --as-model` hands over) or what it was asked (a skill's text).

Every request is appended to a JSON Lines log (path, body), so a test reads exactly what the model
was sent. Run as a script it serves until killed and prints its port:

    python tests/agent_api.py --rules rules.json --log requests.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Rule:
    match: str  # a substring of the newest user text
    reply: str = "Done."
    tools: list[dict] = field(default_factory=list)  # [{"name": "Bash", "input": {...}}]
    reply_command: list[str] | None = None  # run with the user text on stdin; its stdout replies
    delay: float = 0.0  # seconds before each answer: a model still working (messages queue up)

    @classmethod
    def from_json(cls, data: dict) -> Rule:
        return cls(
            data["match"], data.get("reply", "Done."), data.get("tools", []), data.get("command")
        )


_IDS = itertools.count(1)


@dataclass
class Answer:
    text: str | None = None
    tool: dict | None = None  # {"name", "input", "id"}
    # every reply its own id: an agent joins the parts of one message by their id
    id: str = field(default_factory=lambda: f"standin_{next(_IDS)}")


class Script:
    """The rules, and the log of what was asked."""

    def __init__(self, rules: list[Rule], log: Path | None) -> None:
        self.rules = rules
        self.log = log
        self.lock = threading.Lock()

    def record(self, path: str, body: dict) -> None:
        if self.log is None:
            return
        with self.lock, open(self.log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"path": path, "body": body}, ensure_ascii=False) + "\n")

    def answer(
        self, user_text: str, tools_done: int, may_call_tools: bool, last_result: str = ""
    ) -> Answer:
        for rule in self.rules:
            if rule.match and rule.match in user_text:
                if rule.delay:
                    import time

                    time.sleep(rule.delay)
                if may_call_tools and tools_done < len(rule.tools):
                    tool = dict(rule.tools[tools_done])
                    tool.setdefault("id", f"call_{tools_done + 1}")
                    if "input_from" in tool or "input_from_user" in tool:
                        reads = last_result if "input_from" in tool else user_text
                        made = subprocess.run(
                            tool.pop("input_from", None) or tool.pop("input_from_user"),
                            input=reads,
                            capture_output=True,
                            text=True,
                            timeout=60,
                        )
                        tool["input"] = json.loads(made.stdout or "{}")
                    return Answer(tool=tool)
                if rule.reply_command:
                    done = subprocess.run(
                        rule.reply_command,
                        input=user_text,
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )
                    return Answer(text=done.stdout)
                return Answer(text=rule.reply)
        return Answer(text="OK.")


# --- reading a request: the newest user text, and the tool results since ------------------------


def _texts(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    found = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
            found.append(block.get("text", ""))
    return found


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    if isinstance(content, dict):  # Gemini: {"output": …} or {"error": …}
        return "\n".join(value for value in content.values() if isinstance(value, str))
    return json.dumps(content) if content is not None else ""


def tool_results(body: dict) -> str:
    """The text of every tool result in a request, oldest first, whichever protocol it speaks."""
    found = []
    for message in body.get("messages", []):  # Anthropic
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(_result_text(block.get("content")))
    for item in body.get("input", []):  # OpenAI Responses
        if isinstance(item, dict) and str(item.get("type", "")).endswith("_output"):
            found.append(_result_text(item.get("output")))
    for content in body.get("contents", []):  # Gemini
        for part in content.get("parts", []):
            if "functionResponse" in part:
                found.append(_result_text(part["functionResponse"].get("response")))
    return "\n\n".join(found)


def anthropic_turn(body: dict) -> tuple[str, int]:
    """The newest user text of a Messages request, and how many tool results came after it."""
    results = 0
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            results += 1
            continue
        texts = [t for t in _texts(content) if not t.lstrip().startswith("<system-reminder>")]
        if texts:
            return "\n".join(texts), results
    return "", results


def responses_turn(body: dict) -> tuple[str, int]:
    """The same for an OpenAI Responses request (Codex): items of `input`."""
    results = 0
    for item in reversed(body.get("input", [])):
        kind = item.get("type")
        if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            results += 1
            continue
        if item.get("role") == "user":
            texts = [
                t
                for t in _texts(item.get("content"))
                if not t.lstrip().startswith(("<environment_context>", "<user_instructions>"))
                and not t.lstrip().startswith("# AGENTS.md")
            ]
            if texts:
                return "\n".join(texts), results
    return "", results


def gemini_turn(body: dict) -> tuple[str, int]:
    """The same for a Gemini request: `contents`, function responses counted."""
    results = 0
    for content in reversed(body.get("contents", [])):
        if content.get("role") != "user":
            continue
        parts = content.get("parts", [])
        if any("functionResponse" in part for part in parts):
            results += 1
            continue
        texts = [part["text"] for part in parts if "text" in part]
        if texts:
            return "\n".join(texts), results
    return "", results


# --- writing an answer in each protocol ---------------------------------------------------------


def _sse(events: list[tuple[str | None, dict]]) -> bytes:
    lines = []
    for name, data in events:
        if name:
            lines.append(f"event: {name}")
        lines.append("data: " + json.dumps(data, ensure_ascii=False))
        lines.append("")
    return ("\n".join(lines) + "\n").encode("utf-8")


def anthropic_events(answer: Answer, model: str) -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 1}
    events: list[tuple[str | None, dict]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_" + answer.id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    if answer.tool is not None:
        tool = answer.tool
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_" + tool["id"],
                        "name": tool["name"],
                        "input": {},
                    },
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(tool["input"]),
                    },
                },
            ),
        ]
        stop = "tool_use"
    else:
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": answer.text},
                },
            ),
        ]
        stop = "end_turn"
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def anthropic_message(answer: Answer, model: str) -> dict:
    if answer.tool is not None:
        tool = answer.tool
        content = [
            {
                "type": "tool_use",
                "id": "toolu_" + tool["id"],
                "name": tool["name"],
                "input": tool["input"],
            }
        ]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": answer.text}], "end_turn"
    return {
        "id": "msg_" + answer.id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def responses_events(answer: Answer, model: str) -> bytes:
    response = {
        "id": "resp_" + answer.id,
        "object": "response",
        "model": model,
        "status": "in_progress",
        "output": [],
    }
    if answer.tool is not None:
        tool = answer.tool
        item = {
            "type": "function_call",
            "id": "fc_" + tool["id"],
            "call_id": tool["id"],
            "name": tool["name"],
            "arguments": json.dumps(tool["input"]),
            "status": "completed",
        }
        middle: list[tuple[str | None, dict]] = [
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
        ]
    else:
        item = {
            "type": "message",
            "id": "msg_" + answer.id,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
        }
        middle = [
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "content": []},
                },
            ),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_" + answer.id,
                    "output_index": 0,
                    "content_index": 0,
                    "delta": answer.text,
                },
            ),
        ]
    done = {
        **response,
        "status": "completed",
        "output": [item],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    events = [
        ("response.created", {"type": "response.created", "response": response}),
        *middle,
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]
    return _sse(events)


def json_for(schema: dict):
    """The plainest value a JSON schema accepts: what Gemini CLI's side calls (routing, checks)
    ask for with `responseJsonSchema`."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: json_for(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "standin"


def gemini_chunk(answer: Answer) -> dict:
    if answer.tool is not None:
        part = {"functionCall": {"name": answer.tool["name"], "args": answer.tool["input"]}}
    else:
        part = {"text": answer.text}
    return {
        "candidates": [
            {"content": {"parts": [part], "role": "model"}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-standin",
    }


class _Handler(BaseHTTPRequestHandler):
    script: Script
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: the log file is the record
        pass

    def _body(self) -> dict:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def _send(self, status: int, payload: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, data: dict, status: int = 200) -> None:
        self._send(status, json.dumps(data).encode("utf-8"), "application/json")

    def do_GET(self) -> None:  # model listings some agents ask for
        self.script.record(self.path, {})
        if "/models" in self.path:
            self._json({"data": [], "models": [], "object": "list"})
        else:
            self._json({}, 404)

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain")

    def do_POST(self) -> None:
        body = self._body()
        path = self.path
        self.script.record(path, body)
        model = str(body.get("model") or "standin")
        if "count_tokens" in path or path.endswith(":countTokens"):
            self._json({"input_tokens": 10, "totalTokens": 10})
        elif "/v1/messages" in path:
            text, done = anthropic_turn(body)
            answer = self.script.answer(text, done, bool(body.get("tools")), tool_results(body))
            if body.get("stream"):
                self._send(200, anthropic_events(answer, model), "text/event-stream")
            else:
                self._json(anthropic_message(answer, model))
        elif path.rstrip("/").endswith("/responses"):
            text, done = responses_turn(body)
            answer = self.script.answer(text, done, True, tool_results(body))
            self._send(200, responses_events(answer, model), "text/event-stream")
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            text, done = gemini_turn(body)
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            if schema:
                answer = Answer(text=json.dumps(json_for(schema)))
            else:
                answer = self.script.answer(text, done, bool(body.get("tools")), tool_results(body))
            chunk = gemini_chunk(answer)
            if ":streamGenerateContent" in path:
                self._send(200, _sse([(None, chunk)]), "text/event-stream")
            else:
                self._json(chunk)
        else:
            self._json({"error": {"message": f"the stand-in does not serve {path}"}}, 404)


class StandIn:
    """The server in a thread of this process: `with StandIn(rules, log) as api: api.url`."""

    def __init__(self, rules: list[Rule], log: Path | None = None) -> None:
        handler = type("Handler", (_Handler,), {"script": Script(rules, log)})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.log = log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests(self) -> list[dict]:
        if self.log is None or not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", type=Path, help="a JSON list of rules")
    parser.add_argument("--log", type=Path)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    rules = [Rule.from_json(r) for r in json.loads(args.rules.read_text())] if args.rules else []
    handler = type("Handler", (_Handler,), {"script": Script(rules, args.log)})
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
