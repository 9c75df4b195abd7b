"""Finding the modules of a package that plug into the command line (subcommands, benchmarks,
simulations): adding a feature is adding a file."""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def plugin_modules(package: ModuleType, *required: str) -> list[ModuleType]:
    """The modules of `package`, by name, that define every attribute in `required`."""
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if all(hasattr(module, name) for name in required):
            found.append(module)
    return found
