"""The page's section "Identification against chance", and chance beside every identification number of the page.

Every number is computed here from the eval set's scores by brute force -- each enrolled
trial's rank as 1 + the enrolled speakers scored strictly higher than the true one, the
top-k rate and its hits, chance k/N, and the binomial tail of an attacker at chance summed
with exact integers -- and compared with the page's cells (their full-precision
``data-sort``, and as printed).  The comparison table and the per-speaker table show 1/N
beside every rank-1; the CMC figure draws the same curves with a chance line per N.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest

import lidframe
from lidframe.data.simulate import simulate_system
from tests.report.conftest import CREATED, run_cli
from tests.report.formatting import fmt_percent
from tests.report.htmltree import parse

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

BOOT = lidframe.Bootstrap(n_boot=120, seed=7)


def brute_ranks(data) -> np.ndarray:
    """Each enrolled trial's true-speaker rank, from the scores: 1 + speakers scored strictly higher (ties count for it)."""
    column = {str(s): j for j, s in enumerate(data.enrolled)}
    ranks = []
    for row, speaker in zip(np.asarray(data.scores), data.trial_speakers):
        if str(speaker) in column:
            ranks.append(1 + sum(1 for s in row if s > row[column[str(speaker)]]))
    return np.array(ranks)


def binomial_tail(hits: int, trials: int, chance: Fraction) -> float:
    """P(Binomial(trials, chance) >= hits), summed in exact rationals."""
    return float(sum(math.comb(trials, h) * chance**h * (1 - chance) ** (trials - h) for h in range(hits, trials + 1)))


def rows_of(root, table_id):
    table = root.find("table", id=table_id)
    titles = [th.text() for th in table.find("thead").find_all("th")]
    return titles, [tr.find_all("td") for tr in table.find("tbody").find_all("tr")]


@pytest.fixture(scope="module")
def built():
    """Two systems of different N (a leaky one and a random one, 120 trials of 24 speakers), their page."""
    from lidframe.analyses.per_speaker import per_speaker
    from lidframe.report import render_html, report_from_results

    sets, results = {}, {}
    for name, leakage, n, seed in (("leaky", 0.4, 16, 1), ("random", 0.0, 24, 2)):
        sets[name] = simulate_system(leakage=leakage, seed=seed, n_enrolled=n, trials_per_speaker=5)
        results[name] = lidframe.evaluate(*sets[name], bootstrap=BOOT)
    speakers = {name: per_speaker(result) for name, result in results.items()}
    report = report_from_results(results, per_speaker=speakers, created=CREATED)
    return sets, results, report, parse(render_html(report))


def test_the_table_is_the_brute_force_cmc_beside_chance(built):
    sets, results, _, root = built
    titles, rows = rows_of(root, "identification-table")
    assert titles == ["system", "N", "k", "top-k", "hits", "trials", "chance k/N", "p (chance)"]
    shown = {(cells[0].text(), int(cells[2].text())): cells for cells in rows}
    assert sorted(shown) == [("leaky", 1), ("leaky", 5), ("leaky", 10), ("random", 1), ("random", 5), ("random", 10)]
    for name, (_, ev) in sets.items():
        ranks = brute_ranks(ev)
        n, trials = len(ev.enrolled), ranks.size
        for k in (1, 5, 10):
            cells = shown[(name, k)]
            hits = int((ranks <= k).sum())
            assert [c.text() for c in cells[1:3]] == [str(n), str(k)]
            assert float(cells[3].attrs["data-sort"]) == pytest.approx(hits / trials, rel=1e-15)
            assert cells[3].text().startswith(fmt_percent(hits / trials) + " [")  # with its interval
            assert (cells[4].text(), cells[5].text()) == (str(hits), str(trials))
            assert float(cells[6].attrs["data-sort"]) == pytest.approx(k / n, rel=1e-15)
            assert cells[6].text() == fmt_percent(k / n)
            assert float(cells[7].attrs["data-sort"]) == pytest.approx(binomial_tail(hits, trials, Fraction(k, n)))
            assert cells[7].text() == f"{binomial_tail(hits, trials, Fraction(k, n)):.2g}"
    # the leaky system is far above chance; the random one's rank-1 reads as the chance fluctuation it is
    assert float(shown[("leaky", 1)][7].attrs["data-sort"]) < 1e-6
    assert float(shown[("random", 1)][7].attrs["data-sort"]) > 0.01


def test_rank1_and_its_interval_are_pi_link_at_n(built):
    """The rank-1 row's interval is the run's bootstrap: the same as linkability at N' = N (another code path)."""
    from lidframe.analyses.legal import linkability_curve

    _, results, report, root = built
    _, rows = rows_of(root, "identification-table")
    for name, result in results.items():
        (cells,) = [c for c in rows if c[0].text() == name and c[2].text() == "1"]
        last = linkability_curve(result, bootstrap=BOOT).points[-1]
        assert float(cells[3].attrs["data-sort"]) == last.pi_link == result.summary.rank1_rate
        assert cells[3].find("span").text() == f"[{100 * last.low:.1f}, {100 * last.high:.1f}] %"
        system = next(s for s in report.systems if s.label == name)
        assert system.cmc.bootstrap == result.summary.bootstrap


def test_the_comparison_table_shows_chance_beside_rank1(built):
    sets, _, _, root = built
    titles, rows = rows_of(root, "comparison-table")
    at = titles.index("rank-1")
    assert titles[at + 1] == "chance 1/N"
    for cells in rows:
        _, ev = sets[cells[0].text()]
        ranks, n = brute_ranks(ev), len(ev.enrolled)
        assert float(cells[at].attrs["data-sort"]) == pytest.approx(np.mean(ranks == 1), rel=1e-15)
        assert float(cells[at + 1].attrs["data-sort"]) == pytest.approx(1 / n, rel=1e-15)
        assert cells[at + 1].text() == fmt_percent(1 / n)


def test_the_per_speaker_table_shows_chance_beside_each_rank1(built):
    sets, _, _, root = built
    for k, name in enumerate(sets, start=1):
        titles, rows = rows_of(root, f"per-speaker-{k}-1")
        at = titles.index("rank-1")
        assert titles[at + 1] == "chance 1/N"
        _, ev = sets[name]
        n = len(ev.enrolled)
        speakers = np.asarray(ev.trial_speakers).astype(str)
        ranks = brute_ranks(ev)
        for cells in rows:
            mine = ranks[speakers == cells[0].text()]
            assert float(cells[at].attrs["data-sort"]) == pytest.approx(np.mean(mine == 1), rel=1e-15)
            assert float(cells[at + 1].attrs["data-sort"]) == pytest.approx(1 / n, rel=1e-15)


def test_the_cmc_figure_draws_every_curve_and_a_chance_line_per_n(built):
    from lidframe.report.figures import FigureMaker
    from lidframe.report.identification_figures import cmc_curves_figure

    sets, _, report, root = built
    maker = FigureMaker(report)
    fig = cmc_curves_figure({s.label: s.cmc for s in report.systems}, maker.styles)
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    for name, (_, ev) in sets.items():
        ranks, n = brute_ranks(ev), len(ev.enrolled)
        k = lines[name].get_xdata()
        assert k[0] == 1 and k[-1] == n
        np.testing.assert_allclose(lines[name].get_ydata(), [np.mean(ranks <= j) for j in k], rtol=1e-15)
        assert lines[name].get_color() == maker.styles[name]["color"]
        chance = lines[f"chance k/N (N = {n})"]
        np.testing.assert_allclose(chance.get_ydata(), np.asarray(chance.get_xdata()) / n, rtol=1e-15)
    assert ax.get_xscale() == "log"
    section = root.find("section", id="identification")
    (figure,) = section.find_all("figure")
    assert "chance k/N" in figure.find("figcaption").text() and figure.find("svg").attrs["role"] == "img"
    links = {a.attrs.get("href"): a.text() for a in root.find("nav").find_all("a")}
    assert links["#identification"] == "Identification"


def test_one_system_gets_one_chance_line_and_a_small_n_no_top_10(tmp_path):
    from lidframe.report import render_html, report_from_results
    from lidframe.report.identification_figures import cmc_curves_figure

    result = lidframe.evaluate(*simulate_system(leakage=0.3, seed=3, n_enrolled=6, trials_per_speaker=4))
    report = report_from_results({"six": result})
    _, rows = rows_of(parse(render_html(report)), "identification-table")
    assert [c[2].text() for c in rows] == ["1", "5"]  # k = 10 is not below N = 6
    assert not rows[0][3].find_all("span")  # no bootstrap, no interval
    (ax,) = cmc_curves_figure({"six": report.systems[0].cmc}, {}).axes
    assert [line.get_label() for line in ax.get_lines()] == ["six", "chance k/N"]
    assert ax.get_xscale() == "linear"  # N < 10


def test_evaluate_report_shows_the_rank1_of_its_json(tmp_path):
    dev, ev = simulate_system(leakage=0.3, seed=8, n_enrolled=12, trials_per_speaker=4)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--n-boot", "100",
            "--json", tmp_path / "s.json", "--report", tmp_path / "audit"]  # fmt: skip
    code, out = run_cli(argv)
    assert code == 0, out
    record = json.loads((tmp_path / "s.json").read_text())
    root = parse((tmp_path / "audit" / "report.html").read_text())
    _, rows = rows_of(root, "identification-table")
    assert rows[0][2].text() == "1"
    assert rows[0][3].attrs["data-sort"] == repr(record["rank1_rate"])
    last = record["legal"]["linkability"]["points"][-1]
    assert last["n_prime"] == 12 and rows[0][3].attrs["data-sort"] == repr(last["pi_link"])
    assert rows[0][3].find("span").text() == f"[{100 * last['low']:.1f}, {100 * last['high']:.1f}] %"
    assert rows[0][6].attrs["data-sort"] == repr(1 / 12)


def test_a_report_without_ranks_says_why(rendered):
    from lidframe.report.sections import absent_sections

    for kind, words in (("grid", "keeps LID, not the ranks"), ("dp-audit", "DP audit keeps")):
        built, page = rendered[kind]
        assert words in absent_sections(built.report)["identification"]
        section = parse(page).find("section", id="identification")
        assert not section.find_all("table") and words in section.text()
    # a grid's comparison table still shows each cell's rank-1 beside its chance
    built, page = rendered["grid"]
    titles, rows = rows_of(parse(page), "comparison-table")
    at = titles.index("rank-1")
    for system, cells in zip(built.report.systems, rows):
        assert float(cells[at + 1].attrs["data-sort"]) == pytest.approx(1 / system.headline.n_enrolled, rel=1e-15)
