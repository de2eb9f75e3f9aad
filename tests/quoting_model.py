#!/usr/bin/env python3
"""A model that reads only cmem's prompt, as a model would: it records the prompt it is given
($REACH_LOG, one JSON line) and answers with a reply that converges every line it is asked to
judge, quoted, into a new topic file of the day — so every pass applies and the next pass shows
what is still pending. `bench/reach.py` runs it as a model command; the real agents' tests
(`tests/agents/`) have their API stand-in answer with it.

    quoting_model.py                 the prompt on stdin, the reply on stdout
    quoting_model.py --read-prompt   `cmem converge --as-model`'s output on stdin; the JSON input
                                     of a file-reading tool call on stdout: {"file_path"}
    quoting_model.py --write-reply   the same output on stdin; the JSON input of a file-writing
                                     tool call (the reply to the prompt the file holds)
    quoting_model.py --apply         the same output on stdin; a shell tool call's JSON input
                                     running the apply command it names: {"command", "description"}
    quoting_model.py --skill         the cmem-converge skill's text on stdin; a shell tool call
                                     running the `converge --as-model` command it names
"""

from __future__ import annotations

import json
import os
import re
import sys

_NOTE = re.compile(
    r'^<note path="([^"]+)" name="([^"]+)">\n(.*?)\n</note>\n(.*?)(?=^<note |^# )', re.M | re.S
)
_JUDGE = re.compile(r"^(?:Lines to judge|待判断的行)[:：]\s*([\d,\s-]*)", re.M)
_TODAY = re.compile(r"(?:Today is|今天是) (\d{4}-\d{2}-\d{2})")
# a session note's own markup: its turn headers, block anchors, comments, the agent's quoted text
_MARKUP = re.compile(r"^\s*(?:\*\*(?:user|agent)\b|\^t\d+\s*$|<!--|> \*\*agent|```)")
_MARKERS = re.compile(r"^\s*(?:>\s*)*(?:\[![\w-]+\]\s*)?(?:[-*+]|\d+[.)])?\s*")


def judged_lines(prompt: str) -> dict[str, list[str]]:
    """Note name → the text of the lines the prompt asks to judge (every line, for a new note)."""
    found = {}
    for match in _NOTE.finditer(prompt):
        _path, name, body, after = match.groups()
        numbered = {}
        in_frontmatter = False
        for line in body.split("\n"):
            number, _, text = line.partition("| ")
            if not number.strip().isdigit():
                continue
            if text.strip() == "---" and (int(number) == 1 or in_frontmatter):
                in_frontmatter = not in_frontmatter  # a note's frontmatter is no user text
                continue
            if not in_frontmatter and not _MARKUP.match(text):
                numbered[int(number)] = text
        wanted = _JUDGE.search(after)
        if wanted:
            keep = set()
            for part in re.split(r"[,\s]+", wanted.group(1).strip()):
                if "-" in part:
                    first, last = part.split("-")
                    keep.update(range(int(first), int(last) + 1))
                elif part.isdigit():
                    keep.add(int(part))
        else:
            keep = set(numbered)
        found[name] = [
            numbered[n]
            for n in sorted(keep)
            if n in numbered and numbered[n].strip() and not numbered[n].lstrip().startswith("#")
        ]
    return found


def reply(prompt: str) -> str:
    zh = "你是" in prompt[:200]  # after the mark cmem opens every pass prompt with
    day = _TODAY.findall(prompt)[-1]  # the task's date, after the example's
    path = f"converged/topics/log-{day}.md"
    paths = {name: p for p, name, *_ in _NOTE.findall(prompt)}
    statements, accounts = [], []
    for name, lines in judged_lines(prompt).items():
        said = [
            _MARKERS.sub("", line).replace("[[", "").replace("]]", "").strip() for line in lines
        ]
        said = [text for text in said if text]
        source = f"（来源：[[{name}]]）" if zh else f" (source: [[{name}]])"
        statements += [f"- {text}{source}" for text in said]
        if said:
            accounts.append(f'<converged note="{paths[name]}" into="{path}"/>')
        else:
            accounts.append(f'<deferred note="{paths[name]}" reason="nothing to keep"/>')
    blocks = ""
    if statements:
        title = "日志" if zh else "Log"
        # a file the prompt shows already (a second pass of the day): its lines kept, ours after
        shown = re.search(
            rf'^<file path="{re.escape(path)}"[^>]*>\n(.*?)\n</file>$', prompt, re.M | re.S
        )
        head = shown.group(1) if shown else f"# {title} {day}\n"
        blocks = f'<file path="{path}">\n{head}\n' + "\n".join(statements) + "\n</file>\n"
    return "<convergence>\n" + blocks + "\n".join(accounts) + "\n</convergence>\n"


def handover_parts(text: str) -> tuple[str, str, str]:
    """The reply file, the apply command and the prompt (read from its file) of `converge
    --as-model`'s output (the last one in `text`)."""
    text = text[text.rindex("cmem: you are the model") :]
    lines = text.splitlines()

    def after(step: str) -> str:
        return lines[lines.index(next(line for line in lines if line.startswith(step))) + 1]

    prompt_file, reply_file, apply = after("1. "), after("2. "), after("3. ")
    with open(prompt_file.strip(), encoding="utf-8") as handle:
        prompt = handle.read()
    return reply_file.strip(), apply.strip(), prompt


def skill_command(text: str) -> str:
    """The `… converge --as-model` command the skill tells the agent to run, as written there."""
    return next(
        found for found in re.findall(r"`([^`\n]+)`", text) if found.endswith("converge --as-model")
    )


def main() -> int:
    if "--skill" in sys.argv:
        command = skill_command(sys.stdin.read())
        sys.stdout.write(json.dumps({"command": command, "description": "Start the cmem pass"}))
        return 0
    if "--read-prompt" in sys.argv:
        text = sys.stdin.read()
        text = text[text.rindex("cmem: you are the model") :].splitlines()
        prompt_file = text[text.index(next(x for x in text if x.startswith("1. "))) + 1]
        sys.stdout.write(json.dumps({"file_path": prompt_file.strip()}))
        return 0
    if "--write-reply" in sys.argv or "--apply" in sys.argv:
        reply_file, apply, prompt = handover_parts(sys.stdin.read())
        tool_input = (
            {"file_path": reply_file, "content": reply(prompt)}
            if "--write-reply" in sys.argv
            else {"command": apply, "description": "Apply the convergence reply"}
        )
        sys.stdout.write(json.dumps(tool_input, ensure_ascii=False))
        return 0
    prompt = sys.stdin.read()
    log = os.environ.get("REACH_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"prompt": prompt}, ensure_ascii=False) + "\n")
    sys.stdout.write(reply(prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
