"""The command line, one module per command group; `app.py` assembles them and owns the error
funnel. Every module here is thin: parse, call one core function, render."""
