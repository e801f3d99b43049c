"""Render a harness into what the model reads: the system prompt and the tools list.

Layouts are Jinja2 templates (``templates/layouts/<name>.j2``, or a harness's own ``layouts/``),
rendered in Jinja2's sandbox: a layout, or a skill text passed through one, that reaches for Python
internals fails with :class:`~hsa.errors.HarnessError` instead of running.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hsa.assets import templates_dir
from hsa.errors import HarnessError
from hsa.harness import Harness

DEFAULT_HEADINGS = {"skills": "Skills", "tools": "Tools", "hooks": "Checks"}
DEFAULT_PHRASES = {
    "skills_intro": "Load a skill with the skill loader tool before you act on it.",
    "tools_intro": "Call these tools when the request needs their data.",
    "hooks_intro": "These checks run around your actions; follow their feedback.",
}


@lru_cache(maxsize=1)
def _environment() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(templates_dir() / "layouts")),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


def available_layouts() -> list[str]:
    return sorted(p.name[:-3] for p in (templates_dir() / "layouts").glob("*.j2"))


def _template(harness: Harness) -> jinja2.Template:
    name = harness.prompt.layout
    env = _environment()
    try:
        if name in harness.layouts:
            return env.from_string(harness.layouts[name])
        return env.get_template(f"{name}.j2")
    except jinja2.TemplateNotFound:
        raise HarnessError(f"unknown prompt layout {name!r}; available: "
                           f"{', '.join(available_layouts() + sorted(harness.layouts))}",
                           field="prompt.layout") from None
    except jinja2.TemplateSyntaxError as exc:
        raise HarnessError(f"layout {name!r} does not parse: {exc.message}", line=exc.lineno,
                           field="prompt.layout") from None


def render_system_prompt(harness: Harness) -> str:
    """The system prompt for ``harness``: its sections, in order, through its layout."""
    options = harness.prompt.options
    headings = {**DEFAULT_HEADINGS, **options.get("headings", {})}
    phrases = {**DEFAULT_PHRASES, **options.get("phrases", {})}
    # Generated sections carry uniform entries (name, tag, description) so every layout can list
    # skills, tools and hooks with one loop.
    generated = {
        "skills": [{"name": s.id, "tag": s.kind, "description": s.description}
                   for s in harness.skills],
        "tools": [{"name": t.name, "tag": None, "description": t.description}
                  for t in harness.all_tools()],
        "hooks": [{"name": h.name, "tag": h.event, "description": h.description}
                  for h in harness.hooks],
    }
    sections = [{"name": name, "heading": headings.get(name, name.replace("_", " ").title()),
                 "text": harness.prompt.text.get(name, ""), "entries": generated.get(name, []),
                 "intro": phrases.get(f"{name}_intro", "")}
                for name in harness.prompt.sections
                if name in generated or harness.prompt.text.get(name)]
    context = {
        "sections": sections, "headings": headings, "phrases": phrases, "options": options,
        "skills": [{"id": s.id, "kind": s.kind, "description": s.description}
                   for s in harness.skills],
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters}
                  for t in harness.all_tools()],
        "hooks": [{"name": h.name, "event": h.event, "description": h.description}
                  for h in harness.hooks],
        "skill_loader": harness.skill_loader,
    }
    try:
        text = _template(harness).render(context)
    except jinja2.exceptions.SecurityError as exc:
        raise HarnessError(f"layout {harness.prompt.layout!r} tried an unsafe operation: {exc}",
                           field="prompt.layout") from None
    except jinja2.UndefinedError as exc:
        raise HarnessError(f"layout {harness.prompt.layout!r} uses an undefined value: "
                           f"{exc.message}", field="prompt.layout") from None
    return text.strip() + "\n"
