"""Redact credential-looking strings before text leaves cmem (docs/design.md §3, "Secrets"): a
prompt, a run record, and everything a command prints or the MCP server returns.

Two kinds of rule. Known token formats (OpenAI, Anthropic, GitHub, AWS, Aliyun, Tencent Cloud,
Slack, Google, Stripe, Telegram and Discord bots, JWTs, PEM private keys, bearer tokens, ~50 in
all) are matched here by their shape wherever they appear, and values behind a known prefix (a
URL's password, Basic auth, `aws_secret_access_key=`, Azure's `AccountKey=`) by that prefix.
Secrets without a shape — `password: …`, `DB_TOKEN=…`, `WiFi 密码 …`, `mysql -p…`, the secret
beside an `AKIA…` id — are told by what names them (`secret_labels.py`), and only when the value
looks like a credential. So "the password policy says…", "token budget: 12000", "the key point
is…", "密码学课程" and "secret santa" pass through untouched. Basic-auth and Docker `auth` values
are redacted only when they decode to `user:password`. The corpus in tests/secrets_corpus.py
measures all this (docs/reliability.md, "Secrets").

The output is deterministic: the same text always gives the same bytes, so prompts stay cacheable.
"""

from __future__ import annotations

import re

from cmem.text.line_rules import Lazy as _Lazy
from cmem.text.line_rules import lower as _lower
from cmem.text.line_rules import on_lines as _on_lines
from cmem.text.secret_labels import (
    LITERAL_PLACEHOLDERS,
    PLACEHOLDER,
    redact_flags,
    redact_key_pairs,
    redact_labelled,
    redact_named_hex,
)

_START = r"(?<![A-Za-z0-9_-])"  # a token starts at a word edge …
_END = r"(?![A-Za-z0-9_-])"  # … and ends at one

# (label, pattern) in order: specific shapes before the generic ones that could also match them.
# Prefixes are the providers' own (documented token formats); the lengths keep a bare mention of a
# prefix ("ghp_ is GitHub's prefix", `hf_hub_download`, `npm_config_cache`) from matching.
_PREFIXED = [
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}"),
    ("gitlab-token", r"gl(?:pat|rt|dt|ptt|ft|imt|oas|cbt|soat|agent)-[A-Za-z0-9_-]{20,}"),
    ("grafana-token", r"gl(?:sa|c)_[A-Za-z0-9_=+/-]{32,}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_-]{24,}"),
    ("google-oauth-token", r"ya29\.[A-Za-z0-9_-]{30,}"),
    ("stripe-webhook-secret", r"whsec_[A-Za-z0-9+/=]{24,}"),
    ("pypi-token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("shopify-token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("twilio-key", r"SK[0-9a-f]{32}"),
    ("mailgun-key", r"key-[0-9a-f]{32}"),
    ("mailchimp-key", r"[0-9a-f]{32}-us[0-9]{1,2}"),
    ("atlassian-token", r"ATATT3[A-Za-z0-9_=-]{60,}"),
    ("linear-key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,}"),
    ("notion-token", r"(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})"),
    ("postman-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("vault-token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-[0-9])?"),
    ("newrelic-key", r"NR(?:AK|AA|II)-[A-Z0-9]{27}"),
    ("sentry-token", r"sntry[su]_[A-Za-z0-9_=+/-]{40,}"),
    ("replicate-token", r"r8_[A-Za-z0-9]{37}"),
    ("groq-key", r"gsk_[A-Za-z0-9]{48,}"),
    ("perplexity-key", r"pplx-[A-Za-z0-9]{40,}"),
    ("xai-key", r"xai-[A-Za-z0-9]{60,}"),
    ("square-token", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}"),
    ("tailscale-key", r"tskey-[a-z]+-[A-Za-z0-9-]{20,}"),
    ("doppler-token", r"dp\.(?:st|pt|sa|ct|scim|audit)\.[A-Za-z0-9._-]{40,}"),
    ("pulumi-token", r"pul-[a-f0-9]{40}"),
    ("supabase-token", r"sbp_[a-f0-9]{40}"),
    ("huggingface-org-token", r"api_org_[A-Za-z0-9]{30,}"),
    ("mapbox-token", r"(?:sk|tk)\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ("docker-token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    ("figma-token", r"figd_[A-Za-z0-9_-]{30,}"),
    ("airtable-token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("heroku-token", r"HRKU-[A-Za-z0-9_-]{30,}"),
    ("dropbox-token", r"sl\.(?:u\.)?[A-Za-z0-9_-]{120,}"),
    ("netlify-token", r"nfp_[A-Za-z0-9]{36,}"),
    ("fly-token", r"fm[12]_[A-Za-z0-9+/=_-]{40,}"),
    # Twitter/X app bearer tokens and Facebook (Meta) access tokens: their prefix and a long tail
    # that is not one repeated letter (a scream of A's is not a token)
    ("twitter-bearer-token", r"A{21,23}(?=[A-Za-z0-9%]{0,200}[a-z])[A-Za-z0-9%]{30,}"),
    (
        "facebook-token",
        r"EAA(?=[A-Za-z0-9]{0,300}[a-z])(?=[A-Za-z0-9]{0,300}[0-9])[A-Za-z0-9]{90,}",
    ),
]

_SHAPES: list[tuple[str, _Lazy]] = [
    (
        "private-key",
        _Lazy(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # the whole block; or, for a paste cut short, its header and base64 lines
            r"(?:.{0,20000}?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n(?:[A-Za-z-]+:[^\n]*|[A-Za-z0-9+/=]{4,}))*)"
            # a PuTTY key file: header lines and base64 lines to its end
            r"|PuTTY-User-Key-File-[0-9]+:[^\n]*(?:\r?\n(?:[A-Za-z-]+:[^\n]*|[A-Za-z0-9+/=]{4,}))*",
            re.DOTALL,
        ),
    ),
    (
        "slack-webhook",
        _Lazy(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}"),
    ),
    (
        "discord-webhook",
        _Lazy(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,}"
        ),
    ),
    ("anthropic-key", _Lazy(_START + r"sk-ant-[A-Za-z0-9_-]{20,}" + _END)),
    (
        "openai-key",
        _Lazy(
            _START
            + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]{0,200}\d)[A-Za-z0-9_-]{20,}"
            + _END
        ),
    ),
    (
        "github-token",
        _Lazy(_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})" + _END),
    ),
    ("aws-access-key", _Lazy(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    # Aliyun's AccessKey ids (16 or 24 characters) and Tencent Cloud's SecretIds
    ("aliyun-access-key-id", _Lazy(r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,20}(?![A-Za-z0-9])")),
    ("tencent-secret-id", _Lazy(r"(?<![A-Za-z0-9])AKID[A-Za-z0-9]{32}(?![A-Za-z0-9])")),
    (
        "slack-token",
        # bot, user, app-level, refresh (xoxe-) and legacy tokens
        _Lazy(_START + r"(?:xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})" + _END),
    ),
    ("google-api-key", _Lazy(_START + r"AIza[0-9A-Za-z_-]{35}" + _END)),
    ("stripe-key", _Lazy(_START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _END)),
    (
        "jwt",
        _Lazy(_START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _END),
    ),
    (
        # `<bot id>:<secret>`, alone or in the Bot API's URLs (`…/bot<token>/getMe`); the secret
        # half is mixed-case base64, 35 characters in issued tokens and 34 in Telegram's own docs,
        # so its length is a range (it starts with `AA` today, which is not relied on)
        "telegram-bot-token",
        _Lazy(
            r"(?:(?<=bot)|(?<![A-Za-z0-9_:-]))[0-9]{8,10}:"
            r"(?=[A-Za-z0-9_-]{0,39}[a-z])(?=[A-Za-z0-9_-]{0,39}[A-Z])[A-Za-z0-9_-]{30,40}" + _END
        ),
    ),
    (
        # the bot's user id in base64 (so it starts MT…, Nj…, OD…), a timestamp, an HMAC
        "discord-bot-token",
        _Lazy(
            _START + r"(?:M[Tjz]|N[DTjz]|O[DT])[A-Za-z0-9_-]{21,27}\.[A-Za-z0-9_-]{6}\."
            r"[A-Za-z0-9_-]{27,38}" + _END
        ),
    ),
    *[(label, _Lazy(_START + pattern + _END)) for label, pattern in _PREFIXED],
]

# Shapes whose prefix stays readable: only the value is replaced. (prefix, value[, suffix])
_AWS_SECRET = _Lazy(
    r"(?i)(aws_secret_access_key[\"']?[^\S\n]*[:=][^\S\n]*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)
_BEARER = _Lazy(r"(?i)(\bbearer[^\S\n]+)([A-Za-z0-9._~+/=-]{16,})")
# HTTP Basic auth, Docker's `"auth": "…"` and `curl -u user:pass`: base64 of `user:password`
_BASIC = _Lazy(
    r"(?i)(\bbasic[^\S\n]+|[\"']auth[\"'][^\S\n]*:[^\S\n]*[\"'])([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"
)
_CURL_USER = _Lazy(r"((?<![A-Za-z0-9-])(?:-u|--user)[^\S\n]+[\"']?[^\s:\"'/]+:)([^\s\"']+)")
_NETRC = _Lazy(r"(?i)(\bmachine[^\S\n]+\S+[^\S\n]+login[^\S\n]+\S+[^\S\n]+password[^\S\n]+)(\S+)")
# Azure connection strings and SAS URLs: the key is whatever follows its name up to `;` or `&`
_AZURE = _Lazy(r"((?:AccountKey|SharedAccessKey|[?&]sig)=)([A-Za-z0-9+/%=]{20,})")
# `scheme://user:password@host`, the user may be empty (`redis://:pass@host`)
_URL_PASSWORD = _Lazy(
    r"((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s/@]+)(@)", re.IGNORECASE
)
# Literals every match of a rule holds: when none is in the text the rule is skipped. A rule
# without one (the Discord bot token: two-letter literals cost more to look for than they save)
# has a gate in `_SHAPE_GATES`.
_SHAPE_NEEDLES = {
    "private-key": ("PRIVATE KEY", "PuTTY-User-Key-File"),
    "slack-webhook": ("hooks.slack.com",),
    "discord-webhook": ("/api/webhooks/",),
    "anthropic-key": ("sk-ant-",),
    "openai-key": ("sk-",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "aws-access-key": ("AKIA", "ASIA"),
    "aliyun-access-key-id": ("LTAI",),
    "tencent-secret-id": ("AKID",),
    "slack-token": ("xox", "xapp-"),
    "google-api-key": ("AIza",),
    "stripe-key": ("_live_", "_test_"),
    "jwt": ("eyJ",),
    "huggingface-token": ("hf_",),
    "gitlab-token": (
        "glpat-",
        "glrt-",
        "gldt-",
        "glptt-",
        "glft-",
        "glimt-",
        "gloas-",
        "glcbt-",
        "glsoat-",
        "glagent-",
    ),
    "grafana-token": ("glsa_", "glc_"),
    "npm-token": ("npm_",),
    "sendgrid-key": ("SG.",),
    "google-oauth-secret": ("GOCSPX-",),
    "google-oauth-token": ("ya29.",),
    "stripe-webhook-secret": ("whsec_",),
    "pypi-token": ("pypi-",),
    "digitalocean-token": ("_v1_",),
    "shopify-token": ("shp",),
    "twilio-key": ("SK",),
    "mailgun-key": ("key-",),
    "mailchimp-key": ("-us",),
    "atlassian-token": ("ATATT3",),
    "linear-key": ("lin_",),
    "notion-token": ("ntn_", "secret_"),
    "postman-key": ("PMAK-",),
    "vault-token": ("hvs.", "hvb.", "hvr."),
    "age-secret-key": ("AGE-SECRET-KEY-",),
    "databricks-token": ("dapi",),
    "newrelic-key": ("NRAK-", "NRAA-", "NRII-"),
    "sentry-token": ("sntrys_", "sntryu_"),
    "replicate-token": ("r8_",),
    "groq-key": ("gsk_",),
    "perplexity-key": ("pplx-",),
    "xai-key": ("xai-",),
    "square-token": ("sq0",),
    "tailscale-key": ("tskey-",),
    "doppler-token": ("dp.",),
    "pulumi-token": ("pul-",),
    "supabase-token": ("sbp_",),
    "telegram-bot-token": (":",),
    "huggingface-org-token": ("api_org_",),
    "mapbox-token": ("sk.eyJ", "tk.eyJ"),
    "docker-token": ("dckr_",),
    "figma-token": ("figd_",),
    "airtable-token": ("pat",),
    "heroku-token": ("HRKU-",),
    "dropbox-token": ("sl.",),
    "netlify-token": ("nfp_",),
    "fly-token": ("fm1_", "fm2_"),
    "twitter-bearer-token": ("A" * 21,),
    "facebook-token": ("EAA",),
}


def _is_discord_token(token: str) -> bool:
    """A Discord bot token's first part is its bot's id (a snowflake: 17 to 20 digits) in
    base64: anything else of that shape (a dotted identifier) is not one."""
    import base64

    first = token.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4))
    except ValueError:
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20


# Shapes whose match must also pass a check of its own.
_SHAPE_CHECKS = {"discord-bot-token": _is_discord_token}
# Shapes whose literal is common (`:`, `pat`) or missing: a search that starts at a literal (fast) must find
# the token's tail first, or the rule's own search, which tries every position, is not run.
_SHAPE_GATES = {
    "telegram-bot-token": _Lazy(r":[A-Za-z0-9_-]{30,40}(?![A-Za-z0-9_-])"),
    "discord-bot-token": _Lazy(r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}"),
    "airtable-token": _Lazy(r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),  # `pat` begins many words
}

_SHAPE_NEEDLES_BYTES = {
    label: tuple(n.encode() for n in needles) for label, needles in _SHAPE_NEEDLES.items()
}

# Per single-line rule, what its lines must hold, searched in the lower-cased text (case-sensitive
# literal search is several times faster than an IGNORECASE one). A `_NAMED_HEX` line needs a
# credential word too, so it shares the key-value rule's needle.
_NEEDLE = {
    "aws": _Lazy(r"aws_secret_access_key"),
    "bearer": _Lazy(r"bearer"),
    "basic": _Lazy(r"basic|auth"),
    "curl": _Lazy(r"-u\b|--user"),
    "netrc": _Lazy(r"machine"),
    "azure": _Lazy(r"accountkey=|sharedaccesskey=|sig="),
    "url": _Lazy(r"://"),
}
# A literal each needle's every match holds: a text holding none of a rule's is passed without
# compiling its needle or its rule (most snippets `recall` shows hold none).
_NEEDLE_LITERALS = {
    "aws": ("aws_secret_access_key",),
    "bearer": ("bearer",),
    "basic": ("basic", "auth"),
    "curl": ("-u",),  # `--user` holds it too
    "netrc": ("machine",),
    "azure": ("accountkey=", "sharedaccesskey=", "sig="),
    "url": ("://",),
}


def redact_secrets(text: str) -> tuple[str, int]:
    """`text` with credential-looking strings replaced by `[REDACTED:<kind>]`, and how many."""
    count = 0

    def replace_whole(label: str):
        check = _SHAPE_CHECKS.get(label)

        def sub(match: re.Match[str]) -> str:
            nonlocal count
            if check is not None and not check(match.group(0)):
                return match.group(0)
            count += 1
            return f"[REDACTED:{label}]"

        return sub

    # A shape rule runs only when its literal is in the text: a byte search (memchr-fast) spares
    # the rule's own try at every position, which is what makes redaction cost on a big vault.
    data = text.encode("utf-8", "surrogatepass")
    for label, pattern in _SHAPES:
        needles = _SHAPE_NEEDLES_BYTES.get(label)
        if needles is None or any(needle in data for needle in needles):
            gate = _SHAPE_GATES.get(label)
            if gate is None or gate.search(text):
                text = pattern.sub(replace_whole(label), text)

    def replace_value(label: str, check=None):
        def sub(match: re.Match[str]) -> str:
            nonlocal count
            if check is not None and not check(match.group(2)):
                return match.group(0)
            count += 1
            return f"{match.group(1)}[REDACTED:{label}]{match.group(3) if match.lastindex == 3 else ''}"

        return sub

    # The rules below never cross a line: each runs only on the lines its needle finds.
    rules = [
        ("aws", _AWS_SECRET, replace_value("aws-secret-key")),
        ("bearer", _BEARER, replace_value("bearer-token", _looks_random)),
        ("basic", _BASIC, replace_value("basic-auth", _is_basic_credential)),
        ("curl", _CURL_USER, replace_value("password", _is_url_password)),
        ("netrc", _NETRC, replace_value("password", _is_url_password)),
        ("azure", _AZURE, replace_value("azure-key")),
        ("url", _URL_PASSWORD, replace_value("url-password", _is_url_password)),
    ]
    low = _lower(text)
    for name, pattern, repl in rules:
        before = count

        def substitute(chunk: str, pattern: _Lazy = pattern, repl=repl) -> str:
            return pattern.sub(repl, chunk)

        text = _on_lines(text, low, _NEEDLE[name], substitute, literals=_NEEDLE_LITERALS[name])
        if count != before:
            low = _lower(text)

    # after the shapes (an access key id is its placeholder then) and the prefixed values: what a
    # label names (`secret_labels.py`)
    for rule in (redact_key_pairs, redact_flags, redact_labelled, redact_named_hex):
        text, found = rule(text, low)
        if found:
            count += found
            low = _lower(text)
    return text, count


_SEPARATOR = "\n\x00\x1e\x00\n"  # no rule matches across it: every rule but a private key's stops at a line end


def redact_many(texts: list[str]) -> tuple[list[str], int]:
    """Each text redacted, and how many in all: in one pass over the texts joined, since the fixed
    cost of a pass (a search per rule) is what a thousand small memory files would pay."""
    if not texts:
        return [], 0
    if not any(_SEPARATOR.strip("\n") in text for text in texts):
        joined, count = redact_secrets(_SEPARATOR.join(texts))
        parts = joined.split(_SEPARATOR)
        if len(parts) == len(texts):
            return parts, count
    # a separator in a note, or a private key's block ran across one: one text at a time
    results = [redact_secrets(text) for text in texts]
    return [text for text, _ in results], sum(found for _, found in results)


def redact_pieces(
    pieces: list[str] | tuple[str, ...], known: dict, keep_last: bool = True
) -> tuple[str, int, dict]:
    """`redact_secrets("".join(pieces))`, the same text and count, made piece by piece: each
    piece's answer is looked up in `known` (a digest of its text → (its redacted text, or None
    when nothing was redacted; how many)), and only the pieces not found are redacted (together,
    as `redact_many` does). Returns the text, the count and
    the answers of this call's pieces (the last one's only with `keep_last`), for the caller to
    keep: a prompt quotes the same memory files pass after pass, ~1 MB at 10k notes.

    Pieces are cut only after a line end (a piece not ending in one is joined to the next). No
    rule but a private key's crosses a line, and none looks past a line end for its edges (every
    lookbehind and lookahead is of a class without "\n"), so a line is redacted alike alone or
    in the whole; the rule's needle of a shape is a literal in every match, so a piece is passed
    by the rules the whole text would pass it by. Where that is not so the whole text is redacted
    as one: a piece holding a private key's literal (its block may run on) or a letter whose
    lower case is longer (then rules search all of a text, not line by line)."""
    import hashlib

    lines: list[str] = []
    for piece in pieces:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += piece
        elif piece:
            lines.append(piece)
    keys = [
        hashlib.blake2b(piece.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        for piece in lines
    ]
    found = [_known_answer(known.get(key)) for key in keys]
    missing = [index for index, answer in enumerate(found) if answer is None]
    for index in missing:
        piece = lines[index]
        if _lower(piece) is None or any(n in piece for n in _SHAPE_NEEDLES["private-key"]):
            text, count = redact_secrets("".join(lines))
            return text, count, {}
    # the pieces not known are redacted together (one pass of the rules costs the same for a
    # line as for a thousand): a piece that came out as it went in had nothing redacted, and the
    # rare one that changed is redacted alone again for its own count
    redacted, _ = redact_many([lines[index] for index in missing])
    fresh = {
        index: (None, 0) if text == lines[index] else redact_secrets(lines[index])
        for index, text in zip(missing, redacted)
    }
    answers = [fresh[index] if answer is None else answer for index, answer in enumerate(found)]
    used = {
        key: answer
        for index, (key, answer) in enumerate(zip(keys, answers))
        if keep_last or index < len(lines) - 1
    }
    text = "".join(
        piece if answer[0] is None else answer[0] for piece, answer in zip(lines, answers)
    )
    return text, sum(answer[1] for answer in answers), used


def _known_answer(found) -> tuple[str | None, int] | None:
    """A kept (redacted text or None, count), or None when there is none or it is damaged."""
    if (
        isinstance(found, tuple)
        and len(found) == 2
        and isinstance(found[0], (str, type(None)))
        and isinstance(found[1], int)
    ):
        return found
    return None


def redact_data(data):
    """`data` (JSON-like: dicts, lists, strings) with every string redacted, and how many; for
    what `context`, `recall` and the MCP tools hand to an agent."""
    strings: list[str] = []
    _collect(data, strings)
    redacted, count = redact_many(strings)
    return _rebuild(data, iter(redacted)), count


def _collect(data, out: list[str]) -> None:
    if isinstance(data, str):
        out.append(data)
    elif isinstance(data, dict):
        for value in data.values():
            _collect(value, out)
    elif isinstance(data, (list, tuple)):
        for value in data:
            _collect(value, out)


def _rebuild(data, redacted):
    if isinstance(data, str):
        return next(redacted)
    if isinstance(data, dict):
        return {key: _rebuild(value, redacted) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_rebuild(value, redacted) for value in data]
    return data


def shown(text: str) -> str:
    """What cmem shows of `text` anywhere — a command's output, a warning, an error, an MCP tool's
    answer, a hook's: its credentials redacted by the rules a prompt's are. A person or an agent
    reading it may be a model; the note itself keeps them."""
    return redact_secrets(text)[0] if text else text


def shown_data(data):
    """`data` (JSON-like) as `shown`: every string in it redacted, as the MCP tools answer."""
    return redact_data(data)[0]


def secret_kinds(text: str) -> list[str]:
    """The kinds of credential found in `text` (empty when none), in order of appearance."""
    redacted, count = redact_secrets(text)
    return list(dict.fromkeys(re.findall(r"\[REDACTED:([a-z0-9-]+)\]", redacted))) if count else []


def _is_url_password(value: str) -> bool:
    return (
        bool(value)
        and not PLACEHOLDER.match(value)
        and value.lower() not in LITERAL_PLACEHOLDERS
        and not re.search(r"[(\[{]", value)
    )


def _is_basic_credential(value: str) -> bool:
    """Base64 of `user:password` (what Basic auth and Docker's config hold)."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _looks_random(value: str) -> bool:
    """A bearer token is not prose: it has a digit, or mixes cases, or is long and unbroken."""
    return (
        bool(re.search(r"\d", value))
        or (value != value.lower() and value != value.capitalize())
        or len(value) >= 32
    )
