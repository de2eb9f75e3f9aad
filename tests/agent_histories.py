"""Two histories written as people write, converged day by day by an agent that is the model
(issue 41): it reads what `cmem converge --as-model` hands over and the installed skill text,
writes the `<convergence>` reply, applies it, and mends it once if it is rejected.

- `en`: twelve days of a nurse retraining as a UX researcher — Obsidian daily notes in a nested
  folder (`Journal/Daily/YYYY/MM/YYYY-MM-DD.md`) from a template (headings, callouts, tasks),
  loose notes at the root, two Claude Code sessions.
- `zh`: ten days of an independent developer — daily notes in `日记/`, loose notes at the root,
  two Codex sessions.

Facts change over the days (moves, switched tools, a reversed decision, a corrected date, a
preference that flips, habits that recur), and noise (moods, small talk, a pasted article)
should not become memory. Each history ends with the facts memory must hold: the words one
current statement holds, and the stale wordings no current statement may hold (they survive
only inside traces).

The replies the agent wrote are `tests/replies/agent/<history>/day-NN.txt` (a rejected first
attempt is followed by `day-NN-round-2.txt`); `tests/converge/test_agent_histories.py` replays
them through the real command line. Run a day by hand (what the agent session did):

    python tests/agent_histories.py hand-over en 1 /tmp/hist-en   # notes, sessions, --as-model
    python tests/agent_histories.py apply en 1 /tmp/hist-en [ROUND] # the printed apply command
    python tests/agent_histories.py facts en /tmp/hist-en
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from support import isolated_env

TESTS = Path(__file__).resolve().parent
REPLIES = TESTS / "replies" / "agent"

# cmem's own entry (`cmem.cli.main`, what the `cmem` launcher runs) in a real process whose clock
# reads the history's day, so a pass is dated as the day it converges and a replay is the same
# bytes on any day it runs; the clock moves on from there with the process's own time.
_CLOCK = """
import datetime as _dt, sys, time
_start, _t0 = _dt.datetime.fromisoformat(sys.argv[1]), time.monotonic()
class _Clock(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        m = _start + _dt.timedelta(seconds=time.monotonic() - _t0)
        m = cls(m.year, m.month, m.day, m.hour, m.minute, m.second, m.microsecond)
        return m if tz is None else m.replace(tzinfo=_dt.timezone.utc).astimezone(tz)
_dt.datetime = _Clock
sys.argv = ["cmem", *sys.argv[2:]]
from cmem.cli import main
sys.exit(main())
"""


@dataclass(frozen=True)
class Session:
    """An agent's transcript, as the agent writes it, captured with `cmem capture FILE`."""

    file_name: str
    text: str


@dataclass(frozen=True)
class Day:
    date: str
    notes: dict[str, str] = field(default_factory=dict)  # vault path → the note's whole text
    sessions: tuple[Session, ...] = ()


@dataclass(frozen=True)
class Fact:
    """`must`: words one current statement holds (`a|b`: either); `stale`: wordings of what was
    true before, which no current statement may hold (a trace may)."""

    name: str
    must: tuple[str, ...]
    stale: tuple[str, ...] = ()


@dataclass(frozen=True)
class History:
    name: str
    language: str
    setup: dict[
        str, str
    ]  # files of the folder before `cmem init` (Obsidian's settings, a template)
    extra_folders: str  # the divergent.extra_folders the person configures after init
    days: tuple[Day, ...]
    facts: tuple[Fact, ...]
    noise: tuple[
        str, ...
    ]  # words of moods, small talk and pastes: never in memory, not even a trace


# --- agents' transcripts ----------------------------------------------------------------------


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def claude_code_session(
    session_id: str, cwd: str, start: datetime, turns: list[tuple[str, list]]
) -> str:
    """A Claude Code transcript (`~/.claude/projects/<cwd>/<id>.jsonl`): each turn is the user's
    text and what the agent did after it (strings it said, `("tool", name, input, output)`)."""
    lines: list[dict] = [
        {"type": "summary", "summary": "Survey analysis script", "leafUuid": "x"},
        {
            "type": "file-history-snapshot",
            "messageId": "s0",
            "snapshot": {"messageId": "s0", "trackedFileBackups": {}, "timestamp": _stamp(start)},
            "isSnapshotUpdate": False,
        },
    ]
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session_id,
        "version": "2.0.74",
        "gitBranch": "main",
    }
    moment, parent, counter = start, None, 0

    def add(kind: str, message: dict, **extra) -> None:
        nonlocal moment, parent, counter
        counter += 1
        moment += timedelta(seconds=40)
        uuid = f"{session_id[:8]}-{counter:04d}"
        lines.append(
            {
                "parentUuid": parent,
                **base,
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": _stamp(moment),
                **extra,
            }
        )
        parent = uuid

    add(
        "user",
        {
            "role": "user",
            "content": "Caveat: The messages below were generated by the user while running "
            "local commands. DO NOT respond to these messages or otherwise consider them in "
            "your response unless the user explicitly asks you to.",
        },
        isMeta=True,
    )
    for number, (said, done) in enumerate(turns):
        content: object = said
        if number == 1:  # Claude Code attaches reminders to a user turn now and then
            content = [
                {"type": "text", "text": said},
                {
                    "type": "text",
                    "text": "<system-reminder>\nThe TodoWrite tool hasn't been used recently."
                    "\n</system-reminder>",
                },
            ]
        add("user", {"role": "user", "content": content})
        for step in done:
            message = {"model": "claude-sonnet-4-5", "type": "message", "role": "assistant"}
            if isinstance(step, str):
                add("assistant", {**message, "content": [{"type": "text", "text": step}]})
                continue
            _, name, tool_input, output = step
            tool_id = f"toolu_{counter:04d}"
            add(
                "assistant",
                {
                    **message,
                    "content": [
                        {"type": "thinking", "thinking": f"Use {name}.", "signature": "sig"},
                        {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input},
                    ],
                },
            )
            add(
                "user",
                {
                    "role": "user",
                    "content": [{"tool_use_id": tool_id, "type": "tool_result", "content": output}],
                },
                toolUseResult={"stdout": output, "stderr": "", "interrupted": False},
            )
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def codex_session(session_id: str, cwd: str, start: datetime, turns: list[tuple[str, list]]) -> str:
    """A Codex rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`), turns as above."""
    moment = start
    lines: list[dict] = []

    def add(kind: str, payload: dict) -> None:
        nonlocal moment
        moment += timedelta(seconds=30)
        lines.append({"timestamp": _stamp(moment), "type": kind, "payload": payload})

    def message(role: str, kind: str, text: str) -> None:
        add(
            "response_item",
            {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
        )

    add(
        "session_meta",
        {
            "id": session_id,
            "timestamp": _stamp(start),
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.145.0",
            "instructions": None,
            "source": "cli",
            "git": {"branch": "main"},
        },
    )
    message(
        "developer",
        "input_text",
        "<permissions instructions>workspace-write</permissions instructions>",
    )
    message(
        "user",
        "input_text",
        "<user_instructions>\n\nAGENTS.md: run the tests before you commit.\n\n</user_instructions>",
    )
    message(
        "user",
        "input_text",
        f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>zsh</shell>\n</environment_context>",
    )
    for number, (said, done) in enumerate(turns):
        message("user", "input_text", said)
        add("event_msg", {"type": "user_message", "message": said, "kind": "plain", "images": []})
        if number == 0:
            add(
                "turn_context",
                {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5-codex"},
            )
        for step in done:
            if isinstance(step, str):
                add("event_msg", {"type": "agent_message", "message": step})
                message("assistant", "output_text", step)
                continue
            _, name, tool_input, output = step
            call = f"call_{len(lines)}"
            add("event_msg", {"type": "agent_reasoning", "text": f"**Running {name}**"})
            add(
                "response_item",
                {
                    "type": "function_call",
                    "name": name,
                    "arguments": json.dumps(tool_input),
                    "call_id": call,
                },
            )
            add(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call,
                    "output": json.dumps({"output": output}),
                },
            )
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _at(day: str, clock: str) -> datetime:
    return datetime.fromisoformat(f"{day}T{clock}:00+00:00")


# --- en: a nurse retraining as a UX researcher ------------------------------------------------

_EN_DAILY = "Journal/Daily/{y}/{m}/{date}.md"


def _en_daily(date: str, log: str, mood: str, tasks: str = "") -> tuple[str, str]:
    """A daily note from the person's Obsidian template (Templates/Daily.md)."""
    day = datetime.fromisoformat(date)
    previous = (day - timedelta(days=1)).date().isoformat()
    following = (day + timedelta(days=1)).date().isoformat()
    title = f"{day.strftime('%A')} {day.day} {day.strftime('%B %Y')}"
    text = (
        f"# {title}\n[[{previous}]] · [[{following}]]\n\n## Log\n{log.strip()}\n\n"
        f"> [!note] Mood\n> {mood}\n"
    )
    if tasks:
        text += f"\n## Tasks\n{tasks.strip()}\n"
    return _EN_DAILY.format(y=date[:4], m=date[5:7], date=date), text


_SURVEY = "/Users/maya/code/survey-analysis"

_EN_SESSION_1 = claude_code_session(
    "5b1e0c3a-7d41-4f7e-9a2c-0e6f3d8b9a11",
    _SURVEY,
    _at("2026-03-04", "19:30"),
    [
        (
            "Hi! Quick context: I'm an ICU nurse learning UX research and I'm new to Python, so "
            "please explain what you do in plain English as you go. I've got survey answers about "
            "our ICU handover sheet in data/raw.csv. Can you load it and count the answers per "
            "question?",
            [
                "Sure! I'll read the file with pandas, a library for tables of data.",
                (
                    "tool",
                    "Read",
                    {"file_path": f"{_SURVEY}/data/raw.csv"},
                    "id,email,q1,q2\n1,a@x,3,4",
                ),
                "I loaded data/raw.csv with pandas. It has 24 responses and 12 questions. Want me "
                "to chart the answers?",
            ],
        ),
        (
            "No, there should be 42 responses, not 24 — the export has two sheets and you only "
            "read the first one.",
            [
                ("tool", "Bash", {"command": "python -c 'import pandas'"}, "ok"),
                "You're right: reading both sheets gives 42 responses.",
            ],
        ),
        (
            "Yes please, charts with matplotlib are fine. Put every chart in figures/, and never "
            "commit data/raw.csv — it has participants' emails in it.",
            [
                ("tool", "Write", {"file_path": f"{_SURVEY}/.gitignore"}, "written"),
                "Done: .gitignore now leaves out data/raw.csv, and the charts go to figures/.",
            ],
        ),
        (
            "Use pandas for everything, not polars — I'm following a pandas course and want to "
            "recognise the code.",
            ["Noted, pandas only."],
        ),
        ("Thanks, that's it for tonight!", ["Good night!"]),
    ],
)

_EN_SESSION_2 = claude_code_session(
    "c3a9f2d0-18b4-4b6e-8d2f-7a5c1e9b4d22",
    _SURVEY,
    _at("2026-03-12", "20:10"),
    [
        (
            "Back on the survey script. Can we switch the charts from matplotlib to plotly? I want "
            "hover labels for the portfolio version.",
            [
                ("tool", "Bash", {"command": "uv add plotly"}, "Resolved 12 packages"),
                "Switched: the charts are made with plotly now and saved to figures/ as HTML.",
            ],
        ),
        (
            "I've anonymised the export: data/responses-anon.csv has no emails, so that one can be "
            "committed. raw.csv still never.",
            [
                ("tool", "Edit", {"file_path": f"{_SURVEY}/.gitignore"}, "edited"),
                "Updated .gitignore. Should the script keep all 42 rows from the anonymised file?",
            ],
        ),
        (
            "Actually 41 — one response was a duplicate, I removed it in the anon file.",
            ["Got it, 41."],
        ),
        (
            "From now on add a pytest test for every cleaning function, I want to learn testing "
            "properly.",
            [
                ("tool", "Write", {"file_path": f"{_SURVEY}/tests/test_clean.py"}, "written"),
                "Added tests/test_clean.py with a test for drop_duplicates_by_id.",
            ],
        ),
        ("great, thanks", ["You're welcome!"]),
    ],
)

_EN_HOW_I_LIKE_HELP = """# How I like help

Notes for any AI (or person) helping me with the career switch.

- Bullet points, short. I read on my phone on breaks.
- British spelling please.
- No pep talks. Tell me the next concrete step.
- When you review my writing, leave written comments I can go through later.
- At the end of a study session, quiz me with 3 questions on research methods.
"""

_EN_INTERVIEW_PREP = """# Interview prep

Q: "Why leave nursing?"
My answer: I want to fix the systems that make nurses' days harder, not just cope with them.

Coffee chat booked with Sam Patel (UX lead at Cera Care) on 2026-03-12.

- [ ] Prepare 3 questions for Sam
"""

EN = History(
    name="en",
    language="en",
    setup={
        ".obsidian/daily-notes.json": json.dumps(
            {
                "folder": "Journal/Daily",
                "format": "YYYY/MM/YYYY-MM-DD",
                "template": "Templates/Daily",
            }
        ),
        ".obsidian/templates.json": json.dumps({"folder": "Templates"}),
        "Templates/Daily.md": "# {{date:dddd D MMMM YYYY}}\n[[{{yesterday}}]] · [[{{tomorrow}}]]\n\n"
        "## Log\n\n\n> [!note] Mood\n> \n\n## Tasks\n- [ ] \n",
    },
    extra_folders='["Journal/Daily/**", "sessions"]',
    days=(
        Day(
            "2026-03-02",
            dict(
                [
                    _en_daily(
                        "2026-03-02",
                        """
First proper entry in the new vault, so some context for future me:
ICU nurse, 8 years now, at St James's in Leeds. Mostly night shifts.
Retraining as a UX researcher. The goal is a research job in healthtech, and I want to be job-ready by September.
Doing the Google UX Design Certificate on Coursera, ~6 hours a week.
Course budget: £200 a month, max.
I study at 5am after a night shift, 45 minutes, before I sleep.
Priya Shah (senior UX researcher at NHS Digital) said yes to mentoring me! Every other Thursday.
""",
                        "Knackered after three nights. Hopeful though.",
                        "- [x] Set up Obsidian + this template\n- [ ] Send Priya my LinkedIn\n"
                        "- [ ] Week 2 of the Google course",
                    ),
                    ("How I like help.md", _EN_HOW_I_LIKE_HELP),
                ]
            ),
        ),
        Day(
            "2026-03-03",
            dict(
                [
                    _en_daily(
                        "2026-03-03",
                        """
Portfolio started! Squarespace for now, the templates look fine and I can't code.
Case study 1 will be the ICU handover sheet redesign. I've watched that sheet fail at 7am handover too many times.
Decided: I'm handing in my notice in June to go full-time on UX.
Plan from April: apply to 3 junior UX research roles a week.
Reading Just Enough Research (Erika Hall). Chapter 3 on interviews is gold.
Skipped the 5am study block, too wired after the shift.
""",
                        "Grumpy. Rain all day. Leeds in March, what did I expect.",
                        "- [x] Buy a domain (maya-researches.com?)",
                    ),
                    (
                        "Article - ResearchOps.md",
                        "Pasted from the ResearchOps Community newsletter, read later:\n\n"
                        "> Research operations is the people, mechanisms, and strategies that set "
                        "user research in motion. It provides the roles, tools and processes needed "
                        "to support researchers in delivering and scaling the impact of the craft "
                        "across an organisation.\n\n#toread\n",
                    ),
                ]
            ),
        ),
        Day(
            "2026-03-04",
            dict(
                [
                    _en_daily(
                        "2026-03-04",
                        """
Evening with Claude Code on the survey script for the handover study. Felt like a real researcher for once.
Night shift tomorrow, so early night.
""",
                        "chuffed",
                        "- [ ] Ask the ward manager if I can quote the survey",
                    )
                ]
            ),
            (Session("5b1e0c3a-7d41-4f7e-9a2c-0e6f3d8b9a11.jsonl", _EN_SESSION_1),),
        ),
        Day(
            "2026-03-05",
            dict(
                [
                    _en_daily(
                        "2026-03-05",
                        """
Decided: dropping the Google certificate. Too much visual design, not enough research. Switching to the Interaction Design Foundation's user research courses instead (about £12 a month).
First call with Priya: she says the handover sheet is my strongest story. Lead with it.
Skipped the 5am study block again. After nights it just doesn't happen.
""",
                        "Relieved about the course. Annoyed at myself about 5am.",
                        "- [ ] Cancel Coursera before the 10th",
                    )
                ]
            ),
        ),
        Day(
            "2026-03-07",
            dict(
                [
                    _en_daily(
                        "2026-03-07",
                        """
Switched the portfolio from Squarespace to Framer. Squarespace kept mangling my image captions and Framer's free plan is enough.
Case study 2: a usability test of the MediRemind medication-reminder app, 5 participants from the ward.
parkrun at Roundhay, 31:40. Going every Saturday from now on.
""",
                        "Good day!!",
                        "- [x] Recruit MediRemind participants\n- [ ] Write the test script",
                    ),
                    ("Interview prep.md", _EN_INTERVIEW_PREP),
                ]
            ),
        ),
        Day(
            "2026-03-08",
            dict(
                [
                    _en_daily(
                        "2026-03-08",
                        """
Sunday review — doing one every Sunday evening from now on: what I learned, what I ship next week.
Finished Just Enough Research. Next: Interviewing Users by Steve Portigal.
Looked at the £7k General Assembly bootcamp again. No. Self-study plus Priya is enough.
Tom says I now talk about personas in my sleep.
""",
                        "calm, packing boxes",
                    )
                ]
            ),
        ),
        Day(
            "2026-03-09",
            dict(
                [
                    _en_daily(
                        "2026-03-09",
                        """
Moved into the new flat in Manchester (Ancoats) at the weekend! Leeds chapter closed.
Transferred to the ICU at Manchester Royal Infirmary and dropped to 0.6 FTE: three long day shifts a week, no more nights.
Moved affinity mapping from Miro to FigJam, Miro's free plan caps me at 3 boards.
Skipped the 5am study block again. Third time. It never works after a shift, so studying moves to lunchtime on my days off.
""",
                        "Boxes everywhere. Happy.",
                        "- [ ] Change my address with the NMC",
                    )
                ]
            ),
        ),
        Day(
            "2026-03-10",
            dict(
                [
                    _en_daily(
                        "2026-03-10",
                        """
Priya can't do Thursdays any more, so our fortnightly calls move to Tuesdays at 6pm.
MediRemind test done: 8 participants in the end, not 5 — three more from the night team volunteered.
Wrote up the MediRemind findings: 6 of 8 missed the snooze button.
""",
                        "tired but proud",
                    ),
                    (
                        "Interview prep.md",
                        _EN_INTERVIEW_PREP
                        + "\nCorrection: the Cera Care chat is on Friday the 13th, not the 12th — "
                        "Sam moved it.\n",
                    ),
                ]
            ),
        ),
        Day(
            "2026-03-12",
            dict(
                [
                    _en_daily(
                        "2026-03-12",
                        """
Not handing in my notice in June after all. I'm staying at 0.6 FTE while I job hunt: the money matters and the ward is my research field.
Back on the survey script with Claude tonight.
""",
                        "weirdly relieved",
                    )
                ]
            ),
            (Session("c3a9f2d0-18b4-4b6e-8d2f-7a5c1e9b4d22.jsonl", _EN_SESSION_2),),
        ),
        Day(
            "2026-03-13",
            dict(
                [
                    _en_daily(
                        "2026-03-13",
                        """
Coffee with Sam Patel from Cera Care. Her tip: lead with the handover study, and show my research plan, not just the findings.
I'd rather get feedback in a quick call from now on, not written comments — I never get round to reading them.
Stopping the 3-a-week plan. Two tailored applications a week instead, still starting in April.
Being honest: job-ready by September isn't realistic. January 2027 is the target.
""",
                        "Sam was lovely. Slightly deflated about the timeline.",
                    )
                ]
            ),
        ),
        Day(
            "2026-03-14",
            dict(
                [
                    _en_daily(
                        "2026-03-14",
                        """
parkrun again, now at Heaton Park: 30:55, a PB!
Cutting the course budget to £120 a month now that rent is higher.
IxDF: finished module 3 (usability testing).
""",
                        "PB!!!",
                    ),
                    (
                        "How I like help.md",
                        _EN_HOW_I_LIKE_HELP.replace(
                            "- At the end of a study session, quiz me with 3 questions on research methods.\n",
                            "- No more quizzes at the end of study sessions, they stress me out. A "
                            "one-line summary of what I covered is enough.\n",
                        ),
                    ),
                ]
            ),
        ),
        Day(
            "2026-03-16",
            dict(
                [
                    _en_daily(
                        "2026-03-16",
                        """
Priya's review of the handover case study: cut the intro, and add the before/after numbers — handover went from 22 to 14 minutes with the new sheet.
Going with Dovetail for tagging interview notes; the free plan is enough for now.
Halfway through Interviewing Users.
Missed lunchtime study today, the ward called me in. One-off.
""",
                        "Calm.",
                        "- [ ] Redo the case study intro",
                    )
                ]
            ),
        ),
    ),
    facts=(
        Fact("an ICU nurse of 8 years", ("nurse", "8 years")),
        Fact("works at Manchester Royal Infirmary", ("Manchester Royal Infirmary",), ("St James",)),
        Fact("three long day shifts a week", ("three long day shifts",), ("mostly night shifts",)),
        Fact("at 0.6 FTE", ("0.6 FTE",)),
        Fact("lives in Manchester, Ancoats", ("Manchester", "Ancoats"), ("in Leeds",)),
        Fact("retraining as a UX researcher", ("retraining", "UX researcher")),
        Fact("aims at a research job in healthtech", ("healthtech",)),
        Fact("job-ready by January 2027", ("January 2027",), ("by September",)),
        Fact(
            "not handing in the notice: staying while job hunting",
            ("notice", "job hunt"),
            ("to go full-time on UX",),
        ),
        Fact(
            "the Interaction Design Foundation's courses",
            ("Interaction Design Foundation",),
            ("Google UX Design Certificate",),
        ),
        Fact("course budget £120 a month", ("£120",), ("£200",)),
        Fact("finished module 3", ("module 3",)),
        Fact("studies at lunchtime on days off", ("lunchtime", "days off"), ("at 5am after",)),
        Fact("skipped the 5am study block three times", ("5am", "three|3 times")),
        Fact("a Sunday review every Sunday", ("Sunday review",)),
        Fact(
            "reading Interviewing Users, Just Enough Research finished",
            ("Interviewing Users", "finished Just Enough Research"),
            ("Reading Just Enough Research by",),
        ),
        Fact("no £7k bootcamp", ("bootcamp",)),
        Fact("the portfolio is on Framer", ("Framer",), ("built on Squarespace",)),
        Fact("case study 1: the handover sheet", ("case study 1", "handover sheet")),
        Fact("lead with the handover story", ("strongest story",)),
        Fact("handover from 22 to 14 minutes", ("22", "14 minutes")),
        Fact("Priya: cut the intro, add before/after numbers", ("cut the intro",)),
        Fact(
            "case study 2: MediRemind, 8 participants",
            ("MediRemind", "8 participants"),
            ("5 participants",),
        ),
        Fact("MediRemind: 6 of 8 missed the snooze button", ("snooze button",)),
        Fact("mentor Priya Shah of NHS Digital", ("Priya Shah", "NHS Digital")),
        Fact("mentor calls on Tuesdays at 6pm", ("Tuesday", "6pm"), ("every other Thursday",)),
        Fact("why leave nursing: fix the systems", ("fix the systems",)),
        Fact("Sam Patel, UX lead at Cera Care", ("Sam Patel", "Cera Care")),
        Fact("the Cera Care chat on 2026-03-13", ("Cera Care", "2026-03-13"), ("2026-03-12",)),
        Fact("Sam's tip: show the research plan", ("research plan",)),
        Fact("two tailored applications a week from April", ("tailored", "April"), ("3 junior",)),
        Fact("bullet points", ("bullet",)),
        Fact("British spelling", ("British spelling",)),
        Fact("no pep talks", ("pep talks",)),
        Fact("feedback in a call", ("call", "feedback"), ("go through later",)),
        Fact("no quizzes: a one-line summary", ("one-line summary",), ("quiz them with 3",)),
        Fact("explain in plain English, new to Python", ("plain English", "Python")),
        Fact("parkrun every Saturday", ("parkrun", "every Saturday")),
        Fact("parkrun at Heaton Park", ("Heaton Park",), ("at Roundhay",)),
        Fact("parkrun best 30:55", ("30:55",)),
        Fact("affinity mapping in FigJam", ("FigJam", "affinity"), ("in Miro",)),
        Fact("Dovetail for tagging interview notes", ("Dovetail",)),
        Fact("the survey has 41 responses", ("41 responses",), ("42 responses",)),
        Fact("never commit data/raw.csv", ("never commit data/raw.csv",)),
        Fact("responses-anon.csv can be committed", ("responses-anon.csv",)),
        Fact("charts in figures/ with plotly", ("plotly", "figures/"), ("made with matplotlib",)),
        Fact("pandas, not polars", ("pandas", "not polars")),
        Fact("a pytest test for every cleaning function", ("pytest", "cleaning function")),
    ),
    noise=(
        "Tom says",
        "personas in my sleep",
        "ResearchOps",
        "Research operations",
        "Knackered",
        "Grumpy",
        "maya-researches",
        "NMC",
        "Boxes everywhere",
        "chuffed",
    ),
)


# --- zh: an independent developer ---------------------------------------------------------------

_WEEKDAYS = "一二三四五六日"


def _zh_daily(date: str, body: str) -> tuple[str, str]:
    weekday = _WEEKDAYS[datetime.fromisoformat(date).weekday()]
    return f"日记/{date}.md", f"# {date} 周{weekday}\n\n{body.strip()}\n\n#日记\n"


_API = "/Users/zhouning/code/qingzhang-api"
_IOS = "/Users/zhouning/code/qingzhang-ios"
_ZH_SESSION_1_ID = "019d1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a51"
_ZH_SESSION_2_ID = "019d2b3c-4d5e-7f60-9a1b-2c3d4e5f6a72"

_ZH_SESSION_1 = codex_session(
    _ZH_SESSION_1_ID,
    _API,
    _at("2026-04-08", "13:00"),
    [
        (
            "帮我把 qingzhang-api 从 Supabase 迁到 Cloudflare Workers，数据库用 D1。",
            [
                ("tool", "shell", {"command": ["bash", "-lc", "ls src"]}, "db.ts routes.ts"),
                "好的。我先把账目存到 Workers KV 里，键用账目 id，这样迁移最快。",
            ],
        ),
        (
            "不对，是 D1 不是 KV，账目是关系数据，要能按分类和月份查询。",
            [
                (
                    "tool",
                    "shell",
                    {"command": ["bash", "-lc", "wrangler d1 create qingzhang"]},
                    "created",
                ),
                "明白，改用 D1，建了 qingzhang 数据库。",
            ],
        ),
        (
            "TypeScript 开 strict，不许用 any。数据库迁移用 drizzle。",
            ["好，已开启 strict，迁移脚本改用 drizzle-kit 生成。"],
        ),
        (
            "部署只用 wrangler deploy，别加 GitHub Actions，我一个人用不着 CI。",
            ["好的，删掉了 .github/workflows。"],
        ),
        ("好，今天先到这。", ["好的，下次继续同步接口。"]),
    ],
)

_ZH_SESSION_2 = codex_session(
    _ZH_SESSION_2_ID,
    _IOS,
    _at("2026-04-15", "14:00"),
    [
        (
            "给青账的 iOS 端加 iCloud 备份，用 CloudKit。",
            [
                (
                    "tool",
                    "shell",
                    {"command": ["bash", "-lc", "grep -r IPHONEOS_DEPLOYMENT_TARGET ."]},
                    "16.0",
                ),
                "可以。项目的最低版本是 iOS 16，我用 Core Data 加 NSPersistentCloudKitContainer 来做。",
            ],
        ),
        (
            "最低支持 iOS 17，不是 16，我要用 SwiftData。",
            ["好，部署目标改成 iOS 17，备份用 SwiftData 的 CloudKit 同步。"],
        ),
        ("测试用 Swift Testing，不要用 XCTest。", ["好的，测试改用 Swift Testing 的 @Test。"]),
        (
            "不要引入第三方库，能用系统框架就用系统框架。",
            ["明白，去掉了刚加的 Alamofire。"],
        ),
        (
            "行，提交吧。",
            [("tool", "shell", {"command": ["bash", "-lc", "git commit -am backup"]}, "1 file")],
        ),
    ],
)

_ZH_HOW_TO_HELP = """# 给 AI 的说明

- 回答用中文，代码注释用英文。
- 先给结论，再给细节。
- 改代码的时候详细解释为什么这么改，我想学。
- 不要用表情符号。
"""

ZH = History(
    name="zh",
    language="zh",
    setup={},
    extra_folders='["日记", "sessions"]',
    days=(
        Day(
            "2026-04-06",
            dict(
                [
                    _zh_daily(
                        "2026-04-06",
                        """
开个新库记东西。背景：我叫周宁，去年 10 月从字节辞职（之前做后端），现在全职独立开发。
住杭州，在家办公。
主产品是「青账」，一个 iOS 记账 App，用 SwiftUI 写。
后端先用 Supabase，省事。
计划 5 月 20 日上架 App Store。
定价想做买断，¥38。
目标：年底前月收入到 2 万。
又熬夜到两点，改 bug 改上头了。

今天天气不错，楼下桂花还没开。
""",
                    ),
                    ("给 AI 的说明.md", _ZH_HOW_TO_HELP),
                ]
            ),
        ),
        Day(
            "2026-04-07",
            dict(
                [
                    _zh_daily(
                        "2026-04-07",
                        """
每周一上午写周报复盘，雷打不动。
推广先做小红书和即刻两条线。
朋友阿杰帮我做设计，按月付他 ¥3000。
写 Swift 用 Xcode，写后端用 Cursor。
又熬夜到两点。

午饭吃了螺蛳粉，一下午都是味。
""",
                    ),
                    (
                        "qingzhang-api.md",
                        "# qingzhang-api 草稿\n\n接口先做三组：账目、分类、同步。\n"
                        "同步冲突按“最后写入为准”处理。\n",
                    ),
                ]
            ),
        ),
        Day(
            "2026-04-08",
            dict(
                [
                    _zh_daily(
                        "2026-04-08",
                        """
决定了：后端从 Supabase 改用 Cloudflare Workers + D1，Supabase 免费版一周不活跃就暂停项目，烦。
下午和 Codex 一起把 API 迁了一半。
""",
                    )
                ]
            ),
            (Session(f"rollout-2026-04-08T13-00-00-{_ZH_SESSION_1_ID}.jsonl", _ZH_SESSION_1),),
        ),
        Day(
            "2026-04-09",
            dict(
                [
                    _zh_daily(
                        "2026-04-09",
                        """
定价改了：不做买断了，改订阅，¥12/月 或 ¥98/年。阿杰说买断撑不起服务器成本。
小红书第一篇开发日志发了，200 多个赞！以后每周五发一篇。
又熬夜到两点，老毛病。

心情一般，颈椎疼。
""",
                    )
                ]
            ),
        ),
        Day(
            "2026-04-11",
            dict(
                [
                    _zh_daily(
                        "2026-04-11",
                        """
决定做安卓版，用 Kotlin Multiplatform，6 月开工。
即刻那条线停掉，转化太差，只做小红书。
写后端从 Cursor 换成 Zed 了，Cursor 太卡。

看了《置身事内》第三章，讲地方债，跟我没啥关系但挺有意思。
""",
                    )
                ]
            ),
        ),
        Day(
            "2026-04-12",
            dict(
                [
                    _zh_daily(
                        "2026-04-12",
                        """
搬家了！从杭州搬到成都，房租便宜一半。住在玉林路附近。
上架日期写错了：不是 5 月 20 日，是 6 月 1 日，审核要留余量。
和阿杰重新谈了：不按月付了，改成收入分成 10%。

累瘫。
""",
                    )
                ]
            ),
        ),
        Day(
            "2026-04-13",
            dict(
                [
                    _zh_daily(
                        "2026-04-13",
                        """
周报复盘：上周完成了同步接口，这周做 iCloud 备份。
以后改代码不用详细解释了，直接给 diff，我自己看得懂。
又熬夜到两点。这周第三次了，得改。
""",
                    )
                ]
            ),
        ),
        Day(
            "2026-04-15",
            dict(
                [
                    _zh_daily(
                        "2026-04-15",
                        """
和 Codex 做了 iCloud 备份，差不多了。
目标改一下：年底月收入 1 万就行，2 万太激进。
""",
                    )
                ]
            ),
            (Session(f"rollout-2026-04-15T14-00-00-{_ZH_SESSION_2_ID}.jsonl", _ZH_SESSION_2),),
        ),
        Day(
            "2026-04-16",
            dict(
                [
                    _zh_daily(
                        "2026-04-16",
                        """
想了一晚上：安卓版不做了，先把 iOS 做好。KMP 的坑太多，一个人扛不住。
小红书粉丝破 1000 了。
晚上跑了 5 公里，以后每周二、四、六晚上跑步。

外卖又超时了。
""",
                    )
                ]
            ),
        ),
        Day(
            "2026-04-18",
            dict(
                [
                    _zh_daily(
                        "2026-04-18",
                        """
TestFlight 内测开了，先拉 50 个人，小红书上招的。
更正：内测是 80 个人，不是 50，后来又加了 30 个。
作息：以后 12 点前睡，熬夜这事必须停。
又熬夜到两点……说完就破功。

给妈妈打了电话。
""",
                    ),
                    (
                        "qingzhang-api.md",
                        "# qingzhang-api 草稿\n\n接口先做三组：账目、分类、同步。\n"
                        "同步冲突按“最后写入为准”处理。\n"
                        "更正：同步冲突不按最后写入了，改成按字段合并，金额冲突时提示用户选。\n",
                    ),
                ]
            ),
        ),
    ),
    facts=(
        Fact("名叫周宁", ("周宁",)),
        Fact("之前在字节做后端", ("字节", "后端")),
        Fact("2025 年 10 月辞职", ("2025 年 10 月|2025-10",)),
        Fact("全职独立开发", ("全职独立开发",)),
        Fact("住在成都玉林路附近", ("成都", "玉林路"), ("住杭州", "住在杭州")),
        Fact("在家办公", ("在家办公",)),
        Fact("写 Swift 用 Xcode", ("Xcode", "Swift")),
        Fact("写后端用 Zed", ("Zed",), ("后端用 Cursor",)),
        Fact("每周一上午写周报复盘", ("周一上午", "周报")),
        Fact("每周二、四、六晚上跑步", ("二、四、六|二四六", "跑步")),
        Fact("熬夜到两点，五次", ("熬夜", "五次|5 次")),
        Fact("以后 12 点前睡", ("12 点前睡",)),
        Fact("回答用中文", ("回答用中文",)),
        Fact("代码注释用英文", ("注释用英文",)),
        Fact("先给结论", ("先给结论",)),
        Fact("改代码直接给 diff", ("diff",), ("详细解释为什么",)),
        Fact("不要表情符号", ("表情符号",)),
        Fact("青账：iOS 记账 App，SwiftUI", ("青账", "SwiftUI")),
        Fact("后端 Cloudflare Workers + D1", ("Cloudflare Workers", "D1"), ("后端先用 Supabase",)),
        Fact("2026-06-01 上架", ("2026-06-01|6 月 1 日", "上架"), ("2026-05-20", "5 月 20 日")),
        Fact("订阅 ¥12/月、¥98/年", ("¥12", "¥98"), ("¥38",)),
        Fact("安卓版不做了", ("安卓版不做",), ("决定做安卓版",)),
        Fact("TestFlight 内测 80 人", ("TestFlight", "80"), ("50 个人", "50 人")),
        Fact("内测从小红书招", ("内测", "小红书")),
        Fact("同步接口已完成", ("同步接口", "完成")),
        Fact("年底月收入 1 万", ("1 万",), ("月收入到 2 万",)),
        Fact("推广只做小红书", ("只做小红书",), ("和即刻两条线",)),
        Fact("每周五发开发日志", ("每周五", "开发日志")),
        Fact("小红书粉丝破 1000", ("1000",)),
        Fact("阿杰收入分成 10%", ("阿杰", "10%"), ("按月付阿杰",)),
        Fact("账目存 D1 不存 KV", ("D1", "KV")),
        Fact("TypeScript strict，不用 any", ("strict", "any")),
        Fact("迁移用 drizzle", ("drizzle",)),
        Fact("只用 wrangler deploy，不要 CI", ("wrangler deploy",)),
        Fact("接口三组：账目、分类、同步", ("账目、分类、同步",)),
        Fact("同步冲突按字段合并", ("按字段合并",), ("最后写入为准",)),
        Fact("最低 iOS 17，用 SwiftData", ("iOS 17", "SwiftData"), ("iOS 16",)),
        Fact("测试用 Swift Testing", ("Swift Testing",)),
        Fact("不引入第三方库", ("第三方库",)),
        Fact("iCloud 备份用 CloudKit", ("CloudKit",)),
    ),
    noise=("桂花", "螺蛳粉", "颈椎", "置身事内", "地方债", "累瘫", "外卖", "妈妈"),
)

HISTORIES = {"en": EN, "zh": ZH}


# --- converging one, day by day, through the command line ------------------------------------


def environment(home: Path) -> dict[str, str]:
    """The child processes' environment: nothing of the user's, the clock's zone UTC."""
    return isolated_env(home, TZ="UTC")


def cmem_at(moment: str, args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """`cmem ARGS` in a real process whose clock reads `moment` (ISO, UTC)."""
    return subprocess.run(
        [sys.executable, "-c", _CLOCK, moment, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def _checked(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def start_vault(history: History, root: Path, env: dict) -> None:
    """The person's folder (Obsidian's settings, a template), `cmem init`, and their daily-notes
    folder set in `divergent.extra_folders`."""
    for rel, text in history.setup.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    first = history.days[0].date
    init = ["init", str(root), "--lang", history.language, "--no-track-all"]
    _checked(cmem_at(f"{first}T08:00:00", init, env, root.parent), "cmem init")
    config = root / ".cmem" / "config.yaml"
    text = config.read_text("utf-8")
    # init finds a daily-notes folder Obsidian's settings name (the English history's); the
    # person names the others
    text, count = re.subn(
        r"extra_folders: \[[^\]\n]*\]", f"extra_folders: {history.extra_folders}", text
    )
    assert count == 1, "cmem init wrote divergent.extra_folders differently"
    config.write_text(text, encoding="utf-8")
    # edited that morning, as the days' notes are dated: a note older than the config's last
    # edit in a folder it widened is backlog (`vault/backlog.py`), one written after is new
    edited = datetime.fromisoformat(f"{first}T08:05:00+00:00").timestamp()
    os.utime(config, (edited, edited))


def write_day(history: History, number: int, root: Path, env: dict) -> None:
    """Day `number` (1-based): its notes written (dated that morning), its sessions captured."""
    day = history.days[number - 1]
    morning = datetime.fromisoformat(f"{day.date}T09:00:00+00:00").timestamp()
    for order, (rel, text) in enumerate(day.notes.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (morning + order * 60, morning + order * 60))
    if day.sessions:
        transcripts = root.parent / "transcripts"
        transcripts.mkdir(exist_ok=True)
        files = []
        for session in day.sessions:
            (transcripts / session.file_name).write_text(session.text, encoding="utf-8")
            files.append(str(transcripts / session.file_name))
        capture = ["--vault", str(root), "capture", *files]
        _checked(cmem_at(f"{day.date}T20:00:00", capture, env, root.parent), "cmem capture")


def hand_over(history: History, number: int, root: Path, work: Path, env: dict) -> tuple[str, Path]:
    """`cmem converge --as-model` from the agent's working folder: what it printed and the reply
    file it names."""
    work.mkdir(parents=True, exist_ok=True)
    moment = f"{history.days[number - 1].date}T20:05:00"
    done = _checked(
        cmem_at(moment, ["--vault", str(root), "converge", "--as-model"], env, work), "--as-model"
    )
    found = re.search(r"converge --response (\S+)", done.stdout)
    if found is None:
        raise RuntimeError(f"--as-model named no reply file:\n{done.stdout}")
    return done.stdout, Path(found.group(1))


def apply_reply(
    history: History, number: int, root: Path, work: Path, reply: Path, round_: int, env: dict
) -> subprocess.CompletedProcess:
    """The apply command `--as-model` printed, in round `round_` (each a few minutes later)."""
    moment = f"{history.days[number - 1].date}T20:{5 + 5 * round_:02d}:00"
    return cmem_at(moment, ["--vault", str(root), "converge", "--response", str(reply)], env, work)


def reply_fixture(history: History, number: int, round_: int) -> Path:
    suffix = "" if round_ == 1 else f"-round-{round_}"
    return REPLIES / history.name / f"day-{number:02d}{suffix}.txt"


def current_statements(root: Path) -> list[tuple[str, str]]:
    """Each memory statement (file, text) as it holds now: its sources and traces left out."""
    from cmem.vault.layers import open_vault
    from cmem.vault.notes import split_frontmatter
    from cmem.vault.statements import parse_statements

    vault = open_vault(root)
    found = []
    for file in vault.convergent_files():
        text = file.path.read_text("utf-8")
        start = split_frontmatter(text)[1]
        body = "\n".join(text.split("\n")[start - 1 :])
        for statement in parse_statements(body, start, vault.config.formats):
            found.append((file.rel, statement.core))
    return found


def check_facts(history: History, root: Path) -> tuple[list[str], list[str]]:
    """(facts memory holds right, what is wrong: a fact missing or a stale wording current)."""
    statements = [(rel, core.casefold()) for rel, core in current_statements(root)]
    right, wrong = [], []
    for fact in history.facts:
        words = [[w.casefold() for w in item.split("|")] for item in fact.must]
        holding = [
            (rel, core)
            for rel, core in statements
            if all(any(w in core for w in options) for options in words)
        ]
        stale = [
            f"{rel}: {core!r} holds {old!r}"
            for old in fact.stale
            for rel, core in statements
            if old.casefold() in core
        ]
        if not holding:
            wrong.append(f"{fact.name}: no current statement holds {' + '.join(fact.must)}")
        if stale:
            wrong.append(f"{fact.name}: stale wording current: {'; '.join(stale)}")
        if holding and not stale:
            right.append(fact.name)
    memory = "\n".join(f.read_text("utf-8") for f in (root / "converged").rglob("*.md")).casefold()
    wrong += [f"noise in memory: {word!r}" for word in history.noise if word.casefold() in memory]
    return right, wrong


def _main(argv: list[str]) -> int:
    command, name, *rest = argv
    history = HISTORIES[name]
    if command == "facts":
        right, wrong = check_facts(history, Path(rest[0]).resolve())
        print(f"{len(right)} of {len(history.facts)} facts right")
        print("\n".join(wrong))
        return 0
    number, base = int(rest[0]), Path(rest[1]).resolve()
    root, work, env = base / "vault", base / "work", environment(base / "home")
    if command == "hand-over":
        if number == 1:
            base.mkdir(parents=True, exist_ok=False)
            root.mkdir()
            start_vault(history, root, env)
        write_day(history, number, root, env)
        printed, _ = hand_over(history, number, root, work, env)
        print(printed)
        return 0
    round_ = int(rest[2]) if len(rest) > 2 else 1
    reply = work / ".cmem-pass" / "reply.md"
    reply.write_bytes(reply_fixture(history, number, round_).read_bytes())
    done = apply_reply(history, number, root, work, reply, round_, env)
    print(done.stdout, done.stderr, f"exit {done.returncode}", sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
