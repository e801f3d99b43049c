"""Errors that name the input they are about: file, line or row id, field, and what was expected.

Every user-facing failure in ``hsa`` is an :class:`HsaError`; the CLI prints its message and exits
non-zero without a traceback. Row-level problems become :class:`Reject` records instead of errors,
so one bad row never costs the rows beside it.
"""

from __future__ import annotations

from dataclasses import dataclass


def locate(
    file: str | None = None,
    line: int | None = None,
    row: str | None = None,
    field: str | None = None,
) -> str:
    """Format an input location as ``file:line [id=row] field``; parts that are unknown are left out."""
    parts = []
    if file is not None:
        parts.append(f"{file}:{line}" if line is not None else str(file))
    elif line is not None:
        parts.append(f"line {line}")
    if row is not None:
        parts.append(f"id={row}")
    if field:
        parts.append(field)
    return " ".join(parts)


class HsaError(Exception):
    """A user error: bad input, bad configuration. Its message is meant to be read by a person."""

    def __init__(
        self,
        reason: str,
        *,
        file: str | None = None,
        line: int | None = None,
        row: str | None = None,
        field: str | None = None,
    ):
        self.reason = reason
        self.file = None if file is None else str(file)
        self.line = line
        self.row = row
        self.field = field
        where = locate(self.file, line, row, field)
        super().__init__(f"{where}: {reason}" if where else reason)

    def at(
        self,
        *,
        file: str | None = None,
        line: int | None = None,
        row: str | None = None,
        field_prefix: str | None = None,
    ) -> HsaError:
        """The same error with outer location parts filled in (inner ones win)."""
        field = self.field
        if field_prefix:
            field = (
                f"{field_prefix}.{field}"
                if field and not field.startswith("[")
                else f"{field_prefix}{field or ''}"
            )
        return type(self)(
            self.reason,
            file=self.file if self.file is not None else file,
            line=self.line if self.line is not None else line,
            row=self.row if self.row is not None else row,
            field=field,
        )


class HarnessError(HsaError):
    """A harness folder or inline harness that does not load or validate."""


class EpisodeError(HsaError):
    """An episode row that does not parse or is inconsistent with its harness. ``stage`` names
    what refused it: ``load`` (it does not parse or names what its harness lacks) or
    ``check:<name>`` (it parses but is no trustworthy training target; see hsa.model.episode)."""

    def __init__(self, reason: str, *, stage: str = "load", **where):
        self.stage = stage
        super().__init__(reason, **where)

    def at(self, **where) -> EpisodeError:
        out = super().at(**where)
        out.stage = self.stage
        return out


class HooksNotTrustedError(HarnessError):
    """``hooks.py`` is code and is only imported after an explicit opt-in."""


@dataclass(frozen=True, slots=True)
class Reject:
    """An input row that did not become output, and why. Rejects are written, never dropped."""

    source: str
    line: int | None
    id: str | None
    field: str | None
    reason: str
    stage: str = "load"  # which check refused it (see EpisodeError)

    @classmethod
    def from_error(
        cls, err: HsaError, *, source: str, line: int | None = None, id: str | None = None
    ) -> Reject:
        return cls(
            source=err.file or source,
            line=err.line if err.line is not None else line,
            id=err.row if err.row is not None else id,
            field=err.field,
            reason=err.reason,
            stage=getattr(err, "stage", "load"),
        )

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "line": self.line,
            "id": self.id,
            "field": self.field,
            "reason": self.reason,
        }

    def __str__(self) -> str:
        return f"{locate(self.source, self.line, self.id, self.field)}: {self.reason}"


# A note on a row that was kept but changed (e.g. an importer dropped part of its gold): located and
# written like a reject, so one reader serves both.
Notice = Reject
