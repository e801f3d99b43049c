"""``hsa harness``: inspect and check harness folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hsa.cli.console import out
from hsa.errors import HarnessError

harness_app = typer.Typer(no_args_is_help=True, help="Inspect and check harness folders.")


@harness_app.command("validate")
def harness_validate(
    folder: Annotated[
        Path, typer.Argument(help="Harness folder (harness.yaml, skills/, tools/, hooks.py).")
    ],
    trust_hooks: Annotated[
        bool,
        typer.Option(
            "--trust-hooks",
            help="Import hooks.py (it is code: read it first) and check every hook's function is callable.",
        ),
    ] = False,
) -> None:
    """Check a harness folder: schemas are valid JSON Schema, names unique, references resolve."""
    from hsa.model.harness import load_harness
    from hsa.render import render_system_prompt

    harness = load_harness(folder, trust_hooks=trust_hooks)
    try:
        prompt = render_system_prompt(harness)  # the layout exists and renders
    except HarnessError as exc:
        if exc.file is None or Path(exc.file).is_absolute():
            raise
        # the layout's file, where it is (the renderer knows it as layouts/<name>.j2)
        raise HarnessError(
            exc.reason, file=str(folder / exc.file), line=exc.line, field=exc.field
        ) from None
    if harness.hooks and trust_hooks:
        harness.hook_functions()  # before "ok": a hooks.py that fails to import is no valid harness
    out.print(
        f"ok: {folder}: harness {harness.name!r} v{harness.version}: "
        f"{len(harness.skills)} skills, {len(harness.tools)} tools, {len(harness.hooks)} hooks"
    )
    _warn_of_schema_slips(harness, folder)
    if harness.prompt.layout in harness.layouts:
        _warn_of_what_the_layout_leaves_out(harness, prompt, folder)
    if harness.hooks_source is not None:
        _warn_of_names_in_hook_code(harness, folder)
    if harness.hooks:
        if trust_hooks:
            out.print("hooks.py imported; every hook resolves to a function")
        else:
            out.print("hooks.py parsed, not imported (pass --trust-hooks to import it)")


def _warn_of_schema_slips(harness, folder: Path) -> None:
    """A warning for each node of a tool's schema that is legal JSON Schema, so the harness is
    valid, but does not say what it meant: a key that nearly spells a keyword
    (:func:`hsa.model.schema.misspelt_keywords`: ``"tpye": "string"`` checks nothing), a default
    that breaks its own limits (:func:`hsa.model.episode.unfit_defaults`: gold that expects it
    loads, as "left at its default")."""
    from hsa.model.episode import unfit_defaults
    from hsa.model.schema import misspelt_keywords

    for tool in harness.tools:
        slips = [
            (
                at,
                f"{key!r} is no JSON Schema keyword, so it checks nothing (did you mean {keyword!r}?)",
            )
            for at, key, keyword in misspelt_keywords(tool.parameters)
        ] + [
            (
                at,
                f"its default does not fit its own schema ({problem}), yet gold that expects it "
                f"is accepted as left at its default",
            )
            for at, problem in unfit_defaults(tool.parameters)
        ]
        for at, slip in slips:
            out.print(
                f"warning: {folder}: tool {tool.name!r} parameters{at or ' (root)'}: {slip}",
                markup=False,
                highlight=False,
            )


def _warn_of_what_the_layout_leaves_out(harness, prompt: str, folder: Path) -> None:
    """A warning for each section of the system prompt that the harness's own layout does not
    show: a section's text, or a skill, tool or hook it lists, that is nowhere in the rendered
    prompt (a layout that writes only headings, or nothing). The model never reads it, and
    rows teach it to call skills it was never shown."""
    from hsa.render import placement

    where = placement(harness)
    listed = {
        "skills": [s.id for s in harness.skills],
        "tools": [t.name for t in harness.all_tools()],
        "hooks": [h.name for h in harness.hooks],
    }
    file = folder / "layouts" / f"{harness.prompt.layout}.j2"
    for section in harness.prompt.sections:
        if where[section] != "system":
            continue
        text = harness.prompt.text.get(section, "").strip()
        missing = [n for n in listed.get(section, []) if n not in prompt]
        if text and text.splitlines()[0].strip() not in prompt:
            out.print(f"warning: {file}: the layout does not show the text of section {section!r}")
        elif missing:
            out.print(
                f"warning: {file}: the layout does not list {section} {', '.join(missing[:5])}"
            )


def _warn_of_names_in_hook_code(harness, folder: Path) -> None:
    """A warning for each name of the harness that hooks.py writes as a string (see
    :func:`hsa.model.hook.names_in_code`): the harness is valid, its variants may not be."""
    from hsa.augment.mapping import EMPTY
    from hsa.model.hook import names_in_code
    from hsa.text.names import identifier_like
    from hsa.verify import identifiers_by_kind

    by_kind = identifiers_by_kind(harness, EMPTY)
    # Parameters only when identifier-like (``link_number``, ``follow-up``): a plain word
    # (``path``, ``ok``) is as likely a key of the hook's own payload or reply, while a string
    # with a hyphen or an underscore in code names a field, whatever prose would make of it
    # (hsa.text.names.identifier_like is for prose, where ``follow-up`` is a word). A name of
    # several kinds (a hook and a parameter both called ``party_size``) is named with all of
    # them: the code may mean either.
    by_kind["parameter"] = {p for p in by_kind["parameter"] if identifier_like(p) or "-" in p}
    kinds: dict[str, list[str]] = {}
    for kind, found in by_kind.items():
        for name in found:
            kinds.setdefault(name, []).append(kind)
    names = {name: " or ".join(sorted(found)) for name, found in kinds.items()}
    file = folder / "hooks.py"
    for line, kind, name in names_in_code(harness.hooks_source or "", names, file=str(file)):
        out.print(
            f"warning: {file}:{line}: hooks.py names {kind} {name!r} as a string; renaming "
            f"transforms never change code, so they keep the name of a tool, parameter or skill "
            f"that the code writes, and the variants vary less. Read it from the hook's config "
            f"instead (config values equal to a renamed name are renamed with it)."
        )
