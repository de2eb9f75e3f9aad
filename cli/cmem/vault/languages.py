"""The built-in formats of each note language: how a statement names its sources and its earlier
wordings, and what a capture note is called. Apart from `config.py` (which re-exports them) so
that `statements.py` can read them without the config's imports: a light `cmem recall` strips
sources from its snippets and imports neither `dataclasses` nor `pathlib`."""

LANGUAGE_DEFAULTS = {
    "zh": {
        "source": "（来源：{links}）",
        "source_separator": "、",
        "trace": "（更新于 {date}，原为：{old}）",
        "capture": "{date} 随手记.md",
    },
    "en": {
        "source": "(source: {links})",
        "source_separator": ", ",
        "trace": "(updated {date}, was: {old})",
        "capture": "{date} notes.md",
    },
}
