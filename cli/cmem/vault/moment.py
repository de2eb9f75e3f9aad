"""Dates as Obsidian writes them: moment.js formats (the daily-notes setting `YYYY/MM/YYYY-MM-DD`,
a template's `{{date:dddd, MMMM Do}}`), and the date a note is of — from its name, its
frontmatter, else its file time — which files it in the archive.

Names are English, as moment's default locale writes them; a vault whose daily notes are named
in another locale's words still gets its numbers right (`YYYY`, `MM`, `DD`)."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()

# longest first: `YYYY` before `YY`, `MMMM` before `MM`; `[...]` is text kept as it is
_TOKEN = re.compile(
    r"\[[^\]]*\]|YYYY|YY|Q|MMMM|MMM|MM|Mo|M|DDDD|DDD|Do|DD|D|dddd|ddd|dd|do|d|E|e"
    r"|GGGG|gggg|WW|ww|Wo|wo|W|w|HH|H|hh|h|kk|k|mm|m|ss|s|A|a|X|x|Z"
)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _token(token: str, when: datetime) -> str:
    if token.startswith("["):
        return token[1:-1]
    iso_year, iso_week, iso_day = when.isocalendar()
    hour12 = when.hour % 12 or 12
    values = {
        "YYYY": f"{when.year:04d}",
        "YY": f"{when.year % 100:02d}",
        "Q": str((when.month - 1) // 3 + 1),
        "MMMM": _MONTHS[when.month - 1],
        "MMM": _MONTHS[when.month - 1][:3],
        "MM": f"{when.month:02d}",
        "Mo": _ordinal(when.month),
        "M": str(when.month),
        "DDDD": f"{when.timetuple().tm_yday:03d}",
        "DDD": str(when.timetuple().tm_yday),
        "Do": _ordinal(when.day),
        "DD": f"{when.day:02d}",
        "D": str(when.day),
        "dddd": _DAYS[when.weekday()],
        "ddd": _DAYS[when.weekday()][:3],
        "dd": _DAYS[when.weekday()][:2],
        "do": _ordinal((when.weekday() + 1) % 7),
        "d": str((when.weekday() + 1) % 7),
        "E": str(iso_day),
        "e": str((when.weekday() + 1) % 7),
        "GGGG": f"{iso_year:04d}",
        "gggg": f"{iso_year:04d}",
        "WW": f"{iso_week:02d}",
        "ww": f"{iso_week:02d}",
        "Wo": _ordinal(iso_week),
        "wo": _ordinal(iso_week),
        "W": str(iso_week),
        "w": str(iso_week),
        "HH": f"{when.hour:02d}",
        "H": str(when.hour),
        "hh": f"{hour12:02d}",
        "h": str(hour12),
        "kk": f"{when.hour or 24:02d}",
        "k": str(when.hour or 24),
        "mm": f"{when.minute:02d}",
        "m": str(when.minute),
        "ss": f"{when.second:02d}",
        "s": str(when.second),
        "A": "AM" if when.hour < 12 else "PM",
        "a": "am" if when.hour < 12 else "pm",
        "X": str(int(when.timestamp())),
        "x": str(int(when.timestamp() * 1000)),
        "Z": when.strftime("%z")[:3] + ":" + when.strftime("%z")[3:] if when.tzinfo else "",
    }
    return values[token]


def format_moment(pattern: str, when: datetime) -> str:
    """`when` written with a moment.js format (`YYYY-MM-DD`, `YYYY/MM/YYYY-MM-DD ddd`)."""
    return _TOKEN.sub(lambda match: _token(match.group(0), when), pattern)


# {{date}}, {{time}}, {{title}}, {{date:FORMAT}}, {{date+1d:FORMAT}}, {{yesterday}}, {{tomorrow}}
_VARIABLE = re.compile(
    r"\{\{\s*(date|time|title|yesterday|tomorrow)\s*(?:([+-]\d+)([yqmwdhs]))?\s*(?::([^}]*))?\}\}",
    re.IGNORECASE,
)
_UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}


def fill_core_template(text: str, when: datetime, title: str, date_format: str) -> str:
    """A template of Obsidian's core Templates (and daily notes) filled in for the note of
    `when`: `{{date}}` in the daily notes' format, `{{time}}` as HH:mm, `{{title}}` the note's
    name, `{{date:FORMAT}}`, an offset (`{{date+1d}}`), `{{yesterday}}`, `{{tomorrow}}`."""

    def fill(match: re.Match) -> str:
        name, amount, unit, pattern = match.groups()
        name = name.lower()
        if name == "title":
            return title
        shifted = when
        if name in ("yesterday", "tomorrow"):
            shifted = when + timedelta(days=-1 if name == "yesterday" else 1)
        if amount:
            shifted = _shift(shifted, int(amount), unit)
        if pattern is not None and pattern.strip():
            return format_moment(pattern.strip(), shifted)
        return format_moment("HH:mm" if name == "time" else date_format, shifted)

    return _VARIABLE.sub(fill, text)


def _shift(when: datetime, amount: int, unit: str) -> datetime:
    if unit in _UNITS:
        return when + timedelta(seconds=amount * _UNITS[unit])
    months = amount * {"y": 12, "q": 3}.get(unit, 1)
    year, month = divmod(when.month - 1 + months, 12)
    day = min(when.day, 28)
    return when.replace(year=when.year + year, month=month + 1, day=day)


# --- the date a note is of ---------------------------------------------------------------

_NAME_DATE = re.compile(
    r"(?<!\d)(\d{4})([-_.]?)(\d{2})\2(\d{2})(?!\d)"
)  # 2024-04-30, 2024_04_30, 2024.04.30, 20240430
_FRONTMATTER_DATE = re.compile(
    r"^(?:date|created|day|created_at|creation_date)\s*:\s*['\"]?(\d{4})-(\d{2})-(\d{2})",
    re.IGNORECASE | re.MULTILINE,
)


def _valid(year: str, month: str, day: str) -> date | None:
    try:
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


def date_in_name(name: str) -> date | None:
    """The date a note's name holds (`2024-04-30`, `2024-04-30 notes`, `20240430`), or None."""
    for match in _NAME_DATE.finditer(name):
        found = _valid(match.group(1), match.group(3), match.group(4))
        if found is not None:
            return found
    return None


def note_date(name: str, frontmatter: str, mtime: float | None) -> date | None:
    """The date a note is of: the one in its name, else its frontmatter's `date:` or
    `created:`, else the day its file was last written (`mtime`, seconds), else None."""
    found = date_in_name(name)
    if found is None:
        for match in _FRONTMATTER_DATE.finditer(frontmatter):
            found = _valid(*match.groups())
            if found is not None:
                break
    if found is None and mtime is not None:
        found = datetime.fromtimestamp(mtime).date()
    return found
