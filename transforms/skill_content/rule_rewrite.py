"""``skill_content_rewrite``: every skill body rewritten by rule (see the family's docstring)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.transform import Share, Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.transforms._language import english_harness, japanese_harness
from hsa.transforms.skill_content.bodies import rewritten, with_known_bodies, with_skill_bodies
from hsa.transforms.skill_content.plan import changing_plan, draw_plan, safe_plan


@register
@dataclass(frozen=True)
class SkillContentRewrite(Transform):
    """Rewrites every skill body by rule: sections and unordered bullets reordered where order
    carries no meaning, header and list-marker styles, negation emphasis, wrapping and list
    spacing, synonym phrases (EN/ZH), examples reordered or partly dropped; every number, quoted
    string, code span, identifier, negation and non-example rule, the title, numbered steps,
    bullet lists that read as steps (sequence cues, a last resort, calls to different tools) and
    at least one example per example section are kept, a bullet moves with everything it owns
    (indented code, nested lists, continuation lines; a list that leaves part of an item outside
    it keeps its order), and skill-loader results carry the new body.

    ``reorder``, ``restyle``, ``rephrase`` and ``drop_examples`` switch the kinds of change;
    ``fraction`` is the share of skills rewritten. A body the drawn plan leaves as it was (a
    short skill without lists or phrases of the tables) gets a style that changes it."""

    name = "skill_content_rewrite"
    scope = "harness"
    version = "35"  # 35: a list its intro ranks (most reliable first) keeps its order
    # 34: a preamble that points below (下面这些词) keeps the sections in place
    # 33: Chinese phrases of another sense gone (关注, 推介, 余量, 存货, 售价, 让利)
    # 32: an item that says "such" (not "such as") keeps its list in order; a list
    # written as one sentence keeps its punctuation with the places
    # 31: a block quote's lazy continuation line in a list item is said as written
    # too
    # 30: an item pointing at what another lists (one of these) keeps its list in
    # order
    # 29: a block quote inside a list item is said as written (no rewording, no
    # emphasis)
    # 28: phrases of another sense gone (just as, choose, ask for)
    # 27: the skill loader's own words are read as the harness's text (its language)
    # 26: a negation has no letter of any script glued to it (French noté is no
    # not); a phrase in capitals is a keyword (SELECT)
    # 25: positions read as the prompt transforms read them; Hinglish sequence cues
    # (pehle, uske baad, aakhir mein)
    # 24: positions in more languages; a body written mostly in another script than
    # Latin is read by no Latin cue table (a quoted English sentence made a Russian body English)
    # 23: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 22: an example section's calls and instructions stay; give/provide/offer no
    # phrase
    # 21: positions written in Spanish, Portuguese, French, German and Italian keep
    # a skill's order
    # 20: phrases of two senses left out (at once, pick, if any, clearly, the shop,
    # mention, inquire about)
    # 19: counted sections, reference lists, one-turn paragraphs and link
    # definitions keep as written
    # 18: a paragraph labelled with a space before its colon is not rewrapped
    # 17: an item that tells what was done already keeps its place after the item
    # that does it
    # 16: a harness in Han or kana alone is no English one
    # 15: a Hangul or Cyrillic harness is no English one;
    # 14: no list or section moves in a body whose language the cues cannot read;
    # 13: the "e" of "e.g." is no Portuguese word; 12: the harness's languages for
    # a body that does not tell; steps under
    # procedure headings in French, Spanish, Japanese; words in code and names tell no language;
    # 11: English phrases only in blocks that read as English
    # 10: lists of steps keep their order, an item moves with all it owns
    # 9: phrases of any domain (no customer -> viewer, request, the store)
    # 8: one-column tables, quoted rules; 7: rule paragraphs, wrap; 6: examples
    family = "skill_content"

    split: Literal["train", "heldout"] = "train"
    fraction: Share = 1.0
    reorder: bool = True
    restyle: bool = True
    rephrase: bool = True
    drop_examples: bool = True

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = sorted(episode.harness.identifiers)
        harness = episode.harness
        document = {"japanese": japanese_harness(harness), "english": english_harness(harness)}
        plans = {}
        for skill in episode.harness.skills:
            if rng.random() >= self.fraction:
                continue
            plan = draw_plan(
                skill.content,
                names,
                rng,
                self.split,
                reorder=self.reorder,
                restyle=self.restyle,
                rephrase=self.rephrase,
                drop_examples=self.drop_examples,
                document=document,
            )
            plan = safe_plan(skill.content, plan, names)
            if self.restyle:
                plan = changing_plan(skill.content, plan, names, rng, self.split)
            if plan:
                plans[skill.id] = plan
        return {"plans": plans}

    def apply(self, episode: Episode, params: dict) -> Episode:
        plans = params.get("plans")
        if not isinstance(plans, dict):
            raise HsaError(f"params need 'plans' (skill id -> rewrite plan), got {params!r:.200}")
        names = sorted(episode.harness.identifiers)
        bodies = {}
        for skill_id, plan in plans.items():
            skill = episode.harness.skill(skill_id)
            if skill is None:
                raise HsaError(f"no skill {skill_id!r} in the harness")
            bodies[skill_id] = rewritten(skill, plan, names)
        return with_skill_bodies(episode, bodies)

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        return with_known_bodies(episode, params["plans"], harness)
