"""The one exception type the package raises for bad input."""

from __future__ import annotations


class SpecError(ValueError):
    """Bad input: a spec file, a config.json, an option or a request that cannot be met.

    The message is one line, ``<file>: <field>: <what was expected>``, and is what the CLI
    prints after ``error:`` before exiting with status 2.
    """

    def __init__(self, where: str, field: str, expected: str) -> None:
        self.where = str(where)
        self.field = str(field)
        self.expected = " ".join(str(expected).split())
        super().__init__(f"{self.where}: {self.field}: {self.expected}")
