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


def spdx_id(license: str) -> str:
    """A licence as the lower-case SPDX id it names, where it names one by a usual spelling."""
    text = " ".join(license.strip().lower().split())
    text = re.sub(r"\s+licen[cs]e$", "", text).strip()
    return _SPELLINGS.get(text, text.replace(" ", "-"))


def is_open(license: str) -> bool:
    """Whether ``license`` is an open licence: an SPDX id of :data:`OPEN_LICENSES` (in a usual
    spelling), or an SPDX expression whose ``OR`` offers one and whose ``AND`` parts all are.
    Anything else (``Proprietary``, ``see LICENSE.txt``) is not."""
    alternatives = re.split(r"\s+or\s+", license.strip().strip("()"), flags=re.IGNORECASE)
    return any(
        all(
            spdx_id(part) in OPEN_LICENSES
            for part in re.split(r"\s+and\s+", alternative, flags=re.IGNORECASE)
        )
        for alternative in alternatives
        if alternative.strip()
    )


def restricted(skill_licenses: dict[str, str | None]) -> dict[str, str]:
    """The skills (``harness/skill`` -> licence) whose stated licence is not an open one."""
    return {
        skill: license
        for skill, license in sorted(skill_licenses.items())
        if license is not None and not is_open(license)
    }
