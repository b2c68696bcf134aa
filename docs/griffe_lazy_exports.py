"""A griffe extension for the API pages: `pinn` imports a few public names on first use (its
module `__getattr__` and the dict `_ON_FIRST_USE`, so that `import pinn` does not wait for Hydra
and matplotlib). griffe reads the package without importing it and so cannot see them; this
extension adds each as an alias of the object it names, so `::: pinn.train` works.

It reads `_ON_FIRST_USE` from pinn/__init__.py; names that pinn imports eagerly are left alone.
"""

from __future__ import annotations

import ast
from typing import Any

import griffe


class LazyExports(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != "pinn" or "_ON_FIRST_USE" not in pkg.members:
            return
        lazy = ast.literal_eval(str(pkg.members["_ON_FIRST_USE"].value))
        for name, module in lazy.items():
            if name not in pkg.members:
                pkg.set_member(name, griffe.Alias(name, f"{module}.{name}", parent=pkg))
