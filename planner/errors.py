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
        # one line whatever the names hold: a file name with a newline is shown escaped
        super().__init__(f"{_one_line(self.where)}: {_one_line(self.field)}: {self.expected}")


def shown(value: object) -> str:
    """``repr(value)`` as a message shows a value that was given: a numpy scalar (a cell pandas
    read, a figure computed with numpy) as the plain number it holds (``nan``, ``1.5``, ``True``),
    not ``np.float64(nan)``."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # type: ignore[attr-defined]
    return repr(value)


def _one_line(text: str) -> str:
    """``text`` with control characters escaped (``\\n``), as a path with a newline is written."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
