"""Bad calibrator specs (``NAME?key=value&...``): one line naming the spec, parameter or value."""

from __future__ import annotations

import pytest

from tests.bad_input.conftest import assert_refused

# (spec, fragments the message must hold)
SPECS = {
    # the built-ins are listed (and any installed plugin beside them: not part of the expectation)
    "unknown_name": ("logistc", ["unknown calibrator 'logistc'; available: ", "beta, ", "isotonic, ", "logistic, "]),
    "empty_name": ("?C=1", ["unknown calibrator ''"]),
    "empty_spec": ("", ["non-empty string"]),
    "blank_spec": ("   ", ["non-empty string"]),
    "unknown_parameter": ("logistic?foo=1", ["calibrator 'logistic' has no parameter 'foo'", "weighting, C"]),
    "parameter_of_another_calibrator": ("isotonic?C=1", ["calibrator 'isotonic' has no parameter 'C'", "laplace"]),
    "parameter_of_identity": ("identity?scale=2", ["no parameter 'scale'", "no parameters"]),
    "empty_parameter_name": ("logistic?=3", ["no parameter ''"]),
    "parameter_twice": ("logistic?C=1&C=2", ["parameter 'C' given twice"]),
    "no_value": ("logistic?C", ["key=value"]),
    "stray_separator": ("logistic?C=1&&weighting=prior", ["key=value"]),
    "C_not_a_number": ("logistic?C=abc", ["'logistic?C=abc'", "parameter 'C' takes float", "'abc'"]),
    "C_negative": ("logistic?C=-1", ["dev.npz (dev)", "fitting calibrator", "C must be a positive number", "-1"]),
    "C_zero": ("logistic?C=0", ["fitting calibrator", "C must be a positive number", "0.0"]),
    "C_nan": ("logistic?C=nan", ["fitting calibrator", "C must be a positive number", "nan"]),
    "weighting_unknown": (
        "logistic?weighting=uniform",
        ["weighting must be one of", "'balanced', 'prior'", "'uniform'"],
    ),
    "standard_errors_not_a_choice": (
        "logistic?standard_errors=maybe",
        ["standard_errors", "'maybe'"],
    ),
    "laplace_not_bool": ("isotonic?laplace=2", ["parameter 'laplace' takes bool", "'2'"]),
    "shared_variance_not_bool": ("gaussian?shared_variance=yes", ["parameter 'shared_variance' takes bool"]),
    "beta_C_not_a_number": ("beta?C=1e4x", ["parameter 'C' takes float", "'1e4x'"]),
    "beta_C_negative": ("beta?C=-5", ["fitting calibrator", "Beta C must be a positive number"]),
    "temperature_slope_negative": ("temperature?max_slope=-1", ["max_slope must be a positive number", "-1.0"]),
    "temperature_slope_not_a_number": ("temperature?max_slope=steep", ["parameter 'max_slope' takes float"]),
    "import_target_missing_module": (
        "no_such_pkg.cal:Mine",
        ["cannot load no_such_pkg.cal:Mine", "ModuleNotFoundError"],
    ),
    "import_target_missing_class": (
        "lidframe.calibrators.logistic:Nope",
        ["cannot load lidframe.calibrators.logistic:Nope", "has no attribute 'Nope'"],
    ),
    "import_target_not_a_calibrator": (
        "collections:OrderedDict",
        ["is not a calibrator", "missing fit(scores, labels)"],
    ),
    "import_target_malformed": ("lidframe.calibrators.logistic:", ["is not 'package.module:Class'"]),
}


@pytest.mark.parametrize("name", list(SPECS))
def test_bad_calibrator_spec_is_refused(name, folders, capsys):
    data, out = folders
    spec, expect = SPECS[name]
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--calibrator", spec]
    assert_refused(
        [*argv, "--json", out / "s.json", "--per-trial", out / "p.csv"], capsys, expect=expect, watch=[data, out]
    )


@pytest.mark.parametrize(
    "specs, expect",
    [
        ("logistic,nope", ["unknown calibrator 'nope'"]),
        ("isotonic,logistic?C=abc", ["parameter 'C' takes float", "'abc'"]),
        (",", ["--calibrators", "at least one calibrator spec"]),
        ("logistic,temperature?max_slope=0", ["max_slope must be a positive number"]),
    ],
    ids=["unknown", "bad_value", "empty_list", "bad_value_at_fit"],
)
def test_sensitivity_refuses_a_bad_spec_among_several(specs, expect, folders, capsys):
    data, out = folders
    argv = ["sensitivity", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--calibrators", specs]
    assert_refused([*argv, "--json", out / "s.json"], capsys, expect=expect, watch=[data, out])


@pytest.mark.parametrize("command", ["nsweep", "longitudinal"])
@pytest.mark.parametrize("name", ["unknown_name", "C_not_a_number", "C_negative"])
def test_other_commands_refuse_the_same_specs(command, name, folders, capsys):
    data, out = folders
    spec, expect = SPECS[name]
    argv = [command, "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--calibrator", spec]
    assert_refused([*argv, "--json", out / "r.json"], capsys, expect=expect, watch=[data, out])


@pytest.mark.parametrize(
    "flag, value, expect",
    [
        ("--znorm-ddof", "2", ["argument --znorm-ddof", "invalid choice", "lidframe evaluate --help"]),
        ("--n-boot", "many", ["argument --n-boot", "invalid int value: 'many'"]),
        ("--kernel", "cuda", ["argument --kernel", "invalid choice"]),
        ("--calibraotr", "logistic", ["unrecognized arguments: --calibraotr"]),
        ("--bootstrap-resample", "dev", ["argument --bootstrap-resample", "invalid choice: 'dev'", "dev+eval"]),
    ],
    ids=["ddof", "n_boot", "kernel", "misspelt_flag", "bootstrap_resample"],
)
def test_command_line_errors_are_one_line_too(flag, value, expect, folders, capsys):
    data, out = folders
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", flag, value, "--json", out / "s.json"]
    assert_refused(argv, capsys, expect=expect, watch=[data, out])
