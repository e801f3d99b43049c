"""The licences skills come with: which are open, and which a dataset version holds.

A skill's ``license`` (SKILL.md front matter) says on what terms its text may be copied. Variants
carry skill text into every row, so a version made from a skill under a closed licence (Anthropic's
document skills say ``Proprietary. LICENSE.txt has complete terms``) must not be published as if
it were open: the card lists every skill's licence, and ``hsa push`` refuses a version with a
skill whose licence is not an open one unless told otherwise. A skill that states no licence is
the harness owner's own and is listed as "not stated".
"""

from __future__ import annotations

import re

from hsa.errors import HsaError

# SPDX identifiers of licences that allow copying and redistribution (OSI-approved open source
# licences and the open Creative Commons and data licences), lower-cased.
OPEN_LICENSES = frozenset(
    {
        "apache-2.0",
        "mit",
        "mit-0",
        "bsd-2-clause",
        "bsd-3-clause",
        "isc",
        "0bsd",
        "unlicense",
        "cc0-1.0",
        "cc-by-3.0",
        "cc-by-4.0",
        "cc-by-sa-3.0",
        "cc-by-sa-4.0",
        "mpl-2.0",
        "lgpl-2.1",
        "lgpl-3.0",
        "gpl-2.0",
        "gpl-3.0",
        "agpl-3.0",
        "epl-2.0",
        "bsl-1.0",
        "zlib",
        "python-2.0",
        "artistic-2.0",
        "odc-by-1.0",
        "pddl-1.0",
        "odbl-1.0",
        "wtfpl",
        "upl-1.0",
        "ms-pl",
    }
)
# Everyday spellings of those identifiers (after lower-casing and dropping a trailing
# "license"/"licence"), as SKILL.md files write them.
_SPELLINGS = {
    "apache 2.0": "apache-2.0",
    "apache 2": "apache-2.0",
    "apache-2": "apache-2.0",
    "apache license 2.0": "apache-2.0",
    "apache license, version 2.0": "apache-2.0",
    "the mit": "mit",
    "bsd": "bsd-3-clause",
    "new bsd": "bsd-3-clause",
    "simplified bsd": "bsd-2-clause",
    "the unlicense": "unlicense",
    "cc0": "cc0-1.0",
    "public domain": "cc0-1.0",
    "cc by 4.0": "cc-by-4.0",
    "cc by-sa 4.0": "cc-by-sa-4.0",
    "mozilla public 2.0": "mpl-2.0",
    "gplv3": "gpl-3.0",
    "gplv2": "gpl-2.0",
}


# A Hub licence id, as a card's front matter takes it: apache-2.0, cc-by-nc-4.0, llama3, other.
_CARD_LICENSE = re.compile(r"[a-z0-9][a-z0-9.+\-]*")


def card_license_id(license: str) -> str:
    """``license`` when it reads as a Hub licence id (lower-case letters, digits, ``.``, ``+``,
    ``-``), else an HsaError: the card's front matter would carry any text."""
    if not _CARD_LICENSE.fullmatch(license):
        raise HsaError(
            f"--license must be a Hub licence id such as apache-2.0, cc-by-4.0 or other "
            f"(lower-case letters, digits, '.', '+' and '-'), got {license!r}"
        )
    return license


# What SPDX writes after a licence's id to say which versions it grants, none of which closes an
# open licence: ``-only`` and ``-or-later`` (GPL-3.0-or-later), the deprecated ``+`` (LGPL-2.1+)
# and ``-with-<name>-exception`` (GPL-2.0-with-classpath-exception).
_SPDX_RANGE = re.compile(r"(?:-with-.+-exception|-only|-or-later|\+)$")


def spdx_id(license: str) -> str:
    """A licence as the lower-case SPDX id it names, where it names one by a usual spelling,
    without the versions it grants or the exception it adds (``GPL-3.0-or-later``, ``LGPL-2.1+``,
    ``Apache-2.0 WITH LLVM-exception``: an exception only widens what its licence allows):
    what :data:`OPEN_LICENSES` is looked up by."""
    text = " ".join(license.strip().lower().split())
    text = re.sub(r"\s+with\s+.*$", "", text)
    text = re.sub(r"\s+licen[cs]e$", "", text).strip()
    text = _SPDX_RANGE.sub("", text)
    return _SPELLINGS.get(text, text.replace(" ", "-"))


# An SPDX expression's parentheses and operators (``AND`` binds before ``OR``), in any case; what
# lies between them is one licence (``WITH`` and its exception included).
_EXPRESSION = re.compile(r"(\(|\)|\s+and\s+|\s+or\s+)", re.IGNORECASE)


def is_open(license: str) -> bool:
    """Whether ``license`` is an open licence: an SPDX id of :data:`OPEN_LICENSES` (in a usual
    spelling, any version range or exception aside: :func:`spdx_id`), or an SPDX expression
    whose ``OR`` offers one and whose ``AND`` parts all are, parentheses grouping as SPDX
    says. Anything else (``Proprietary``, ``see LICENSE.txt``, an unbalanced expression) is
    not."""
    tokens = [t.strip().lower() for t in _EXPRESSION.split(license.strip()) if t.strip()]
    at = 0

    def chain(word: str, part, combine) -> bool:  # part (word part)*
        nonlocal at
        found = part()
        while at < len(tokens) and tokens[at] == word:
            at += 1
            found = combine(part(), found)  # every part is read, whatever the others say
        return found

    def either() -> bool:  # expr := all (OR all)*
        return chain("or", every, lambda a, b: a or b)

    def every() -> bool:  # all := one (AND one)*
        return chain("and", one, lambda a, b: a and b)

    def one() -> bool:  # one := "(" expr ")" | licence
        nonlocal at
        if at >= len(tokens) or tokens[at] in ("and", "or", ")"):
            raise ValueError("a licence was expected")
        at += 1
        if tokens[at - 1] != "(":
            return spdx_id(tokens[at - 1]) in OPEN_LICENSES
        found = either()
        if at >= len(tokens) or tokens[at] != ")":
            raise ValueError("unbalanced parentheses")
        at += 1
        return found

    try:
        found = either()
    except ValueError:
        return False
    return found and at == len(tokens)


def restricted(skill_licenses: dict[str, str | None]) -> dict[str, str]:
    """The skills (``harness/skill`` -> licence) whose stated licence is not an open one."""
    return {
        skill: license
        for skill, license in sorted(skill_licenses.items())
        if license is not None and not is_open(license)
    }
