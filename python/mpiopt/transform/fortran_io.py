"""Fortran's data-transfer statements (READ, WRITE, PRINT) for the front end's converter
(fortran_parse.py, whose _Converter inherits this): what each reads and writes, in the node
tree the shared analyses walk."""
from __future__ import annotations

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from .parse import Node


class IoStatements:
    """Methods of fortran_parse._Converter (node, adopt, expr, written, _designator come
    from it)."""

    def _io(self, st, output: bool) -> Node:
        """A data transfer: a call of `printf` (effects outside memory) reading the control
        values and, for output, the items; assignments to the input items and to status
        variables (IOSTAT=, IOMSG=, SIZE=) and, for output, to an internal file (a variable unit)."""
        stmt = self.node("FORTRAN_IO_STMT", st)
        call = self.node("CALL_EXPR", st, callee="printf")
        self.adopt(call, self.node("DECL_REF_EXPR", spelling="printf", ref_kind="func"))
        self.adopt(stmt, call)
        specs = walk(st.children, F.Io_Control_Spec)
        for i, spec in enumerate(specs):
            kw = str(spec.children[0]).upper() if spec.children[0] is not None else ""
            val = spec.children[1]
            unit = kw == "UNIT" or (not kw and i == 0)
            is_var = isinstance(val, (F.Name, F.Part_Ref, F.Data_Ref)) and self._designator(val)
            if is_var and (kw in ("IOSTAT", "IOMSG", "SIZE", "ID") or (unit and output)):
                self.adopt(stmt, self.written(val, st))
            else:
                self.adopt(call, self.expr(val))
        for lst in walk(st.children, (F.Output_Item_List, F.Input_Item_List)):
            for item in self._io_items(lst):
                if isinstance(item, tuple):               # an implied DO's variable is written
                    self.adopt(stmt, self.written(item[1], st))
                elif output:
                    self.adopt(call, self.expr(item))
                else:
                    self.adopt(stmt, self.written(item, st))
        if isinstance(st, F.Print_Stmt) and not walk(st.children, F.Output_Item_List):
            for item in st.children[1:]:
                if isinstance(item, F.Base):
                    self.adopt(call, self.expr(item))
        return stmt

    def _io_items(self, lst):
        for item in lst.children:
            if isinstance(item, F.Io_Implied_Do):
                objects, control = item.children
                yield ("do-variable", control.children[0])
                for b in control.children[1:]:
                    if isinstance(b, F.Base):
                        yield b
                yield from self._io_items(objects)
            else:
                yield item
