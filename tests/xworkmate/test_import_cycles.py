"""No module of the project imports itself back, however indirectly (D-K1: cycles cannot form).

A cycle passes through at least one direct import a -> b; it exists exactly
when b reaches a again. Imports under `if TYPE_CHECKING:` never run, so they
make no cycle. Only files are read: no database, no Django.
"""

from __future__ import annotations

import grimp

PACKAGES = ("xworkmate", "gateway", "artifacts", "plans", "longrun")


def _cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    found = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(imported, module)
            if back is not None:
                found.append((module, *back))
    return found


def test_it_finds_no_import_cycle():
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)
    assert _cycles(graph) == []


def test_it_would_find_one():
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert ("pkg.a", "pkg.b", "pkg.c", "pkg.a") in _cycles(graph)
