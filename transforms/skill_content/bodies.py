"""New skill bodies into an episode: the harness's skills, and every skill-loader result that
carried an old body verbatim, so the trajectory stays consistent."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.model.skill import Skill
from hsa.transforms.skill_content.rewrite import rewrite_body


def rewritten(skill: Skill, plan: dict, names) -> str:
    """The skill's body rewritten by ``plan``; an error names the skill."""
    try:
        return rewrite_body(skill.content, plan, names)
    except HsaError as exc:
        raise HsaError(f"skill {skill.id!r}: {exc.reason}") from None


def with_skill_bodies(episode: Episode, bodies: dict[str, str]) -> Episode:
    """The episode with new bodies for some skills, also in every skill-loader result that
    carried the old body verbatim."""
    harness = episode.harness
    unknown = sorted(set(bodies) - set(harness.skill_ids))
    if unknown:
        raise HsaError(f"no skill {unknown} in the harness (it has {list(harness.skill_ids)})")
    skills = tuple(
        replace(s, content=bodies[s.id]) if s.id in bodies else s for s in harness.skills
    )
    return with_loaded_bodies(episode, bodies, replace(harness, skills=skills))


def with_loaded_bodies(episode: Episode, bodies: dict[str, str], harness: Harness) -> Episode:
    """The episode under ``harness`` (its harness with the skills of ``bodies`` rewritten to
    them), with every skill-loader result that carried an old body verbatim rewritten too:
    :func:`with_skill_bodies` when the new harness is known already."""
    source = episode.harness
    old = {s.id: s.content for s in source.skills}
    loads: dict[str, str] = {}  # tool_call_id -> loaded skill id
    messages = []
    for message in episode.messages:
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            if fn["name"] == source.skill_loader and source.skills:
                loaded = orjson.loads(fn["arguments"]).get("name")
                if isinstance(loaded, str) and loaded in bodies and old[loaded] != bodies[loaded]:
                    loads[call["id"]] = loaded
        content = message.get("content")
        skill = loads.get(message.get("tool_call_id")) if message.get("role") == "tool" else None
        if skill is not None and isinstance(content, str) and old[skill].strip():
            if content == old[skill]:
                message = {**message, "content": bodies[skill]}
            elif old[skill] in content:
                message = {**message, "content": content.replace(old[skill], bodies[skill])}
        messages.append(message)
    return episode.with_harness(harness, messages=tuple(messages))


def with_known_bodies(episode: Episode, skill_ids: Iterable[str], harness: Harness) -> Episode:
    """:func:`with_skill_bodies` for a skill-content transform when the harness it returns is
    known already (``harness``, holding the new bodies of ``skill_ids``): only the loader results
    are left to rewrite (the transforms' checks read the harness alone)."""
    bodies = {skill_id: harness.skill(skill_id).content for skill_id in skill_ids}
    return with_loaded_bodies(episode, bodies, harness)
