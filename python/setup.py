"""Records the checkout a pip build comes from (attncap/_where.py's CHECKOUT) in the built copy, so
that `pip install ./python` in a checkout finds the library in its build/ folder. The rest of the
package's description is pyproject.toml's."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        root = os.path.dirname(HERE)
        if os.path.isfile(os.path.join(root, "include", "attncap", "attncap.h")):
            where = os.path.join(self.build_lib, "attncap", "_where.py")
            with open(where, "a", encoding="utf-8") as f:
                f.write(f"CHECKOUT = {root!r}\n")


setup(cmdclass={"build_py": BuildPy})
