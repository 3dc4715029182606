"""src/ uses websockets, uvicorn, Starlette, FastAPI and aiortc through their documented
APIs only, so any of their releases that keeps its documented API keeps Rigway working.

Read from the source with `ast`, every file under src/:
- no import of a private name (`_x`) or of a module the package does not document, be
  it `import m`, `from m import n`, `importlib.import_module("m")` or an attribute path
  below an imported module (`uvicorn.protocols.http`);
- no class that subclasses one of their connection or protocol classes: those are the
  libraries' own machinery, and overriding it ties us to how one release is written.

What each package documents is written out below, with where it comes from.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# A module's documented names; None: every public name in it.
Names = frozenset[str] | None

# Modules and names each package's documentation presents as its API. A module listed
# here is public; a package ending in ".*" makes each module below it public too.
PUBLIC_MODULES: dict[str, Names] = {
    # websockets: the API reference (websockets.readthedocs.io, "API reference"). Its
    # changelog: "Only documented APIs are public. Undocumented, private APIs may change
    # without notice." websockets.asyncio.connection is documented with "You shouldn't
    # use it directly", so it is left out; so are legacy (deprecated), speedups, utils,
    # streams, headers and asyncio.messages (undocumented).
    "websockets": None,  # the convenience imports of the names documented below
    "websockets.asyncio.client": None,  # "Client (asyncio)"
    "websockets.asyncio.server": None,  # "Server (asyncio)"
    "websockets.asyncio.router": None,  # "Server (asyncio)", routing
    "websockets.sync.client": None,  # "Client (threading)"
    "websockets.sync.server": None,  # "Server (threading)"
    "websockets.exceptions": None,  # "Exceptions"
    "websockets.typing": None,  # "Types"
    "websockets.datastructures": None,  # "Data structures": Headers
    "websockets.frames": frozenset({"Close", "CloseCode", "Frame", "Opcode"}),  # same page
    "websockets.http11": frozenset({"Request", "Response"}),  # same page
    "websockets.uri": frozenset({"WebSocketURI", "parse_uri"}),  # same page
    "websockets.protocol": frozenset({"Protocol", "Side", "State"}),  # "Both sides (Sans-I/O)"
    "websockets.client": frozenset({"ClientProtocol"}),  # "Client (Sans-I/O)"
    "websockets.server": frozenset({"ServerProtocol"}),  # "Server (Sans-I/O)"
    "websockets.extensions": frozenset(  # "Extensions"
        {"ClientExtensionFactory", "Extension", "ServerExtensionFactory"}
    ),
    "websockets.extensions.permessage_deflate": frozenset(  # "Per-Message Deflate"
        {"ClientPerMessageDeflateFactory", "ServerPerMessageDeflateFactory"}
    ),
    # uvicorn: the programmatic API its "Settings" and "Deployment" pages show
    # (uvicorn.run, uvicorn.Config, uvicorn.Server); everything else, protocols included,
    # is the server's inside.
    "uvicorn": frozenset({"Config", "Server", "main", "run"}),
    # Starlette: one page per module at starlette.io. starlette.concurrency is left out:
    # no page documents it and its maintainers have said they would rather make it
    # internal (its thread-pool page points to anyio instead).
    "starlette.applications": None,
    "starlette.authentication": None,
    "starlette.background": None,
    "starlette.config": None,
    "starlette.convertors": None,  # "Routing", custom path convertors
    "starlette.datastructures": None,
    "starlette.endpoints": None,
    "starlette.exceptions": None,
    "starlette.middleware.*": None,  # "Middleware" documents each module below it
    "starlette.middleware": None,
    "starlette.requests": None,
    "starlette.responses": None,
    "starlette.routing": None,
    "starlette.schemas": None,
    "starlette.staticfiles": None,
    "starlette.status": None,
    "starlette.templating": None,
    "starlette.testclient": None,
    "starlette.types": None,  # "Middleware", pure ASGI middleware
    "starlette.websockets": None,
    # FastAPI: its "Reference" section (fastapi.tiangolo.com/reference) and the import
    # paths its guides use: fastapi.routing.APIRoute ("Custom Request and APIRoute
    # class"), fastapi.exceptions.RequestValidationError ("Handling Errors"),
    # fastapi.encoders.jsonable_encoder ("JSON Compatible Encoder").
    "fastapi": None,
    "fastapi.background": None,
    "fastapi.datastructures": None,
    "fastapi.encoders": frozenset({"jsonable_encoder"}),
    "fastapi.exceptions": None,
    "fastapi.middleware.*": None,
    "fastapi.middleware": None,
    "fastapi.openapi.*": None,  # "OpenAPI": docs, models, utils
    "fastapi.openapi": None,
    "fastapi.requests": None,
    "fastapi.responses": None,
    "fastapi.routing": None,
    "fastapi.security.*": None,
    "fastapi.security": None,
    "fastapi.staticfiles": None,
    "fastapi.status": None,
    "fastapi.templating": None,
    "fastapi.testclient": None,
    "fastapi.websockets": None,
    # aiortc: its "API Reference" documents the names of the `aiortc` package itself,
    # and "Helpers" the aiortc.contrib.media module; every other module is its inside.
    "aiortc": None,
    "aiortc.contrib.media": None,
}

PACKAGES = frozenset(module.split(".")[0] for module in PUBLIC_MODULES)

# The one module allowed past a package's documented API, because none offers what it
# needs: it checks the release it was written for and refuses any other
# (docs/decisions/0014-aiortc-encoder.md).
VERSION_CHECKED_ADAPTATIONS: dict[str, str] = {
    "rigway/agent/stream/aiortc_adaptation.py": "aiortc",
}

# A class from a module with one of these parts in its path, or named like this, is a
# library's connection or protocol machinery: not a base for our classes.
CONNECTION_MODULE_PARTS = frozenset(
    {"client", "connection", "legacy", "protocol", "protocols", "server"}
)
CONNECTION_CLASS_SUFFIXES = ("Connection", "Protocol")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def is_module(dotted: str) -> bool:
    """Whether `dotted` names a module (finding out imports its parent packages, some of
    which warn on import, as websockets.legacy does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return importlib.util.find_spec(dotted) is not None
        except (ImportError, ValueError, AttributeError):
            return False


def private_part(dotted: str) -> str | None:
    """The first `_name` in a dotted path (dunders such as `__version__` are public)."""
    for part in dotted.split("."):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def documented_names(module: str) -> Names | bool:
    """The names `module` documents (None: all public ones); False when the module is not
    documented at all."""
    if module in PUBLIC_MODULES:
        return PUBLIC_MODULES[module]
    parts = module.split(".")
    for end in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:end]) + ".*" in PUBLIC_MODULES:
            return None
    return False


def module_problem(module: str) -> str | None:
    if private_part(module) is not None:
        return f"private module {module}"
    if documented_names(module) is False:
        return f"undocumented module {module}"
    return None


def name_problem(module: str, name: str) -> str | None:
    """What is wrong with using `name` from the (documented) `module`, if anything."""
    if private_part(name) is not None:
        return f"private name {module}.{name}"
    names = documented_names(module)
    if isinstance(names, frozenset) and name not in names:
        return f"undocumented name {module}.{name}"
    return None


class ImportChecker(ast.NodeVisitor):
    """Collects what one file imports from the watched packages, and how."""

    def __init__(self, path: str, exempt_packages: frozenset[str]) -> None:
        self.path = path
        self.exempt = exempt_packages
        self.findings: list[Finding] = []
        # Local name -> the module it stands for (`import a.b as c`, `from a import b`).
        self.module_aliases: dict[str, str] = {}
        # Local name -> "module.name" for names imported from a watched package.
        self.imported_names: dict[str, str] = {}

    def watched(self, dotted: str) -> bool:
        root = dotted.split(".")[0]
        return root in PACKAGES and root not in self.exempt

    def report(self, node: ast.AST, what: str | None) -> None:
        finding = None if what is None else Finding(self.path, getattr(node, "lineno", 0), what)
        # Once per line: `from m import a, b` from an undocumented m is one finding.
        if finding is not None and finding not in self.findings:
            self.findings.append(finding)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if self.watched(alias.name):
                self.report(node, module_problem(alias.name))
            if alias.asname is not None:
                self.module_aliases[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.module_aliases[root] = root
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and self.watched(module):
            for alias in node.names:
                local = alias.asname or alias.name
                submodule = f"{module}.{alias.name}"
                if is_module(submodule):
                    self.report(node, module_problem(submodule))
                    self.module_aliases[local] = submodule
                    continue
                problem = module_problem(module)
                self.report(node, problem if problem else name_problem(module, alias.name))
                self.imported_names[local] = submodule
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        called = function.attr if isinstance(function, ast.Attribute) else None
        if isinstance(function, ast.Name):
            called = function.id
        if (
            called in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and self.watched(node.args[0].value)
        ):
            self.report(node, module_problem(node.args[0].value))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # Only the outermost attribute of a chain: `a.b.c` is checked once, whole.
        chain: list[str] = []
        inner: ast.expr = node
        while isinstance(inner, ast.Attribute):
            chain.insert(0, inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and inner.id in self.module_aliases:
            module = self.module_aliases[inner.id]
            if self.watched(module):
                self.report(node, attribute_problem(module, chain))
        # The chain's inner attributes are parts of this one: do not visit them again.
        self.visit(inner)


def attribute_problem(module: str, chain: list[str]) -> str | None:
    """What is wrong with `module.a.b...`: a private or undocumented module on the way,
    or a private or undocumented name at its end."""
    for attr in chain:
        candidate = f"{module}.{attr}"
        if is_module(candidate):
            problem = module_problem(candidate)
            if problem is not None:
                return problem
            module = candidate
            continue
        return name_problem(module, attr)
    return None


def resolve(expression: ast.expr, checker: ImportChecker) -> str | None:
    """The dotted origin of a base class expression, when it comes from an import."""
    if isinstance(expression, ast.Name):
        if expression.id in checker.imported_names:
            return checker.imported_names[expression.id]
        return checker.module_aliases.get(expression.id)
    if isinstance(expression, ast.Attribute):
        outer = resolve(expression.value, checker)
        return None if outer is None else f"{outer}.{expression.attr}"
    if isinstance(expression, ast.Subscript):  # Generic[...]
        return resolve(expression.value, checker)
    return None


def is_connection_class(origin: str) -> bool:
    *module, name = origin.split(".")
    return bool(CONNECTION_MODULE_PARTS.intersection(module[1:])) or name.endswith(
        CONNECTION_CLASS_SUFFIXES
    )


def findings_in(source: str, path: str) -> tuple[list[Finding], list[Finding]]:
    """(import findings, subclass findings) of one file's source."""
    exempt = frozenset(
        package for suffix, package in VERSION_CHECKED_ADAPTATIONS.items() if path == suffix
    )
    tree = ast.parse(source, filename=path)
    checker = ImportChecker(path, exempt)
    checker.visit(tree)
    subclasses: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            origin = resolve(base, checker)
            if origin is not None and checker.watched(origin) and is_connection_class(origin):
                subclasses.append(Finding(path, node.lineno, f"{node.name} subclasses {origin}"))
    return checker.findings, subclasses


def source_files() -> Iterator[tuple[str, str]]:
    for file in sorted(SRC.rglob("*.py")):
        yield file.relative_to(SRC).as_posix(), file.read_text(encoding="utf-8")


def test_src_imports_only_documented_modules_and_public_names() -> None:
    findings = [str(f) for path, text in source_files() for f in findings_in(text, path)[0]]
    assert findings == [], "\n".join(findings)


def test_src_subclasses_no_connection_or_protocol_class_of_these_packages() -> None:
    findings = [str(f) for path, text in source_files() for f in findings_in(text, path)[1]]
    assert findings == [], "\n".join(findings)


# ---- the checks themselves -------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "from websockets.asyncio.client import ClientConnection, connect", [], id="public"
        ),
        pytest.param("import uvicorn\nuvicorn.Config", [], id="public attribute"),
        pytest.param("from starlette.middleware.base import BaseHTTPMiddleware", [], id="glob"),
        pytest.param("from aiortc import VideoStreamTrack", [], id="aiortc top level"),
        pytest.param(
            "from websockets.frames import Frame, apply_mask",
            ["undocumented name websockets.frames.apply_mask"],
            id="undocumented name",
        ),
        pytest.param(
            "from websockets.speedups import apply_mask",
            ["undocumented module websockets.speedups"],
            id="undocumented module",
        ),
        pytest.param(
            "from uvicorn.protocols.http.h11_impl import H11Protocol",
            ["undocumented module uvicorn.protocols.http.h11_impl"],
            id="internal module",
        ),
        pytest.param(
            "from uvicorn import _types", ["private module uvicorn._types"], id="private module"
        ),
        pytest.param(
            "from fastapi import _compat", ["private module fastapi._compat"], id="private from"
        ),
        pytest.param(
            "import uvicorn\nuvicorn.protocols.http.h11_impl.H11Protocol",
            ["undocumented module uvicorn.protocols"],
            id="attribute path",
        ),
        pytest.param(
            "import aiortc.codecs.h264 as h264",
            ["undocumented module aiortc.codecs.h264"],
            id="import as",
        ),
        pytest.param(
            "import importlib\nimportlib.import_module('websockets.legacy.protocol')",
            ["undocumented module websockets.legacy.protocol"],
            id="import_module",
        ),
        pytest.param(
            "from aiortc.mediastreams import MediaStreamError",
            ["undocumented module aiortc.mediastreams"],
            id="public name, internal path",
        ),
    ],
)
def test_the_import_check(source: str, expected: list[str]) -> None:
    findings, _ = findings_in(source, "example.py")
    assert [f.what for f in findings] == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "from websockets.asyncio.client import ClientConnection\n"
            "class Direct(ClientConnection): ...",
            ["Direct subclasses websockets.asyncio.client.ClientConnection"],
            id="connection",
        ),
        pytest.param(
            "import uvicorn.protocols.http.httptools_impl as impl\n"
            "class Fast(impl.HttpToolsProtocol): ...",
            ["Fast subclasses uvicorn.protocols.http.httptools_impl.HttpToolsProtocol"],
            id="protocol through an alias",
        ),
        pytest.param(
            "import websockets\nclass Sans(websockets.ClientProtocol): ...",
            ["Sans subclasses websockets.ClientProtocol"],
            id="top-level name",
        ),
        pytest.param(
            "from aiortc import VideoStreamTrack\nclass Track(VideoStreamTrack): ...",
            [],
            id="documented extension point",
        ),
        pytest.param(
            "from starlette.middleware.base import BaseHTTPMiddleware\n"
            "class Timing(BaseHTTPMiddleware): ...",
            [],
            id="middleware",
        ),
        pytest.param("import asyncio\nclass Mine(asyncio.Protocol): ...", [], id="asyncio's"),
    ],
)
def test_the_subclass_check(source: str, expected: list[str]) -> None:
    _, subclasses = findings_in(source, "example.py")
    assert [f.what for f in subclasses] == expected


def test_the_adaptation_module_may_reach_into_its_package_only() -> None:
    source = "import aiortc.rtcrtpsender\nfrom websockets.utils import apply_mask"
    [(path, _)] = VERSION_CHECKED_ADAPTATIONS.items()
    findings, _ = findings_in(source, path)
    assert [f.what for f in findings] == ["undocumented module websockets.utils"]
