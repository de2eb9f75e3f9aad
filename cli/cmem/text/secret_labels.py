"""Credentials told by what names them, not by a shape of their own (docs/design.md §3, "Secrets").

- **A label and its value**, in any layout. The label is a secret word — password, passwd, pwd,
  passphrase, pass, secret, token, credential, key, 密码, 口令, 密钥, 秘钥, 令牌, 私钥, 凭证,
  凭据, 授权码 — alone, in a phrase (`api key`, `WiFi 密码`) or ending an identifier in any case
  (`DB_PASSWORD`, `appSecret`, `SECRET_KEY_BASE`, `client-key-data`, `--api-token`). The value
  follows it after `:`, `=`, `=>`, XML's `>`, `是`/`为` (or `改为`, `设置成`…), a table's `|`, an
  arrow, a verb ("is", "reads", "set to"), a space, or — after a Chinese label — nothing. The
  value is judged by its shape, the more strictly the weaker the separator: after `:` or `=`
  anything but a placeholder, a path, a URL, code or a prose word (a plain word counts only for a
  password); after a verb, a `|` or an arrow no plain word; after a space or nothing only a string
  that mixes letters with digits or symbols (or a password of digits); after the bare word "key"
  only a long random string. So "the key point is…", "密码学课程", "token economy", "password
  policy" and "public_key: ssh-ed25519 …" pass.
- **A command's password flag** (`PASSWORD_FLAGS`): `mysql -pX`, `sshpass -p X`, `redis-cli -a X`,
  `sqlcmd -P X`, `keytool -storepass X`, `openssl -passin pass:X`, `smbclient -U user%X`,
  `sqlplus user/X@db`… The flags of any tool named by a secret word (`--password X`, `--token X`)
  are labels above.
- **An access key id's secret**: the random string on the line of an AWS (`AKIA…`), Aliyun
  (`LTAI…`) or Tencent Cloud (`AKID…`) key id — a console's CSV, "id / secret", "the secret is".
- **A long hex string named by a credential word** a few words before it ("deploy token 3f2a…"),
  unless a hash word names it ("the key commit 3f2a…").
"""

from __future__ import annotations

import re

from cmem.text.line_rules import Lazy, on_lines, sub_declining
from cmem.text.words import identifier_parts

# -- a label and its value -----------------------------------------------------------------------

_ZH_LABELS = "密码|口令|密钥|秘钥|令牌|私钥|凭证|凭据|授权码"
_ZH_END = "码令钥牌证据"  # the last characters of the Chinese labels
# The words a label may end with, searched lower-cased (`on_lines`): a line holding none is skipped.
KEY_WORDS = "pass|pwd|secret|token|key|credential|certificate-data|" + _ZH_LABELS
# A key word's phrase that is always a credential's name; the bare "key" is judged by what precedes it.
_KEY_PHRASES = (
    r"private[ _-]?key(?:[ _-]?id)?"
    r"|(?:api|access|secret|client|app|signing|master|encryption|recovery|license|licence|product"
    r"|activation|wifi|wi-fi|wlan|wpa2?|account|storage|deploy|auth)[ _-]?key"
    r"|(?:client|app)[ _-]?secret"
    r"|client[ _-]?certificate[ _-]data"  # kubeconfig's, beside its client-key-data
)
_LABELLED = Lazy(
    r"(?P<key>(?i:(?P<word>password|passwd|passphrase|pwd|sshpass|(?<![A-Za-z])pass"
    r"|" + _KEY_PHRASES + r"|secret|token|credentials?|key)"
    # `SECRET_KEY_BASE`, kubeconfig's `client-key-data`: a secret word with its encoding after it
    r"(?:[_-](?:base|data|b64|base64|value))?)(?![A-Za-z0-9_])"
    r"|(?P<zh>" + _ZH_LABELS + r"))"
    r"(?P<sep>(?P<strong>[\"']?[^\S\n]*(?:=>|:=|[:=：])[^\S\n]*"
    r"|(?<=["
    + _ZH_END
    + r"])[^\S\n]*(?:设置|修改|重置|改|设|换|都|就|也|还)?[是为成]了?[:：]?[^\S\n]*)"
    r"|(?P<prose>[\"']?[^\S\n]*(?:\||->|→)[^\S\n]*"
    r"|(?i:[^\S\n]+(?:(?:is|was|has[^\S\n]+been)[^\S\n]+)?"
    r"(?:(?:reset|set|changed|updated)[^\S\n]+to|is|was|are|reads|equals|now)[^\S\n]+))"
    r"|(?P<xml>>)"
    # after a mere space, a value of letters alone is never one: its first non-letter must come
    # before the word ends (checked here, not in Python, as prose has many such words)
    r"|(?P<gap>(?:[^\S\n]+|(?<=[" + _ZH_END + r"]))(?=[\"'`]|[A-Za-z]*[0-9!-/:-@\[-`{-~])))"
    r"(?:(?P<quote>[\"'`])(?P<quoted>[^\"'`\n]{1,200})(?P=quote)|(?P<value>[!-~]+))"
)

_LABELS = {
    "password": "password",
    "passwd": "password",
    "passphrase": "password",
    "pwd": "password",
    "pass": "password",
    "sshpass": "password",
    "密码": "password",
    "口令": "password",
    "授权码": "password",
    "token": "token",
    "令牌": "token",
    "secret": "secret",
    "密钥": "secret",
    "秘钥": "secret",
    "私钥": "private-key",
    "key": "key",
    "credential": "credential",
    "credentials": "credential",
    "凭证": "credential",
    "凭据": "credential",
}
_COMPOUND_LABELS = {
    "apikey": "api-key",
    "accesskey": "access-key",
    "secretkey": "secret-key",
    "privatekey": "private-key",
    "privatekeyid": "private-key-id",
    "clientsecret": "client-secret",
}
PASSWORD_LABEL = "password"
# What a key or a token is called when it names no secret: a database's key, a page's token.
_NOT_SECRET_KEY = frozenset(
    """
public pub primary foreign sort partition cache lookup routing index hot short shortcut map group
hash row unique composite idempotency dedup dedupe range cluster natural surrogate dict object
""".split()
)
_NOT_SECRET_TOKEN = frozenset(
    """
next page pagination continuation cancellation cancel sync start end eos bos pad unk sep cls mask
special max num stop
""".split()
)
PLACEHOLDER = Lazy(
    r"^(?:\[REDACTED|<.*>$|\$(?:[{(]|[A-Za-z_][A-Za-z0-9_]*$)|\{\{|%\(|\*{3,}|x{4,}$|\.{3})",
    re.IGNORECASE,
)
_PLAIN_WORD = Lazy(r"^[A-Za-z][a-z]*(?:[-_][a-z]+)*$")
_FILE_NAME = Lazy(
    r"[\w.-]+\.(?:pem|key|crt|cer|der|p12|pfx|jks|keystore|json|ya?ml|txt|env|gpg|asc|pub|conf"
    r"|cfg|ini|toml|kdbx)",
    re.IGNORECASE,
)
# A date, a time or a version is not a credential after a space ("token v1.2.3", "密码 2024-01-01").
_DATE_OR_VERSION = Lazy(r"v?[0-9]+(?:[.:/-][0-9]+)+(?:[-+.][A-Za-z0-9.]+)?", re.IGNORECASE)
# Words of prose after "password:", not a password ("password: required"): any other plain word
# after a password key is redacted, as `password: sunshine` is a weak password, still one.
_PROSE_WORDS = frozenset(
    """
required optional needed necessary provided supplied missing unknown forgotten changed unchanged
expired invalid incorrect correct hidden protected encrypted hashed stored managed rotated shared
disabled enabled default blank empty reset updated removed deleted pending policy manager field
prompt length change please should cannot secure insecure strong private public leaked sent
""".split()
)
LITERAL_PLACEHOLDERS = frozenset(
    {"password", "passwd", "pass", "secret", "token", "changeme", "username"}
)


def redact_labelled(text: str, low: str | None) -> tuple[str, int]:
    """`text` with every value a label names redacted (`low`: the text lower-cased, or None), and
    how many."""
    count = 0

    def judge(match: re.Match[str]) -> str | None:
        nonlocal count
        found = _labelled_value(match)
        if found is None:
            return None
        group, value, label = found
        count += 1
        start = match.start(group) - match.start()
        return match.group(0)[:start] + f"[REDACTED:{label}]" + match.group(0)[start + len(value) :]

    # a label starts at most a few characters before its needle ("client_secret", "--db-password")
    # and its value ends within a quoted phrase's length after it
    text = on_lines(
        text,
        low,
        _KEY_NEEDLE,
        lambda chunk: sub_declining(_LABELLED, judge, chunk),
        (40, 260),
        _KEY_LITERALS,
    )
    return text, count


def _labelled_value(match: re.Match[str]) -> tuple[str, str, str] | None:
    """(the group holding the value, the value, its label) when `match` is a credential."""
    before = _identifier_before(match)
    weak = _label_is_weak(match, before)
    if weak is None:
        return None
    label = _label(match)
    separator = _separator(match, before)
    if separator is None:
        return None
    quoted = match.group("quoted")
    if quoted is not None:
        value, group = quoted, "quoted"
        if " " in quoted.strip():
            ok = (
                not weak
                and separator != "gap"
                and label == PASSWORD_LABEL
                and len(quoted.strip()) >= 6
                and not PLACEHOLDER.match(quoted.strip())
                and not _prose_pass(match)
            )
            return (group, value, label) if ok else None
    else:
        group = "value"
        if separator == "xml" and "</" not in match.group("value"):
            return None  # `<password>` not closed on the line: a placeholder, not a setting
        value = _trim_value(match.group("value"), xml=separator == "xml")
    if weak:  # the bare word "key": only a long random string, not hex (`_NAMED_HEX` judges that)
        ok = len(value) >= 20 and _mixes_classes(value) and not _HEX.fullmatch(value)
        ok = ok and not PLACEHOLDER.match(value) and not _FILE_NAME.fullmatch(value)
    else:
        # a bare "pass" ("boarding pass: through gate 4") needs more than a plain word
        prose = separator != "strong" or (match.group("word") or "").lower() == "pass"
        ok = looks_like_credential(value, label, prose_sep=prose, quoted=quoted is not None)
        if separator == "gap":
            ok = ok and (_mixes_classes(value) or (label == PASSWORD_LABEL and value.isdigit()))
    return (group, value, label) if ok else None


_IDENTIFIER_TAIL = Lazy(r"[A-Za-z0-9_.-]*\Z")
_WORD_BEFORE = Lazy(r"([A-Za-z]+)[^\S\n]+\Z")
_HEX = Lazy(r"[0-9a-fA-F]+")
_TAG_OPEN = Lazy(r"<[\w.:-]*\Z")


def _identifier_before(match: re.Match[str]) -> str:
    """The part of the identifier the label ends that comes before it (`DB_` of `DB_PASSWORD`,
    `--` of `--token`, `app` of `appKey`)."""
    start = match.start("key")
    tail = _IDENTIFIER_TAIL.search(match.string[max(0, start - 60) : start])
    return tail.group(0) if tail else ""


def _label_is_weak(match: re.Match[str], before: str) -> bool | None:
    """None when the match's key word names no secret here (`monkey`, `PUBLIC_KEY`, `page_token`);
    True for the bare word "key", whose value must look random; False for a label."""
    word = (match.group("word") or "").lower()
    if word not in ("key", "token") and not word.startswith(("key", "token")):
        return False
    if before and before[-1].isalnum() and word.startswith("key"):
        # glued to a word: only camelCase (`appKey`) makes it a key's name, not `monkey`, `hotkey`
        if not (match.group("word")[0] == "K" and (before[-1].islower() or before[-1].isdigit())):
            return None
    segment = _previous_segment(match, before)
    if segment in (_NOT_SECRET_KEY if word.startswith("key") else _NOT_SECRET_TOKEN):
        return None
    return word.startswith("key") and not before.strip("-")


def _previous_segment(match: re.Match[str], before: str) -> str:
    """The word before the key word: in its identifier (`public` of `publicKey`, `PUBLIC_KEY`)
    or, for a word standing alone, the word before it ("primary key")."""
    if before.strip("_.-"):
        parts = identifier_parts(before)
        return parts[-1].lower() if parts else ""
    found = _WORD_BEFORE.search(match.string[max(0, match.start("key") - 40) : match.start("key")])
    return found.group(1).lower() if found else ""


def _separator(match: re.Match[str], before: str) -> str | None:
    """How strongly the separator says that a value follows: "strong" (`:`, `=`, `是`, XML's
    `>`, a space after a flag), "prose" (a verb, a table's `|`, an arrow), "gap" (a space, or
    nothing after a Chinese label); None for a `>` that closes no XML tag of the label."""
    if match.group("strong") is not None:
        return "strong"
    if match.group("prose") is not None:
        return "prose"
    if match.group("xml") is not None:  # `<password>`, `<邮箱密码>`: the label ends a tag's name
        start = match.start("key")
        return "xml" if _TAG_OPEN.search(match.string[max(0, start - 40) : start]) else None
    return "strong" if before.startswith("-") and match.group("zh") is None else "gap"


def _label(match: re.Match[str]) -> str:
    word = match.group("zh") or match.group("word")
    if word.lower() in _LABELS:
        return _LABELS[word.lower()]
    # apiKey, api_key, api-key, "api key" are one kind; appKey and APP_KEY are app-key
    name = re.sub(r"[ _-]+", "-", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", word)).lower()
    return _COMPOUND_LABELS.get(name.replace("-", ""), name)


def _trim_value(value: str, xml: bool = False) -> str:
    """The credential itself: without trailing sentence punctuation, a closing quote, a table's
    bar or (after XML's `>`) the closing tag."""
    if xml:
        value = value.split("</", 1)[0]
    return value.rstrip(".,;)]}>\"'`|")


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


def looks_like_credential(
    value: str, label: str, prose_sep: bool = False, quoted: bool = False
) -> bool:
    if len(value) < 6 or PLACEHOLDER.match(value):
        return False
    if value.isdigit():
        return label == PASSWORD_LABEL  # a PIN-like password, but `tokens=120000` is a count
    if _PLAIN_WORD.match(value):
        # "required", "Optional": prose; `password: sunshine` is a password, "the password is
        # sunshine" may be prose, and a plain word named a token or a key is prose too
        return label == PASSWORD_LABEL and not prose_sep and value.lower() not in _PROSE_WORDS
    if _is_path(value) or re.match(r"^[a-z][a-z0-9+.-]*://", value, re.IGNORECASE):
        return False  # a path or a URL names where a secret is, not the secret
    if _FILE_NAME.fullmatch(value):
        return False  # `--key client.pem`: a file holding the secret
    if not quoted and re.search(r"[(\[{]", value):
        return False  # code: os.environ["KEY"], getenv(…), {{ secrets.X }}; a quoted `(` is text
    return True


_RANDOM_RUN = Lazy(r"(?=[^/]{0,63}[a-z])(?=[^/]{0,63}[A-Z])(?=[^/]{0,63}[0-9])[^/]{24,}")


def _is_path(value: str) -> bool:
    """A file's path (`/run/secrets/db`, `~/.pgpass`), not base64 that starts with a slash: no
    `+` or `=` in it, and no run of 24 characters mixing cases and digits between its slashes."""
    return (
        value.startswith(("/", "~/", "./"))
        and not re.search(r"[+=]", value)
        and not _RANDOM_RUN.search(value)
    )


def _mixes_classes(value: str) -> bool:
    """Letters with digits, or letters or digits with a symbol: what a password or a key written
    after a mere space looks like ("Hunter2pass", "P@ssw0rd!"), unlike a word or a version."""
    core = value.rstrip("!?")
    if core.endswith((":", "：")):
        return False  # "token budget: 12000": the word is the next label
    if _DATE_OR_VERSION.fullmatch(core):
        return False
    letter = re.search(r"[A-Za-z]", core) is not None
    digit = re.search(r"[0-9]", core) is not None
    symbol = re.search(r"[^A-Za-z0-9_.-]", core) is not None
    return (letter and digit) or (symbol and (letter or digit))


# -- a long hex string named by a credential word --------------------------------------------------

# A long hex string named as a credential a few words before it ("deploy token 3f2a…",
# "api key 9c1d…"); a hex string in prose that no such word names (a git SHA, a checksum) stays.
_NAMED_HEX = Lazy(
    r"(?i)(\b(?:tokens?|keys?|secrets?|passwords?|credentials?|apikey)\b(?:[^\S\n]+[A-Za-z]+){0,3}?[^\S\n]*[:=]?[^\S\n]*)"
    r"((?=[0-9a-f]{0,127}[a-f])(?=[0-9a-f]{0,127}[0-9])[0-9a-f]{32,128})(?![0-9a-z])"
)
_HASH_WORDS = Lazy(r"(?i)\b(?:commit|sha[0-9]*|hash|checksum|digest|revision|rev|fingerprint|id)\b")


def redact_named_hex(text: str, low: str | None) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if _HASH_WORDS.search(match.group(1)):
            return match.group(0)  # "the key commit 3f2a…": a hash named in passing
        count += 1
        return f"{match.group(1)}[REDACTED:hex-token]"

    text = on_lines(
        text,
        low,
        _KEY_NEEDLE,
        lambda chunk: _NAMED_HEX.sub(replace, chunk),
        (16, 220),
        _KEY_LITERALS,
    )
    return text, count


# -- a command's password flag -------------------------------------------------------------------

# (tools, flags): a flag ending in "+" takes its value glued only (`mysql -pX`; `mysql -p X` asks,
# and X is a database); a flag after "login:" only after that subcommand (`docker run -p 80:80`
# publishes a port); other one-letter flags take it glued or as the next word.
PASSWORD_FLAGS = [
    (
        "mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlshow mysqlpump mysqlbinlog"
        " mariadb mariadb-dump mariadb-admin mariadb-import mariadb-check",
        "-p+",
    ),
    ("sshpass", "-p"),
    ("redis-cli valkey-cli keydb-cli", "-a"),
    ("mongo mongosh mongodump mongorestore mongoexport mongoimport mongostat mongotop", "-p"),
    ("sqlcmd bcp osql isql ipmitool mosquitto_pub mosquitto_sub zip zipcloak unzip", "-P"),
    ("7z 7za 7zz 7zr rar unrar", "-p+"),
    (
        "ldapsearch ldapmodify ldapadd ldapdelete ldappasswd ldapwhoami ldapcompare ldapmodrdn",
        "-w",
    ),
    (
        "keytool",
        "-storepass -keypass -srcstorepass -deststorepass -srckeypass -destkeypass -new",
    ),
    ("openssl", "-passin -passout -pass -k"),
    ("snmpwalk snmpget snmpset snmpbulkwalk snmpgetnext snmptrap", "-A -X"),
    ("smbclient smbmap smbget rpcclient", "-U%"),  # user%password
    ("lftp", "-u,"),  # user,password
    ("xfreerdp xfreerdp3 wlfreerdp", "/p:"),
    ("rdesktop psexec", "-p"),
    ("docker podman nerdctl buildah skopeo az", "login:-p"),
    ("sqlplus rman expdp impdp sqlldr", "@/"),  # user/password@database
]
_FLAGS = {tool: tuple(flags.split()) for tools, flags in PASSWORD_FLAGS for tool in tools.split()}
_TOOL_NAMES = "|".join(sorted((re.escape(tool) for tool in _FLAGS), key=len, reverse=True))
_TOOL = Lazy(r"(?<![\w.-])(?:[\w.~-]*[/\\])?(?P<tool>" + _TOOL_NAMES + r")(?:\.exe)?(?![\w.-])")
_SHELL_WORD = Lazy(r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'|;&])+")
_COMMAND_END = Lazy(r"\|\|?|;|&&?|(?<!\S)#")


def redact_flags(text: str, low: str | None) -> tuple[str, int]:
    """`text` with the passwords given to commands' password flags redacted, and how many."""
    count = 0

    def on_line(line: str) -> str:
        nonlocal count
        spans: list[tuple[int, int]] = []
        for tool in _TOOL.finditer(line):
            end = _COMMAND_END.search(line, tool.end())
            words = list(_SHELL_WORD.finditer(line, tool.end(), end.start() if end else len(line)))
            spans += _flag_values(_FLAGS[tool.group("tool").lower()], words)
        for start, stop in sorted(set(spans), reverse=True):
            line = line[:start] + "[REDACTED:password]" + line[stop:]
            count += 1
        return line

    def substitute(chunk: str) -> str:
        return "\n".join(on_line(line) for line in chunk.split("\n"))

    literals = tuple(_FLAGS)
    return on_lines(text, low, _TOOL_NEEDLE, substitute, None, literals), count


def _flag_values(flags: tuple[str, ...], words: list[re.Match[str]]) -> list[tuple[int, int]]:
    """The spans of the passwords `flags` take among a command's `words`."""
    spans: list[tuple[int, int]] = []
    texts = [word.group(0) for word in words]
    for index, word in enumerate(texts):
        for flag in flags:
            if flag.startswith("login:"):
                flag = flag[len("login:") :]
                if "login" not in texts[:index]:
                    continue
            if flag == "@/":  # sqlplus scott/tiger@orcl: in the first word that is no flag
                if index == _first_word(texts) and "/" in word[1:]:
                    start = word.index("/", 1) + 1
                    stop = word.find("@", start)
                    stop = len(word) if stop < 0 else stop
                    if _is_flag_password(word[start:stop]):
                        spans.append(_span(words[index], start, stop))
                continue
            found = _flag_value(flag, texts, index)
            if found is not None:
                which, start, stop = found
                if _is_flag_password(texts[which][start:stop]):
                    spans.append(_span(words[which], start, stop))
    return spans


def _first_word(texts: list[str]) -> int:
    return next((i for i, text in enumerate(texts) if not text.startswith(("-", "/"))), -1)


def _flag_value(flag: str, texts: list[str], index: int) -> tuple[int, int, int] | None:
    """(which word, start, stop) of the value `flag` takes at `texts[index]`, if it is there."""
    word = texts[index]
    split = flag[-1] if flag[-1] in "%," else None
    name = flag.rstrip("+%,")
    glued_only = flag.endswith("+")
    if flag == "/p:":
        return (index, 3, len(word)) if word.startswith("/p:") and len(word) > 3 else None
    if word == name and not glued_only and index + 1 < len(texts):
        which, start = index + 1, 0
    elif len(name) == 2 and word.startswith(name) and len(word) > 2:
        which, start = index, 2
    else:
        return None
    value = texts[which]
    stop = len(value)
    if value[start:stop][:1] in "\"'" and value.endswith(value[start]) and stop - start >= 2:
        start, stop = start + 1, stop - 1  # a quoted password: the quotes stay
    if split is not None:
        cut = value.find(split, start)
        if cut < 0:
            return None
        start = cut + 1
    if name in ("-passin", "-passout", "-pass"):  # openssl: pass:X; env:, file:, fd: name none
        if not value.startswith("pass:", start):
            return None
        start += len("pass:")
    return which, start, stop


def _is_flag_password(value: str) -> bool:
    return (
        len(value) >= 3
        and not value.startswith("-")
        and not PLACEHOLDER.match(value)
        and value.lower() not in LITERAL_PLACEHOLDERS
    )


def _span(word: re.Match[str], start: int, stop: int) -> tuple[int, int]:
    return word.start() + start, word.start() + stop


# -- an access key id's secret -------------------------------------------------------------------

# An access key id names the random string beside it on its line as its secret. Run after the
# shape rules, so the id is its placeholder then: (the id's placeholder, the secret's label).
_ACCESS_KEY_IDS = [
    ("[redacted:aws-access-key]", "aws-secret-key"),
    ("[redacted:aliyun-access-key-id]", "aliyun-access-key-secret"),
    ("[redacted:tencent-secret-id]", "tencent-secret-key"),
]
# the secret: 30 to 64 characters of base64 mixing upper and lower case and digits (AWS: 40,
# Aliyun: 30, Tencent Cloud: 32), standing alone
_PAIRED_SECRET = Lazy(
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+=]{0,63}[a-z])(?=[A-Za-z0-9/+=]{0,63}[A-Z])"
    r"(?=[A-Za-z0-9/+=]{0,63}[0-9])[A-Za-z0-9/+=]{30,64}(?![A-Za-z0-9/+=])"
)


def redact_key_pairs(text: str, low: str | None) -> tuple[str, int]:
    """`text` with the secret on an access key id's line redacted, and how many."""
    count = 0
    for placeholder, label, needle in _ACCESS_KEY_NEEDLES:

        def replace(match: re.Match[str], label: str = label) -> str:
            nonlocal count
            count += 1
            return f"[REDACTED:{label}]"

        def substitute(chunk: str, placeholder: str = placeholder, replace=replace) -> str:
            return "\n".join(
                _PAIRED_SECRET.sub(replace, line) if placeholder in line.lower() else line
                for line in chunk.split("\n")
            )

        text = on_lines(text, low, needle, substitute, None, (placeholder,))
    return text, count


_ACCESS_KEY_NEEDLES = [
    (placeholder, label, Lazy(re.escape(placeholder))) for placeholder, label in _ACCESS_KEY_IDS
]
_KEY_NEEDLE = Lazy(KEY_WORDS)
_KEY_LITERALS = tuple(KEY_WORDS.split("|"))
_TOOL_NEEDLE = Lazy(_TOOL_NAMES)
