"""What cmem installs and allows: `init`, the session-end `hook` group, `completion`,
`agent-instructions` and `trust`."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeGuard

import typer

from cmem.commands.common import confirm, open_target, print_json
from cmem.commands.options import (
    COMPLETE_VAR,
    SHELL_HELP,
    AgentOption,
    JsonOption,
    ProjectOption,
    ShellOption,
    VaultOption,
    choices,
    yes_option,
)

if TYPE_CHECKING:
    from cmem.setup.init import InitReport, LanguageGuess


ChangeYes = Annotated[
    bool, yes_option("Change the file without asking (needed without a terminal).")
]
TrustYes = Annotated[
    bool, yes_option("Trust without asking (scripts); the command is still shown.")
]


def init(
    path: Annotated[
        Path,
        typer.Argument(
            help="Folder to make a vault (created if missing); an existing folder is adopted as it is.",
        ),
    ] = Path("."),
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang",
            metavar="[zh|en]",
            autocompletion=choices("zh", "en"),
            help="Language of prompts and formats: zh or en (default: the script most existing notes use, else the locale, else en; asks on a terminal when unsure).",
        ),
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option(
            "--repo",
            help="For a folder inside another git repository: 'own' (a nested repository) or 'parent' (commit into it).",
        ),
    ] = None,
    track_all: Annotated[
        bool | None,
        typer.Option(
            "--track-all/--no-track-all",
            help="Keep the whole vault in git (every note and attachment, .gitignore applies), remembered as git.track_all (default: no; asks on a terminal when the folder holds files of yours).",
        ),
    ] = None,
    daily: Annotated[
        bool | None,
        typer.Option(
            "--daily/--no-daily",
            help="Read the daily-notes folder Obsidian's settings name (core Daily notes, Periodic Notes) as divergent notes (default: yes; asks on a terminal).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a vault, or adopt an existing folder (an Obsidian vault) without touching its files.

    Writes .cmem/, creates the missing layer folders and a .gitignore, makes the folder its own git
    repository and commits cmem's files. Running it again changes nothing.
    """
    from cmem.render.reports import render_init

    lang, guess = _init_language(path, lang, as_json)
    extra = _daily_folders(path, daily, as_json)
    if track_all is None:
        track_all = _offer_track_all(path, repo, as_json)
    report = _init_asking_repository(path, lang, repo, extra, track_all, as_json)
    if guess is not None and report.created:
        report.notes.append(
            f"language: {lang} ({guess.reason}); change `language:` in .cmem/config.yaml, or init with --lang"
        )
    if as_json:
        from cmem.vault.config import load_config

        print_json(
            {
                "vault": str(report.root),
                "created": report.created,
                "repository": report.repository,
                "commit": report.commit,
                "changed": report.changed,
                "notes": report.notes,
                "language": load_config(report.root).language,
            }
        )
    else:
        typer.echo(render_init(report))


def _init_language(
    path: Path, lang: str | None, as_json: bool
) -> "tuple[str, LanguageGuess | None]":
    """The vault's language and, for a new vault, the guess it came from (to say so); asked on
    a terminal when the notes do not settle it."""
    if lang is not None:
        return lang, None
    from cmem.setup.init import guess_language

    guess = guess_language(path) if path.is_dir() else guess_language(Path("/nonexistent"))
    lang = guess.language
    already = (path / ".cmem" / "config.yaml").exists()  # the vault's own language stays
    if not guess.sure and not already and sys.stdin.isatty() and not as_json:
        typer.echo(f"language of prompts and formats: {guess.reason}", err=True)
        lang = typer.prompt("zh or en?", default=guess.language).strip()
    return lang, None if already else guess


def _offer_track_all(path: Path, repo: str | None, as_json: bool) -> bool:
    """Whether to keep the whole vault in git: asked on a terminal when a new vault holds files."""
    from cmem.setup.init import holds_user_files

    new = path.is_dir() and not (path / ".cmem" / "config.yaml").exists() and repo != "parent"
    if new and sys.stdin.isatty() and not as_json and holds_user_files(path):
        return typer.confirm(
            "Track the whole vault in git (every note and attachment; remembered as git.track_all)?",
            default=True,
        )
    return False


def _init_asking_repository(
    path: Path,
    lang: str,
    repo: str | None,
    extra: list[str],
    track_all: bool,
    as_json: bool,
) -> "InitReport":
    """`init_vault`, asking on a terminal whether a folder inside another repository gets its own."""
    from cmem.setup.init import ParentRepoChoiceNeeded, init_vault

    try:
        return init_vault(path, lang, repo, extra, track_all)
    except ParentRepoChoiceNeeded as exc:
        if repo is None and sys.stdin.isatty() and not as_json:
            typer.echo(str(exc), err=True)
            choice = typer.prompt("own or parent?", default="own")
            return init_vault(
                path, lang, choice.strip(), extra, track_all and choice.strip() != "parent"
            )
        raise


def _daily_folders(path: Path, daily: bool | None, as_json: bool) -> list[str]:
    """The daily-notes folders to read as divergent (a new vault only): offered on a terminal."""
    if daily is False or (path / ".cmem" / "config.yaml").exists() or not path.is_dir():
        return []
    from cmem.setup.init import daily_notes_entries

    chosen = []
    for entry, count in daily_notes_entries(path):
        if daily is None and sys.stdin.isatty() and not as_json:
            held = f"{count} notes" if count else "no notes yet"
            question = f"Obsidian keeps daily notes in {entry.removesuffix('/**')}/ ({held}); read them as divergent notes?"
            if not typer.confirm(question, default=True):
                continue
        chosen.append(entry)
    return chosen


hook_app = typer.Typer(
    help="Session hooks: a shell's exit runs `cmem converge --if-due` in the background; an agent's session start brings memory in, its end captures the session.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _hook_change(plan, yes: bool, as_json: bool, vault=None) -> None:
    _hook_changes([plan], yes, as_json, vault)


def _hook_changes(plans: list, yes: bool, as_json: bool, vault=None) -> None:
    """Show every planned change, ask once (the model setting on its own), apply in order; the
    first plan is the hooks' own file."""
    from cmem.render.setup import render_hook_done, render_hook_plan
    from cmem.setup.hooks import apply_hook_plan

    changing = [plan for plan in plans if plan.changes]
    model = [plan for plan in changing if plan.role == "model" and plan.action == "install"]
    rest = [plan for plan in changing if plan not in model]
    if rest:
        if not as_json:
            typer.echo("\n".join(render_hook_plan(plan) for plan in rest))
        files = ", ".join(str(plan.target) for plan in rest)
        confirm(yes, f"change {files}?" if len(rest) > 1 else _one_change(rest[0]))
    if model and not yes and not as_json:
        typer.echo(render_hook_plan(model[0]))
        if not _ask(f"use {plans[0].kind}'s CLI as the model of unattended passes?"):
            model = []
    applied = [apply_hook_plan(plan, vault) for plan in rest + model]
    if as_json:
        print_json(
            {
                "plan": plans[0].to_json(),
                "plans": [plan.to_json() for plan in plans],
                "applied": bool(applied),
            }
        )
        return
    typer.echo(render_hook_done(plans[0]))
    for plan in plans[1:]:
        if plan.role != "hooks" and (plan in applied or plan.notes):
            typer.echo(render_hook_done(plan))


def _one_change(plan) -> str:
    return f"{'change' if plan.after is not None else 'delete'} {plan.target}?"


def _ask(question: str) -> bool:
    import sys

    return sys.stdin.isatty() and typer.confirm(question, default=True)


UserScope = Annotated[
    bool,
    typer.Option(
        "--user",
        help="With --agent: your own settings for every project (~/.claude/settings.json, ~/.codex/hooks.json, ~/.gemini/settings.json).",
    ),
]
SharedScope = Annotated[
    bool,
    typer.Option(
        "--shared",
        help="With --agent: the project's committed settings (.claude/settings.json, .codex/hooks.json, .gemini/settings.json), for a team; they name this machine's paths.",
    ),
]


def _scope(agent: str | None, user: bool, shared: bool):
    if not agent and (user or shared):
        raise typer.BadParameter("goes with --agent", param_hint="--user/--shared")
    if user and shared:
        raise typer.BadParameter("give one of them", param_hint="--user/--shared")
    return "user" if user else "shared" if shared else None


@hook_app.command("install")
def hook_install(
    shell: ShellOption = None,
    agent: AgentOption = None,
    project: ProjectOption = None,
    user: UserScope = False,
    shared: SharedScope = False,
    no_model: Annotated[
        bool,
        typer.Option(
            "--no-model",
            help="With --agent: do not set the agent's CLI as the model of unattended passes.",
        ),
    ] = False,
    yes: ChangeYes = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add the hook for this vault: a marked block at the end of the shell's rc file, or an agent's hook entries.

    Shows the change and asks first. Installing again replaces it in place. A shell's existing
    `trap … EXIT` is chained and the result must pass the shell's own syntax check. An agent
    (--agent claude-code|codex|gemini) gets SessionStart (memory in), SessionEnd and PreCompact
    (the session captured, then a pass if due) and, but for Gemini, Stop (ask once whether to
    converge after a complex turn), each running `cmem hook run` by absolute path — in your own
    settings: Claude Code's .claude/settings.local.json in the project (--user: ~/.claude/;
    --shared: the committed .claude/settings.json), Codex's and Gemini's user files (--project
    DIR: that project's). It also gets the in-session pass as its own command (a skill named
    cmem-converge; Gemini: the /cmem-converge command), and, when the agent's CLI is on PATH,
    offers that CLI as the model of unattended passes (--yes accepts, --no-model declines).
    """
    from cmem.setup.agent_hooks import plan_agent_setup
    from cmem.setup.shell_hooks import plan_shell_install

    target = open_target(vault)
    scope = _scope(agent, user, shared)
    if _agent(agent, shell):
        plans = plan_agent_setup(target, project, agent, scope, with_model=not no_model)
        _hook_changes(plans, yes, as_json, target)
    else:
        _hook_change(plan_shell_install(target, _shell(shell)), yes, as_json, target)


@hook_app.command("uninstall")
def hook_uninstall(
    shell: ShellOption = None,
    agent: AgentOption = None,
    project: ProjectOption = None,
    all_vaults: Annotated[
        bool,
        typer.Option(
            "--all", help="Remove the hooks of every vault from that file (no vault needed)."
        ),
    ] = False,
    user: UserScope = False,
    shared: SharedScope = False,
    yes: ChangeYes = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove this vault's hook; the file is given back byte for byte as it was before the install.

    With --agent, from each of that agent's settings files holding it (or the one --user or
    --shared names); once none is left, the cmem-converge skill or command and the model
    setting that `hook install` made go too, each only while it is as cmem wrote it.
    """
    from cmem.setup.agent_hooks import plan_agent_teardown
    from cmem.setup.shell_hooks import plan_shell_uninstall

    target = None if all_vaults else open_target(vault)
    scope = _scope(agent, user, shared)
    if _agent(agent, shell):
        _hook_changes(plan_agent_teardown(target, project, agent, scope), yes, as_json, target)
    else:
        _hook_change(plan_shell_uninstall(_shell(shell), target), yes, as_json, target)


@hook_app.command("show")
def hook_show(
    shell_name: Annotated[
        str | None,
        typer.Argument(
            metavar="[SHELL]",
            autocompletion=choices("bash", "zsh", "fish"),
            help=SHELL_HELP,
        ),
    ] = None,
    shell: Annotated[
        str | None,
        typer.Option("--shell", hidden=True, help="Old spelling of SHELL, still accepted."),
    ] = None,
    agent: AgentOption = None,
    vault: VaultOption = None,
) -> None:
    """Print the hook's code, for `eval "$(cmem hook show zsh)"` in an rc file instead of installing a block.

    (An eval starts Python with every shell; the installed block costs the shell nothing at start.)
    """
    from cmem.setup.agent_hooks import agent_snippet
    from cmem.setup.shell_hooks import shell_snippet

    target = open_target(vault)
    if _agent(agent, shell_name or shell):
        typer.echo(agent_snippet(target, agent))
    else:
        typer.echo(shell_snippet(_shell(shell_name or shell), target))


@hook_app.command("status")
def hook_status_command(
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            help="The project whose agent settings (.claude/, .codex/, .gemini/) are checked besides your own (default: the current folder).",
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Which hooks are installed (bash, zsh, fish, Claude Code, Codex, Gemini CLI), for which vault, and whether they still work."""
    from cmem.errors import VaultNotFound
    from cmem.setup.agent_hooks import agent_hook_status
    from cmem.setup.shell_hooks import shell_hook_status

    try:
        target = open_target(vault)
    except VaultNotFound:
        target = None
    hooks = shell_hook_status(target) + agent_hook_status(target, project or Path.cwd())
    if as_json:
        print_json(
            {
                "vault": str(target.root) if target else None,
                "hooks": [hook.to_json() for hook in hooks],
            }
        )
    else:
        from cmem.render.setup import render_hook_status

        typer.echo(render_hook_status(hooks, target))


@hook_app.command("run")
def hook_run(
    event: Annotated[
        str,
        typer.Argument(
            metavar="EVENT",
            autocompletion=choices("session-start", "session-end", "pre-compact", "stop"),
            help="session-start (print the memory for the agent), session-end or pre-compact (capture the session, then a pass if due, in the background), stop (ask once whether to converge after a complex turn).",
        ),
    ],
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            metavar="[claude-code|codex|gemini]",
            help="The agent whose hook this is (its JSON is read from stdin).",
        ),
    ],
    detached: Annotated[bool, typer.Option("--detached", hidden=True)] = False,
    transcript: Annotated[str | None, typer.Option("--transcript", hidden=True)] = None,
    session_id: Annotated[str | None, typer.Option("--session-id", hidden=True)] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", hidden=True)] = None,
    vault: VaultOption = None,
) -> None:
    """What an installed agent hook runs: reads the agent's JSON on stdin, answers within its time limit.

    Never fails the agent's session: problems are recorded for `cmem status`.
    """
    from cmem.hook_command import HookRequest, run, usage_problem

    problem = usage_problem(event, agent)
    if problem:
        raise typer.BadParameter(problem)
    request = HookRequest(
        event,
        agent,
        vault=str(vault) if vault is not None else None,
        detached=detached,
        transcript=transcript,
        session_id=session_id,
        cwd=cwd,
    )
    raise typer.Exit(run(request))


def _agent(agent: str | None, shell: str | None) -> TypeGuard[str]:
    """Whether an agent is named (then `agent` is a str), checked against `--shell`."""
    from cmem.setup.hooks import AGENTS

    if agent is None:
        return False
    if agent not in AGENTS:
        raise typer.BadParameter(f"must be one of {', '.join(AGENTS)}", param_hint="--agent")
    if shell is not None:
        raise typer.BadParameter("give --shell or --agent, not both", param_hint="--agent")
    return True


def _shell(shell: str | None) -> str:
    from cmem.setup.hooks import SHELLS
    from cmem.setup.shell_hooks import default_shell

    if shell is None:
        return default_shell()
    if shell not in SHELLS:
        raise typer.BadParameter(f"must be one of {', '.join(SHELLS)}", param_hint="--shell")
    return shell


def completion(
    shell_name: Annotated[
        str,
        typer.Argument(
            metavar="SHELL",
            autocompletion=choices("bash", "zsh", "fish"),
            help="bash, zsh or fish.",
        ),
    ],
) -> None:
    """Print the shell completion script: commands, options and their choices complete on TAB.

    bash: `eval "$(cmem completion bash)"` in ~/.bashrc; zsh: `eval "$(cmem completion zsh)"` in
    ~/.zshrc (after compinit); fish: `cmem completion fish > ~/.config/fish/completions/cmem.fish`.
    Each TAB runs cmem, which reads no vault to complete it.
    """
    from typer._completion_shared import get_completion_script

    if shell_name not in ("bash", "zsh", "fish"):
        raise typer.BadParameter(
            f"must be bash, zsh or fish, not {shell_name!r}", param_hint="SHELL"
        )
    typer.echo(get_completion_script(prog_name="cmem", complete_var=COMPLETE_VAR, shell=shell_name))


def agent_instructions_command(
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="claude-code, codex or generic: what the text says about that agent's hooks (the file is AGENTS.md).",
        ),
    ] = "generic",
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang", metavar="[en|zh]", help="en or zh (default: the vault's language, else en)."
        ),
    ] = None,
    vault: VaultOption = None,
) -> None:
    """Print the text to paste into AGENTS.md: when to read memory, capture, and ask to converge; cmem named by absolute path."""
    from cmem.errors import VaultNotFound
    from cmem.setup.agents import AGENT_FILES, agent_instructions

    if agent not in AGENT_FILES:
        raise typer.BadParameter(f"must be one of {', '.join(AGENT_FILES)}", param_hint="--agent")
    if lang not in (None, "en", "zh"):
        raise typer.BadParameter("must be en or zh", param_hint="--lang")
    try:
        target = open_target(vault)
    except VaultNotFound:
        if vault is not None:  # a vault the user named (here or before the command) must exist
            raise
        target = None
    typer.echo(agent_instructions(agent, lang, target), nl=False)


def trust(
    revoke: Annotated[
        bool, typer.Option("--revoke", help="Forget the trust: the vault's command stops running.")
    ] = False,
    yes: TrustYes = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Allow this vault's own llm.command to run (recorded in your user config with the command's sha256).

    Shows the command (and the vault files it runs, with their sha256) and asks; --yes trusts
    without asking. A command that came with a vault runs only after you trust it, as with direnv's
    allow; when the vault's command changes, or a script of the vault it names changes
    (`sh tools/model.sh`), it must be trusted again. --llm, $CMEM_LLM and your user config need no trust.
    """
    from dataclasses import asdict

    from cmem.setup.trust import revoke_trust, trust_status, trust_vault

    target = open_target(vault)
    if not revoke:
        status = trust_status(target)
        if status.state in ("untrusted", "changed"):
            from cmem.render.setup import render_trust_question

            # the user decides on what will run, so it is shown before the question (stderr: --json stays clean)
            typer.echo(render_trust_question(status), err=True)
            confirm(yes, "Trust it to run on this machine?")
    change = revoke_trust(target) if revoke else trust_vault(target)
    if as_json:
        print_json(asdict(change))
    else:
        from cmem.render.setup import render_trust

        typer.echo(render_trust(change))
