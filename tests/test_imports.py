"""The import layers (DESIGN.md "Layout"): no import circle between pilar's
modules, no import up the layers, and the CLI's query path free of the
server libraries. Built on grimp's import graph of the package."""

from __future__ import annotations

import subprocess
import sys

import grimp
import pytest

LAYERS = [
    ("__main__",), ("cli",), ("api",), ("pipeline",),
    ("ingest_run", "writes", "scale_out", "stores"),
    ("eval",), ("reader",), ("packing",), ("retrieval",), ("graph",), ("ingest",),
    ("llm", "db", "migrations"),
    ("query",),
    ("model", "answers", "config", "errors", "parts"),
]
"""pilar's top-level modules from the top (faces) down (records); a module
may import those of its own layer and the layers below, never above."""


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("pilar")


def test_every_module_has_a_layer(graph):
    named = {name for layer in LAYERS for name in layer}
    tops = {m.split(".")[1] for m in graph.modules if m.count(".") >= 1}
    assert tops <= named, f"add {sorted(tops - named)} to LAYERS"


def circles(graph) -> list[str]:
    """Each direct import ``a -> b`` of a module that ``b`` reaches back."""
    return sorted(f"{a} -> {b} -> ... -> {a}" for a in graph.modules
                  for b in graph.find_modules_directly_imported_by(a)
                  if graph.chain_exists(importer=b, imported=a))


def up_imports(graph) -> list[str]:
    """Each import from a layer of :data:`LAYERS` into one above it, as
    ``importer -> imported`` of their top-level modules."""
    layers = [grimp.Layer(*names, independent=False) for names in LAYERS]
    found = graph.find_illegal_dependencies_for_layers(layers=layers, containers={"pilar"})
    return sorted(f"{d.importer} -> {d.imported}" for d in found)


def test_no_import_circle(graph):
    assert circles(graph) == []


def test_no_import_up_the_layers(graph):
    assert up_imports(graph) == []


@pytest.mark.parametrize("importer,imported,circle,up", [
    ("pilar.model", "pilar.pipeline", True, True),  # records importing the facade
    ("pilar.retrieval.hybrid", "pilar.retrieval.profiles", True, False),  # inside a layer
    ("pilar.graph.sqlite", "pilar.stores", True, True),  # the old SqliteDatabase circle
    ("pilar.query", "pilar.packing.packer", False, True),  # up, without a circle
])
def test_a_new_circle_or_up_import_is_found(graph, importer, imported, circle, up):
    """The checks are live: one import added to the real graph is found."""
    assert not graph.direct_import_exists(importer=importer, imported=imported)
    graph.add_import(importer=importer, imported=imported)
    try:
        found = circles(graph), up_imports(graph)
    finally:
        graph.remove_import(importer=importer, imported=imported)
    assert (f"{importer} -> {imported} -> ... -> {importer}" in found[0]) is circle
    layer = ".".join(importer.split(".")[:2])  # found per layer: pilar.graph -> pilar.stores
    assert (f"{layer} -> {'.'.join(imported.split('.')[:2])}" in found[1]) is up
    assert circles(graph) == [] and up_imports(graph) == []


def test_the_layer_test_can_fail(graph):
    """The contract is live: turned upside down it finds the imports."""
    upside_down = [grimp.Layer("model"), grimp.Layer("cli")]
    found = graph.find_illegal_dependencies_for_layers(layers=upside_down, containers={"pilar"})
    assert [(d.importer, d.imported) for d in found] == [("pilar.cli", "pilar.model")]


def test_the_cli_query_path_imports_no_server_library():
    """``pilar search --json`` loads the CLI, the facade and the response
    models: none of them imports FastAPI, Starlette, uvicorn or the MCP SDK."""
    code = ("import sys, pilar.cli, pilar.pipeline, pilar.api.models, pilar.query; "
            "print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn', 'mcp') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
