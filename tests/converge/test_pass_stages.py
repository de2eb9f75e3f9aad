"""The converge pass as typed stages: the stages docs/architecture.md names are the ones
`_run_locked` calls, in that order, each returning the frozen value the doc says; and a stage can
be run on its own with a stand-in engine, which the old shared-result design did not allow."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from datetime import datetime
from pathlib import Path
from typing import Callable

import pytest

from cmem.converge import engines, pass_values, pipeline, replies
from cmem.converge.pipeline import EngineReply, PassOptions
from cmem.steps.run_records import new_run
from cmem.vault.layers import open_vault
from support import REPO

DOC = REPO / "docs" / "architecture.md"
NOW = datetime(2026, 11, 29, 9, 0).astimezone()
NOTE = "2026-11-28 随手记.md"


@pytest.fixture
def stage_vault(make_vault) -> Path:
    """A profile and one note with a correction and a preference: one pending note."""
    return make_vault(
        {
            "converged/core/profile.md": "---\nsummary: 我是谁\n---\n# Profile\n\n"
            "- 在找北京后端实习（来源：[[2026-11-20 日记]]）\n",
            NOTE: "# 随手记\n\n- 其实不是北京，我决定改找深圳的 AI Agent 实习。\n"
            "- 以后都用 uv 管理 Python 环境，不要再用 pip。\n",
            "archive/ARCHIVE-CHECKLIST.md": "# Archive checklist\n",
            ".cmem/state.json": '{"version": 1, "notes": {}, "passes": []}\n',
        },
        git=True,
    )


@dataclasses.dataclass(frozen=True)
class StandIn:
    """An engine of the test's own: the `Engine` protocol is all the pass asks of one."""

    answer: Callable[[str, int], EngineReply]
    repair_rounds: int
    kind: str = "llm"
    name: str = "llm"
    model: str | None = "stand-in"
    reads_prompt: bool = True

    def ask(self, prompt: str, attempt: int) -> EngineReply:
        return self.answer(prompt, attempt)


def _documented_stages() -> list[tuple[str, str]]:
    """(stage function, value it returns) for each row of the stage table."""
    rows = []
    for line in DOC.read_text("utf-8").splitlines():
        match = re.match(r"\| `(\w+)` \|[^|]*\| `(\w+)`", line)
        if match:
            rows.append((match[1], match[2]))
    return rows


def _stages_called_by_the_pass() -> list[str]:
    """The documented stage functions `_run_locked` calls, in source order."""
    documented = {name for name, _ in _documented_stages()}
    tree = ast.parse(textwrap.dedent(inspect.getsource(pipeline._run_locked)))
    calls = sorted(
        (node.lineno, node.col_offset, node.func.id)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in documented
    )
    return [name for _, _, name in calls]


def test_the_doc_names_the_stages_the_pass_runs_in_order():
    documented = _documented_stages()
    assert [name for name, _ in documented] == [
        "gather",
        "plan_prompt",
        "choose_engine",
        "check_replies",
        "plan_pass",
        "commit_pass",
    ]
    assert _stages_called_by_the_pass() == [name for name, _ in documented]


@pytest.mark.parametrize("stage, value", _documented_stages())
def test_each_stage_returns_the_frozen_value_the_doc_names(stage, value):
    function = getattr(pipeline, stage)
    assert inspect.signature(function).return_annotation == value
    cls = getattr(pipeline, value)
    if cls is engines.Engine:  # a protocol: each engine of the registry is a frozen value
        assert typing.Protocol in cls.__mro__
        made = [engines.ResponseFile, engines.BuiltinEngine, engines.ModelCommand]
        assert all(dataclasses.is_dataclass(c) and c.__dataclass_params__.frozen for c in made)
    else:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    # a handful of typed parameters, not the 9–12 untyped ones the stages once took
    parameters = inspect.signature(function).parameters.values()
    assert len(parameters) <= 6
    assert all(p.annotation is not inspect.Parameter.empty for p in parameters)


def test_every_stage_value_of_the_pipeline_is_named_in_the_doc():
    text = DOC.read_text("utf-8")
    values = [
        name
        for module in (pass_values, engines)
        for name, cls in vars(module).items()
        if isinstance(cls, type)
        and cls.__module__ == module.__name__
        and dataclasses.is_dataclass(cls)
        and cls.__dataclass_params__.frozen
    ]
    assert len(values) >= 8
    assert [name for name in values if f"`{name}`" not in text] == []


def test_check_replies_runs_on_its_own_with_a_stand_in_engine(stage_vault):
    """The repair rounds counted on a stage alone: a reply that never validates is asked
    1 + repair_rounds times, and the stage returns the last problems instead of raising."""
    vault = open_vault(stage_vault)
    inputs = pipeline.gather(vault, PassOptions(), NOW, lambda *args: None)
    assert [n.rel for n in inputs.selection.notes] == [NOTE]
    plan = pipeline.plan_prompt(vault, inputs)
    asked = []

    def ask(prompt: str, attempt: int) -> EngineReply:
        asked.append(attempt)
        return EngineReply("no convergence element here", (f"warning {attempt}",))

    engine = StandIn(ask, repair_rounds=2)
    record = new_run(vault, "test-pass", redact=True)
    context = replies.validator_context(vault, inputs, plan, allow_shrink=False)
    checked = pipeline.check_replies(
        vault, engine, plan.prompt, context, record, lambda *args: None
    )
    assert asked == [1, 2, 3]
    assert checked.validation is None and checked.rounds == 3
    assert checked.errors and checked.warnings == ("warning 1", "warning 2", "warning 3")
    # the second and third prompts were repair prompts quoting the rejected reply
    assert "no convergence element here" in (record.folder / "prompt-2.txt").read_text("utf-8")
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.rounds = 0  # a value, not a shared result a later stage could change


def test_a_stopped_engine_reports_how_many_times_it_was_asked(stage_vault):
    """An error raised in the second round carries the round to the report (`cmem_rounds`)."""
    from cmem.errors import CmemError

    vault = open_vault(stage_vault)
    inputs = pipeline.gather(vault, PassOptions(), NOW, lambda *args: None)
    plan = pipeline.plan_prompt(vault, inputs)

    def ask(prompt: str, attempt: int) -> EngineReply:
        if attempt == 2:
            raise CmemError("the model command timed out")
        return EngineReply("not a reply")

    engine = StandIn(ask, repair_rounds=2)
    record = new_run(vault, "test-pass-2", redact=True)
    context = replies.validator_context(vault, inputs, plan, allow_shrink=False)
    with pytest.raises(CmemError) as stopped:
        pipeline.check_replies(vault, engine, plan.prompt, context, record, lambda *args: None)
    assert stopped.value.cmem_rounds == 2
