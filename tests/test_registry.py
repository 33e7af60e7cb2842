"""Registry, component specs and plugins discovered from a separately installed package.

The third-party package is the one of docs/plugins.md under names of its own
(tests/fixtures/plugin_lab.py): its files are taken from the page's code blocks and
installed as a distribution on sys.path (a ``.dist-info`` folder with
``entry_points.txt``), which is how ``importlib.metadata`` sees a pip install.  A reader
who follows the page installs its package, ``mylab-lid``, into the environment the suite
runs in: the plugin tests run with it installed beside the fixture too, and no test
compares the registry with a fixed list of every name (built-ins plus what the test
installed, and any other entry tolerated).
"""

import json
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import InputError, ScoreSet, evaluate, registry
from lidframe.attackers import RandomAttacker, Utterance, group_by_speaker
from lidframe.calibrators import Logistic
from lidframe.registry import PluginError, check_contract, create, parse_spec, register
from lidframe.testing import check_attacker, check_calibrator, check_recogniser
from tests.fixtures.plugin_lab import (
    DISTRIBUTION,
    DOC_DISTRIBUTION,
    DOC_MODULE,
    HEAVY_MARKER,
    MODULE,
    NAMES,
    doc_files,
    doc_project,
    install_distribution,
    install_doc_example,
    install_fixture_lab,
    renamed,
)
from tests.reference import dense_pipeline

ROOT = Path(__file__).resolve().parents[1]

#: The built-in components, written out by hand.
BUILTIN = {
    "attacker": ("ecapa", "ge2e", "precomputed", "random", "xvector"),
    "calibrator": ("beta", "gaussian", "identity", "isotonic", "logistic", "temperature"),
    "prior": ("explicit", "uniform", "watchlist"),
    "recogniser": ("pocketsphinx",),
}
#: The fixture's components and its version (the page's).
SHRUNK, NPZ = NAMES["shrunk"], NAMES["npz"]
ORIGIN = f"distribution {DISTRIBUTION} {doc_project()['version']}"


def forget_modules(*prefixes: str) -> None:
    """Drop the plugin modules a test imported, so the next test imports its own."""
    for mod in [m for m in sys.modules if m.startswith(prefixes)]:
        del sys.modules[mod]


@pytest.fixture(params=["alone", "beside-mylab-lid"])
def plugin_site(request, tmp_path, monkeypatch):
    """The fixture package + a broken plugin + a name clash, importable and discoverable.

    Run twice: alone, and beside docs/plugins.md's own package installed as the page says
    (what a reader who followed the page has).  Returns the folders to put on PYTHONPATH.
    """
    site = tmp_path / "site"
    install_fixture_lab(site)
    install_distribution(
        site,
        "lidframe-fixture-other",
        "2.0",
        {
            "lidframe.calibrators": {
                "broken": f"{MODULE}.missing:Nope",
                "logistic": f"{MODULE}.calibrators:ShrunkLogistic",
            }
        },
    )
    sites = [site]
    if request.param == "beside-mylab-lid":
        sites.append(tmp_path / "doc-site")
        install_doc_example(sites[-1])
    for folder in reversed(sites):
        monkeypatch.syspath_prepend(str(folder))
    registry.refresh()
    yield sites
    forget_modules(MODULE, DOC_MODULE, HEAVY_MARKER)
    monkeypatch.undo()
    registry.refresh()


@pytest.fixture()
def doc_example_installed(tmp_path, monkeypatch):
    """docs/plugins.md's package installed as the page says, and nothing else."""
    install_doc_example(tmp_path / "doc-site")
    monkeypatch.syspath_prepend(str(tmp_path / "doc-site"))
    registry.refresh()
    yield tmp_path / "doc-site"
    forget_modules(DOC_MODULE)
    monkeypatch.undo()
    registry.refresh()


def embeddings_file(path: Path, utterances, leakage=0.6, dim=16, seed=0):
    """Embeddings with known speaker leakage, stored as the plugin's .npz."""
    rng = np.random.default_rng(seed)
    speakers = sorted({u.speaker for u in utterances})
    identity = {s: rng.standard_normal(dim) for s in speakers}
    vectors = np.array([leakage * identity[u.speaker] + rng.standard_normal(dim) for u in utterances])
    np.savez(path, utt_ids=np.array([u.utt_id for u in utterances]), vectors=vectors)


def split(prefix, n_speakers, n_enrol, n_trials):
    enrol = [Utterance(f"{prefix}e{s}-{k}", f"{prefix}spk{s}") for s in range(n_speakers) for k in range(n_enrol)]
    trials = [Utterance(f"{prefix}t{s}-{k}", f"{prefix}spk{s}") for s in range(n_speakers) for k in range(n_trials)]
    return enrol, trials


def test_plugin_package_registers_and_works_by_name(plugin_site, tmp_path):
    with pytest.warns(
        UserWarning, match=r"ignoring entry point 'logistic'.*fixture-other 2.0.*already taken by .*built-in"
    ):
        cals = registry.calibrators()
    assert cals[SHRUNK].origin == ORIGIN
    assert cals["logistic"].origin == "built-in"
    assert registry.attackers()[NPZ].target == f"{MODULE}.attackers:NpzEmbeddings"
    assert HEAVY_MARKER not in sys.modules

    dev_enrol, dev_trials = split("d", 10, 3, 8)
    ev_enrol, ev_trials = split("v", 12, 3, 8)
    emb = tmp_path / "emb.npz"
    embeddings_file(emb, dev_enrol + dev_trials + ev_enrol + ev_trials)
    attacker = create("attacker", f"{NPZ}?path={emb}")
    dev = attacker.score(dev_trials, group_by_speaker(dev_enrol))
    ev = attacker.score(ev_trials, group_by_speaker(ev_enrol))
    assert ev.scores.shape == (96, 12)

    result = evaluate(dev, ev, calibrator=f"{SHRUNK}?shrink=0.25")
    assert result.calibrator.shrink == 0.25
    assert result.summary["calibrator"] == f"{SHRUNK}(shrink=0.25)"
    # independent check: a quarter of the balanced logistic slope, textbook posterior
    base = evaluate(dev, ev)
    slope = base.calibrator.slope_ * 0.25
    want = dense_pipeline(ev.scores, ev.true_index, slope, 0.0, np.full(12, -math.log(12)))
    np.testing.assert_allclose(result.lid, want, atol=1e-6)
    assert 0 < result.summary["alid"] < base.summary["alid"]
    assert HEAVY_MARKER not in sys.modules
    registry.load("attacker", "heavy")
    assert HEAVY_MARKER in sys.modules


def test_broken_plugin_warns_and_leaves_the_others_usable(plugin_site):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        registry.entries("calibrator")
    with pytest.warns(
        UserWarning,
        match=rf"calibrator 'broken' from distribution lidframe-fixture-other 2.0: cannot load {MODULE}.missing:Nope "
        r"\(ModuleNotFoundError",
    ):
        status = registry.check_all("calibrator")
    assert status[("calibrator", SHRUNK)] is None and status[("calibrator", "logistic")] is None
    with pytest.raises(
        PluginError, match="calibrator 'broken' from distribution lidframe-fixture-other 2.0: cannot load"
    ):
        registry.load("calibrator", "broken")
    assert registry.load("calibrator", SHRUNK).__name__ == "ShrunkLogistic"
    assert registry.load("calibrator", SHRUNK).__module__ == f"{MODULE}.calibrators"  # the fixture's, not the page's


def test_plugin_conformance_test_from_the_docs_passes(plugin_site, tmp_path):
    namespace = {}
    exec(compile(renamed(doc_files()["tests/test_conformance.py"]), "test_conformance.py", "exec"), namespace)
    namespace["test_calibrator_conforms"]()
    namespace["test_attacker_conforms"](tmp_path)


def test_usage_example_from_the_docs_runs(plugin_site, tmp_path, monkeypatch, capsys):
    """docs/plugins.md's usage.py, on an embeddings.npz of the utterance ids it names."""
    utts = [
        Utterance(f"{split}-{kind}{s}-{k}", f"{split}-spk{s}")  # the ids and speakers the page's lists give
        for split in ("dev", "eval")
        for kind, per_speaker in (("e", 2), ("t", 4))
        for s in range(10)
        for k in range(per_speaker)
    ]
    embeddings_file(tmp_path / "embeddings.npz", utts, leakage=1.0, seed=4)
    monkeypatch.chdir(tmp_path)
    code = renamed(doc_files()["usage.py (where mylab-lid is installed)"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the name clash of the fixture's second distribution
        exec(compile(code, "usage.py", "exec"), {"__name__": "__usage__"})
    printed = capsys.readouterr().out.split()
    assert printed[0] == f"{SHRUNK}(shrink=0.25)"
    assert 0 < float(printed[1]) <= math.log2(10)  # 10 eval speakers with leaking embeddings


@pytest.mark.slow
def test_cli_lists_plugins_and_evaluates_with_one(plugin_site, tmp_path):
    dev_enrol, dev_trials = split("d", 8, 2, 6)
    ev_enrol, ev_trials = split("v", 8, 2, 6)
    emb = tmp_path / "emb.npz"
    embeddings_file(emb, dev_enrol + dev_trials + ev_enrol + ev_trials, seed=3)
    with pytest.warns(UserWarning, match="already taken"):
        attacker = create("attacker", f"{NPZ}?path={emb}")
    attacker.score(dev_trials, group_by_speaker(dev_enrol)).save(tmp_path / "dev.npz")
    attacker.score(ev_trials, group_by_speaker(ev_enrol)).save(tmp_path / "eval.npz")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, plugin_site)))
    listing = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from lidframe.cli import main; code = main(['plugins']); "
            f"print('IMPORTED', sorted(m for m in sys.modules if m.startswith(({MODULE!r}, {DOC_MODULE!r}, 'torch')))); "
            "sys.exit(code)",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert listing.returncode == 0, listing.stderr
    assert re.search(rf"calibrator\s+{SHRUNK}\s+{MODULE}.calibrators:ShrunkLogistic\s+{ORIGIN}", listing.stdout)
    assert re.search(rf"attacker\s+{NPZ}\s+{MODULE}.attackers:NpzEmbeddings\s+{ORIGIN}", listing.stdout)
    assert "IMPORTED []" in listing.stdout  # listing imports no plugin module and no torch
    assert "'logistic'" in listing.stderr and "already taken" in listing.stderr  # the clash is reported
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "lidframe.cli",
            "evaluate",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "eval.npz"),
            "--calibrator",
            f"{SHRUNK}?shrink=0.75",
            "--json",
            str(tmp_path / "s.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "s.json").read_text())["calibrator"] == f"{SHRUNK}(shrink=0.75)"
    check = subprocess.run(
        [sys.executable, "-m", "lidframe.cli", "plugins", "--check"], capture_output=True, text=True, env=env
    )
    assert check.returncode == 1 and "BROKEN" in check.stdout
    assert f"cannot load {MODULE}.missing:Nope" in check.stderr


# ----------------------------------------------------------- in-process registry
class Tripled(Logistic):
    name = "tripled"

    def fit(self, scores, labels, *, sample_weight=None):
        super().fit(scores, labels, sample_weight=sample_weight)
        self.slope_ *= 3
        return self


@pytest.fixture()
def clean_registry():
    yield
    for kind in registry.KINDS:
        for name, entry in list(registry.entries(kind).items()):
            if entry.origin == "register()":
                registry.unregister(kind, name)


def test_register_use_replace_and_clashes(clean_registry):
    entry = register("calibrator", "tripled", Tripled)
    assert entry.origin == "register()" and entry.target.endswith(":Tripled")
    assert register("calibrator", "tripled", Tripled) == entry  # same target again: fine
    with pytest.raises(InputError, match="'tripled' is already registered to .*Tripled .register\\(\\)..*replace=True"):
        register("calibrator", "tripled", Logistic)
    with pytest.raises(
        InputError, match="'logistic' is already registered to lidframe.calibrators.logistic:Logistic .built-in."
    ):
        register("calibrator", "logistic", Tripled)
    assert register("calibrator", "tripled", "lidframe.calibrators.logistic:Logistic", replace=True).target.endswith(
        ":Logistic"
    )
    register("calibrator", "tripled", Tripled, replace=True)
    from lidframe.data.simulate import simulate_system

    dev, ev = simulate_system(leakage=0.3, seed=4)
    assert evaluate(dev, ev, calibrator="tripled").calibrator.slope_ == pytest.approx(
        3 * evaluate(dev, ev).calibrator.slope_
    )


def test_contract_checks_say_what_is_missing(clean_registry):
    class NoLlr:
        def fit(self, scores, labels):
            return self

    with pytest.raises(
        InputError,
        match=r"calibrator 'x' is not a calibrator: missing llr\(scores\) returning an ndarray of natural-log LLRs",
    ):
        register("calibrator", "x", NoLlr)

    class BadSignature:
        def log_prior(self):
            return None

    with pytest.raises(InputError, match=r"log_prior\(self\) cannot be called as log_prior\(enrolled\)"):
        register("prior", "y", BadSignature)
    with pytest.raises(InputError, match=r"missing embed\(utterances\).*missing score\(trials, enrolment\)"):
        check_contract("attacker", object())
    with pytest.raises(InputError, match="register a class or a 'package.module:Class' string"):
        register("prior", "z", lambda: None)
    with pytest.raises(InputError, match="invalid calibrator name"):
        register("calibrator", "a?b", Tripled)
    with pytest.raises(InputError, match="unknown component kind"):
        registry.entries("scorer")


def listed_names(message: str) -> list[str]:
    """The names an "unknown NAME; available: a, b, c (or ...)" message lists, in its order."""
    found = re.search(r"; available: ([^(]*?)(?: \(or|$)", message)
    assert found, message
    return found.group(1).split(", ")


@pytest.mark.parametrize("installed", ["built-ins", "with mylab-lid"])
def test_unknown_names_list_what_is_available(installed, request):
    """The list names every built-in, and any plugin installed beside them (the page's mylab-lid, say)."""
    if installed != "built-ins":
        request.getfixturevalue("doc_example_installed")
    for kind, unknown in (("calibrator", "isotonc"), ("attacker", "wavlm"), ("prior", "gaussian")):
        with pytest.raises(InputError, match=rf"^unknown {kind} '{unknown}'; available: ") as info:
            registry.load(kind, unknown) if kind == "attacker" else create(kind, unknown)
        listed = listed_names(str(info.value))
        assert listed == sorted(listed) and set(BUILTIN[kind]) <= set(listed), listed
        extra = set(listed) - set(BUILTIN[kind])
        assert all(registry.entries(kind)[name].origin != "built-in" for name in extra)
    if installed != "built-ins":  # the page's components are listed with the built-ins
        with pytest.raises(InputError) as info:
            create("calibrator", "isotonc")
        assert "shrunk" in listed_names(str(info.value))


def test_spec_parsing_and_parameters():
    assert parse_spec("logistic") == ("logistic", {})
    assert parse_spec("x?a=true&b=None&c=3&d=0.5&e=text&f=a%26b") == (
        "x",
        {"a": True, "b": None, "c": 3, "d": 0.5, "e": "text", "f": "a&b"},
    )
    cal = create("calibrator", "logistic?weighting=prior&C=none")
    assert cal.get_params() == {
        "C": None,
        "standard_errors": "auto",
        "weighting": "prior",
        "max_pairs": 1_000_000,
        "bins": 65536,
    }
    assert create("calibrator", "lidframe.calibrators.logistic:Logistic?C=2").C == 2
    assert create("attacker", "random?dim=4&seed=1").dim == 4
    prior = create("prior", "watchlist?ids=a,b&weight=3")
    assert prior.ids == ("a", "b") and prior.weight == 3.0
    with pytest.raises(InputError, match="has no parameter 'slope'; it takes weighting, C, standard_errors, max_pairs"):
        create("calibrator", "logistic?slope=2")
    with pytest.raises(InputError, match="given twice"):
        parse_spec("logistic?C=1&C=2")
    with pytest.raises(InputError, match="key=value"):
        parse_spec("logistic?C")
    with pytest.raises(InputError, match="cannot load nowhere.mod:Thing"):
        create("calibrator", "nowhere.mod:Thing")


def test_spec_values_are_converted_by_the_parameter_they_are_given_to():
    pytest.importorskip("torch", reason="EcapaTdnn needs torch (pip install -e '.[audio]')")
    from lidframe.attackers.ecapa import EcapaTdnn
    from lidframe.attackers.precomputed import PrecomputedEmbeddings
    from lidframe.core.priors import WatchList

    # ids are text: leading zeros and exponents survive (they used to become 7 and 1000.0)
    assert create("prior", "watchlist?ids=007").ids == ("007",)
    assert create("prior", "watchlist?ids=1e3").ids == ("1e3",)
    assert create("prior", "watchlist?ids=007,1e3,true,none&weight=2").ids == ("007", "1e3", "true", "none")
    assert parse_spec("watchlist?ids=007&weight=3", WatchList) == ("watchlist", {"ids": "007", "weight": 3.0})
    # numbers, booleans and None where the parameter's type says so
    assert create("calibrator", "logistic?C=0.5").C == 0.5 and isinstance(create("calibrator", "logistic?C=2").C, float)
    assert create("calibrator", "logistic?C=null&standard_errors=false").get_params() == {
        "C": None,
        "standard_errors": False,
        "weighting": "balanced",
        "max_pairs": 1_000_000,
        "bins": 65536,
    }
    assert create("calibrator", "isotonic?laplace=0").laplace is False
    assert create("attacker", "random?dim=4&seed=007").seed == 7  # an int parameter parses the digits
    # str parameters keep the text, even when it reads like a number, a boolean or None
    assert create("calibrator", "logistic?weighting=1e3").weighting == "1e3"
    assert create("attacker", "random?enrolment=none").enrolment == "none"
    # sequences split on commas; **options forwarded to the base class are typed by the base
    name, params = parse_spec("ecapa?channels=8,8,8,8,24&device=0&checkpoint=123&batch_size=4&compile=true", EcapaTdnn)
    assert list(params.pop("channels")) == [8, 8, 8, 8, 24]  # a sequence of int, whichever kind
    assert params == {"device": "0", "checkpoint": "123", "batch_size": 4, "compile": True}
    assert parse_spec("precomputed?path=007.npz", PrecomputedEmbeddings)[1] == {"path": "007.npz"}
    assert parse_spec("precomputed?path=1.npz,2.npz", PrecomputedEmbeddings)[1] == {"path": ["1.npz", "2.npz"]}
    # a value that is not of its parameter's type is named
    with pytest.raises(InputError, match=r"parameter 'dim' takes int, got 'four'"):
        create("attacker", "random?dim=four")
    with pytest.raises(InputError, match=r"parameter 'standard_errors' takes bool \| 'auto', got 'maybe'"):
        create("calibrator", "logistic?standard_errors=maybe")
    with pytest.raises(InputError, match=r"parameter 'C' takes float \| None, got 'big'"):
        create("calibrator", "logistic?C=big")
    # without a target, parse_spec keeps the literal guess
    assert parse_spec("x?ids=007&n=1e3") == ("x", {"ids": 7, "n": 1000.0})


def test_annotated_attrs_and_plain_plugins_are_converted_by_their_own_types():
    import attrs

    @attrs.frozen
    class Tagged:
        label: str = attrs.field(converter=str)
        scale: float = attrs.field(converter=float, default=1.0)
        codes: tuple[str, ...] = ()
        anything = None

        def log_prior(self, enrolled):
            return np.full(len(enrolled), -math.log(len(enrolled)))

    class Plain:
        def __init__(self, *, count: int = 1, names: list[str] | None = None, loose=None):
            self.count, self.names, self.loose = count, names, loose

        def log_prior(self, enrolled):
            return np.full(len(enrolled), -math.log(len(enrolled)))

    assert parse_spec("t?label=007&scale=1e3&codes=01,1e3", Tagged)[1] == {
        "label": "007",
        "scale": 1000.0,
        "codes": ("01", "1e3"),
    }
    assert parse_spec("p?count=3&names=007,08&loose=007", Plain)[1] == {"count": 3, "names": ["007", "08"], "loose": 7}
    assert parse_spec("p?names=none", Plain)[1] == {"names": None}


def test_parameters_given_with_an_instance_raise_instead_of_being_dropped():
    from lidframe.core.priors import WatchList

    watch = WatchList(["a"], 3.0)
    with pytest.raises(InputError, match=r"prior parameters 'weight' were given with a ready WatchList instance"):
        create("prior", watch, weight=5.0)
    assert create("prior", watch) is watch  # alone, an instance passes through
    assert create("attacker", RandomAttacker, dim=3).dim == 3  # a class takes them


@given(
    st.lists(
        st.one_of(
            st.from_regex(r"0[0-9]{1,4}", fullmatch=True),  # leading zeros
            st.from_regex(r"[0-9]{1,3}[eE][+-]?[0-9]{1,2}", fullmatch=True),  # exponents
            st.from_regex(r"[0-9]{1,6}(\.[0-9]{0,3})?", fullmatch=True),
            st.sampled_from(["true", "false", "none", "null", "nan", "inf", "-0", "+1", "0x1f", "1_000"]),
        ),
        min_size=1,
        max_size=5,
        unique=True,
    ),
    st.floats(0.1, 100.0, allow_nan=False),
)
def test_drawn_ids_round_trip_through_a_watchlist_spec(ids, weight):
    from urllib.parse import quote

    spec = f"watchlist?ids={quote(','.join(ids), safe=',')}&weight={weight!r}"
    prior = create("prior", spec)
    assert prior.ids == tuple(ids)  # exactly the text written
    assert prior.weight == weight  # repr of a float parses back to the same float
    for one in ids:
        assert create("prior", f"watchlist?ids={quote(one)}").ids == (one,)


def test_import_of_lidframe_and_registry_listing_do_not_import_torch():
    code = (
        "import sys, lidframe\n"
        "from lidframe import registry\n"
        "registry.entries('attacker'); registry.calibrators(); registry.priors()\n"
        "print('torch' in sys.modules, 'lidframe.attackers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ------------------------------------------------ conformance over every built-in
@pytest.mark.parametrize("name", BUILTIN["calibrator"])
def test_builtin_calibrators_conform(name):
    check_calibrator(create("calibrator", name))


@pytest.mark.parametrize(
    "spec",
    [
        "uniform",
        "watchlist?ids=spk1,spk4&weight=4",
        "watchlist?ids=spk0&weight=0.2",
        "uniform?outside=0.2",
        "watchlist?ids=spk0&weight=3&outside=auto",
    ],
)
def test_builtin_priors_conform(spec):
    from lidframe.testing import check_prior

    check_prior(create("prior", spec))


def test_explicit_prior_conforms():
    from lidframe import Explicit
    from lidframe.testing import check_prior

    check_prior(Explicit({f"spk{i}": (i + 1) / 21 for i in range(6)}))


def test_builtin_attackers_conform(tmp_path):
    check_attacker(create("attacker", "random"))
    ids = [f"trial-{i:02d}" for i in range(12)] + [f"enrol-{s}-{k}" for s in range(4) for k in range(2)]
    np.savez(tmp_path / "emb.npz", utt_ids=np.array(ids), vectors=np.random.default_rng(0).normal(size=(len(ids), 8)))
    check_attacker(create("attacker", f"precomputed?path={tmp_path / 'emb.npz'}"))


@pytest.mark.parametrize("name", ["ecapa", "xvector", "ge2e"])
def test_builtin_neural_attackers_conform(name, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("soundfile")
    from tests.voices import write_voice

    trials = [
        Utterance(f"t{i}", f"s{i % 3}", str(write_voice(tmp_path / f"t{i}.wav", i % 3, i, 0.6 + 0.3 * i)))
        for i in range(6)
    ]
    enrolment = {
        f"s{s}": [Utterance(f"e{s}", f"s{s}", str(write_voice(tmp_path / f"e{s}.wav", s, 50 + s, 1.0)))]
        for s in range(3)
    }
    small = {
        "ecapa": "channels=32,32,32,32,96&attention_channels=16&se_channels=16&lin_neurons=24",
        "xvector": "tdnn_channels=32,32,32,32,96&lin_neurons=24",
        "ge2e": "pretrained=false&hidden_size=32&embedding_size=24",  # no resemblyzer needed
    }[name]
    check_attacker(create("attacker", f"{name}?{small}&batch_size=4&device=cpu"), trials=trials, enrolment=enrolment)


@pytest.mark.slow
def test_builtin_recognisers_conform():
    pytest.importorskip("pocketsphinx", reason="the utility extra (pocketsphinx) is not installed")
    for name in BUILTIN["recogniser"]:
        check_recogniser(create("recogniser", name))


def test_every_builtin_is_covered_by_a_conformance_test():
    # BUILTIN (written out by hand) is what the conformance tests above run over
    builtin = {(k, n) for k in registry.KINDS for n, e in registry.entries(k).items() if e.origin == "built-in"}
    assert builtin == {(kind, name) for kind, names in BUILTIN.items() for name in names}


def test_conformance_reports_every_failure():
    class Sloppy:
        def fit(self, scores, labels):
            self.w = 1.0

        def llr(self, scores):
            return -np.asarray(scores)

    with pytest.raises(AssertionError) as info:
        check_calibrator(Sloppy())
    message = str(info.value)
    assert "failed" in message and "fit must return self" in message and "get_params" in message


def test_random_attacker_has_no_speaker_information():
    enrol, trials = split("r", 20, 3, 10)
    dev_enrol, dev_trials = split("q", 20, 3, 10)
    attacker = RandomAttacker(dim=32, seed=5)
    ev = attacker.score(trials, group_by_speaker(enrol))
    dev = attacker.score(dev_trials, group_by_speaker(dev_enrol))
    assert isinstance(ev, ScoreSet) and ev.scores.shape == (200, 20)
    assert abs(evaluate(dev, ev).summary["alid"]) < 0.15  # as the independence property of test_evaluate


def test_plugin_attacker_and_calibrator_work_in_a_grid(plugin_site, tmp_path):
    from lidframe.grid.report import load_results
    from lidframe.grid.runner import run_grid

    enrol, trials = split("g", 6, 2, 4)
    embeddings_file(tmp_path / "emb.npz", enrol + trials, seed=9)
    for name, utts in (("enrolls", enrol), ("trials", trials)):
        d = tmp_path / name
        d.mkdir()
        (d / "wav.scp").write_text("".join(f"{u.utt_id} none.wav\n" for u in utts))
        (d / "utt2spk").write_text("".join(f"{u.utt_id} {u.speaker}\n" for u in utts))
    (tmp_path / "grid.toml").write_text(f"""
[grid]
calibrators = ["{SHRUNK}?shrink=0.25", "logistic"]
attackers = ["{NPZ}?path={tmp_path / "emb.npz"}"]

[systems.lab]
dev = {{ enrol = "enrolls", trials = ["trials"] }}
eval = {{ enrol = "enrolls", trials = ["trials"] }}
""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the name clash of the fixture's second distribution
        counts = run_grid(tmp_path / "grid.toml", tmp_path / "out")
    assert counts["ok"] == 2 and counts["error"] == 0
    results = {r["calibrator"]: r["summary"] for r in load_results(tmp_path / "out")}
    assert results[f"{SHRUNK}?shrink=0.25"]["calibrator"] == f"{SHRUNK}(shrink=0.25)"
    assert 0 < results[f"{SHRUNK}?shrink=0.25"]["alid"] < results["logistic"]["alid"]


def test_each_kind_is_discovered_in_its_documented_entry_point_group(tmp_path, monkeypatch):
    # the group names are public (docs/plugins.md, docs/architecture.md): a package that
    # registers in them must be found, whichever wing the built-ins live in
    site = tmp_path / "site"
    install_distribution(
        site,
        "group-probe",
        "1.0",
        {
            "lidframe.attackers": {"probe-attacker": "lidframe.attackers:RandomAttacker"},
            "lidframe.calibrators": {"probe-calibrator": "lidframe.calibrators:Logistic"},
            "lidframe.priors": {"probe-prior": "lidframe:Uniform"},
        },
    )
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    try:
        assert registry.attackers()["probe-attacker"].origin == "distribution group-probe 1.0"
        assert registry.calibrators()["probe-calibrator"].origin == "distribution group-probe 1.0"
        assert registry.priors()["probe-prior"].origin == "distribution group-probe 1.0"
        log_prior = create("prior", "probe-prior").log_prior(["a", "b", "c", "d"])
        np.testing.assert_allclose(log_prior, np.full(4, -math.log(4)))
    finally:
        monkeypatch.undo()
        registry.refresh()


#: The tests that read the registry's whole listing or install plugins, outside this file.
_LISTING_TESTS = (
    "tests/test_registry.py",
    "tests/cli/test_cli.py::test_bad_options",
    "tests/bad_input/test_calibrator_specs.py",
    "tests/core/test_evaluate.py::test_evaluate_errors",
)


@pytest.mark.slow
def test_the_registry_tests_pass_with_the_plugin_package_of_the_docs_installed(tmp_path):
    """Following docs/plugins.md (installing mylab-lid) must not break the test suite: run these tests beside it."""
    install_doc_example(tmp_path / "doc-site")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "doc-site"))
    probe = subprocess.run(
        [sys.executable, "-c", "from lidframe import registry; print(registry.calibrators()['shrunk'].origin)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert probe.stdout.strip() == f"distribution {DOC_DISTRIBUTION} {doc_project()['version']}"  # it is installed
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *_LISTING_TESTS],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout[-3000:]
