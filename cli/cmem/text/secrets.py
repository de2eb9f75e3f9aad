"""Redact credential-looking strings before a prompt leaves the machine (SPEC §3, "Secrets").

Two kinds of rule. Known token formats (OpenAI, Anthropic, GitHub, AWS, Slack, Google, Stripe,
Telegram and Discord bots, JWTs, PEM private keys, bearer tokens, ~50 in all) are matched by
their shape wherever they appear. Secrets
without a shape — `password: …`, `DB_TOKEN=…`, `密码：…` — are matched by the key naming them,
and only when the value looks like a credential: one word of printable ASCII, six characters or
more, not a plain dictionary-looking word, a number of `tokens`, a path, a URL or a placeholder.
So "the password policy says…", "token budget: 12000" and "secret santa" pass through untouched.

A plain word is a password only after a password key with `:` or `=` (`password: sunshine`),
never after "is" ("the password is incorrect") nor one of a few prose words ("password: required").
A long hex string is a credential only when a credential word names it a few words before
("deploy token 3f2a…") and no hash word does ("the key commit 3f2a…"); git SHAs in prose stay.
Basic-auth and Docker `auth` values are redacted only when they decode to `user:password`.
The corpus in tests/secrets_corpus.py measures all this (docs/reliability.md, "Secrets").

The output is deterministic: the same text always gives the same bytes, so prompts stay cacheable.
"""

from __future__ import annotations

import re


class _Lazy:
    """`re.compile(pattern, flags)`, done on first use. The ~80 rules below cost more to compile
    than a `cmem recall` answered from its index spends on everything else it imports, and most
    calls never run most of them: each rule runs only when its literal is in the text."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return self._compiled

    def sub(self, repl, string: str) -> str:
        return self.compiled.sub(repl, string)

    def finditer(self, string: str):
        return self.compiled.finditer(string)

    def search(self, string: str):
        return self.compiled.search(string)

    def match(self, string: str):
        return self.compiled.match(string)


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
        # `<bot id>:<35 characters>`, alone or in the Bot API's URLs (`…/bot<token>/getMe`); the
        # secret half is mixed-case base64 (it starts with `AA` today, which is not relied on)
        "telegram-bot-token",
        _Lazy(
            r"(?:(?<=bot)|(?<![A-Za-z0-9_:-]))[0-9]{8,10}:"
            r"(?=[A-Za-z0-9_-]{0,34}[a-z])(?=[A-Za-z0-9_-]{0,34}[A-Z])[A-Za-z0-9_-]{35}" + _END
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
# A long hex string named as a credential a few words before it ("deploy token 3f2a…",
# "api key 9c1d…"); a hex string in prose that no such word names (a git SHA, a checksum) stays.
_NAMED_HEX = _Lazy(
    r"(?i)(\b(?:tokens?|keys?|secrets?|passwords?|credentials?|apikey)\b(?:[^\S\n]+[A-Za-z]+){0,3}?[^\S\n]*[:=]?[^\S\n]*)"
    r"((?=[0-9a-f]{0,127}[a-f])(?=[0-9a-f]{0,127}[0-9])[0-9a-f]{32,128})(?![0-9a-z])"
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
    "telegram-bot-token": _Lazy(r":[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    "discord-bot-token": _Lazy(r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}"),
    "airtable-token": _Lazy(r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),  # `pat` begins many words
}

_SHAPE_NEEDLES_BYTES = {
    label: tuple(n.encode() for n in needles) for label, needles in _SHAPE_NEEDLES.items()
}

# Per single-line rule, what its lines must hold, searched in the lower-cased text (case-sensitive
# literal search is several times faster than an IGNORECASE one). A `_NAMED_HEX` line needs a
# credential word too, so it shares the key-value rule's needle.
_KEY_WORDS = r"pass|pwd|secret|token|key|credential|密码|口令|密钥|秘钥|令牌"
_NEEDLE = {
    "aws": _Lazy(r"aws_secret_access_key"),
    "bearer": _Lazy(r"bearer"),
    "basic": _Lazy(r"basic|auth"),
    "curl": _Lazy(r"-u\b|--user"),
    "netrc": _Lazy(r"machine"),
    "azure": _Lazy(r"accountkey=|sharedaccesskey=|sig="),
    "url": _Lazy(r"://"),
    "key": _Lazy(_KEY_WORDS),
    "hex": _Lazy(_KEY_WORDS),
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
    "key": tuple(_KEY_WORDS.split("|")),
    "hex": tuple(_KEY_WORDS.split("|")),
}

_HASH_WORDS = _Lazy(
    r"(?i)\b(?:commit|sha[0-9]*|hash|checksum|digest|revision|rev|fingerprint|id)\b"
)

# `key: value`, `key=value`, `"key": "value"`, `密码：value`, `api key is value`: the key matched
# from the word that ends it (`DB_PASSWORD`; not `token_budget`), with no leading `[\w.-]*`
# (quadratic on long identifiers); a quoted value may hold spaces.
_KEY_VALUE = _Lazy(
    r"(?P<key>(?i:(?P<word>password|passwd|passphrase|pwd|(?<![A-Za-z])pass|secret|token"
    r"|api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key(?:[ _-]?id)?|client[ _-]?secret"
    r"|(?:wifi|wi-fi|wlan|wpa2?|license|licence|encryption|recovery|master|signing)[ _-]?key))(?![A-Za-z0-9_])"
    r"|(?P<zh>密码|口令|密钥|秘钥|令牌))"
    r"(?P<sep>[\"']?[^\S\n]*(?:=>|[:=：])[^\S\n]*|(?<=[码令钥牌])[是为][^\S\n]*|(?P<is>[^\S\n]+(?:is|was)[^\S\n]+))"
    r"(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]{1,200})(?P=quote)|(?P<value>[!-~]+))"
)

_LABELS = {
    "password": "password",
    "passwd": "password",
    "passphrase": "password",
    "pwd": "password",
    "pass": "password",
    "密码": "password",
    "口令": "password",
    "token": "token",
    "令牌": "token",
    "secret": "secret",
    "密钥": "secret",
    "秘钥": "secret",
}
_COMPOUND_LABELS = {
    "apikey": "api-key",
    "accesskey": "access-key",
    "secretkey": "secret-key",
    "privatekey": "private-key",
    "privatekeyid": "private-key-id",
    "clientsecret": "client-secret",
}
_PASSWORD_LABEL = "password"
_PLACEHOLDER = _Lazy(r"^(?:\[REDACTED|<.*>$|\$|\{\{|%\(|\*{3,}|x{4,}$|\.{3})", re.IGNORECASE)
_PLAIN_WORD = _Lazy(r"^[A-Za-z][a-z]*(?:[-_][a-z]+)*$")
# Words that follow "password:" in prose rather than being one ("password: required"). A plain
# word after a password key is otherwise redacted: `password: sunshine` is a weak password, still one.
_PROSE_WORDS = frozenset(
    """
required optional needed necessary provided supplied missing unknown forgotten changed unchanged
expired invalid incorrect correct hidden protected encrypted hashed stored managed rotated shared
disabled enabled default blank empty reset updated removed deleted pending policy manager field
prompt length change please should cannot secure insecure strong private public leaked sent
""".split()
)
_LITERAL_PLACEHOLDERS = frozenset(
    {"password", "passwd", "pass", "secret", "token", "changeme", "username"}
)


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
        text = _on_lines(text, low, _NEEDLE[name], pattern, repl, literals=_NEEDLE_LITERALS[name])
        if count != before:
            low = _lower(text)

    def replace_key_value(match: re.Match[str]) -> str:
        nonlocal count
        label = _label(match)
        quoted = match.group("quoted")
        if quoted is not None:
            value, group = quoted, "quoted"
            ok = (
                _looks_like_credential(value, label, prose_sep=bool(match.group("is")))
                if " " not in value.strip()
                else label == _PASSWORD_LABEL
                and len(value.strip()) >= 6
                and not _PLACEHOLDER.match(value.strip())
                and not _prose_pass(match)
            )
        else:
            group = "value"
            value = _trim_value(match.group("value"))
            # a bare "pass" ("boarding pass: through gate 4") needs more than a plain word
            prose = bool(match.group("is")) or (match.group("word") or "").lower() == "pass"
            ok = _looks_like_credential(value, label, prose_sep=prose)
        if not ok:
            return match.group(0)
        count += 1
        start = match.start(group) - match.start()
        return match.group(0)[:start] + f"[REDACTED:{label}]" + match.group(0)[start + len(value) :]

    before = count
    # a key word starts at most a few characters before its needle ("client_secret", "private_key_id")
    # and its value ends within a quoted phrase's length after it
    text = _on_lines(
        text, low, _NEEDLE["key"], _KEY_VALUE, replace_key_value, (16, 260), _NEEDLE_LITERALS["key"]
    )
    if count != before:
        low = _lower(text)

    def replace_named_hex(match: re.Match[str]) -> str:
        nonlocal count
        if _HASH_WORDS.search(match.group(1)):
            return match.group(0)  # "the key commit 3f2a…": a hash named in passing
        count += 1
        return f"{match.group(1)}[REDACTED:hex-token]"

    text = _on_lines(
        text, low, _NEEDLE["hex"], _NAMED_HEX, replace_named_hex, (16, 220), _NEEDLE_LITERALS["hex"]
    )
    return text, count


def _prose_pass(match: re.Match[str]) -> bool:
    """A bare "pass" written as a word of prose ("boarding pass: "gate 12""), not as a setting's
    name (`PASS=`, `DB_PASS=`): a quoted phrase after it is not a passphrase."""
    word = match.group("word") or ""
    start = match.start("word")
    return (
        word.lower() == "pass"
        and word != "PASS"
        and not (start > 0 and match.string[start - 1] in "_-.")
    )


def _lower(text: str) -> str | None:
    """`text` lower-cased, or None when a letter's lower case is longer (offsets would shift)."""
    low = text.lower()
    return low if len(low) == len(text) else None


def _on_lines(
    text: str,
    low: str | None,
    needle: _Lazy,
    pattern: _Lazy,
    repl,
    window: tuple[int, int] | None = None,
    literals: tuple[str, ...] = (),
) -> str:
    """`pattern.sub(repl, …)` on the lines of `text` where `needle` occurs in `low` (the text
    lower-cased), for rules that never cross a line: notes are mostly prose without a key word,
    and a literal search over all of it costs far less than the rule's own try at every position.
    `literals`: one of them is in every match of `needle`; when none is in `low`, neither the
    needle nor the rule is compiled."""
    if low is None:  # a rare letter whose lower case is longer: search it all
        return pattern.sub(repl, text)
    if literals and not any(literal in low for literal in literals):
        return text
    spans: list[tuple[int, int]] = []
    for match in needle.finditer(low):
        if spans and match.start() < spans[-1][1]:
            continue  # on a line already taken
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        if window:  # the rule's match lies within these many characters around its needle
            start, end = max(start, match.start() - window[0]), min(end, match.end() + window[1])
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
                continue
        spans.append((start, end))
    if not spans:
        return text
    out, position = [], 0
    for start, end in spans:
        out += [text[position:start], pattern.sub(repl, text[start:end])]
        position = end
    out.append(text[position:])
    return "".join(out)


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


def secret_kinds(text: str) -> list[str]:
    """The kinds of credential found in `text` (empty when none), in order of appearance."""
    redacted, count = redact_secrets(text)
    return list(dict.fromkeys(re.findall(r"\[REDACTED:([a-z0-9-]+)\]", redacted))) if count else []


def _label(match: re.Match[str]) -> str:
    word = (match.group("zh") or match.group("word")).lower()
    if word in _LABELS:
        return _LABELS[word]
    joined = re.sub(r"[ _-]", "", word)  # apiKey, api_key, api-key, "api key" are one kind
    return _COMPOUND_LABELS.get(joined, joined)


def _trim_value(value: str) -> str:
    """The credential itself: without trailing sentence punctuation or a closing quote."""
    return value.rstrip(".,;)]}>\"'`")


def _looks_like_credential(value: str, label: str, prose_sep: bool = False) -> bool:
    if len(value) < 6 or _PLACEHOLDER.match(value):
        return False
    if value.isdigit():
        return label == _PASSWORD_LABEL  # a PIN-like password, but `tokens=120000` is a count
    if _PLAIN_WORD.match(value):
        # "required", "Optional": prose; `password: sunshine` is a password, "the password is
        # sunshine" may be prose, and a plain word named a token or a key is prose too
        return label == _PASSWORD_LABEL and not prose_sep and value.lower() not in _PROSE_WORDS
    if value.startswith(("/", "~/", "./")) or re.match(
        r"^[a-z][a-z0-9+.-]*://", value, re.IGNORECASE
    ):
        return False  # a path or a URL names where a secret is, not the secret
    if re.search(r"[(\[{]", value):
        return False  # code: os.environ["KEY"], getenv(…), {{ secrets.X }}
    return True


def _is_url_password(value: str) -> bool:
    return (
        bool(value)
        and not _PLACEHOLDER.match(value)
        and value.lower() not in _LITERAL_PLACEHOLDERS
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
