"""Text for people from the trigger commands: `hook install|uninstall|status`, `trust`. The CLI
prints what these return; colour follows NO_COLOR and `--no-color` through `cmem.render.reports.paint`."""

from __future__ import annotations

from cmem.render.reports import paint

_VERB = {
    "install": "add the cmem hook to",
    "update": "refresh the cmem hook in",
    "uninstall": "remove the cmem hook from",
}
_KIND = {
    "bash": "bash",
    "zsh": "zsh",
    "fish": "fish",
    "claude-code": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
}
_AGENT_DONE = (
    "at session start the agent is given its memory; at session end (and before compaction) the "
    "session is captured and a pass runs if due, in the background"
)


_ROLE_VERB = {
    "surface": {
        "install": "add the cmem-converge command to",
        "update": "refresh the cmem-converge command in",
        "uninstall": "delete the cmem-converge command",
    },
    "model": {
        "install": "set the model of unattended passes in",
        "uninstall": "take the model setting cmem made out of",
    },
    "moved": {"uninstall": "move the cmem hook out of"},
}


def render_hook_plan(plan) -> str:
    from cmem.setup.hooks import display

    verb = _ROLE_VERB.get(plan.role, _VERB).get(plan.action) or _VERB.get(plan.action, plan.action)
    out = [paint(f"{verb} {display(plan.path)} ({_KIND.get(plan.kind, plan.kind)})", "bold")]
    out += [f"  note: {note}" for note in plan.notes]
    for line in plan.removed.splitlines():
        out.append(paint(f"- {line}", "red"))
    for line in plan.added.splitlines():
        out.append(paint(f"+ {line}", "green"))
    return "\n".join(out)


def render_hook_done(plan) -> str:
    from cmem.setup.hooks import display

    where = display(plan.path)
    kind = _KIND.get(plan.kind, plan.kind)
    if plan.role != "hooks":
        return _done_beside(plan, where, kind)
    if plan.action == "unchanged":
        return f"the {kind} hook for this vault is already in {where}; nothing changed"
    if plan.action == "absent":
        extra = "".join(f" ({note})" for note in plan.notes)
        return f"no cmem {kind} hook for this vault in {where}{extra}; nothing changed"
    if plan.action == "uninstall":
        return f"removed the {kind} hook from {where}"
    done = "installed" if plan.action == "install" else "refreshed"
    if plan.kind in ("claude-code", "codex", "gemini"):
        asks = (
            ""
            if plan.kind == "gemini"
            else "; after a complex turn it asks once whether to converge"
        )
        return f"{done} the {kind} hooks in {where}: {_AGENT_DONE}{asks}"
    return f"{done} the {kind} hook in {where}: it runs `cmem converge --if-due` in the background when a new {kind} shell exits"


def render_hook_status(hooks, vault) -> str:
    if not hooks:
        return "no cmem hook is installed (see `cmem hook install --help`)"
    out = []
    for hook in hooks:
        mine = vault is not None and hook.current is not None
        label = paint(f"{_KIND.get(hook.kind, hook.kind):<12}", "bold")
        state = "ok" if not hook.problems else "problem"
        colour = "green" if state == "ok" else "yellow"
        whose = "this vault" if mine else (hook.vault or "an unknown vault")
        out.append(f"{label} {hook.path}  ({hook.ident}, {whose})  " + paint(state, colour))
        if hook.events:
            out.append(f"  events: {', '.join(hook.events)}")
        out += [f"  {problem}" for problem in hook.problems]
        out += [f"  note: {note}" for note in hook.notes]
    return "\n".join(out)


def render_trust_question(status) -> str:
    """What `cmem trust` is about to allow: the command, the vault files it runs, what changed."""
    out = [f"{status.vault}/.cmem/config.yaml names this model command:", f"  {status.command}"]
    if status.files:
        out.append("which runs these files of the vault (their content is trusted too):")
        for rel, digest in status.files.items():
            mark = "  (changed since you trusted it)" if rel in status.changed_files else ""
            out.append(f"  {rel}  sha256 {digest[:12]}…{mark}")
    gone = [rel for rel in status.changed_files if rel not in (status.files or {})]
    if gone:
        out.append(f"no longer runs: {', '.join(gone)}")
    if status.state == "changed" and status.trusted_sha256 != status.command_sha256:
        out.append(
            "the command itself changed since you trusted it"
            + (f" on {status.trusted_at}" if status.trusted_at else "")
        )
    out.append("cmem will run it with your rights, with each pass's prompt on its stdin.")
    return "\n".join(out)


def render_trust(change) -> str:
    digest = (change.command_sha256 or "")[:12]
    if change.action == "no-command":
        return (
            f"{change.vault} names no llm.command in .cmem/config.yaml; there is nothing to trust"
        )
    if change.action in ("trusted", "retrusted"):
        again = " again (it had changed)" if change.action == "retrusted" else ""
        files = f" and {', '.join(change.files)}" if change.files else ""
        return (
            f"trusted{again} the model command `{change.command}`{files} for {change.vault} (sha256 {digest}…), "
            f"recorded in {change.config_path}; if the vault's command{' or one of those files' if files else ''} changes, cmem asks again"
        )
    if change.action == "already-trusted":
        return f"the model command `{change.command}` of {change.vault} is already trusted (sha256 {digest}…)"
    if change.action == "revoked":
        return f"revoked: the model command of {change.vault} no longer runs until `cmem trust`"
    return f"{change.vault} was not trusted; nothing changed"


def _done_beside(plan, where: str, kind: str) -> str:
    """What happened to a file beside the hooks: the surface, the model setting, a moved hook."""
    from cmem.setup.agent_targets import TARGETS

    notes = "".join(f"\n  note: {note}" for note in plan.notes)
    if plan.role == "moved":
        return f"took this vault's {kind} hooks out of {where}{notes}"
    if plan.role == "surface":
        call = TARGETS[plan.kind].surface_call if plan.kind in TARGETS else "cmem-converge"
        if plan.action in ("install", "update"):
            return (
                f"{'added' if plan.action == 'install' else 'refreshed'} {where}: in a session, "
                f"{call}, and the agent runs the pass itself as its model{notes}"
            )
        if plan.action == "uninstall":
            return f"deleted {where}{notes}"
        return f"the cmem-converge command in {where} is unchanged{notes}"
    if plan.action == "install":
        return f"set llm.command in {where}: unattended passes ask {kind} as their model{notes}"
    if plan.action == "uninstall":
        return f"took the model setting cmem made out of {where}{notes}"
    return f"the model setting in {where} is unchanged{notes}"
