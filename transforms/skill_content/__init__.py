"""Skill content: reword and restyle skill bodies (Markdown) without changing what they require.

Changes: the order of sections and of unordered bullet lists where order carries no meaning,
header styles (ATX ``##``, closed ATX, setext, a bold line), list markers, emphasis of negations,
line wrapping and list spacing, phrases from curated synonym tables (English and Chinese), and the
order and number of examples (sections and bullets marked as examples / 示例 / 例如); or, with
``skill_content_llm_paraphrase``, a paraphrase from any OpenAI-compatible endpoint. Every message
that carries a body (the ``tool`` result answering a skill-loader call for that skill, when it is
the body verbatim) carries the new body, so the trajectory stays consistent.
Keeps: every number, quoted string, code span, identifier (tool, parameter, skill and hook names)
and negation of the body outside dropped examples (checked on every rewrite with
:func:`hsa.text.paraphrase.lost_invariants`), every non-example rule, the title first, numbered steps
and anything in a section about steps or order (步骤, 流程, 顺序) in their order, bullet lists
that read as steps in their order (an item that continues the one before or names a last resort,
claims the first or last place, points above or below: "then", "if nothing helps", 然后, 最后,
まず, zuerst...; or two items that call different tools), every bullet together with everything
it owns (indented code, nested lists, continuation lines; a list that leaves part of an item
outside it, such as a code fence at the margin under a captioned last bullet, keeps its order
and its items), at least one example of each example section, skill ids, descriptions, kinds and
allowed tools, and every message and gold turn other than the carried bodies.

The family, one concept per module (read in this order): ``options`` (the option tables of
``options.yaml``), ``structure`` (what a body is made of, on the Markdown blocks of
:mod:`hsa.text.markdown`), ``rewrite`` (applying a plan), ``plan`` (drawing one), ``bodies`` (new
bodies into an episode), and the two transforms, ``rule_rewrite`` and ``llm_paraphrase``.
"""

from hsa.transforms.skill_content.bodies import with_skill_bodies
from hsa.transforms.skill_content.llm_paraphrase import SkillContentLlmParaphrase
from hsa.transforms.skill_content.options import (
    EMPHASIS_STYLES,
    HEADING_STYLES,
    LIST_STYLES,
    PARAPHRASE_STYLES,
    SKILL_PHRASES,
    WHITESPACE_STYLES,
)
from hsa.transforms.skill_content.plan import draw_plan
from hsa.transforms.skill_content.rewrite import rewrite_body
from hsa.transforms.skill_content.rule_rewrite import SkillContentRewrite
from hsa.transforms.skill_content.structure import essentials, rules_of

__all__ = [
    "EMPHASIS_STYLES",
    "HEADING_STYLES",
    "LIST_STYLES",
    "PARAPHRASE_STYLES",
    "SKILL_PHRASES",
    "WHITESPACE_STYLES",
    "SkillContentLlmParaphrase",
    "SkillContentRewrite",
    "draw_plan",
    "essentials",
    "rewrite_body",
    "rules_of",
    "with_skill_bodies",
]
