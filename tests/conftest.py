"""The suite's session header: on a torch build other than the one the torch engines' known
failures were recorded on, say so once, before any strict xfail can surprise.

(The header lives here rather than in ``aotcheck.check.pytest_plugin``: the known failures
belong to ``aotcheck.targets``, a layer above ``check``.)"""
from __future__ import annotations


def pytest_report_header(config):
    from aotcheck.targets.known_failures import version_note
    note = version_note()      # written once per session, by xdist's controller
    return [note] if note else []


# No Hypothesis test fails on time: these machines are shared and noisy (a 260 ms example
# at load 16 failed the default 200 ms deadline), and speed is measured by tools/, not tests.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("aotcheck", deadline=None)
_hypothesis_settings.load_profile("aotcheck")
