"""Import hygiene and the package layout (attackers/ and calibrators/ inside lidframe)."""

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_import_lidframe_loads_neither_torch_nor_matplotlib():
    code = (
        "import sys, lidframe, lidframe.calibrators, lidframe.attackers, lidframe.cli\n"
        "lidframe.cli.build_parser()\n"
        "bad = [m for m in ('torch', 'matplotlib') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_subpackages_install_under_the_lidframe_namespace():
    import lidframe.attackers
    import lidframe.calibrators

    root = Path(__file__).resolve().parents[1]
    assert Path(lidframe.calibrators.__file__).resolve().parent == root / "calibrators"
    assert Path(lidframe.attackers.__file__).resolve().parent == root / "attackers"
    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('calibrators') is not None)"
    assert subprocess.run([sys.executable, "-c", code], cwd="/").returncode == 0


def test_every_package_folder_is_listed_for_the_wheel():
    """pyproject.toml lists its packages by hand: a sub-package missing there is missing from a built wheel."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"attackers": "lidframe.attackers", "calibrators": "lidframe.calibrators"}
    found = set()
    for init in root.glob("**/__init__.py"):
        relative = init.parent.relative_to(root)
        top = relative.parts[0]
        if top == "lidframe":
            found.add(".".join(relative.parts))
        elif top in folders:
            found.add(".".join((folders[top], *relative.parts[1:])))
    assert found - listed == set(), "add these to [tool.setuptools] packages"
