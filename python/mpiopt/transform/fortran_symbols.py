"""Scopes and variables of a Fortran file (fparser2 parse tree), for the Fortran front end.

Where a name's storage lives decides what may alias it; each variable gets a declaration key
shared by every reference to the same storage:

  module variable          "module:<m>:<name>"  global (any procedure of the program may use it)
  COMMON block member      "common:/<block>/"   global; the whole block is one location, since
                                                 other procedures may name its parts differently
  EQUIVALENCEd variables   one key for the whole set
  POINTER or TARGET        "<pointer/target>"   one global location for all of them: a pointer
                                                 may be associated with any target
  names of a module of another file (USE of a module not in the file) or of an INCLUDE not
  found: "<pointer/target>" too (they may be pointers to the file's targets)
  anything else            "<procedure>:<name>" local (dummy arguments, implicit locals, results)

Host association (CONTAINed procedures) and USE of modules in the file resolve to the host's or
the module's variable."""
from __future__ import annotations

from dataclasses import dataclass, field

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

POINTER_TARGET = "<pointer/target>"
MPI_MODULES = {"mpi": "mpi", "mpi_f08": "mpi_f08"}


@dataclass
class Var:
    name: str                 # lower case
    key: str
    is_global: bool = False
    is_array: bool = False
    is_dummy: bool = False
    assumed_shape: bool = False
    derived: bool = False     # of a derived type (its components may be pointers)
    mpi_status: bool = False  # TYPE(MPI_Status) (mpi_f08): integer components only
    foreign: bool = False     # not declared in the file (another file's module, an INCLUDE not found)
    attrs: set = field(default_factory=set)     # lower-case attribute names (pointer, target, …)


@dataclass
class Scope:
    name: str                 # lower case; "" for the file
    kind: str                 # "module", "program", "subroutine", "function"
    node: object              # fparser node of the program unit / subprogram
    host: "Scope | None" = None
    vars: dict = field(default_factory=dict)            # name -> Var (declared or referenced)
    dummies: list = field(default_factory=list)         # names, in order
    uses: list = field(default_factory=list)            # (module name, {local: module name} or None)
    binding: str = ""                                    # "mpif.h", "mpi", "mpi_f08" declared here
    procedures: dict = field(default_factory=dict)      # contained procedures: name -> Scope
    functions: set = field(default_factory=set)         # EXTERNAL / declared function names
    result: str = ""                                     # function result variable
    key: str = ""                                        # name in Unit.functions
    unresolved_include: bool = False                     # an INCLUDE fparser did not find

    def lookup_local(self, name: str) -> Var | None:
        return self.vars.get(name)


def name_of(n) -> str:
    return str(n).lower()


def head(unit_node):
    """The first statement of a program unit or subprogram (comments may precede it)."""
    return next(c for c in unit_node.children if not isinstance(c, F.Comment))


def spec_part(unit_node):
    for c in unit_node.children:
        if isinstance(c, F.Specification_Part):
            return c
    return None


def exec_part(unit_node):
    for c in unit_node.children:
        if isinstance(c, F.Execution_Part):
            return c
    return None


def _entity_dims(decl) -> tuple[bool, bool]:
    """(is an array, assumed shape or deferred shape) for an Entity_Decl or a DIMENSION spec."""
    arr = assumed = False
    for c in decl.children if hasattr(decl, "children") else ():
        if isinstance(c, (F.Explicit_Shape_Spec_List, F.Assumed_Size_Spec, F.Explicit_Shape_Spec)):
            arr = True
        elif isinstance(c, (F.Assumed_Shape_Spec_List, F.Deferred_Shape_Spec_List,
                            F.Assumed_Shape_Spec, F.Deferred_Shape_Spec)):
            arr = assumed = True
    return arr, assumed


def _equivalenced(eset) -> list[str]:
    out = []

    def visit(n):
        if isinstance(n, F.Name):
            out.append(name_of(n))
        elif isinstance(n, F.Part_Ref):
            out.append(name_of(n.children[0]))
        elif isinstance(n, (F.Equivalence_Set, F.Equivalence_Object_List)):
            for c in n.children:
                visit(c)
    visit(eset)
    return out


class SymbolBuilder:
    """Walks the program units of a file and builds a Scope tree with keyed variables."""

    def __init__(self, tree):
        self.tree = tree
        self.modules: dict[str, Scope] = {}
        self.scopes: list[Scope] = []               # every procedure and main program
        self.externals: dict[str, Scope] = {}       # external subprograms by name

    def build(self) -> list[Scope]:
        units = [c for c in self.tree.children if not isinstance(c, F.Comment)]
        for u in units:                              # modules first: others USE them
            if isinstance(u, F.Module):
                self._unit(u, None, "module")
        for u in units:
            if isinstance(u, F.Main_Program):
                self._unit(u, None, "program")
            elif isinstance(u, F.Subroutine_Subprogram):
                self._unit(u, None, "subroutine")
            elif isinstance(u, F.Function_Subprogram):
                self._unit(u, None, "function")
        return self.scopes

    # --- program units ---------------------------------------------------------------------
    def _unit(self, u, host: Scope | None, kind: str) -> Scope:
        stmt = head(u)
        name = ""
        if isinstance(stmt, (F.Module_Stmt, F.Program_Stmt, F.Subroutine_Stmt, F.Function_Stmt)):
            name = name_of(stmt.children[1]) if kind in ("subroutine", "function") else name_of(stmt.children[1])
        s = Scope(name or "main", kind, u, host)
        if kind in ("subroutine", "function"):
            args = stmt.children[2]
            if args is not None:
                s.dummies = [name_of(a) for a in args.children if isinstance(a, F.Name)]
            if kind == "function":
                s.result = name
                for c in walk(stmt, F.Suffix):
                    for r in c.children:
                        if isinstance(r, F.Name):
                            s.result = name_of(r)
        if kind == "module":
            self.modules[s.name] = s
        else:
            self.scopes.append(s)
            if host is None:
                self.externals[s.name] = s
        self._declarations(s)
        for c in u.children:
            if isinstance(c, (F.Module_Subprogram_Part, F.Internal_Subprogram_Part)):
                for sub in c.children:
                    if isinstance(sub, F.Subroutine_Subprogram):
                        s.procedures[name_of(head(sub).children[1])] = self._unit(sub, s, "subroutine")
                    elif isinstance(sub, F.Function_Subprogram):
                        s.procedures[name_of(head(sub).children[1])] = self._unit(sub, s, "function")
        return s

    def _local_key(self, s: Scope, name: str) -> str:
        chain, h = [s.name], s.host
        while h is not None:
            chain.append(h.name)
            h = h.host
        return "/".join(reversed(chain)) + ":" + name

    def _var(self, s: Scope, name: str) -> Var:
        v = s.vars.get(name)
        if v is None:
            if s.kind == "module":
                v = Var(name, f"module:{s.name}:{name}", is_global=True)
            else:
                v = Var(name, self._local_key(s, name))
            s.vars[name] = v
        return v

    def _declarations(self, s: Scope):
        for d in s.dummies:
            self._var(s, d).is_dummy = True
        if s.result:
            self._var(s, s.result)
        spec = spec_part(s.node)
        if spec is None:
            return
        commons, equivalences = [], []
        for st in walk(spec.children):
            if isinstance(st, F.Use_Stmt):
                mod = name_of(st.children[2])
                renames = {}
                for r in walk(st, F.Rename):
                    local, remote = r.children[1], r.children[2]
                    renames[name_of(local)] = name_of(remote)
                s.uses.append((mod, renames))
                if mod in MPI_MODULES:
                    s.binding = MPI_MODULES[mod]
            elif isinstance(st, F.Include_Stmt):
                if "mpif.h" in str(st).lower():
                    s.binding = "mpif.h"
                else:
                    # not found, so not inlined: it may declare COMMON blocks, so names this
                    # scope does not declare are taken as globals
                    s.unresolved_include = True
            elif isinstance(st, F.Type_Declaration_Stmt):
                attrs, dim_arr, dim_assumed = set(), False, False
                if st.children[1] is not None:
                    for a in st.children[1].children:
                        text = str(a).lower()
                        word = text.split("(")[0].strip()
                        attrs.add(word)
                        if word == "dimension":
                            dim_arr = True
                            dim_assumed = ":" in text and "*" not in text
                for e in st.children[2].children:
                    v = self._var(s, name_of(e.children[0]))
                    arr, assumed = _entity_dims(e)
                    v.is_array = v.is_array or arr or dim_arr
                    v.assumed_shape = v.assumed_shape or assumed or (dim_assumed and not arr)
                    v.attrs |= attrs
                    v.derived = v.derived or isinstance(st.children[0], F.Declaration_Type_Spec)
                    v.mpi_status = v.mpi_status or \
                        str(st.children[0]).replace(" ", "").lower() == "type(mpi_status)"
                    if "external" in attrs:
                        s.functions.add(v.name)
            elif isinstance(st, F.Dimension_Stmt):
                for item in st.children[0]:
                    v = self._var(s, name_of(item[0]))
                    v.is_array = True
                    v.assumed_shape = v.assumed_shape or ":" in str(item[1])
            elif isinstance(st, (F.Pointer_Stmt, F.Target_Stmt, F.Allocatable_Stmt,
                                 F.Asynchronous_Stmt, F.Volatile_Stmt, F.Save_Stmt,
                                 F.Parameter_Stmt)):
                word = type(st).__name__.split("_")[0].lower()
                for n in walk(st, F.Name):
                    v = self._var(s, name_of(n))
                    v.attrs.add(word)
                    if word in ("pointer", "allocatable") and (
                            walk(st, F.Deferred_Shape_Spec_List) or ":" in str(st)):
                        v.is_array = True
                        v.assumed_shape = word == "pointer"
            elif isinstance(st, F.External_Stmt):
                for n in walk(st, F.Name):
                    s.functions.add(name_of(n))
            elif isinstance(st, F.Common_Stmt):
                commons.append(st)
            elif isinstance(st, F.Equivalence_Stmt):
                equivalences.append(st)
        for st in commons:
            for block, objects in st.items[0]:
                label = name_of(block) if block is not None else ""
                for o in objects.children:
                    nm = o if isinstance(o, F.Name) else o.children[0]
                    v = self._var(s, name_of(nm))
                    v.key, v.is_global = f"common:/{label}/", True
                    if not isinstance(o, F.Name):
                        v.is_array = True
        for st in equivalences:
            for eset in walk(st, F.Equivalence_Set):
                names = _equivalenced(eset)
                vs = [self._var(s, n) for n in dict.fromkeys(names)]
                if not vs:
                    continue
                lead = next((v for v in vs if v.is_global), vs[0])
                for v in vs:
                    v.key, v.is_global = lead.key, lead.is_global
        for v in s.vars.values():
            if v.attrs & {"pointer", "target"}:
                v.key, v.is_global = POINTER_TARGET, True

    # --- resolution -----------------------------------------------------------------------
    def binding(self, s: Scope) -> str:
        """The MPI binding in scope: declared here, in a host, or in a module of the file used."""
        seen = set()

        def of(sc: Scope | None) -> str:
            while sc is not None:
                if id(sc) in seen:
                    return ""
                seen.add(id(sc))
                if sc.binding:
                    return sc.binding
                for mod, _r in sc.uses:
                    m = self.modules.get(mod)
                    b = of(m) if m is not None else ""
                    if b:
                        return b
                sc = sc.host
            return ""
        return of(s)

    def _module_var(self, mod: str, name: str, seen=None) -> Var | None:
        m = self.modules.get(mod)
        seen = seen or set()
        if m is None or mod in seen:
            return None
        seen.add(mod)
        v = m.vars.get(name)
        if v is not None:
            return v
        for sub, renames in m.uses:
            r = self._module_var(sub, renames.get(name, name), seen)
            if r is not None:
                return r
        return None

    def _foreign_use(self, s: Scope) -> bool:
        """A USE of a module this file does not define (its names are unknown here)."""
        sc = s
        while sc is not None:
            if sc.unresolved_include:
                return True
            for mod, _r in sc.uses:
                if mod not in self.modules and mod not in MPI_MODULES and \
                        not mod.startswith(("iso_", "ieee_", "omp_lib")):
                    return True
                if mod in self.modules and self._foreign_use(self.modules[mod]):
                    return True
            sc = sc.host
        return False

    def lookup(self, s: Scope, name: str) -> Var | None:
        """The declared (or already resolved) variable `name` in scope `s`, if any."""
        sc = s
        while sc is not None:
            v = sc.vars.get(name)
            if v is not None:
                return v
            for mod, renames in sc.uses:
                v = self._module_var(mod, renames.get(name, name))
                if v is not None:
                    return v
            sc = sc.host
        return None

    def resolve(self, s: Scope, name: str) -> Var | None:
        """The variable `name` means in scope `s` (None for an MPI constant or a procedure)."""
        v = self.lookup(s, name)
        if v is not None:
            return v
        if name.startswith("mpi_"):
            return None                   # constants of the MPI binding
        if self._foreign_use(s):
            # may be a variable, a pointer or a target of a module of another file: the one
            # location all pointers and targets share
            v = Var(name, POINTER_TARGET, is_global=True, foreign=True)
        else:
            v = Var(name, self._local_key(s, name))     # implicitly typed local
        s.vars[name] = v
        return v

    def procedure(self, s: Scope, name: str) -> Scope | None:
        """The procedure of the file a call of `name` from `s` reaches, if any."""
        sc = s
        while sc is not None:
            if name in sc.procedures:
                return sc.procedures[name]
            for mod, _r in sc.uses:
                m = self.modules.get(mod)
                if m is not None and name in m.procedures:
                    return m.procedures[name]
            sc = sc.host
        return self.externals.get(name)
