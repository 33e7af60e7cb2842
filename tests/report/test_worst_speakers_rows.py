"""The summary's worst-speakers table stays short on a page of many systems (issue 41: two A4 pages).

Each system shows its 3 most disclosed speakers while the table holds at most 9 rows; with more
systems each shows fewer, at least one: k = max(1, min(3, 9 // n)), written here, not read from
the code.  Checked on the real-voice demo's layout (6 systems) and the simulated demo (5 systems),
and the rule itself for every n.
"""

from __future__ import annotations

import pytest

from lidframe.report.sections.worst_speakers import speakers_per_system
from tests.report.htmltree import parse

pytest.importorskip("matplotlib")


def _expected(n_systems: int) -> int:
    return max(1, min(3, 9 // n_systems))


@pytest.mark.parametrize("n_systems", range(1, 40))
def test_each_system_shows_fewer_speakers_as_systems_grow(n_systems):
    assert speakers_per_system(n_systems) == _expected(n_systems)
    assert speakers_per_system(n_systems) * n_systems <= max(9, n_systems)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["demo", "simulated demo"])
def test_the_page_table_holds_k_speakers_of_each_system(pages, kind):
    table = parse(pages[kind].read_text(encoding="utf-8")).find("table", id="worst-speakers-table")
    body = [row for row in table.find_all("tr") if not row.find_all("th")]
    systems = [row.find_all("td")[0].text().strip() for row in body]
    counts = {name: systems.count(name) for name in dict.fromkeys(systems)}
    k = _expected(len(counts))
    assert set(counts.values()) == {k}, counts
    assert len(body) <= max(9, len(counts))
