"""The suite's session header: on a torch build other than the one the torch engines' known
failures were recorded on, say so once, before any strict xfail can surprise.

(The header lives here rather than in ``aotcheck.check.pytest_plugin``: the known failures
belong to ``aotcheck.targets``, a layer above ``check``.)"""
from __future__ import annotations


def pytest_report_header(config):
    from aotcheck.targets.known_failures import version_note
    note = version_note()      # written once per session, by xdist's controller
    return [note] if note else []
