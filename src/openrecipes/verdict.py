"""What every check finds: one Finding per field that does not hold, with what was published, what our code
derived and the fix. `validate`, `audit` and `check` all report lists of them: an empty list is a pass."""

from __future__ import annotations

from dataclasses import dataclass

Figure = str | float | int | bool | None


@dataclass(frozen=True)
class Finding:
    field: str  # the dotted recipe field (or the check's metric) that does not hold
    published: Figure  # as the recipe writes it (None where it writes nothing, or where nothing is published)
    derived: Figure  # what our code derives from the stored evidence (None where it cannot)
    message: str  # what is wrong and the fix
    line: int | None = None  # where the field is written in the file, when known

    @classmethod
    def at(cls, field: str, message: str, line: int | None = None) -> Finding:
        """A finding with no figures to compare: a field that is missing, malformed or inconsistent."""
        return cls(field, None, None, message, line)

    def as_json(self) -> dict:
        """audit --json's shape: a contract for the tools that read it."""
        return {"field": self.field, "published": self.published, "derived": self.derived, "message": self.message}

    def as_located_json(self) -> dict:
        """validate --json's shape: where the field is, not what it was compared with."""
        return {"field": self.field, "message": self.message, "line": self.line}
