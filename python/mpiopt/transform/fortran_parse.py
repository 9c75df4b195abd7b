"""The Fortran front end: fparser2's parse tree -> the `Node` tree the C analyses walk.

The analyses (alias.py, effects.py, placement.py) read C's shapes of nodes; Fortran is mapped
onto them so that they need no Fortran knowledge:

  * Fortran passes arguments by reference: an actual argument that is a variable becomes
    `&ref` (UNARY_OPERATOR "&"), and a dummy argument is a pointer parameter, referenced as `*d`
    or `d[i]` (DECL_REF_EXPR of shape "pointer"). A callee's summary then maps its dummies onto
    the caller's arguments exactly as for C pointer parameters.
  * a whole array named in an expression reads (or, assigned, writes) all of it: `*a` with `a`
    of shape "array"; an element or a section is `a[...]` (ARRAY_SUBSCRIPT_EXPR, one location
    per array as in C).
  * statements: CALL -> CALL_EXPR, assignment -> BINARY_OPERATOR "=", DO -> FOR_STMT / WHILE_STMT,
    IF and SELECT CASE -> IF_STMT chains (each branch a COMPOUND_STMT), RETURN -> RETURN_STMT,
    GO TO -> GOTO_STMT, EXIT / CYCLE -> BREAK_STMT / CONTINUE_STMT, a label a branch may reach ->
    LABEL_STMT, STOP -> a call of `exit`, WRITE/PRINT -> a call of `printf` reading its items,
    READ -> assignments to its items; a statement the front end does not model stops every
    pending call (`FORTRAN_UNMODELLED_STMT`).

Node offsets are whole lines of the file: a statement's `start` is the start of its first line,
`end` the end of its last; a block's `end` is one past the start of the line that closes it
(END DO, ELSE, CONTAINS, END SUBROUTINE…). Expressions carry their statement's offsets and
their own text in `FortranUnit.texts`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fparser.common.readfortran import FortranStringReader
from fparser.two import Fortran2003 as F
from fparser.two.parser import ParserFactory
from fparser.two.utils import FortranSyntaxError, walk

from .calls import (LEFT_BLOCKING_P2P, MPI_SYNCHRONISING, MPI_UNDERSTOOD, MPI_WAITS, NONBLOCKING_P2P,
                    REWRITABLE)
from .fortran_cpp import map_lines, preprocess
from .fortran_symbols import Scope, SymbolBuilder, exec_part, head, name_of
from .fortran_io import IoStatements
from .parse import Function, Node, ParseError, Unit, read_source

FORTRAN_SUFFIXES = {".f90", ".f95", ".f03", ".f08", ".f", ".for", ".f77", ".ftn"}
FIXED_SUFFIXES = {".f", ".for", ".f77", ".ftn"}
PREPROCESSED_SUFFIXES = {".F90", ".F95", ".F03", ".F08", ".F", ".FOR", ".FPP", ".fpp"}

# Fortran names are case-insensitive: MPI names are matched in upper case and given the C
# spelling the shared tables use
_MPI_NAMES = {n.upper(): n for n in list(REWRITABLE) + list(MPI_UNDERSTOOD) + list(MPI_SYNCHRONISING)
              + list(NONBLOCKING_P2P) + list(MPI_WAITS) + list(LEFT_BLOCKING_P2P)}
_REWRITABLE_NAMES = {n.upper() for n in REWRITABLE}
from fparser.two import Fortran2008 as F08  # noqa: E402
_STOPS = (F.Stop_Stmt, F08.Error_Stop_Stmt)
_OUTPUT = (F.Write_Stmt, F.Print_Stmt)
_OTHER_IO = (F.Open_Stmt, F.Close_Stmt, F.Inquire_Stmt, F.Rewind_Stmt, F.Backspace_Stmt,
             F.Endfile_Stmt, F.Flush_Stmt, F.Wait_Stmt)


def is_fortran(path: str | Path) -> bool:
    suffix = Path(path).suffix
    return suffix.lower() in FORTRAN_SUFFIXES or suffix in PREPROCESSED_SUFFIXES


@dataclass
class Procedure:
    scope: Scope
    binding: str                   # "mpif.h", "mpi", "mpi_f08" or "" (none in scope)
    spec_end_line: int             # declarations go before this line (first executable / end)
    body_first_line: int           # first line of the execution part (0: none)
    asynchronous: set = field(default_factory=set)    # names that have ASYNCHRONOUS already
    included_code: str = ""        # an executable statement from an INCLUDEd file, if any


@dataclass
class FortranUnit(Unit):
    fixed_form: bool = False
    texts: dict = field(default_factory=dict)          # id(Node) -> source text (expressions)
    fnodes: dict = field(default_factory=dict)         # id(Node) -> fparser node
    procedures: dict = field(default_factory=dict)     # Unit.functions key -> Procedure
    symbols: SymbolBuilder | None = None
    line_offsets: list = field(default_factory=list)   # byte offset of each line start (1-based)
    mpi_ierror: dict = field(default_factory=dict)     # id(call Node) -> ierror actual or None
    reader: object = None                              # fparser's reader of the file itself

    def in_file(self, f) -> bool:
        """Whether statement `f` is in the file itself (not in an INCLUDEd one)."""
        item = getattr(f, "item", None)
        return item is None or (getattr(item, "reader", self.reader) is self.reader
                                and not getattr(item, "other_file", False))


def parse_fortran(path: str | Path, extra_args: list | None = None) -> FortranUnit:
    path = Path(path)
    text = read_source(path)
    fixed = path.suffix.lower() in FIXED_SUFFIXES
    origin = None
    source = text.decode(errors="replace")
    if path.suffix in PREPROCESSED_SUFFIXES and any(
            line.lstrip().startswith(b"#") for line in text.splitlines()):
        source, origin = preprocess(path, extra_args or [])
    try:
        # INCLUDEd files are read from the file's directory (fparser inlines them; their
        # statements carry the included file's line numbers and are told apart by their reader)
        reader = FortranStringReader(source, ignore_comments=False,
                                     include_dirs=[str(path.resolve().parent)])
        reader.set_format(_format(fixed))
        tree = ParserFactory().create(std="f2008")(reader)
    except FortranSyntaxError as e:
        raise ParseError(f"{path}: {str(e).strip()}") from None
    except Exception as e:                                     # fparser's own failures
        raise ParseError(f"{path}: fparser could not parse it ({type(e).__name__}: {e})") from None
    if tree is None or not walk(tree.children, (F.Main_Program, F.Module, F.Subroutine_Subprogram,
                                               F.Function_Subprogram)):
        raise ParseError(f"{path}: no Fortran program unit found")
    if origin is not None:
        map_lines(tree, origin, source.split("\n"), text.decode(errors="replace").split("\n"))
    offsets = [0, 0]
    for i, b in enumerate(text):
        if b == 10:
            offsets.append(i + 1)
    offsets.append(len(text))
    symbols = SymbolBuilder(tree)
    scopes = symbols.build()
    unit = FortranUnit(path=path, text=text, functions={}, globals=[], declared_functions=set(),
                       fixed_form=fixed, symbols=symbols, line_offsets=offsets, reader=reader)
    _Converter(unit, symbols).convert(scopes)
    return unit


def _format(fixed: bool):
    from fparser.common.sourceinfo import FortranFormat
    return FortranFormat(not fixed, False)


class _Converter(IoStatements):
    def __init__(self, unit: FortranUnit, symbols: SymbolBuilder):
        self.unit, self.sym = unit, symbols
        self.scope: Scope | None = None
        self.line = (0, 0)
        self.targets: set = set()

    # --- positions ---------------------------------------------------------------------------
    def _span(self, f) -> tuple[int, int]:
        item = getattr(f, "item", None)
        if item is not None and getattr(item, "span", None):
            return item.span
        for c in walk(f):
            item = getattr(c, "item", None)
            if item is not None and getattr(item, "span", None):
                return item.span
        return self.line

    def _off(self, line: int) -> int:
        offs = self.unit.line_offsets
        return offs[min(max(line, 1), len(offs) - 1)]

    def node(self, kind: str, f=None, text: str | None = None, **kw) -> Node:
        first, last = self.line
        n = Node(kind=kind, start=self._off(first), end=self._off(last + 1), line=first, **kw)
        if text is not None or f is not None:
            self.unit.texts[id(n)] = text if text is not None else str(f)
        if f is not None:
            self.unit.fnodes[id(n)] = f
        return n

    @staticmethod
    def adopt(parent: Node, *children: Node) -> Node:
        for c in children:
            if c is not None:
                c.parent = parent
                parent.children.append(c)
        return parent

    # --- program units -------------------------------------------------------------------------
    def convert(self, scopes: list[Scope]):
        for m in self.sym.modules.values():
            for v in m.vars.values():
                self.unit.globals.append(Node("VAR_DECL", 0, 0, 1, spelling=v.name, ref=v.key,
                                              is_global=True))
        names = {}
        for s in scopes:
            key = s.name if s.name not in names else f"{s.host.name if s.host else ''}.{s.name}"
            names[key] = s
            s.key = key
        for s in scopes:
            self._procedure(s)

    def _procedure(self, s: Scope):
        self.scope = s
        u = s.node
        first = self._span(head(u))[0]
        end_stmt = u.children[-1]
        end_line = self._span(end_stmt)[0]
        for c in u.children:
            if isinstance(c, (F.Internal_Subprogram_Part, F.Module_Subprogram_Part)):
                end_line = self._span(c.children[0])[0]
                break
        ex = exec_part(u)
        stmts = [c for c in ex.children if not isinstance(c, F.Comment)] if ex is not None else []
        self.targets = self._branch_targets(ex)
        self.line = (first, end_line)
        fn_node = self.node("FUNCTION_DECL", spelling=s.key)
        body = self._block(stmts, end_line)
        self.adopt(fn_node, body)
        params = [s.vars[d].key for d in s.dummies if d in s.vars]
        self.unit.functions[s.key] = Function(s.key, fn_node, params, body, False)
        self.unit.declared_functions.add(s.key)
        first_exec = self._span(stmts[0])[0] if stmts else 0
        asynchronous = {v.name for v in s.vars.values() if "asynchronous" in v.attrs}
        included = next((st for st in walk(stmts) if getattr(st, "item", None) is not None
                         and not self.unit.in_file(st)), None)
        self.unit.procedures[s.key] = Procedure(s, self.sym.binding(s), first_exec or end_line,
                                                first_exec, asynchronous,
                                                str(included)[:40] if included is not None else "")
        for v in s.vars.values():
            if v.is_global:
                self.unit.globals.append(Node("VAR_DECL", 0, 0, 1, spelling=v.name, ref=v.key,
                                              is_global=True))

    def _branch_targets(self, ex) -> set:
        """Labels a branch may reach (GO TO, arithmetic IF, ERR=/END=/EOR=, alternate returns)."""
        if ex is None:
            return set()
        # labels a DO statement names are its terminal's, not branch targets
        do_labels = {id(lab) for d in walk(ex, F.Label_Do_Stmt) for lab in walk(d, F.Label)}
        return {str(n).strip() for n in walk(ex, F.Label) if id(n) not in do_labels}

    # --- blocks --------------------------------------------------------------------------------
    def _block(self, stmts: list, closing_line: int) -> Node:
        first = self._span(stmts[0])[0] if stmts else closing_line
        self.line = (first, closing_line - 1)
        block = self.node("COMPOUND_STMT")
        block.end = self._off(closing_line) + 1
        for st in stmts:
            if isinstance(st, F.Comment):
                continue
            n = self.statement(st)
            if n is not None:
                self.adopt(block, n)
        return block

    def statement(self, st) -> Node | None:
        span = self._span(st)
        self.line = span
        label = getattr(getattr(st, "item", None), "label", None)
        try:
            n = self._statement(st)
        except Exception as e:          # a shape of fparser node not foreseen: not modelled
            self.line = span
            n = self.unmodelled(st, f"`{str(st).splitlines()[0][:40]}` (not modelled: {type(e).__name__})")
        self.line = span
        if label is not None and str(label) in self.targets:
            wrapper = self.node("LABEL_STMT", spelling=str(label))
            return self.adopt(wrapper, n or self.node("NULL_STMT"))
        return n

    def _statement(self, st) -> Node | None:
        if isinstance(st, (F.Continue_Stmt, F.Format_Stmt, F.Data_Stmt)):
            return self.node("NULL_STMT")
        if isinstance(st, F.Assignment_Stmt):
            return self.adopt(self.node("BINARY_OPERATOR", st, op="="),
                              self.lvalue(st.children[0]), self.expr(st.children[2]))
        if isinstance(st, F.Pointer_Assignment_Stmt):
            return self.adopt(self.node("BINARY_OPERATOR", st, op="="),
                              self.lvalue(st.children[0]), self.expr(st.children[2]))
        if isinstance(st, F.Call_Stmt):
            args = st.children[1].children if st.children[1] is not None else ()
            return self.call(name_of(st.children[0]), list(args), st)
        if isinstance(st, F.If_Construct):
            return self._if_construct(st)
        if isinstance(st, F.If_Stmt):
            s = self.node("IF_STMT", st)
            return self.adopt(s, self.expr(st.children[0]), self.statement(st.children[1]))
        if isinstance(st, F.Case_Construct):
            return self._case_construct(st)
        if isinstance(st, (F.Block_Nonlabel_Do_Construct, F.Block_Label_Do_Construct,
                           F.Action_Term_Do_Construct)):
            return self._do(st)
        if isinstance(st, F.Return_Stmt):
            return self.node("RETURN_STMT", st)
        if isinstance(st, (F.Goto_Stmt, F.Computed_Goto_Stmt, F.Arithmetic_If_Stmt)):
            n = self.node("GOTO_STMT", st)
            return self.adopt(n, *[self.expr(c) for c in st.children
                                   if isinstance(c, F.Base) and not isinstance(c, F.Label)])
        if isinstance(st, F.Exit_Stmt):
            return self.node("BREAK_STMT" if st.children[1] is None else "GOTO_STMT", st)
        if isinstance(st, F.Cycle_Stmt):
            return self.node("CONTINUE_STMT" if st.children[1] is None else "GOTO_STMT", st)
        if isinstance(st, _STOPS):
            call = self.node("CALL_EXPR", st, callee="exit")
            return self.adopt(call, self.node("DECL_REF_EXPR", spelling="exit", ref_kind="func"))
        if isinstance(st, _OUTPUT):
            return self._io(st, output=True)
        if isinstance(st, F.Read_Stmt):
            return self._io(st, output=False)
        if isinstance(st, (F.Allocate_Stmt, F.Deallocate_Stmt, F.Nullify_Stmt)):
            stmt = self.node("FORTRAN_ALLOCATION_STMT", st)
            for obj in walk(st.children, (F.Name, F.Part_Ref, F.Data_Ref)):
                if isinstance(obj, (F.Part_Ref, F.Data_Ref)) or self._is_variable_name(obj):
                    self.adopt(stmt, self.written(obj, st))
            return stmt
        if isinstance(st, _OTHER_IO):
            return self.call("fortran_io_" + type(st).__name__.lower(),
                             [c for c in walk(st.children, (F.Name, F.Part_Ref))
                              if isinstance(c, F.Part_Ref) or self._is_variable_name(c)], st,
                             io=True)
        return self.unmodelled(st)

    def unmodelled(self, st, why: str = "") -> Node:
        """A statement the front end does not model: it stops every pending call
        (fortran_analysis). The collectives inside it are still sites, left blocking."""
        kind = type(st).__name__.replace("_", " ").replace(" Construct", "").replace(" Stmt", "")
        n = self.node("FORTRAN_UNMODELLED_STMT", st, text=why or f"{kind} `{str(st).splitlines()[0][:40]}`")
        for c in walk(st, F.Call_Stmt):
            if name_of(c.children[0]).upper() in _REWRITABLE_NAMES:
                self.line = self._span(c)
                args = c.children[1].children if c.children[1] is not None else ()
                self.adopt(n, self.call(name_of(c.children[0]), list(args), c))
        return n

    def written(self, f, st) -> Node:
        """A write of designator `f` by statement `st` (input item, ALLOCATE, status variable)."""
        return self.adopt(self.node("BINARY_OPERATOR", st, op="="), self.lvalue(f),
                          self.node("FORTRAN_EXPR", text=""))

    def _is_variable_name(self, n) -> bool:
        name = name_of(n)
        if name == self.scope.result:       # a FUNCTION's result named as the function: a variable
            return True
        if self.sym.procedure(self.scope, name) is not None or name in self.scope.functions:
            return False
        return self.sym.resolve(self.scope, name) is not None

    def _is_subscripted_variable(self, f) -> bool:
        """`x(…)` is an array element / section or a substring (else a function reference):
        a declared array, or a declared scalar with a substring range."""
        name = name_of(f.children[0])
        if self.sym.procedure(self.scope, name) is not None or name in self.scope.functions:
            return False
        v = self.sym.lookup(self.scope, name)
        if v is None or v.foreign:
            return False
        return v.is_array or ":" in str(f.children[1])

    def _if_construct(self, st) -> Node:
        parts = [c for c in st.children if not isinstance(c, F.Comment)]
        # split into (condition or None, statements, closing line)
        heads = [i for i, c in enumerate(parts)
                 if isinstance(c, (F.If_Then_Stmt, F.Else_If_Stmt, F.Else_Stmt, F.End_If_Stmt))]
        branches = []
        for a, b in zip(heads, heads[1:]):
            head = parts[a]
            cond = head.children[0] if isinstance(head, (F.If_Then_Stmt, F.Else_If_Stmt)) else None
            branches.append((cond, parts[a + 1:b], self._span(parts[b])[0], self._span(head)))
        return self._chain(branches, st)

    def _chain(self, branches: list, f) -> Node:
        """IF_STMT [cond, then-block, else-part] where else-part is a block or a nested IF_STMT."""
        cond, stmts, closing, head = branches[0]
        self.line = head
        n = self.node("IF_STMT", f)
        c = self.expr(cond) if cond is not None else self.node("INTEGER_LITERAL", text="")
        self.adopt(n, c, self._block(stmts, closing))
        rest = branches[1:]
        if rest:
            if rest[0][0] is None and len(rest) == 1:
                self.adopt(n, self._block(rest[0][1], rest[0][2]))
            else:
                self.adopt(n, self._chain(rest, f))
        return n

    def _case_construct(self, st) -> Node:
        parts = [c for c in st.children if not isinstance(c, F.Comment)]
        selector = parts[0].children[0] if isinstance(parts[0], F.Select_Case_Stmt) else None
        heads = [i for i, c in enumerate(parts) if isinstance(c, (F.Case_Stmt, F.End_Select_Stmt))]
        branches = []
        for a, b in zip(heads, heads[1:]):
            head = parts[a]
            is_default = "DEFAULT" in str(head).upper().split("!")[0] and "(" not in str(head)
            branches.append((None if is_default else (selector, head), parts[a + 1:b],
                             self._span(parts[b])[0], self._span(head)))
        if not branches:
            return self.node("NULL_STMT")
        # DEFAULT may come first in the source; as the last `else` the chain means the same
        branches.sort(key=lambda b: b[0] is None)
        return self._chain([(sel if sel is None else sel[0], s, c, h) for sel, s, c, h in branches], st)

    def _do(self, st) -> Node:
        parts = [c for c in st.children if not isinstance(c, F.Comment)]
        head = parts[0]
        control = walk(head, F.Loop_Control)
        is_label = isinstance(st, (F.Block_Label_Do_Construct, F.Action_Term_Do_Construct))
        terminal = None
        if is_label and len(parts) > 1 and isinstance(parts[-1], F.Continue_Stmt):
            # `10 CONTINUE` ends the body: a wait at the end of the body goes before it
            body_stmts, closing = parts[1:-1], self._span(parts[-1])[0]
        elif is_label:
            # an action statement ends the body (and is part of it): nothing may move past it
            body_stmts, closing = parts[1:], self._span(parts[-1])[1] + 1
            terminal = parts[-1] if len(parts) > 1 else None
        else:
            body_stmts = parts[1:-1]
            closing = self._span(parts[-1])[0]
        self.line = self._span(head)
        if control and control[0].children[1] is None and not str(control[0]).upper().startswith("WHILE"):
            return self.unmodelled(st)                  # DO CONCURRENT (no MPI may be called in it)
        control_text = str(control[0]) if control else ""
        is_while = control and control_text.upper().startswith("WHILE")
        loop = self.node("WHILE_STMT" if (is_while or not control) else "FOR_STMT", head)
        header = []
        if control:
            lc = control[0]
            if is_while:
                header.append(self.expr(lc.children[0]))
            else:
                var, bounds = lc.children[1]
                # the bounds are read once, as the assignment's one right-hand side
                bounds_node = self.adopt(self.node("FORTRAN_EXPR", lc), *[self.expr(b) for b in bounds])
                header.append(self.adopt(self.node("BINARY_OPERATOR", lc, op="="), self.lvalue(var),
                                         bounds_node))
        body = self._block(body_stmts, closing)
        if terminal is not None and body.children and body.children[-1].kind != "LABEL_STMT":
            last = body.children[-1]
            label = str(getattr(terminal.item, "label", "") or "")
            wrapper = Node("LABEL_STMT", last.start, last.end, last.line, spelling=label, parent=body)
            body.children[-1] = wrapper
            self.adopt(wrapper, last)
        self.adopt(loop, *header)
        # the whole construct, to its END DO or terminal statement (the persistent writer's
        # MPI_REQUEST_FREE goes after it)
        loop.end = self._off(self._span(parts[-1])[1] + 1)
        return self.adopt(loop, body)

    # --- calls -------------------------------------------------------------------------------
    def call(self, name: str, args: list, f, io: bool = False) -> Node:
        upper = name.upper()
        if upper.startswith(("MPI_", "PMPI_", "MPIX_")):
            callee = _MPI_NAMES.get(upper, upper)
        else:
            target = self.sym.procedure(self.scope, name)
            callee = target.key if target is not None else name
        call = self.node("CALL_EXPR", f, callee=callee, target=callee)   # keyed as unit.functions
        self.adopt(call, self.node("DECL_REF_EXPR", spelling=callee, ref_kind="func"))
        coll = REWRITABLE.get(callee)
        if coll is not None:
            # the ierror argument is not part of the C signature the tables describe
            ierror = args[len(coll.roles)] if len(args) > len(coll.roles) else None
            self.unit.mpi_ierror[id(call)] = ierror
            args = args[:len(coll.roles)]
        target = None if callee.startswith("MPI") else self._procedure_of(callee)
        if target is not None:
            args = self._by_position(target, args)
        for a in args:
            self.adopt(call, self.actual(a))
        if io:
            self.unit.texts[id(call)] = str(f)
        return call

    def _procedure_of(self, key: str) -> Scope | None:
        fn = self.unit.symbols
        for s in fn.scopes:
            if s.key == key:
                return s
        return None

    def _by_position(self, target: Scope, args: list) -> list:
        """Keyword actual arguments put at their dummy's position (missing optional ones: None)."""
        if not any(isinstance(a, F.Actual_Arg_Spec) for a in args):
            return args
        out = [None] * max(len(target.dummies), len(args))
        for i, a in enumerate(args):
            if isinstance(a, F.Actual_Arg_Spec):
                key = name_of(a.children[0])
                j = target.dummies.index(key) if key in target.dummies else i
                out[j] = a.children[1]
            else:
                out[i] = a
        return out

    def actual(self, a) -> Node:
        """An actual argument: a variable is passed by reference (`&ref`); anything else is an
        expression evaluated into a temporary."""
        if a is None:
            return self.node("FORTRAN_ABSENT_ARG", text="")
        if isinstance(a, F.Actual_Arg_Spec):
            a = a.children[1]
        if self._designator(a):
            ref = self.lvalue(a)
            if ref is not None and ref.kind != "FORTRAN_CONSTANT":
                return self.adopt(self.node("UNARY_OPERATOR", a, op="&"), ref)
            return ref
        return self.expr(a)

    def _designator(self, a) -> bool:
        if isinstance(a, F.Name):
            return self._is_variable_name(a)
        if isinstance(a, F.Part_Ref):
            return self._is_subscripted_variable(a)
        return isinstance(a, F.Data_Ref)

    # --- expressions -----------------------------------------------------------------------
    def _var_ref(self, name: str, f) -> Node:
        """(reference node, Var) for a variable name: locals and globals by name, dummies as
        pointer parameters, POINTER/TARGET dummies as the one shared location."""
        v = self.sym.resolve(self.scope, name)
        if v is None:
            return self.node("FORTRAN_CONSTANT", f, spelling=name), None
        dummy = v.is_dummy and v.key != "<pointer/target>"
        ref = self.node("DECL_REF_EXPR", f, spelling=name, ref=v.key, ref_kind="var",
                        is_global=v.is_global, shape="pointer" if dummy else
                        ("array" if v.is_array else ""))
        return ref, v

    def lvalue(self, f) -> Node:
        """The storage a designator names (what an assignment writes)."""
        if isinstance(f, F.Name):
            ref, v = self._var_ref(name_of(f), f)
            if v is None or ref.shape == "":
                return ref
            return self.adopt(self.node("UNARY_OPERATOR", f, op="*"), ref)
        if isinstance(f, (F.Part_Ref, F.Data_Ref, F.Substring_Range)) or hasattr(f, "children"):
            names = walk(f, F.Name)
            if isinstance(f, F.Part_Ref) and not self._is_subscripted_variable(f):
                return self.expr(f)
            if isinstance(f, F.Data_Ref) and not self._mpi_status(f.children[0]):
                # a component may be a pointer: its storage is the one all pointers share
                # (an MPI_Status's are integers: `st%MPI_SOURCE` is part of `st`, as below)
                return self.node("DECL_REF_EXPR", f, spelling=str(f), ref="<pointer/target>",
                                 ref_kind="var", is_global=True)
            base = f.children[0] if isinstance(f, F.Part_Ref) else (names[0] if names else None)
            if base is None:
                return self.expr(f)
            ref, v = self._var_ref(name_of(base), base)
            if v is None:
                return ref
            if ref.shape == "":
                ref.shape = "array"        # a scalar's substring or component: the scalar
            sub = self.node("ARRAY_SUBSCRIPT_EXPR", f)
            rest = self.node("FORTRAN_SUBSCRIPTS", f)
            for c in (f.children[1:] if isinstance(f, F.Part_Ref) else f.children):
                if isinstance(c, F.Base) and c is not base:
                    self.adopt(rest, self.expr(c))
            return self.adopt(sub, ref, rest)
        return self.expr(f)

    def _mpi_status(self, base) -> bool:
        v = self.sym.lookup(self.scope, name_of(base)) if isinstance(base, F.Name) else None
        return v is not None and v.mpi_status and "pointer" not in v.attrs

    def expr(self, f) -> Node:
        """Evaluating `f` for its value: what it reads."""
        if f is None or isinstance(f, str):
            return self.node("INTEGER_LITERAL", text=str(f or ""))
        if isinstance(f, F.Name):
            name = name_of(f)
            if self._is_variable_name(f):
                return self.lvalue(f)
            return self.node("FORTRAN_CONSTANT", f, spelling=name)      # MPI constants too
        if isinstance(f, F.Part_Ref):
            name = name_of(f.children[0])
            if self._is_subscripted_variable(f):
                return self.lvalue(f)
            args = f.children[1].children if f.children[1] is not None else ()
            return self.call(name, list(args), f)
        if isinstance(f, F.Function_Reference):
            args = f.children[1].children if f.children[1] is not None else ()
            return self.call(name_of(f.children[0]), list(args), f)
        if isinstance(f, F.Data_Ref):
            return self.lvalue(f)
        if isinstance(f, F.Intrinsic_Function_Reference):
            # intrinsic functions read their arguments and touch nothing else
            n = self.node("FORTRAN_INTRINSIC", f)
            for c in (f.children[1].children if f.children[1] is not None else ()):
                if isinstance(c, F.Actual_Arg_Spec):
                    c = c.children[1]
                self.adopt(n, self.expr(c))
            return n
        n = self.node("FORTRAN_EXPR", f)
        for c in getattr(f, "children", ()) or ():
            if isinstance(c, F.Base):
                self.adopt(n, self.expr(c))
            elif isinstance(c, (list, tuple)):
                for d in c:
                    if isinstance(d, F.Base):
                        self.adopt(n, self.expr(d))
        return n
