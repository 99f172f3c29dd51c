"""aotcheck.fuzz: generated mutation and alias programs, shrunk to runnable reproducers.

A program is plain data that a hypothesis strategy draws statement by statement (public as
``aotcheck.strategies``); ``runner.fuzz()`` explores a seeded stream through an engine,
cold and cached, groups failures by root cause and shrinks one reproducer per group. Its
modules, one line each: the map in README.md, "Layout".

What it may import: check (the oracle), targets (the engines), the API, errors and
flags. Nothing from grad or cli.
"""
