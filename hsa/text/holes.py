"""Holes: spans of a text held by single characters while a rewrite reads the rest.

A rewrite that must go around some spans (the user's data, a paraphrase's invariants, another
system's code) swaps each for one character of a private use plane, which no name and no word
holds, so what stood on either side neither joins nor reads as a name, and the text keeps its
structure (a code span around a hole is still one span). Each user takes a plane of its own:
one rewrite runs inside another (a parameter rename's SQL holes inside the user's data holes),
and a hole of the outer must pass through the inner untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Characters per plane a hole may be (U+xFFFE and U+xFFFF are noncharacters).
_PER_PLANE = 0xFFFE


@dataclass(frozen=True)
class Holes:
    """The holes of one private use plane, starting at ``first``."""

    first: int
    pattern: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        last = self.first + _PER_PLANE - 1
        object.__setattr__(self, "pattern", re.compile(f"[{chr(self.first)}-{chr(last)}]"))

    def punch(self, text: str, spans: list[tuple[int, int]]) -> tuple[str, tuple[str, ...]] | None:
        """``text`` with each of ``spans`` (in order, none overlapping) a hole, and what each
        hole holds; None where the text already writes this plane's characters or has more
        spans than the plane has characters."""
        if self.pattern.search(text) or len(spans) > _PER_PLANE:
            return None
        parts: list[str] = []
        held: list[str] = []
        last = 0
        for start, end in spans:
            parts += [text[last:start], chr(self.first + len(held))]
            held.append(text[start:end])
            last = end
        parts.append(text[last:])
        return "".join(parts), tuple(held)

    def fill(self, text: str, held: tuple[str, ...]) -> str:
        """``text`` with each hole given back what it holds."""
        return self.pattern.sub(lambda m: held[ord(m.group(0)) - self.first], text)

    def written(self, text: str) -> bool:
        """Whether ``text`` writes a character of this plane."""
        return self.pattern.search(text) is not None


# The planes in use: supplementary private use areas A (U+F0000) and B (U+100000).
USER_DATA = Holes(0xF0000)  # hsa.augment.user_data, and the paraphrase's invariants
OTHER_CODE = Holes(0x100000)  # hsa.text.mentions: another system's code inside prose
