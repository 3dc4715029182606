"""Every ABI declaration of the Windows backend (`abi.collect()`) holds against the
mingw-w64 headers: struct layouts, constants, vtable slots and interface ids, as static
assertions compiled by the cross compilers (nothing runs, so this works on Linux)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rigway.agent.backends.windows import abi
from rigway.agent.backends.windows.abi import collect
from tests.agent.windows.abi_asserts import (
    compile_check,
    generate,
    missing_compilers,
    names_declared_by_headers,
)

needs_cross_compilers = pytest.mark.skipif(
    bool(missing_compilers()),
    reason=f"mingw-w64 cross compilers absent ({', '.join(missing_compilers())}): "
    "scripts/install-system-deps.sh installs them",
)

# Grows with the declarations; a drop means declarations went unchecked.
MINIMUM_ASSERT_COUNT = 80


@needs_cross_compilers
def test_declarations_match_the_mingw_headers() -> None:
    check = generate(collect())
    outcome = compile_check(check)
    print(f"{check.assert_count} static assertions")
    assert outcome.compiled, "\n".join(outcome.errors)
    assert outcome.failed_asserts == ()
    assert check.assert_count >= MINIMUM_ASSERT_COUNT


@needs_cross_compilers
def test_names_declared_absent_from_headers_are_absent_from_them() -> None:
    declarations = collect()
    absent = set(declarations.absent_from_headers)
    declared_after_all = (
        names_declared_by_headers(absent, generate(declarations)) if absent else set()
    )
    assert declared_after_all == set(), "the headers declare these: drop their exemption"


def test_every_module_declaring_abi_is_listed() -> None:
    # Read, not imported: binding modules refuse to import off Windows.
    package = Path(abi.__file__).parent
    declaring = {
        path.stem
        for path in package.glob("*.py")
        if any(_assigns_abi(node) for node in ast.parse(path.read_text()).body)
    }
    assert declaring - set(abi.DECLARING_MODULES) == set(), "add these to DECLARING_MODULES"


def _assigns_abi(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "ABI" for t in node.targets)
    return (
        isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and (node.target.id == "ABI")
    )
