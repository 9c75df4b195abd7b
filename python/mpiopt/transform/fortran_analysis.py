"""The shared analyses (alias.py, effects.py, placement.py) adjusted where Fortran's semantics
differ from C's; everything else is inherited unchanged.

  * points-to: an actual argument does not outlive the call in Fortran (without TARGET, which
    the front end already maps to the one shared pointer/target location), so a call of unknown
    code returns no pointer into its arguments (C's rule would unify every variable ever
    passed to an external procedure).
  * text of nodes: the front end keeps each expression's source text apart (fparser2 has no
    column positions); MPI_IN_PLACE is matched in any case.
  * a statement the front end does not model (WHERE, ASSOCIATE, BLOCK, DO CONCURRENT, ...)
    stops every pending call.
  (waits of rooted collectives are split by rank as in C: the Fortran writer tests the rank
  in place of C's `mpiopt_is_root` helper)."""
from __future__ import annotations

from fparser.two import Fortran2003 as F

from .alias import PointsTo
from .effects import EffectAnalysis, call_args
from .fortran_parse import FortranUnit
from .fortran_symbols import POINTER_TARGET
from .parse import Node
from .placement import Placer


class FortranPointsTo(PointsTo):
    def _call_value(self, call: Node):
        if call.target in self._defined:
            return super()._call_value(call)
        return None

    def analyse(self, unit: FortranUnit) -> "FortranPointsTo":
        # each procedure's own variables belong to it (C learns this from its VAR_DECLs)
        for key, proc in unit.procedures.items():
            for v in proc.scope.vars.values():
                if not v.is_global and not v.is_dummy:
                    self.owner.setdefault(v.key, key)
        super().analyse(unit)
        return self


class FortranEffectAnalysis(EffectAnalysis):
    unit: FortranUnit

    def text(self, n: Node) -> str:
        if n.kind == "CALL_EXPR":
            # C shape `name(args)`: what find_sites checks a call by (no macro in between)
            return f"{n.callee}({', '.join(self.text(a) for a in call_args(n))})"
        return self.unit.texts.get(id(n), "")

    def _stmt(self, n: Node, eff, loops: int, switches: int, summary: bool):
        if n.kind == "FORTRAN_UNMODELLED_STMT":
            # whatever it reads or writes is unknown: nothing pending may cross it
            eff.stop_at(f"{self.unit.texts.get(id(n), 'a statement')}: not modelled by the Fortran "
                        "front end", n)
        super()._stmt(n, eff, loops, switches, summary)

    @staticmethod
    def same_name(text: str, spelling: str) -> bool:
        """A variable named as declared (across.py): Fortran names are case-insensitive."""
        return text.lower() == spelling.lower()

    def is_in_place(self, arg: Node) -> bool:
        return self.text(arg).strip().upper() == "MPI_IN_PLACE"

    def is_null(self, arg: Node) -> bool:
        return False

    def is_status_ignore(self, arg: Node) -> bool:
        return self.text(arg).strip().upper() == "MPI_STATUS_IGNORE"

    def status_at_wait(self, arg: Node, c_form: bool) -> bool:
        """A receive's status goes to its wait: MPI_STATUS_IGNORE or a variable named whole
        (`integer st(MPI_STATUS_SIZE)`, `type(MPI_Status) st`), not a pointer (which could be
        associated elsewhere by then) and not an element or section (its subscripts could change)."""
        if self.is_status_ignore(arg):
            return True
        ref = arg.children[0] if arg.kind == "UNARY_OPERATOR" and arg.op == "&" else None
        while ref is not None and ref.kind == "UNARY_OPERATOR" and ref.op == "*":
            ref = ref.children[0]
        return isinstance(self.unit.fnodes.get(id(arg)), F.Name) and ref is not None and \
            ref.kind == "DECL_REF_EXPR" and ref.ref != POINTER_TARGET


def analyse(unit: FortranUnit) -> tuple[FortranEffectAnalysis, Placer]:
    ea = FortranEffectAnalysis(unit, FortranPointsTo().analyse(unit))
    return ea, Placer(ea)
