"""An open set evaluated beside a closed-set headline (the demos'): its own section, the headline left closed.

``report_from_results(..., open_set={label: open_result})`` puts the open-set evaluation of
the same dev/eval pair in the section "Open set" while the cards stay the closed set's.
Every number is compared with one computed here from the Results' per-trial LIDs.
"""

from __future__ import annotations

import numpy as np
import pytest

import lidframe
from lidframe import InputError
from lidframe.data.simulate import simulate_system
from lidframe.report import render_html, report_from_results
from tests.report.htmltree import parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

PRIOR = "uniform?outside=0.2"


@pytest.fixture(scope="module")
def beside():
    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=10, trials_per_speaker=5, n_outsiders=3)
    closed, opened = lidframe.evaluate(dev, ev), lidframe.evaluate(dev, ev, prior=PRIOR)
    report = report_from_results({"sys": closed}, open_set={"sys": opened})
    return closed, opened, report, parse(render_html(report))


def _cells(section, table_id):
    rows = section.find("table", id=table_id).find("tbody").find_all("tr")
    return [[td.text().strip() for td in tr.find_all("td")] for tr in rows]


def test_the_open_set_section_shows_the_open_evaluation_and_the_card_the_closed_one(beside):
    closed, opened, report, root = beside
    outsider = np.asarray(opened.is_outsider, dtype=bool)
    assert outsider.sum() == 15 and closed.outside == 0 and opened.outside == pytest.approx(0.2)
    (system,) = report.systems
    # the headline: the closed set's enrolled trials only
    assert np.array_equal(system.lid_bits, closed.lid[~outsider])
    assert system.headline.alid == pytest.approx(closed.lid[~outsider].mean(), abs=1e-12)
    # the open set: every trial's LID of the second evaluation
    assert system.open_set.beside == str(opened.summary.prior)
    assert np.array_equal(system.open_trials.lid, opened.lid) and np.isfinite(opened.lid).all()
    section = root.find("section", id="open-set")
    groups = {row[1]: row for row in _cells(section, "open-set-table")}
    by_hand = {"all trials": opened.lid, "enrolled": opened.lid[~outsider], "outsider": opened.lid[outsider]}
    for name, lid in by_hand.items():
        assert int(groups[name][2].replace(",", "")) == lid.size, name
        assert float(groups[name][3].split()[0]) == pytest.approx(lid.mean(), abs=0.006), name
    (misattribution,) = _cells(section, "misattribution-table")
    shown = float(misattribution[4].split()[0].rstrip("%")) / 100
    assert shown == pytest.approx(np.mean(opened.top_posterior[outsider] > 0.5), abs=0.0006)
    text = section.text()
    assert "a second evaluation of the same scores under the prior" in text
    assert "the headlines, the comparison and every other section keep the closed-set numbers" in text
    # the figure draws the open evaluation's trials
    figure = section.find_all("figure")[0]
    assert f"the {(~outsider).sum()} enrolled and the {outsider.sum()} outsider trials" in figure.text()
    card = root.find("article", id="card-1")
    assert "prior uniform" in card.find("p", **{"class": "setting"}).text()


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("closed", r"open_set of 'sys' must be an open-set Result \(a prior with outside > 0\) beside a closed-set"),
        ("other trials", r"open_set of 'sys' holds other eval trials than its Result"),
        ("unknown", r"open_set given for 'nope', which is not one of the results"),
        ("not a result", r"open_set of 'sys' is a str, not a lidframe Result"),
    ],
)
def test_an_open_set_that_is_not_one_beside_the_result_is_one_line(beside, which, message):
    closed, opened, _, _ = beside
    other_dev, other_ev = simulate_system(leakage=0.5, seed=5, n_enrolled=10, trials_per_speaker=4, n_outsiders=3)
    given = {
        "closed": {"sys": closed},
        "other trials": {"sys": lidframe.evaluate(other_dev, other_ev, prior=PRIOR)},
        "unknown": {"nope": opened},
        "not a result": {"sys": "open.json"},
    }[which]
    with pytest.raises(InputError, match=message):
        report_from_results({"sys": closed}, open_set=given)
