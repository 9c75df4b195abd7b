"""The C++ front end's list of function bodies: what of a C++ file the analyses see.

Every definition in the main file is a `Function`, wherever it is: free functions, functions in
namespaces (and `extern "C"` blocks), methods defined in or out of their class, constructors,
destructors, conversion operators, function templates and methods of class templates, and
lambdas. Functions are keyed by their USR, so overloads get separate summaries.

Templates are analysed as written (their pattern), not per instantiation: the pattern is the text
the rewriting edits, and an edit must be right for every instantiation. A call whose arguments
depend on a template parameter is not resolved in the pattern; MPI calls are still recognised by
name, any other such call is code the analysis cannot see.

A lambda's body is a function of its own (its sites are placed within it); the enclosing
function sees the lambda expression as reading what it captures, and the alias analysis treats
captured variables as escaped (alias.py), since calling the closure is a call the analysis does
not follow."""
from __future__ import annotations

import clang.cindex as ci

from .parse import FUNCTION_KIND_NAMES, FUNCTION_KINDS, LOCAL_CLASS_KINDS, Function, Node, Unit, _Converter

K = ci.CursorKind

_SCOPES = {K.NAMESPACE, K.LINKAGE_SPEC, K.CLASS_DECL, K.STRUCT_DECL, K.UNION_DECL, K.CLASS_TEMPLATE,
           K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.UNEXPOSED_DECL}
_NAMED_SCOPES = {K.NAMESPACE, K.CLASS_DECL, K.STRUCT_DECL, K.UNION_DECL, K.CLASS_TEMPLATE,
                 K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}
_REFERENCES = {ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE}
_NOEXCEPT = {"BASIC_NOEXCEPT", "DYNAMIC_NONE", "NOTHROW"}


def qualified_name(c) -> str:
    """`ns::Class::method(double, int)`: unique enough for a report, and says which overload."""
    parts = [c.displayname or c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind in _NAMED_SCOPES:
        parts.append(p.spelling or "(anonymous)")
        p = p.semantic_parent
    return "::".join(reversed(parts))


def _is_noexcept(c) -> bool:
    try:
        return c.exception_specification_kind.name in _NOEXCEPT
    except (AttributeError, ValueError):
        return False


def collect(tu, conv: _Converter, unit: Unit):
    main_file = conv.main_file

    def visit(parent, top_start: int | None):
        for c in parent.get_children():
            if c.kind in FUNCTION_KINDS:
                unit.declared_functions.add(c.spelling)
            if c.location.file is None or c.location.file.name != main_file:
                continue
            top = top_start
            if top is None:
                top = conv._offsets(c)[0]
            if c.kind in _SCOPES:
                visit(c, top)
            elif c.kind in FUNCTION_KINDS and c.is_definition():
                _add_function(c, conv, unit, top)
            elif c.kind == K.VAR_DECL:
                node = conv.convert(c)
                unit.globals.append(node)
                for lam in _lambdas(node):     # `static auto f = [] { … };` at file scope
                    _add_lambda(lam, qualified_name(c), top, unit)

    visit(tu.cursor, None)


def _add_function(c, conv: _Converter, unit: Unit, top: int):
    node = conv.convert(c)
    body = node.children[-1] if node.children else None
    if body is None or body.kind != "COMPOUND_STMT":
        # a function-try-block (`f() try { } catch …`) or a defaulted/deleted definition: its
        # collectives are still reported, as sites of a function that is not transformed
        unit.untransformed.append((qualified_name(c), node, "function-try-block body"))
        return
    params = [ch for ch in node.children if ch.kind == "PARM_DECL"]
    name = qualified_name(c)
    fn = Function(name, node, [p.ref for p in params], body,
                  c.storage_class == ci.StorageClass.STATIC, key=conv.key(c),
                  param_refs=[p.is_ref for p in params],
                  returns_ref=c.result_type.get_canonical().kind in _REFERENCES,
                  top_start=top, is_noexcept=_is_noexcept(c), result_type=c.result_type.spelling,
                  has_try=any(n.kind == "CXX_TRY_STMT" for n in body.walk()))
    unit.functions[fn.key] = fn
    _add_nested(fn, unit)


def _add_nested(fn: Function, unit: Unit):
    """The lambdas in a function's body, and the methods of classes declared in it."""
    for lam in _lambdas(fn.body):
        _add_lambda(lam, fn.name, fn.top_start, unit)
    for method in _local_methods(fn.body):
        body = method.children[-1]
        params = [ch for ch in method.children if ch.kind == "PARM_DECL"]
        local = Function(f"method at line {method.line} of a class in {fn.name}", method,
                         [p.ref for p in params], body, True, key=f"local@{method.start}",
                         param_refs=[p.is_ref for p in params], top_start=fn.top_start,
                         has_try=any(n.kind == "CXX_TRY_STMT" for n in body.walk()))
        unit.functions[local.key] = local
        _add_nested(local, unit)


def _lambdas(n: Node):
    """The lambda expressions in `n`, outermost first (nested ones belong to their lambda)."""
    for c in n.children:
        if c.kind == "LAMBDA_EXPR":
            yield c
        elif c.kind not in LOCAL_CLASS_KINDS:
            yield from _lambdas(c)


def _local_methods(n: Node):
    """Method definitions of classes declared inside `n` (not inside lambdas or other methods)."""
    for c in n.children:
        if c.kind in LOCAL_CLASS_KINDS:
            for m in c.children:
                if m.kind in FUNCTION_KIND_NAMES and m.children and m.children[-1].kind == "COMPOUND_STMT":
                    yield m
        elif c.kind != "LAMBDA_EXPR":
            yield from _local_methods(c)


def _add_lambda(lam: Node, outer_name: str, top_start: int, unit: Unit):
    body = next((c for c in reversed(lam.children) if c.kind == "COMPOUND_STMT"), None)
    if body is None:
        return
    params = [ch for ch in lam.children if ch.kind == "PARM_DECL"]
    fn = Function(f"lambda at line {lam.line} in {outer_name}", lam, [p.ref for p in params], body,
                  True, key=f"lambda@{lam.start}", param_refs=[p.is_ref for p in params],
                  top_start=top_start,
                  has_try=any(n.kind == "CXX_TRY_STMT" for n in body.walk()))
    unit.functions[fn.key] = fn
    _add_nested(fn, unit)
