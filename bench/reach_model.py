#!/usr/bin/env python3
"""The stand-in model of `bench/reach.py`: it records the prompt it is given ($REACH_LOG, one JSON
line) and answers with a reply that converges every line it is asked to judge, quoted, into a
new topic file of the day — so every pass applies and the next pass shows what is still pending.
It reads only the prompt, as a model would."""

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
_MARKERS = re.compile(r"^\s*(?:>\s*)*(?:\[![\w-]+\]\s*)?(?:[-*+]|\d+[.)])?\s*")


def judged_lines(prompt: str) -> dict[str, list[str]]:
    """Note name → the text of the lines the prompt asks to judge (every line, for a new note)."""
    found = {}
    for match in _NOTE.finditer(prompt):
        _path, name, body, after = match.groups()
        numbered = {}
        for line in body.split("\n"):
            number, _, text = line.partition("| ")
            if number.strip().isdigit():
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
        blocks = (
            f'<file path="{path}">\n# {title} {day}\n\n' + "\n".join(statements) + "\n</file>\n"
        )
    return "<convergence>\n" + blocks + "\n".join(accounts) + "\n</convergence>\n"


def main() -> int:
    prompt = sys.stdin.read()
    log = os.environ.get("REACH_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"prompt": prompt}, ensure_ascii=False) + "\n")
    sys.stdout.write(reply(prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
