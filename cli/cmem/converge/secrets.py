"""Redact credential-looking strings before a prompt leaves the machine (SPEC §3, "Secrets").

Two kinds of rule. Known token formats (OpenAI, Anthropic, GitHub, AWS, Slack, Google, Stripe,
JWTs, PEM private keys, bearer tokens) are matched by their shape wherever they appear. Secrets
without a shape — `password: …`, `DB_TOKEN=…`, `密码：…` — are matched by the key naming them,
and only when the value looks like a credential: one word of printable ASCII, six characters or
more, not a plain dictionary-looking word, a number of `tokens`, a path, a URL or a placeholder.
So "the password policy says…", "token budget: 12000" and "secret santa" pass through untouched.

Known limit: a password that is a plain lowercase word (`password: sunshine`) is not redacted.

The output is deterministic: the same text always gives the same bytes, so prompts stay cacheable.
"""

from __future__ import annotations

import re

_START = r"(?<![A-Za-z0-9_-])"  # a token starts at a word edge …
_END = r"(?![A-Za-z0-9_-])"  # … and ends at one

# (label, pattern) in order: specific shapes before the generic ones that could also match them.
_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # the whole block; or, for a paste cut short, its header and base64 lines
            r"(?:.{0,20000}?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n(?:[A-Za-z-]+:[^\n]*|[A-Za-z0-9+/=]{4,}))*)",
            re.DOTALL,
        ),
    ),
    ("anthropic-key", re.compile(_START + r"sk-ant-[A-Za-z0-9_-]{20,}" + _END)),
    ("openai-key", re.compile(_START + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]{0,200}\d)[A-Za-z0-9_-]{20,}" + _END)),
    ("github-token", re.compile(_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})" + _END)),
    ("aws-access-key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    ("slack-token", re.compile(_START + r"xox[abpros]-[A-Za-z0-9-]{10,}" + _END)),
    ("google-api-key", re.compile(_START + r"AIza[0-9A-Za-z_-]{35}" + _END)),
    ("stripe-key", re.compile(_START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _END)),
    ("jwt", re.compile(_START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _END)),
]

# Shapes whose prefix stays readable: only the value is replaced.
_AWS_SECRET = re.compile(r"(?i)(aws_secret_access_key[\"']?[^\S\n]*[:=][^\S\n]*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])")
_BEARER = re.compile(r"(?i)(\bbearer[^\S\n]+)([A-Za-z0-9._~+/=-]{16,})")
_URL_PASSWORD = re.compile(r"((?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s/@]{6,})(@)", re.IGNORECASE)

# `key: value`, `key = value`, `key=value`, `"key": "value"`, `密码：value`, `密码是value`. The key
# is matched from the word that ends it (`DB_PASSWORD`, `githubToken`, `api-key`), so `token_budget`
# and `max_tokens` are not keys here. (A leading `[\w.-]*` would make long identifiers quadratic.)
_KEY_VALUE = re.compile(
    r"(?P<key>(?i:(?P<word>password|passwd|passphrase|pwd|secret|token"
    r"|api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key|client[ _-]?secret))(?![A-Za-z0-9_])"
    r"|(?P<zh>密码|口令|密钥|秘钥|令牌))"
    r"(?P<sep>[\"']?[^\S\n]*(?:=>|[:=：])[^\S\n]*|(?<=[码令钥牌])[是为][^\S\n]*)"
    r"(?P<quote>[\"'`]?)(?P<value>[!-~]+)"
)

_LABELS = {
    "password": "password", "passwd": "password", "passphrase": "password", "pwd": "password",
    "密码": "password", "口令": "password", "token": "token", "令牌": "token",
    "secret": "secret", "密钥": "secret", "秘钥": "secret",
}
_COMPOUND_LABELS = {
    "apikey": "api-key", "accesskey": "access-key", "secretkey": "secret-key",
    "privatekey": "private-key", "clientsecret": "client-secret",
}
_PASSWORD_LABEL = "password"
_PLACEHOLDER = re.compile(r"^(?:\[REDACTED|<.*>$|\$|\{\{|%\(|\*{3,}|x{4,}$|\.{3})", re.IGNORECASE)
_PLAIN_WORD = re.compile(r"^[A-Za-z][a-z]*(?:[-_][a-z]+)*$")


def redact_secrets(text: str) -> tuple[str, int]:
    """`text` with credential-looking strings replaced by `[REDACTED:<kind>]`, and how many."""
    count = 0

    def replace_whole(label: str):
        def sub(match: re.Match[str]) -> str:
            nonlocal count
            count += 1
            return f"[REDACTED:{label}]"

        return sub

    for label, pattern in _SHAPES:
        text = pattern.sub(replace_whole(label), text)

    def replace_value(label: str, check=None):
        def sub(match: re.Match[str]) -> str:
            nonlocal count
            if check is not None and not check(match.group(2)):
                return match.group(0)
            count += 1
            return f"{match.group(1)}[REDACTED:{label}]{match.group(3) if match.lastindex == 3 else ''}"

        return sub

    text = _AWS_SECRET.sub(replace_value("aws-secret-key"), text)
    text = _BEARER.sub(replace_value("bearer-token", _looks_random), text)
    text = _URL_PASSWORD.sub(replace_value("url-password", lambda value: _looks_like_credential(value, _PASSWORD_LABEL)), text)

    def replace_key_value(match: re.Match[str]) -> str:
        nonlocal count
        label = _label(match)
        value = _trim_value(match.group("value"), match.group("quote"))
        if not _looks_like_credential(value, label):
            return match.group(0)
        count += 1
        start = match.start("value") - match.start()
        return match.group(0)[:start] + f"[REDACTED:{label}]" + match.group("value")[len(value):]

    text = _KEY_VALUE.sub(replace_key_value, text)
    return text, count


def _label(match: re.Match[str]) -> str:
    word = (match.group("zh") or match.group("word")).lower()
    if word in _LABELS:
        return _LABELS[word]
    joined = re.sub(r"[ _-]", "", word)  # apiKey, api_key, api-key, "api key" are one kind
    return _COMPOUND_LABELS.get(joined, joined)


def _trim_value(value: str, quote: str) -> str:
    """The credential itself: up to the closing quote, without trailing sentence punctuation."""
    if quote and quote in value:
        return value[: value.index(quote)]
    return value.rstrip(".,;)]}>\"'`")


def _looks_like_credential(value: str, label: str) -> bool:
    if len(value) < 6 or _PLACEHOLDER.match(value):
        return False
    if value.isdigit():
        return label == _PASSWORD_LABEL  # a PIN-like password, but `tokens=120000` is a count
    if _PLAIN_WORD.match(value):
        return False  # "required", "Optional", "sunshine": prose, or a password too weak to hide
    if value.startswith(("/", "~/", "./")) or re.match(r"^[a-z][a-z0-9+.-]*://", value, re.IGNORECASE):
        return False  # a path or a URL names where a secret is, not the secret
    if re.search(r"[(\[{]", value):
        return False  # code: os.environ["KEY"], getenv(…), {{ secrets.X }}
    return True


def _looks_random(value: str) -> bool:
    """A bearer token is not prose: it has a digit, or mixes cases, or is long and unbroken."""
    return bool(re.search(r"\d", value)) or (value != value.lower() and value != value.capitalize()) or len(value) >= 32
