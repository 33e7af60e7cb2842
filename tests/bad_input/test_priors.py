"""Bad priors (``--prior`` specs, watch-list files, explicit prior tables): one line each, nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lidframe.data.simulate import simulate_system
from tests.bad_input.conftest import assert_refused


@pytest.fixture(scope="module")
def good_sets():
    return simulate_system(leakage=0.5, seed=12, n_enrolled=6, trials_per_speaker=4)


def table(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def prior_rows(ev, values=None) -> str:
    values = values or [1 / len(ev.enrolled)] * len(ev.enrolled)
    return "enroll_spk,prior\n" + "".join(f"{s},{v}\n" for s, v in zip(ev.enrolled, values))


# each: (folder, eval set) -> (the --prior spec, fragments the message must hold)
def weight_not_a_number(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&weight=abc", ["parameter 'weight'", "float", "'abc'"]


def weight_negative(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&weight=-2", ["weight must be positive and finite", "-2"]


def weight_zero(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&weight=0", ["weight must be positive and finite", "0.0"]


def weight_nan(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&weight=nan", ["weight must be positive and finite", "nan"]


def weight_inf(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&weight=inf", ["weight must be positive and finite", "inf"]


def weight_from_file_not_a_number(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]}\n")
    return f"watchlist?file={path}&weight=1e", ["parameter 'weight'", "'1e'"]


def ids_not_enrolled(d, ev):
    return "watchlist?ids=nobody,also-nobody", [
        "eval.npz (eval)",
        "not among the 6 enrolled speakers",
        "'nobody', 'also-nobody'",
    ]


def ids_only_commas(d, ev):
    return "watchlist?ids=,,", ["needs at least one speaker id"]


def ids_empty(d, ev):
    return "watchlist?ids=", ["empty id"]


def ids_repeated(d, ev):
    return f"watchlist?ids={ev.enrolled[0]},{ev.enrolled[0]}", [f"'{ev.enrolled[0]}' appears more than once"]


def file_id_not_enrolled(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]}\nmallory\n")
    return f"watchlist?file={path}", ["eval.npz (eval)", "not among the 6 enrolled", "'mallory'"]


def file_missing(d, ev):
    return f"watchlist?file={d / 'absent.txt'}", ["absent.txt", "no such file"]


def file_is_a_directory(d, ev):
    (d / "lists").mkdir()
    return f"watchlist?file={d / 'lists'}", ["lists", "is a folder", "expected an id-list file"]


def file_empty(d, ev):
    return f"watchlist?file={table(d / 'watch.txt', '')}", ["watch.txt", "no speaker ids"]


def file_only_comments(d, ev):
    path = table(d / "watch.txt", "# suspects\n\n   # none yet\n")
    return f"watchlist?file={path}", ["watch.txt", "no speaker ids"]


def file_repeated_id(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]}\n{ev.enrolled[1]}\n{ev.enrolled[0]}\n")
    return f"watchlist?file={path}", ["watch.txt", "line 3", f"repeats id '{ev.enrolled[0]}'", "line 1"]


def file_two_ids_on_a_line(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]} {ev.enrolled[1]}\n")
    return f"watchlist?file={path}", ["watch.txt", "line 1", "one speaker id per line"]


def file_comma_separated(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]},{ev.enrolled[1]}\n")
    return f"watchlist?file={path}", ["watch.txt", "line 1", "one speaker id per line"]


def file_not_text(d, ev):
    path = d / "watch.txt"
    path.write_bytes(f"{ev.enrolled[0]}\n".encode() + b"\x81spk\n")
    return f"watchlist?file={path}", ["watch.txt", "line 2 is not UTF-8 text", "0x81"]


def file_starts_like_utf16(d, ev):
    path = d / "watch.txt"
    path.write_bytes(b"\xff\xfe\x00\x81spk\n")
    return f"watchlist?file={path}", ["watch.txt", "is UTF-16", "expected UTF-8"]


def file_id_of_5_mb(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]}\n{'m' * 5_000_000}\n")
    return f"watchlist?file={path}", ["eval.npz (eval)", "not among the 6 enrolled", "'mmm", "more characters"]


def file_line_of_two_5_mb_words(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]}\n{'a' * 5_000_000} {'b' * 5_000_000}\n")
    return f"watchlist?file={path}", ["watch.txt", "line 2", "one speaker id per line", "more characters"]


def ids_and_file(d, ev):
    path = table(d / "watch.txt", f"{ev.enrolled[0]}\n")
    return f"watchlist?ids={ev.enrolled[0]}&file={path}", ["exactly one of ids=", "file="]


def neither_ids_nor_file(d, ev):
    return "watchlist?weight=3", ["exactly one of ids=", "file="]


def misspelt_parameter(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&wieght=3", ["no parameter 'wieght'", "ids, file, weight"]


def parameter_twice(d, ev):
    return f"watchlist?ids={ev.enrolled[0]}&weight=2&weight=3", ["parameter 'weight' given twice"]


def unknown_prior(d, ev):
    return "gaussian", ["unknown prior 'gaussian'", "explicit, uniform, watchlist"]


def bad_syntax(d, ev):
    return "watchlist?ids", ["key=value"]


def empty_spec(d, ev):
    return "", ["non-empty string"]


def uniform_with_parameters(d, ev):
    return "uniform?n=5", ["no parameter 'n'", "it takes outside"]


def import_target_missing(d, ev):
    return "no_such_package.priors:Mine", ["cannot load no_such_package.priors:Mine", "ModuleNotFoundError"]


def import_target_not_a_prior(d, ev):
    return "collections:OrderedDict", ["not a prior", "log_prior"]


def explicit_without_file(d, ev):
    return "explicit", ["explicit prior needs file="]


def explicit_missing_file(d, ev):
    return f"explicit?file={d / 'absent.csv'}", ["absent.csv", "no such file"]


def explicit_directory(d, ev):
    (d / "priors").mkdir()
    return f"explicit?file={d / 'priors'}", ["priors", "is a folder", "expected a prior-table file"]


def explicit_empty_file(d, ev):
    return f"explicit?file={table(d / 'p.csv', '')}", ["p.csv", "empty file"]


def explicit_header_only(d, ev):
    path = table(d / "p.csv", "enroll_spk,prior\n")
    return f"explicit?file={path}", ["p.csv", "no data rows"]


def explicit_missing_column(d, ev):
    path = table(d / "p.csv", "enroll_spk,p\n" + "".join(f"{s},0.2\n" for s in ev.enrolled))
    return f"explicit?file={path}", ["p.csv", "missing column(s) prior"]


def explicit_extra_column(d, ev):
    path = table(d / "p.csv", "enroll_spk,prior,gender\n" + "".join(f"{s},0.2,f\n" for s in ev.enrolled))
    return f"explicit?file={path}", ["p.csv", "unexpected column", "'gender'"]


def explicit_nan(d, ev):
    path = table(d / "p.csv", prior_rows(ev, [0.2, 0.2, "nan", 0.2, 0.1, 0.1]))
    return f"explicit?file={path}", ["p.csv", "line 4", f"'{ev.enrolled[2]}'", "'nan'", "positive finite"]


def explicit_negative(d, ev):
    path = table(d / "p.csv", prior_rows(ev, [0.5, -0.1, 0.2, 0.2, 0.1, 0.1]))
    return f"explicit?file={path}", ["p.csv", "line 3", "'-0.1'", "positive finite"]


def explicit_zero(d, ev):
    path = table(d / "p.csv", prior_rows(ev, [0.4, 0.2, 0.2, 0.2, 0, 0]))
    return f"explicit?file={path}", ["p.csv", "line 6", "'0'", "positive finite"]


def explicit_inf(d, ev):
    path = table(d / "p.csv", prior_rows(ev, ["inf", 0.2, 0.2, 0.2, 0.2, 0.2]))
    return f"explicit?file={path}", ["p.csv", "line 2", "'inf'"]


def explicit_text_value(d, ev):
    path = table(d / "p.csv", prior_rows(ev, [0.2, "high", 0.2, 0.2, 0.1, 0.1]))
    return f"explicit?file={path}", ["p.csv", "line 3", "'high'"]


def explicit_repeated_speaker(d, ev):
    path = table(d / "p.csv", prior_rows(ev) + f"{ev.enrolled[0]},0.1\n")
    return f"explicit?file={path}", ["p.csv", "line 8", f"repeats speaker '{ev.enrolled[0]}'"]


def explicit_empty_id(d, ev):
    path = table(d / "p.csv", prior_rows(ev) + ",0.1\n")
    return f"explicit?file={path}", ["p.csv", "line 8", "empty enroll_spk"]


def explicit_misses_an_enrolled_speaker(d, ev):
    path = table(d / "p.csv", "enroll_spk,prior\n" + "".join(f"{s},0.2\n" for s in ev.enrolled[1:]))
    return f"explicit?file={path}", ["eval.npz (eval)", "no probability for enrolled speakers", f"'{ev.enrolled[0]}'"]


def explicit_names_a_speaker_not_enrolled(d, ev):
    rows = "enroll_spk,prior\n" + "".join(f"{s},0.1\n" for s in [*ev.enrolled, "not-enrolled", "nor-this-one"])
    path = table(d / "p.csv", rows)
    return f"explicit?file={path}", [
        "eval.npz (eval)",
        "explicit prior ids not among the 6 enrolled speakers",
        "'not-enrolled', 'nor-this-one'",
    ]


def explicit_5_mb_speaker_id(d, ev):
    path = table(d / "p.csv", prior_rows(ev) + f"{'s' * 5_000_000},high\n")
    return f"explicit?file={path}", ["p.csv", "line 8", "'sss", "more characters", "'high'"]


def explicit_5_mb_value(d, ev):
    path = table(d / "p.csv", prior_rows(ev, [0.2, 0.2, "9" * 5_000_000 + "x", 0.2, 0.1, 0.1]))
    return f"explicit?file={path}", ["p.csv", "line 4", f"'{ev.enrolled[2]}'", "more characters"]


def explicit_unreadable_csv(d, ev):
    path = table(d / "p.csv", 'enroll_spk,prior\n"unterminated,0.5\n')
    return f"explicit?file={path}", ["p.csv", "cannot read prior table"]


CASES: list[Callable] = [
    weight_not_a_number,
    weight_negative,
    weight_zero,
    weight_nan,
    weight_inf,
    weight_from_file_not_a_number,
    ids_not_enrolled,
    ids_only_commas,
    ids_empty,
    ids_repeated,
    file_id_not_enrolled,
    file_missing,
    file_is_a_directory,
    file_empty,
    file_only_comments,
    file_repeated_id,
    file_two_ids_on_a_line,
    file_comma_separated,
    file_not_text,
    file_starts_like_utf16,
    ids_and_file,
    neither_ids_nor_file,
    misspelt_parameter,
    parameter_twice,
    unknown_prior,
    bad_syntax,
    empty_spec,
    uniform_with_parameters,
    import_target_missing,
    import_target_not_a_prior,
    explicit_without_file,
    explicit_missing_file,
    explicit_directory,
    explicit_empty_file,
    explicit_header_only,
    explicit_missing_column,
    explicit_extra_column,
    explicit_nan,
    explicit_negative,
    explicit_zero,
    explicit_inf,
    explicit_text_value,
    explicit_repeated_speaker,
    explicit_empty_id,
    explicit_misses_an_enrolled_speaker,
    explicit_names_a_speaker_not_enrolled,
    explicit_unreadable_csv,
]

# a hostile field is cut in the message: the line stays short whatever the file holds
LONG_FIELDS = [file_id_of_5_mb, file_line_of_two_5_mb_words, explicit_5_mb_speaker_id, explicit_5_mb_value]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_prior_is_refused(case, tmp_path, good_sets, capsys):
    dev, ev = good_sets
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    dev.save(data / "dev.npz")
    ev.save(data / "eval.npz")
    spec, expect = case(data, ev)
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--prior", spec]
    assert_refused(
        [*argv, "--json", out / "s.json", "--per-trial", out / "p.csv"], capsys, expect=expect, watch=[data, out]
    )


@pytest.mark.parametrize("case", LONG_FIELDS, ids=lambda c: c.__name__)
def test_a_5_mb_field_gives_a_short_line(case, tmp_path, good_sets, capsys):
    dev, ev = good_sets
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    spec, expect = case(tmp_path, ev)
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--prior", spec]
    line = assert_refused(argv, capsys, expect=expect, watch=[tmp_path])
    assert len(line.replace(str(tmp_path), "<dir>")) < 500, line[:1000]


@pytest.mark.parametrize(
    "case",
    [weight_not_a_number, ids_not_enrolled, explicit_nan, explicit_names_a_speaker_not_enrolled],
    ids=lambda c: c.__name__,
)
def test_sensitivity_refuses_the_same_priors(case, tmp_path, good_sets, capsys):
    dev, ev = good_sets
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    spec, expect = case(tmp_path, ev)
    argv = ["sensitivity", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--prior", spec]
    assert_refused([*argv, "--json", tmp_path / "s.json"], capsys, expect=expect, watch=[tmp_path])
