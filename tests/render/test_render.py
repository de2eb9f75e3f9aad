"""Progress output: a live status line on a terminal, plain lines in logs, silence when quiet."""

import io

from cmem.render.reports import Spinner, plural


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_spinner_on_a_terminal_shows_elapsed_time_and_cleans_up():
    stream = FakeTerminal()
    spinner = Spinner(stream=stream)
    spinner("asking the model", 1.0)
    spinner("asking the model", 2.0)
    spinner.done()
    assert "asking the model" in stream.getvalue()
    assert spinner._status is None


def test_spinner_off_a_terminal_writes_one_line_per_model_stage():
    stream = io.StringIO()
    spinner = Spinner(stream=stream)
    spinner("scanning", None)
    for second in range(5):
        spinner("asking the model", float(second))
    spinner.done()
    assert stream.getvalue() == "asking the model…\n"


def test_quiet_spinner_is_silent():
    stream = FakeTerminal()
    spinner = Spinner(quiet=True, stream=stream)
    spinner("asking the model", 3.0)
    spinner.done()
    assert stream.getvalue() == ""


def test_plural():
    assert plural(1, "note") == "1 note" and plural(2, "note") == "2 notes"


def test_spinner_shows_the_time_limit_and_how_to_stop():
    stream = FakeTerminal()
    spinner = Spinner(stream=stream)
    spinner("asking the model", 12.0, 300)
    spinner.done()
    assert (
        "12s of 300s" in stream.getvalue()
        and "Ctrl-C stops; nothing is written" in stream.getvalue()
    )
    plain = io.StringIO()
    spinner = Spinner(stream=plain)
    spinner("asking the model", 0.1, 300)
    spinner("asking the model", 0.2, 300)
    assert plain.getvalue() == "asking the model (up to 300s; Ctrl-C stops; nothing is written)…\n"


def test_a_scan_asks_the_terminal_a_few_times_not_once_a_line(monkeypatch):
    """`render_scan` paints each class's tag once: asking the terminal whether it is one costs
    an ioctl, and a 10k-note scan prints ~2,300 lines. On a terminal every line is still painted."""
    from cmem.render import reports
    from cmem.scan.scanner import ScanResult
    from cmem.scan.signals import Signal

    class CountingTerminal(FakeTerminal):
        asked = 0

        def isatty(self):
            CountingTerminal.asked += 1
            return True

    monkeypatch.setattr(reports.sys, "stdout", CountingTerminal())
    monkeypatch.delenv("NO_COLOR", raising=False)
    classes = ["correction", "preference", "decision", "recurring"]
    signals = [Signal(f"n{i}.md", 1, classes[i % 4], "cue", "a line") for i in range(200)]
    text = reports.render_scan(ScanResult(signals=signals))
    assert CountingTerminal.asked <= 10
    assert text.count("\033[31mcorrection") == 50 and text.count("\033[33mrecurring") == 50
