"""The layers of src/, checked from the `#include "..."` lines alone (no build, no MPI, < 1 s).

libmpiopt is built in layers, from the MPI_* entry points down to the kernels. A folder may
include headers of its own folder and of any folder of a larger rank (a lower layer); never of a
smaller rank (an upper layer). Where a lower layer must reach up (a report row, a hand-off, a
request completing), the upper layer registers a callback or a table with it at start-up: the
lower layer never includes the upper one's header. That keeps each layer testable and buildable
without those above it, keeps a change in an upper layer from rebuilding and retesting the whole
library, and keeps the dependency graph free of cycles, to be read top to bottom.

    rank 0  src/interpose, src/profile, src/profile/tools
                                  MPI_* entry points for LD_PRELOAD; the profiler library and its
                                  OTF2 -> Chrome converter
    rank 1  src/coll/entry        collectives' entry points, argument checks, the hand-off
    rank 2  src/coll/select       selection: select.c, measured.c, tuning_file.c
    rank 3  src/coll/algorithms   one algorithm a file, the registry, the cost model
    rank 4  src/coll/node         shared-memory window, staged, single copy, node layout
    rank 5  src/coll/engine       call context, point-to-point, scratch, schedules, requests,
                                  handles, report
    rank 6  src                   the files directly in src/ (op_kernel, user_op, tls_model)
    rank 7  src/kernels           op x type loops, dispatch, threads, the node's facts
    rank 8  include               the public headers: below everything, so any folder may include
                                  them, and they include nothing of src/ (they are installed)
    System headers (<...>) may be included from anywhere and are not looked at.

The table is LAYERS below, the one place that says it (docs and README refer here). A
contributor who adds a folder under src/ adds a row; until then every file in that folder fails
test_every_source_file_is_in_a_layer, by name.

What is checked:
  * every .c, .h and .def file under src/ lies in a folder of the table (folders are exact: a
    file left directly in src/coll/ is in folder src/coll, which is not in the table);
  * an include goes to the same folder or to a larger rank, never to a smaller one;
  * the folder include graph has no cycle, including between two folders of the same rank
    (src/profile includes ../interpose/fortran.h, a header of macros: one direction is fine);
  * no .c or .h file under src/coll/ is over MAX_COLL_LINES lines.
  .def files (src/profile/calls.def) are X-macro lists included by their folder: they count as
  headers of their folder.

How a quoted include is resolved, as the compiler would with the build's -I src -I include:
relative to the including file's directory, then relative to src/, then to include/; the first
file that exists wins. An include that resolves nowhere is ignored when it names no file of the
project ("mpi.h", <...>-style third-party headers written with quotes, headers generated at
build time); when its base name is that of a file under src/ or include/ it fails: the path is
wrong or depends on an -I of one target only (src/profile's), and the layer it reaches cannot be
known. Includes inside comments are skipped; includes under #if are counted (the rule is about
the source, whatever is configured).
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# folder (relative to the repository root) -> rank; smaller is higher. The one table of layers.
LAYERS: dict[str, int] = {
    "src/interpose": 0,
    "src/profile": 0,
    "src/profile/tools": 0,      # mpiopt-otf2-chrome, a program of its own beside the profiler
    "src/coll/entry": 1,
    "src/coll/select": 2,
    "src/coll/algorithms": 3,
    "src/coll/node": 4,
    "src/coll/engine": 5,
    "src": 6,
    "src/kernels": 7,
    "include": 8,
}
MAX_COLL_LINES = 600
SOURCE_SUFFIXES = (".c", ".h", ".def")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


@dataclass(frozen=True)
class Include:
    file: str          # including file, relative to the root
    line: int
    name: str          # as written between the quotes
    target: str        # resolved file, relative to the root


@dataclass
class Tree:
    root: Path
    files: list[str]                 # every source file under src/ and include/, relative
    includes: list[Include]          # the resolved ones
    unresolved: list[tuple[str, int, str]]   # project-looking includes that resolve nowhere


def folder_of(rel: str) -> str:
    return os.path.dirname(rel)


def _strip_comments(text: str) -> str:
    """`text` with /* */ and // comments blanked, newlines kept (line numbers stay right).
    String literals are not parsed: an include line holds none before its quotes."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def scan(root: Path) -> Tree:
    """Every source file under root/src and root/include, with its quoted includes resolved."""
    root = Path(root)
    files = sorted(p.relative_to(root).as_posix()
                   for top in ("src", "include") if (root / top).is_dir()
                   for p in (root / top).rglob("*")
                   if p.is_file() and p.suffix in SOURCE_SUFFIXES)
    basenames = {os.path.basename(f) for f in files}
    includes, unresolved = [], []
    for rel in files:
        text = _strip_comments((root / rel).read_text(errors="replace"))
        for number, line in enumerate(text.splitlines(), 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            name = m.group(1)
            for base in (root / folder_of(rel), root / "src", root / "include"):
                candidate = Path(os.path.normpath(base / name))
                if candidate.is_file() and candidate.is_relative_to(root):
                    includes.append(Include(rel, number, name,
                                            candidate.relative_to(root).as_posix()))
                    break
            else:
                if os.path.basename(name) in basenames:
                    unresolved.append((rel, number, name))
    return Tree(root, files, includes, unresolved)


def _rank_name(folder: str, layers: dict[str, int]) -> str:
    return f"{folder}/ (rank {layers[folder]})" if folder in layers else f"{folder}/ (not in LAYERS)"


def unlisted_files(tree: Tree, layers: dict[str, int] = LAYERS) -> list[str]:
    """One message per folder missing from the table, naming each of its files."""
    by_folder = defaultdict(list)
    for f in tree.files:
        if folder_of(f) not in layers:
            by_folder[folder_of(f)].append(f)
    return [f"{folder}/ is not in LAYERS (tests/python/test_layers.py): give it a rank there, or "
            f"move its {len(files)} file(s) into folders of the table: " + ", ".join(files)
            for folder, files in sorted(by_folder.items())]


def upward_includes(tree: Tree, layers: dict[str, int] = LAYERS) -> list[str]:
    problems = []
    for inc in tree.includes:
        a, b = folder_of(inc.file), folder_of(inc.target)
        if a == b or a not in layers or b not in layers:
            continue            # a folder not in the table fails unlisted_files already
        if layers[b] < layers[a]:
            problems.append(
                f'{inc.file}:{inc.line}: #include "{inc.name}" ({inc.target}) goes up: '
                f"{_rank_name(a, layers)} may not include {_rank_name(b, layers)}; the upper "
                f"layer registers a callback with the lower one instead, or the declaration "
                f"moves down")
    for rel, line, name in tree.unresolved:
        same_name = [f for f in tree.files if os.path.basename(f) == os.path.basename(name)]
        problems.append(
            f'{rel}:{line}: #include "{name}" resolves neither from {folder_of(rel)}/ nor from '
            f"src/ nor include/, but the project has {', '.join(same_name)}: write the path "
            f"from src/ or from the including file")
    return problems


def _folder_edges(tree: Tree) -> dict[tuple[str, str], list[Include]]:
    edges = defaultdict(list)
    for inc in tree.includes:
        a, b = folder_of(inc.file), folder_of(inc.target)
        if a != b:
            edges[(a, b)].append(inc)
    return edges


def _strongly_connected(nodes, succ) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(succ[start])))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on_stack.add(w)
                    work.append((w, iter(sorted(succ[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop(); on_stack.discard(w); component.append(w)
                    if w == v:
                        break
                out.append(sorted(component))
    return out


def include_cycles(tree: Tree) -> list[str]:
    """One message per group of folders that include each other: a shortest cycle through the
    group's first folder, each edge with the file:line of an include that makes it."""
    edges = _folder_edges(tree)
    succ = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
        succ.setdefault(b, set())
    problems = []
    for component in _strongly_connected(list(succ), succ):
        if len(component) < 2:
            continue
        members, start = set(component), component[0]
        # breadth-first from start back to start, inside the component
        previous, frontier, path = {start: None}, [start], None
        while frontier and path is None:
            following = []
            for v in frontier:
                for w in sorted(succ[v] & members):
                    if w == start:
                        path = [v]
                        while previous[path[-1]] is not None:
                            path.append(previous[path[-1]])
                        path = path[::-1] + [start]
                        break
                    if w not in previous:
                        previous[w] = v
                        following.append(w)
                if path:
                    break
            frontier = following
        steps = []
        for a, b in zip(path, path[1:]):
            incs = edges[(a, b)]
            more = f" (+{len(incs) - 1} more)" if len(incs) > 1 else ""
            steps.append(f'    {a}/ -> {b}/: {incs[0].file}:{incs[0].line} #include '
                         f'"{incs[0].name}"{more}')
        problems.append(f"include cycle {' -> '.join(f + '/' for f in path)}:\n"
                        + "\n".join(steps))
    return problems


def oversized_coll_files(tree: Tree, limit: int = MAX_COLL_LINES) -> list[str]:
    problems = []
    for rel in tree.files:
        if rel.startswith("src/coll/") and rel.endswith((".c", ".h")):
            n = len((tree.root / rel).read_text(errors="replace").splitlines())
            if n > limit:
                problems.append(f"{rel}: {n} lines, over {limit}: split it (one algorithm, one "
                                f"concern a file)")
    return problems


def _fail_if(problems: list[str], what: str):
    if problems:
        pytest.fail(f"{len(problems)} {what}:\n" + "\n".join(problems), pytrace=False)


# ---- the real tree ----

@pytest.fixture(scope="module")
def tree():
    return scan(ROOT)


def test_every_source_file_is_in_a_layer(tree):
    _fail_if(unlisted_files(tree), "file(s) in a folder with no layer")


def test_includes_go_to_the_same_folder_or_down(tree):
    _fail_if(upward_includes(tree), "include(s) against the layers")


def test_folders_include_each_other_in_no_cycle(tree):
    _fail_if(include_cycles(tree), "cycle(s) between folders")


def test_no_coll_file_is_over_the_line_limit(tree):
    _fail_if(oversized_coll_files(tree), f"file(s) under src/coll/ over {MAX_COLL_LINES} lines")


def test_the_checker_sees_the_tree():
    """Guards the checks above against passing on nothing (a moved root, a broken regex)."""
    t = scan(ROOT)
    assert len(t.files) > 50 and len(t.includes) > 100
    assert any(i.file == "src/profile/state.c" and i.target == "src/profile/calls.def"
               for i in t.includes)


# ---- the checker itself, on synthetic trees ----

def make_tree(root: Path, files: dict[str, str]) -> Tree:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return scan(root)


def test_checker_catches_an_upward_include_with_file_and_line(tmp_path):
    t = make_tree(tmp_path, {
        "src/coll/engine/p2p.c": '#include <stdio.h>\n#include "mpi.h"\n'
                                 '#include "coll/entry/handoff.h"\n',
        "src/coll/entry/handoff.h": '#include "mpiopt.h"\n',
        "include/mpiopt.h": "",
    })
    problems = upward_includes(t)
    assert len(problems) == 1, problems
    assert problems[0].startswith('src/coll/engine/p2p.c:3: #include "coll/entry/handoff.h"')
    assert "src/coll/engine/ (rank 5)" in problems[0]
    assert "src/coll/entry/ (rank 1)" in problems[0]
    assert not unlisted_files(t) and not include_cycles(t)


def test_checker_catches_a_cycle_between_folders_of_one_rank(tmp_path):
    """interpose and profile share rank 0: either may include the other, not both."""
    t = make_tree(tmp_path, {
        "src/interpose/fortran.h": '#include "../profile/profile.h"\n',
        "src/profile/profile.h": "\n\n/* #include \"../interpose/commented_out.h\" */\n"
                                 '#include "../interpose/fortran.h"\n',
        "src/interpose/commented_out.h": "",
    })
    assert not upward_includes(t)
    cycles = include_cycles(t)
    assert len(cycles) == 1, cycles
    assert cycles[0].startswith("include cycle src/interpose/ -> src/profile/ -> src/interpose/")
    assert 'src/interpose/fortran.h:1 #include "../profile/profile.h"' in cycles[0]
    assert 'src/profile/profile.h:4 #include "../interpose/fortran.h"' in cycles[0]


def test_checker_catches_a_longer_cycle_through_unlisted_folders(tmp_path):
    t = make_tree(tmp_path, {
        "src/a/x.h": '#include "b/y.h"\n',
        "src/b/y.h": '#include "c/z.h"\n',
        "src/c/z.h": '#include "a/x.h"\n',
    })
    assert len(unlisted_files(t)) == 3          # src/a, src/b, src/c
    [cycle] = include_cycles(t)
    assert cycle.startswith("include cycle src/a/ -> src/b/ -> src/c/ -> src/a/")


def test_checker_names_files_in_folders_with_no_layer(tmp_path):
    t = make_tree(tmp_path, {"src/coll/select.c": "", "src/coll/select/select.c": "",
                             "src/node.h": "", "src/kernels/kernels.h": ""})
    [problem] = unlisted_files(t)
    assert problem.startswith("src/coll/ is not in LAYERS") and problem.endswith(": src/coll/select.c")


def test_checker_resolves_from_the_file_then_src_then_include(tmp_path):
    """report.h next to the includer wins over src/report.h; node.h falls through to src/; a
    project header that resolves nowhere fails, an unknown one (mpi.h) is ignored."""
    t = make_tree(tmp_path, {
        "src/profile/output.c": '#include "report.h"\n#include "node.h"\n#include "mpiopt.h"\n'
                                '#include "mpi.h"\n#include "handoff.h"\n',
        "src/profile/report.h": "",
        "src/report.h": "",
        "src/node.h": "",
        "src/coll/entry/handoff.h": "",
        "include/mpiopt.h": "",
    })
    assert {(i.name, i.target) for i in t.includes} == {
        ("report.h", "src/profile/report.h"), ("node.h", "src/node.h"),
        ("mpiopt.h", "include/mpiopt.h")}
    [problem] = upward_includes(t)
    assert problem.startswith('src/profile/output.c:5: #include "handoff.h" resolves neither')


def test_checker_counts_lines_under_src_coll_only(tmp_path):
    t = make_tree(tmp_path, {"src/coll/engine/big.c": "x\n" * 601,
                             "src/coll/engine/ok.c": "x\n" * 600,
                             "src/big.c": "x\n" * 900})
    assert oversized_coll_files(t) == [
        "src/coll/engine/big.c: 601 lines, over 600: split it (one algorithm, one concern a file)"]


# The Python side's one rule (README, Layout): commands/ parses arguments and prints; what it
# calls lives below it and never reaches back up into commands/ or cli.py.
_UP_IMPORT = re.compile(r"^\s*(?:from\s+(?:\.+|mpiopt\.)(?:commands|cli)\b|import\s+mpiopt\.(?:commands|cli)\b)", re.M)


def test_python_modules_below_commands_do_not_import_it():
    package = ROOT / "python" / "mpiopt"
    offenders = []
    for path in package.rglob("*.py"):
        rel = path.relative_to(package)
        if rel.parts[0] in ("commands", "cli.py", "__main__.py"):
            continue
        for m in _UP_IMPORT.finditer(path.read_text()):
            offenders.append(f"{rel}: {m.group(0).strip()}")
    assert not offenders, offenders
