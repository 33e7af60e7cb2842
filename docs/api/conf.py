"""Sphinx configuration of lidframe's API reference (``make docs``: build/docs/index.html).

The reference is built from the numpydoc docstrings by autodoc and autosummary: a page
per public module of the ``lidframe`` package (a module whose dotted name has a part
starting with ``_`` is private and left out), each documenting what its ``__all__``
names, and for each package the names it exports, linked to where they are defined.
The list of modules is not written by hand: this file walks the package and writes it
(``modules.rst``) before Sphinx reads the sources, so a module that is added, moved or
split appears without an edit here.  Each object is documented once, in the module that
defines it, so a package that re-exports a name, or a function that shares its name
with a module, never describes one object twice.

The guides are the Markdown pages beside this folder (docs/index.md), not part of this
build.  ``make docs`` copies this folder into build/ first, so the pages written here and
the stub pages autosummary writes never land in the source tree, and runs Sphinx with
warnings as errors.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import tomllib
import types
from pathlib import Path

import numpydoc.numpydoc

import lidframe

#: The repository: docs/api/conf.py, or the copy make docs builds from, build/docs-src/conf.py.
ROOT = Path(__file__).resolve().parents[2]

project = "lidframe"
author = "lidframe developers"
copyright = "lidframe developers"  # noqa: A001 - the name Sphinx reads
release = lidframe.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
templates_path = ["_templates"]
root_doc = "index"

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"show-inheritance": True}  # members: the page template names them
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# `python -m lidframe.cli` runs the command line when imported: it is not a module to document
autodoc_mock_imports = ["lidframe.cli.__main__"]

# numpydoc: a class's members are documented by autodoc on its page, not listed a second time
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

html_theme = "alabaster"
html_title = f"lidframe {release} API reference"
html_show_sourcelink = False


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def public_modules() -> list[str]:
    """Every public module of lidframe, in name order (a package before its modules).

    The packages are those pyproject.toml installs (``lidframe.attackers`` and
    ``lidframe.calibrators`` live in folders of their own, which a walk of
    ``lidframe.__path__`` does not see), and everything found below each.
    """
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found: set[str] = set()
    for package in setup["packages"]:
        found.add(package)
        path = importlib.import_module(package).__path__
        found.update(info.name for info in pkgutil.walk_packages(path, f"{package}.", onerror=lambda name: None))
    return sorted(name for name in found if _public(name))


def _top_level_names(body: list[ast.stmt]) -> set[str]:
    """Names a module's own code binds at its top level (imports are not its own)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for part in getattr(node, block, []):
                    names |= _top_level_names(part.body if isinstance(part, ast.ExceptHandler) else [part])
    return names


def own_members(modname: str) -> list[str] | None:
    """What *modname*'s ``__all__`` names that it defines itself: what its page documents.

    A name it imports and re-exports is documented where it is defined, once.  None for a
    module without ``__all__`` (autodoc's own choice then: what the module defines).
    """
    module = importlib.import_module(modname)
    listed = getattr(module, "__all__", None)
    if listed is None:
        return None
    defined = _top_level_names(ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8")).body)
    return [name for name in listed if name in defined]


def _home(package: str, name: str, obj: object) -> str:
    """Where the page that documents *package*'s export *name* is: its defining module's, else the package's."""
    candidates = [getattr(obj, "__module__", None)] + [m for m in MODULES if m.startswith(f"{package}.")]
    for module in candidates:
        if name in (OWN_MEMBERS.get(module) or ()) and getattr(importlib.import_module(module), name) is obj:
            return f"{module}.{name}"
    return f"{package}.{name}"  # defined outside lidframe (a scikit-learn exception)


def _exports(package: str) -> list[str]:
    """The names *package* exports (its ``__all__``, dunders aside), each where it is documented."""
    module = importlib.import_module(package)
    listed = [name for name in getattr(module, "__all__", ()) if not name.startswith("__")]
    return [_home(package, name, getattr(module, name)) for name in listed]


def _autosummary(names: list[str], toctree: bool) -> list[str]:
    if not names:
        return []
    options = ["   :toctree: generated", "   :template: autosummary/module.rst"] if toctree else ["   :nosignatures:"]
    return [".. autosummary::", *options, "", *(f"   {n}" for n in names), ""]


def write_module_index(folder: Path) -> None:
    """``modules.rst``: a section per package, with the names it exports and a page per module."""
    packages = [m for m in MODULES if hasattr(importlib.import_module(m), "__path__")]
    lines = ["Modules", "=======", ""]
    for package in packages:
        inside = [m for m in MODULES if m.rpartition(".")[0] == package and m not in packages]
        lines += [f"``{package}``", "-" * (len(package) + 4), ""]
        lines += _autosummary([package], toctree=True)
        exports = _exports(package)
        if exports:
            lines += ["What it exports, linked to where each is documented:", ""]
            lines += _autosummary(exports, toctree=False)
        lines += _autosummary(inside, toctree=True)
    (folder / "modules.rst").write_text("\n".join(lines), encoding="utf-8")


MODULES = public_modules()
#: module -> the names its page documents (None: autodoc's choice)
OWN_MEMBERS = {name: own_members(name) for name in MODULES}
autosummary_context = {"own_members": OWN_MEMBERS}


def _numpydoc_reads_class_objects_only(get_doc_object):
    """numpydoc reads a ``class`` as a class; autodoc also documents a TypeVar as one (``ArrayOrTensor``)."""

    def get(obj, what=None, *args, **kwargs):
        if what == "class" and not inspect.isclass(obj):
            what = "object"
        return get_doc_object(obj, what, *args, **kwargs)

    return get


def _alias_signature(app, what, name, obj, options, signature, return_annotation):
    """A type alias (``Row = dict[str, Any]``) has no signature; numpydoc would read one off ``dict``'s docstring.

    Sphinx takes the first handler's answer that is not None, and uses one only where it
    is truthy (it cannot place one on an object without a signature): an empty tuple
    keeps numpydoc's handler from answering for an alias and leaves the signature out.
    """
    return () if isinstance(obj, types.GenericAlias) else None


def _skip_foreign_methods(app, what, name, obj, skip, options):
    """Leave out the methods a base class of another package adds to each subclass.

    scikit-learn gives every estimator subclass its own ``set_fit_request`` (metadata
    routing), written for scikit-learn's documentation; lidframe's calibrators document
    their own methods only.
    """
    return True if what == "class" and getattr(obj, "__module__", "").startswith("sklearn.") else None


def setup(app):
    """Run after the extensions' own setup: numpydoc's sets the reader wrapped here."""
    numpydoc.numpydoc.get_doc_object = _numpydoc_reads_class_objects_only(numpydoc.numpydoc.get_doc_object)
    app.connect("autodoc-process-signature", _alias_signature, priority=400)  # before numpydoc's (500)
    app.connect("autodoc-skip-member", _skip_foreign_methods)


write_module_index(Path(__file__).resolve().parent)
