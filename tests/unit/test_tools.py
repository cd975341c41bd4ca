"""tests/support/tools.py: a test that needs a program this machine lacks is
skipped saying which (and how to get it), and fails in CI, which installs them all."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

NEEDS = """
import pytest

@pytest.mark.needs("sh", "kaja-no-such-tool")
def test_needs_a_tool():
    pass

def test_needs_root_and_a_tool_inside():
    from tests.support.tools import require
    require("kaja-no-such-tool-either")
"""


@pytest.mark.parametrize(
    ("ci", "outcomes"),
    [("true", {"errors": 1, "failed": 1}), ("", {"skipped": 2}), ("0", {"skipped": 2})],
)
def test_a_missing_tool_skips_and_fails_in_ci(pytester, monkeypatch, ci, outcomes):
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(
        "from tests.conftest import pytest_collection_modifyitems, pytest_runtest_setup  # noqa\n"
    )
    pytester.makeini("[pytest]\nmarkers =\n    needs: what the test needs\n")
    pytester.makepyfile(NEEDS)
    result = pytester.runpytest_subprocess("-rsfE", "-p", "no:cacheprovider")
    result.assert_outcomes(**outcomes)
    result.stdout.fnmatch_lines(["*needs kaja-no-such-tool (apt-get install kaja-no-such-tool)*"])
    if ci != "true":  # the test's own line, not the helper's
        result.stdout.fnmatch_lines(
            ["SKIPPED [[]1[]] test_a_missing_tool*.py:*: needs kaja-no-such-tool (*"]
        )
    result.stdout.fnmatch_lines(["*needs kaja-no-such-tool-either*"])
    if ci == "true":
        result.stdout.fnmatch_lines(["*.ci/run installs it, so CI must not run less*"])


def test_what_is_there_is_not_missing():
    from tests.support.tools import missing

    assert missing("sh", "python3", "kaja-no-such-tool") == ["kaja-no-such-tool"]
