"""Which test runs which documented command: the ``documents`` marker.

A test proves a command line of the documentation by running it, and says so with a marker
holding the command exactly as the documentation shows it (``tests/docs/documented.py`` finds
them; run ``python -m tests.docs`` for the list)::

    @documents("archiver verify crawls/example")
    def test_verify(doc: DocShell, tmp_path: Path) -> None:
        done = doc.run("archiver verify crawls/example", cwd=...)
        assert done.returncode == 0 and "VERIFY OK" in done.stdout

The test may live anywhere under ``tests/`` (next to the feature's own tests is good); it must
run the command through :class:`tests.docs.shell.DocShell` (``doc.run`` / ``doc.start``),
which runs it as written and records it: a marked test that ran none of its commands fails
at teardown. A test of a ``pytest.param`` may carry its own marker (``marks=documents(...)``).

The markers are read from the test files' source (``ast``), not by importing them, so the
check that every documented command has a test costs milliseconds; a marker's arguments are
string literals or module-level string constants.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from tests.docs.documented import REPO

documents = pytest.mark.documents


@dataclasses.dataclass(frozen=True)
class Registration:
    """A test marked as running documented commands."""

    test: str  #: ``tests/path.py::test_name``
    line: int
    commands: tuple[str, ...]


def registrations(root: Path = REPO) -> list[Registration]:
    """Every ``documents`` marker on a test under ``root/tests``."""
    found: list[Registration] = []
    for path in sorted((root / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        constants = _string_constants(tree)
        relative = path.relative_to(root).as_posix()
        for function, prefix in _test_functions(tree):
            texts: list[str] = []
            for decorator in function.decorator_list:
                for call in ast.walk(decorator):
                    if isinstance(call, ast.Call) and _is_documents(call.func):
                        texts += [_string(arg, constants, relative) for arg in call.args]
            if texts:
                name = f"{relative}::{prefix}{function.name}"
                found.append(Registration(name, function.lineno, tuple(texts)))
    return found


def _test_functions(
    tree: ast.Module,
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    functions: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            functions.append((node, ""))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            functions += [
                (item, f"{node.name}::")
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test")
            ]
    return functions


def _is_documents(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "documents"
    return isinstance(func, ast.Attribute) and func.attr == "documents"


def _string_constants(tree: ast.Module) -> dict[str, str]:
    constants: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                constants[target.id] = value.value
    return constants


def _string(node: ast.expr, constants: dict[str, str], where: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    raise ValueError(
        f"{where}:{node.lineno}: a documents(...) argument must be a string literal or a "
        "module-level string constant, so that the registry can be read without importing"
    )
