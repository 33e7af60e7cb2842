"""Every ```python block in docs/ runs (in a scratch folder)."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCKS = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in sorted(DOCS.glob("*.md"))
    for n, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))
]


@pytest.fixture()
def restore_registry():
    """Doc examples may register components; remove them so no other test sees them."""
    from lidframe import registry

    before = {k: dict(registry.entries(k)) for k in registry.KINDS}
    yield
    for kind in registry.KINDS:
        for name, entry in registry.entries(kind).items():
            if entry.origin == "register()" and name not in before[kind]:
                registry.unregister(kind, name)


@pytest.mark.parametrize("code", BLOCKS)
def test_doc_example_runs(code, tmp_path, monkeypatch, capsys, restore_registry):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})


def test_worked_example_prints_0_9(tmp_path, monkeypatch, capsys):
    code = re.findall(r"```python\n(.*?)```", (DOCS / "theory.md").read_text(), flags=re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {})
    assert capsys.readouterr().out.strip() == "0.9"


def test_demo_tables_in_readme_and_quickstart_are_what_the_demo_prints():
    from lidframe.cli.simulated_demo import run_demo

    table, _ = run_demo(seed=0)
    for page in (DOCS.parent / "README.md", DOCS / "quickstart.md"):
        assert f"```\n{table}\n```" in page.read_text(), page


def test_sensitivity_table_in_calibrators_page_is_what_the_cli_prints():
    from lidframe.analyses.sensitivity import sensitivity
    from lidframe.cli.sensitivity import format_sensitivity_table
    from lidframe.cli.simulated_demo import DEMO_SYSTEMS
    from lidframe.data.simulate import simulate_system

    offset = list(DEMO_SYSTEMS).index("uneven")
    dev, ev = simulate_system(seed=offset, **DEMO_SYSTEMS["uneven"])  # demo seed 0
    table = format_sensitivity_table(sensitivity(dev, ev))
    assert f"```\n{table}\n```" in (DOCS / "calibrators.md").read_text()
