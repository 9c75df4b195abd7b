"""Parsing C and C++ files with libclang into a small tree the analyses can walk quickly.

libclang's Python cursors cost a ctypes call per property, so the main file's functions and
globals are copied once into `Node`s (kind, source offsets, referenced declaration, operator,
whether the value is an array, a pointer or a class object, whether it is a reference).
Everything after parsing works on `Node`s only. C++ specifics end here: what the analyses need
of them is in the Node fields (is_ref, call_kind, nothrow) and in `cxx.py`'s list of the
function bodies (methods, constructors, templates' patterns, lambdas)."""
from __future__ import annotations

import bisect
import ctypes
import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import clang.cindex as ci

K = ci.CursorKind


class ParseError(Exception):
    """The file is missing or does not compile: nothing can be transformed."""


@dataclass(eq=False)
class Node:
    kind: str                      # CursorKind name, e.g. "CALL_EXPR"
    start: int                     # byte offsets in the main file, end exclusive
    end: int
    line: int
    spelling: str = ""
    children: list = field(default_factory=list)
    parent: "Node | None" = None
    op: str = ""                   # operator of BINARY/UNARY/COMPOUND_ASSIGNMENT_OPERATOR
    ref: str = ""                  # key of the declaration a DECL_REF/MEMBER_REF/VAR_DECL names
    ref_kind: str = ""             # "var", "func", "field", "const" for references
    is_global: bool = False        # the referenced / declared variable has static storage
    shape: str = ""                # "array", "pointer", "record" or "" for the (canonical) type
    callee: str = ""               # CALL_EXPR: name of a directly called function, else ""
    target: str = ""               # CALL_EXPR: key (USR) of the called function, else ""
    is_ref: bool = False           # VAR/PARM_DECL or reference to one of C++ reference type;
                                   # CALL_EXPR: the callee returns a reference
    call_kind: str = ""            # CALL_EXPR: "call" (callee first child), "member" (obj.f(…)),
                                   # "operator" (operand, callee, operands…), "ctor" (args only)
    nothrow: bool = True           # CALL_EXPR (C++): the callee cannot throw (noexcept, extern "C")
    arg_refs: tuple | None = ()    # CALL_EXPR (C++): per argument, bound to a non-const reference
                                   # parameter? (None: callee unknown, any may be)
    type: str = ""                 # VAR_DECL / PARM_DECL: the declared type as spelled (across.py)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class Function:
    name: str                      # for reports: C: the name; C++: qualified, with parameter types
    node: Node                     # FUNCTION_DECL (CXX_METHOD, LAMBDA_EXPR…); body is a child
    params: list                   # keys of the parameters, in order
    body: Node
    is_static: bool
    key: str = ""                  # USR (lambdas: their position): overloads are distinct
    param_refs: list = field(default_factory=list)   # per parameter: C++ reference?
    returns_ref: bool = False
    top_start: int = 0             # start of the file-scope declaration holding it (for helpers)
    is_noexcept: bool = False      # declared noexcept / throw()
    has_try: bool = False          # a try block in the body (an exception may be caught there)
    result_type: str = ""          # the return type as spelled (across.py's finish function)

    def __post_init__(self):
        self.key = self.key or self.name
        self.param_refs = self.param_refs or [False] * len(self.params)
        self.top_start = self.top_start or self.node.start


@dataclass
class Unit:
    path: Path
    text: bytes
    functions: dict                # key -> Function (definitions in the main file)
    globals: list                  # VAR_DECL nodes at file scope
    declared_functions: set        # every function name declared anywhere (headers included)
    lang: str = "c"                # "c" or "c++"
    untransformed: list = field(default_factory=list)   # (name, node, why): bodies not analysed


# declarations in a body whose code does not run where it is written (C++ local classes)
LOCAL_CLASS_KINDS = {"CLASS_DECL", "STRUCT_DECL", "UNION_DECL"}
NESTED_CODE = LOCAL_CLASS_KINDS | {"LAMBDA_EXPR"}


def own_nodes(n: Node):
    """`n` and its descendants, not entering lambda expressions nor local classes (their bodies
    are functions of their own, not run where they are written)."""
    yield n
    for c in n.children:
        if c.kind not in NESTED_CODE:
            yield from own_nodes(c)


def _spelling_table(fn_name: str, count: int) -> dict:
    fn = getattr(ci.conf.lib, fn_name)
    fn.argtypes = [ctypes.c_int]
    fn.restype = ci._CXString
    return {k: ci._CXString.from_result(fn(k)) for k in range(1, count + 1)}


@lru_cache(maxsize=None)
def _operator_tables():
    # The Python bindings do not wrap operator kinds; libclang exports them (valid kinds 1..N).
    lib = ci.conf.lib
    for name in ("clang_getCursorBinaryOperatorKind", "clang_getCursorUnaryOperatorKind"):
        f = getattr(lib, name)
        f.argtypes = [ci.Cursor]
        f.restype = ctypes.c_int
    return _spelling_table("clang_getBinaryOperatorKindSpelling", 33), \
        _spelling_table("clang_getUnaryOperatorKindSpelling", 13)


def operator_of(cursor) -> str:
    binary, unary = _operator_tables()
    if cursor.kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR):
        return binary.get(ci.conf.lib.clang_getCursorBinaryOperatorKind(cursor), "")
    if cursor.kind == K.UNARY_OPERATOR:
        return unary.get(ci.conf.lib.clang_getCursorUnaryOperatorKind(cursor), "")
    return ""


# --- compiler flags ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def builtin_include_dir() -> str:
    """GCC's own include directory (stddef.h, stdarg.h…): the libclang wheel ships none."""
    try:
        out = subprocess.run(["gcc", "-print-file-name=include"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except OSError:
        return ""
    return out if out and Path(out).is_dir() else ""


@lru_cache(maxsize=None)
def cxx_include_dirs() -> tuple:
    """The C++ standard library's include directories, as g++ searches them (the libclang wheel
    does not find a GCC installation's libstdc++ by itself)."""
    try:
        err = subprocess.run(["g++", "-E", "-x", "c++", "-", "-v"], input="", capture_output=True,
                             text=True, timeout=30).stderr
    except OSError:
        return ()
    dirs, inside = [], False
    for line in err.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and "c++" in line:
            dirs.append(line.strip())
    return tuple(dirs)


@lru_cache(maxsize=None)
def mpi_compile_flags(flavour: str, lang: str = "c") -> tuple:
    """The -I/-D flags `mpicc.<flavour> -show` (C++: `mpicxx.<flavour> -show`) adds (empty if that
    MPI is not installed)."""
    wrapper = "mpicxx" if lang == "c++" else "mpicc"
    found = shutil.which(f"{wrapper}.{flavour}") or \
        (shutil.which(wrapper) if flavour == "default" else None)
    if not found:
        return ()
    out = subprocess.run([found, "-show"], capture_output=True, text=True, timeout=30).stdout
    return tuple(a for a in shlex.split(out) if a.startswith(("-I", "-D")))


CXX_SUFFIXES = {".cpp", ".cc", ".cxx", ".c++", ".C", ".hpp", ".hh", ".hxx", ".h++", ".H"}
DEFAULT_STANDARD = {"c": "-std=gnu11", "c++": "-std=gnu++17"}


def language_of(path: Path) -> str:
    """"c++" for the usual C++ suffixes (.C and .H too: case matters), else "c"."""
    return "c++" if path.suffix in CXX_SUFFIXES else "c"


def flags_from_compile_commands(path: Path, database: Path | None) -> list[str]:
    """Flags for `path` from a compile_commands.json (given, or found in the file's directory or
    a parent of it): -I, -D, -U, -std and -include options only."""
    candidates = [database] if database else [d / "compile_commands.json" for d in path.resolve().parents]
    for db in candidates:
        if db is None or not db.is_file():
            continue
        try:
            entries = json.loads(db.read_text())
        except (OSError, ValueError) as e:
            raise ParseError(f"{db}: not a compilation database ({e})") from None
        for entry in entries:
            file = Path(entry.get("directory", ".")) / entry.get("file", "")
            if file.resolve() != path.resolve():
                continue
            argv = entry.get("arguments") or shlex.split(entry.get("command", ""))
            keep, out, directory = False, [], entry.get("directory", ".")
            for a in argv[1:]:
                if keep:
                    out.append(a)
                    keep = False
                elif a in ("-I", "-D", "-U", "-include", "-isystem"):
                    out.append(a)
                    keep = True
                elif a.startswith("-I") and not Path(a[2:]).is_absolute():
                    out.append("-I" + str(Path(directory) / a[2:]))
                elif a.startswith(("-I", "-D", "-U", "-std=")):
                    out.append(a)
            return out
    return []


# --- conversion -------------------------------------------------------------------------------

_SHAPES = {ci.TypeKind.POINTER: "pointer", ci.TypeKind.CONSTANTARRAY: "array",
           ci.TypeKind.INCOMPLETEARRAY: "array", ci.TypeKind.VARIABLEARRAY: "array",
           ci.TypeKind.DEPENDENTSIZEDARRAY: "array"}
# the analyses look at the shape of references, subscripts, dereferences and declarations only
# (implicit casts, UNEXPOSED_EXPR, the most frequent nodes, are looked through)
_SHAPES[ci.TypeKind.RECORD] = "record"          # a struct / class object (C++: may have methods)
_TYPED = {K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.ARRAY_SUBSCRIPT_EXPR, K.UNARY_OPERATOR,
          K.VAR_DECL, K.PARM_DECL, K.BINARY_OPERATOR, K.CALL_EXPR, K.CONDITIONAL_OPERATOR,
          K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_THIS_EXPR, K.CXX_STATIC_CAST_EXPR,
          K.CXX_REINTERPRET_CAST_EXPR, K.CXX_CONST_CAST_EXPR, K.CXX_DYNAMIC_CAST_EXPR,
          K.CXX_FUNCTIONAL_CAST_EXPR, K.CXX_NEW_EXPR}
FUNCTION_KINDS = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION,
                  K.FUNCTION_TEMPLATE}
FUNCTION_KIND_NAMES = {k.name for k in FUNCTION_KINDS} | {"LAMBDA_EXPR"}
_REFERENCES = {ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE}
# exception specifications under which a call cannot throw
_NOTHROW_SPECS = {"BASIC_NOEXCEPT", "DYNAMIC_NONE", "NOTHROW"}


def decl_key(cursor) -> str:
    """A name for a declaration that is the same wherever it is referenced."""
    if cursor.kind == K.FUNCTION_DECL or (cursor.kind == K.VAR_DECL and
                                          cursor.linkage == ci.LinkageKind.EXTERNAL):
        return cursor.spelling
    loc = cursor.location
    return f"{cursor.spelling}@{loc.file.name if loc.file else ''}:{loc.offset}"


def _is_static_storage(cursor) -> bool:
    if cursor.kind != K.VAR_DECL:
        return False
    if cursor.semantic_parent is not None and cursor.semantic_parent.kind == K.TRANSLATION_UNIT:
        return True
    return cursor.storage_class in (ci.StorageClass.STATIC, ci.StorageClass.EXTERN)


_KIND_NAMES: dict[int, str] = {}
_OPERATORS = {K.BINARY_OPERATOR.value, K.COMPOUND_ASSIGNMENT_OPERATOR.value, K.UNARY_OPERATOR.value}
_TYPED_IDS = {k.value for k in _TYPED}
_REFS = {K.DECL_REF_EXPR.value, K.MEMBER_REF_EXPR.value}
_DECLS = {K.VAR_DECL.value, K.PARM_DECL.value}
_SPELLED = _REFS | _DECLS | {K.CALL_EXPR.value, K.LABEL_STMT.value, K.FUNCTION_DECL.value}


def _kind_name(kind_id: int) -> str:
    name = _KIND_NAMES.get(kind_id)
    if name is None:
        name = _KIND_NAMES[kind_id] = K.from_id(kind_id).name
    return name


class _Converter:
    """Copies cursors into Nodes with as few libclang calls per cursor as possible: one visit of
    the whole tree (the parent is found on a stack) and source offsets read from the raw
    location encoding when the location is a plain file location (macro ones ask libclang)."""

    def __init__(self, main_file: str, text: bytes, lang: str = "c"):
        self.main_file = main_file
        self.cxx = lang == "c++"
        self.lib = ci.conf.lib
        self._f = ci.c_object_p()
        self._l, self._c, self._o = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        self._keys: dict = {}
        self._base = None
        self._newlines = [i for i, b in enumerate(text) if b == 10]
        self._text = text

    def _position(self, loc) -> tuple:
        self.lib.clang_getInstantiationLocation(loc, ctypes.byref(self._f), ctypes.byref(self._l),
                                                ctypes.byref(self._c), ctypes.byref(self._o))
        return ctypes.cast(self._f, ctypes.c_void_p).value, self._l.value, self._o.value

    def _offsets(self, c) -> tuple:
        ext = self.lib.clang_getCursorExtent(c)
        b, e = ext.begin_int_data, ext.end_int_data
        if self._base is None:
            self._base = b - self._position(self.lib.clang_getRangeStart(ext))[2]
        start = b - self._base if b < 0x80000000 else self._position(self.lib.clang_getRangeStart(ext))[2]
        end = e - self._base if e < 0x80000000 else self._position(self.lib.clang_getRangeEnd(ext))[2]
        return start, end

    def key(self, decl) -> str:
        """decl_key, cached by declaration position (references repeat a lot)."""
        f, _line, off = self._position(self.lib.clang_getCursorLocation(decl))
        k = (f, off, decl._kind_id)
        key = self._keys.get(k)
        if key is None:
            if self.cxx and decl.kind in FUNCTION_KINDS:      # overloads: one key each
                key = self._keys[k] = decl.get_usr() or decl.spelling
            else:
                key = self._keys[k] = decl_key(decl)
        return key

    def node(self, c, parent) -> Node:
        kind = c._kind_id
        start, end = self._offsets(c)
        n = Node(kind=_kind_name(kind), start=start, end=end,
                 line=bisect.bisect_left(self._newlines, start) + 1, parent=parent)
        if kind in _SPELLED:
            n.spelling = c.spelling
        if kind in _OPERATORS:
            n.op = operator_of(c)
        if kind in _TYPED_IDS:
            n.shape = _SHAPES.get(c.type.get_canonical().kind, "")
        if kind in _REFS:
            r = c.referenced
            if r is not None:
                rk = r.kind
                n.ref = self.key(r)
                if rk in (K.VAR_DECL, K.PARM_DECL):
                    n.ref_kind = "var"
                    n.is_global = _is_static_storage(r)
                    n.is_ref = self.cxx and r.type.get_canonical().kind in _REFERENCES
                elif rk in FUNCTION_KINDS:
                    n.ref_kind = "func"
                elif rk == K.FIELD_DECL:
                    n.ref_kind = "field"
                    n.is_ref = self.cxx and r.type.get_canonical().kind in _REFERENCES
                else:
                    n.ref_kind = "const"
        elif kind in _DECLS:
            n.ref = self.key(c)
            n.type = c.type.spelling
            n.is_global = _is_static_storage(c)
            n.is_ref = self.cxx and c.type.get_canonical().kind in _REFERENCES
        elif n.kind == "CALL_EXPR":
            r = c.referenced
            if r is not None and r.kind == K.FUNCTION_DECL and not self.cxx:
                n.callee = n.target = r.spelling
            elif r is not None and r.kind in FUNCTION_KINDS:
                n.callee, n.target = r.spelling, self.key(r)
                n.is_ref = r.result_type.get_canonical().kind in _REFERENCES
                n.call_kind = "ctor" if r.kind == K.CONSTRUCTOR else ""
                n.nothrow = _cannot_throw(r)
                n.arg_refs = _mutable_reference_parameters(r)
            elif self.cxx:
                n.nothrow, n.arg_refs = False, None
                # a call with type-dependent arguments in a template's pattern is not resolved;
                # an MPI function is one all the same (its sites must be found and reported)
                m = _MPI_CALL.match(self._text, start, end) if r is None else None
                if m:
                    n.callee, n.nothrow = m.group(1).decode(), True
        return n

    def convert(self, root) -> Node:
        top = self.node(root, None)
        stack = [(root, top)]
        equal = self.lib.clang_equalCursors

        def visit(child, parent, _data):
            while len(stack) > 1 and not equal(stack[-1][0], parent):
                stack.pop()
            child._tu = root._tu
            owner = stack[-1][1]
            n = self.node(child, owner)
            owner.children.append(n)
            stack.append((child, n))
            return 2                                   # CXChildVisit_Recurse

        self.lib.clang_visitChildren(root, ci.callbacks["cursor_visit"](visit), None)
        if self.cxx:
            for n in top.walk():
                if n.kind == "CALL_EXPR" and not n.call_kind:
                    n.call_kind = _call_kind(n)
                    if n.call_kind == "operator" and n.arg_refs and n.arg_refs[0] == "object":
                        n.arg_refs = n.arg_refs[1:]    # a free operator's first operand
        return top


_MPI_CALL = re.compile(rb"(P?MPIX?_[A-Za-z_]+)\s*\(")


def _cannot_throw(decl) -> bool:
    """A C++ callee that cannot throw: noexcept / throw(), a destructor, or C linkage (C code does
    not throw; MPI's and the C library's functions are declared extern "C")."""
    if decl.kind == K.DESTRUCTOR or decl.spelling.startswith(("MPI_", "PMPI_")):
        return True
    try:
        if decl.exception_specification_kind.name in _NOTHROW_SPECS:
            return True
    except (AttributeError, ValueError):
        pass
    p = decl.lexical_parent
    while p is not None and p.kind != K.TRANSLATION_UNIT:
        if p.kind == K.LINKAGE_SPEC:
            return True
        p = p.lexical_parent
    return False


def _mutable_reference_parameters(decl) -> tuple | None:
    """Per parameter of a C++ callee: a reference through which it may write (not to const).
    A free function's first flag is "object" when it may be an operator's left operand."""
    try:
        params = list(decl.get_arguments())
    except Exception:      # noqa: BLE001 - libclang: not a function with a prototype
        return None
    if decl.kind == K.FUNCTION_TEMPLATE and not params:
        return None
    out = []
    for p in params:
        t = p.type.get_canonical()
        out.append(t.kind in _REFERENCES and not t.get_pointee().is_const_qualified())
    if decl.kind == K.FUNCTION_DECL and decl.spelling.startswith("operator") and out:
        out[0] = "object"
    return tuple(out)


def _call_kind(n: Node) -> str:
    """How a C++ call's children are laid out (see Node.call_kind)."""
    ch = n.children
    if ch and ch[0].kind == "MEMBER_REF_EXPR" and ch[0].ref_kind == "func":
        return "member"
    if n.spelling.startswith("operator") and len(ch) >= 2:
        c1 = ch[1]
        while c1.kind == "UNEXPOSED_EXPR" and c1.children:
            c1 = c1.children[-1]
        if c1.kind == "DECL_REF_EXPR" and c1.ref_kind == "func" and c1.spelling.startswith("operator"):
            return "operator"
    return "call"


def call_args(call: Node) -> list[Node]:
    """The argument expressions of a call (not the callee, nor the object of a method call)."""
    k = call.call_kind
    if k == "ctor":
        return call.children
    if k == "operator":
        return call.children[2:]
    return call.children[1:]


def call_object(call: Node) -> Node | None:
    """The object expression of a C++ method or operator call (`v` in `v.f()`, `v[i]`, `p->f()`),
    or the MEMBER_REF_EXPR without a base for an implicit `this->f()`; None otherwise."""
    if call.call_kind == "member":
        return call.children[0].children[0] if call.children[0].children else call.children[0]
    if call.call_kind == "operator":
        return call.children[0]
    return None


def read_source(path: Path) -> bytes:
    """A source file's bytes, or a ParseError saying why not (every front end's first step)."""
    if not path.is_file():
        raise ParseError(f"{path}: no such file")
    try:
        return path.read_bytes()
    except OSError as e:
        raise ParseError(f"{path}: {e.strerror}") from None


def parse(path: str | Path, flavour: str = "openmpi", extra_args: list[str] | None = None,
          compile_commands: Path | None = None) -> Unit:
    """Parses a C or C++ file (language from its suffix) with the MPI headers of `flavour`;
    raises ParseError if it does not compile."""
    path = Path(path)
    text = read_source(path)
    lang = language_of(path)
    # GCC 12 (what these programs are built with) only warns about these; clang 16+ errors
    args = ["-x", lang, DEFAULT_STANDARD[lang], "-Wno-error=implicit-function-declaration",
            "-Wno-error=int-conversion", "-Wno-error=incompatible-function-pointer-types"]
    if lang == "c++":            # libstdc++ first: its <cmath> etc. wrap the C headers
        for d in cxx_include_dirs():
            args += ["-isystem", d]
    builtin = builtin_include_dir()
    if builtin:
        args += ["-isystem", builtin]
    args += list(mpi_compile_flags(flavour, lang))
    # the database's -std (later on the command line) overrides the default above
    args += flags_from_compile_commands(path, compile_commands)
    args += list(extra_args or [])
    try:
        tu = ci.Index.create().parse(str(path), args=args)
    except ci.TranslationUnitLoadError as e:
        raise ParseError(f"{path}: libclang could not parse it ({e})") from None
    # GCC's own headers (the wheel has no clang ones) use a few GCC-only attributes clang
    # rejects, e.g. omp.h's __malloc__(fn, n): errors there are tolerated when the file itself
    # parses, since what the analyses read is the main file's code.
    system = tuple(d for d in (builtin,) if d)
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error and not (
        d.location.file is not None and system and d.location.file.name.startswith(system))]
    if errors:
        d = errors[0]
        where = f"{d.location.file.name if d.location.file else path}:{d.location.line}:{d.location.column}"
        raise ParseError(f"{where}: {d.spelling}" +
                         (f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else ""))
    main_file = tu.spelling
    conv = _Converter(main_file, text, lang)
    unit = Unit(path=path, text=text, functions={}, globals=[], declared_functions=set(), lang=lang)
    if lang == "c++":
        from .cxx import collect
        collect(tu, conv, unit)
        return unit
    for c in tu.cursor.get_children():
        if c.kind == K.FUNCTION_DECL:
            unit.declared_functions.add(c.spelling)
        if c.location.file is None or c.location.file.name != main_file:
            continue
        if c.kind == K.FUNCTION_DECL and c.is_definition():
            node = conv.convert(c)
            params = [ch.ref for ch in node.children if ch.kind == "PARM_DECL"]
            body = node.children[-1]
            if body.kind == "COMPOUND_STMT":
                unit.functions[c.spelling] = Function(c.spelling, node, params, body,
                                                      c.storage_class == ci.StorageClass.STATIC,
                                                      result_type=c.result_type.spelling)
        elif c.kind == K.VAR_DECL:
            unit.globals.append(conv.convert(c))
    return unit
