"""``skill_content_llm_paraphrase``: every skill body paraphrased by an LLM, with the rule-based
rewrite as the fallback (see the family's docstring)."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import Literal

from hsa.augment.mapping import Mapping
from hsa.augment.registry import register
from hsa.augment.transform import Share, Transform
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.text.paraphrase import Endpoint, ParaphraseUnavailable, llm_paraphrase, lost_invariants
from hsa.transforms.skill_content.bodies import rewritten, with_known_bodies, with_skill_bodies
from hsa.transforms.skill_content.options import PARAPHRASE_STYLES
from hsa.transforms.skill_content.plan import draw_plan, safe_plan

# The endpoints whose failure this process has printed: with its endpoint down, a run would take
# the rule rewrite for every skill and succeed without a word (each variant's lineage records the
# fallback, but nobody reads lineage while a run goes). Said once per endpoint and process (each
# worker is one), not once per skill.
_TOLD: set[str] = set()


def _tell_unavailable(base_url: str, reason: str) -> None:
    if base_url in _TOLD:
        return
    _TOLD.add(base_url)
    print(
        f"warning: skill_content_llm_paraphrase: {base_url} gave no paraphrase ({reason}); the "
        f"rule-based rewrite stands in, recorded as the fallback in each variant's lineage "
        f"(this process prints no more failures of this endpoint)",
        file=sys.stderr,
        flush=True,
    )


@register
@dataclass(frozen=True)
class SkillContentLlmParaphrase(Transform):
    """Paraphrases every skill body with an LLM (any OpenAI-compatible endpoint); a paraphrase
    that loses a number, quoted string, code span, identifier or negation is refused and the
    rule-based rewrite is used instead, with the reason in params. The text goes into params, so
    replay never calls the endpoint; skill-loader results carry the new body.

    Without ``base_url`` and ``model`` every skill takes the rule-based rewrite ("no endpoint
    configured"). ``samples`` distinct paraphrases are cached per body and register; a variant
    draws one. ``cache_dir`` "" disables the cache."""

    name = "skill_content_llm_paraphrase"
    scope = "harness"
    version = "29"  # 29: a list its intro ranks (most reliable first) keeps its order
    # 28: a preamble that points below (下面这些词) keeps the sections in place
    # 27: Chinese phrases of another sense gone (关注, 推介, 余量, 存货, 售价, 让利)
    # 26: the rule rewrite it starts from keeps a list in order where an item says
    # "such", and a one-sentence list's punctuation in place
    # 25: phrases of another sense gone (just as, choose, ask for)
    # 24: the skill loader's own words are read as the harness's text (its language)
    # 23: a negation has no letter of any script glued to it (French noté is no not)
    # 22: positions read as the prompt transforms read them; Hinglish sequence cues
    # (pehle, uske baad, aakhir mein)
    # 21: positions in more languages; a body written mostly in another script than
    # Latin is read by no Latin cue table (a quoted English sentence made a Russian body English)
    # 20: words written with a hyphen (check-in, follow-up) are words in prose, and
    # a plain-word name the prose writes as a word keeps it; a verb never leaves its compound
    # (check_in is no in_check)
    # 19: an example section's calls and instructions stay
    # 18: phrases of two senses left out (at once, pick, if any, clearly, the shop,
    # mention, inquire about)
    # 17: counted sections, reference lists, one-turn paragraphs and link
    # definitions keep as written
    # 16: a paragraph labelled with a space before its colon is not rewrapped
    # 15: its fallback's list orders (skill_content_rewrite 17)
    # 14: a Hangul or Cyrillic harness is no English one;
    # 13: no list or section moves in a body whose language the cues cannot read;
    # 12: its fallback's (skill_content_rewrite 13); 11: its fallback's
    # (skill_content_rewrite 12); 10: its fallback's English
    # phrases (skill_content_rewrite 11)
    # 9: its fallback's list orders (skill_content_rewrite 10)
    # 8: its fallback's phrases (skill_content_rewrite 9); 7: its fallback plan's examples and
    # wrapping (skill_content_rewrite 8)
    family = "skill_content"
    # How the endpoint is reached, not what it is asked: out of the dataset version (an endpoint
    # that fails or times out is a fallback recorded in params, like any outage).
    row_neutral = ("api_key_env", "timeout_s", "cache_dir")

    split: Literal["train", "heldout"] = "train"
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    cache_dir: str = "~/.cache/hsa/paraphrase"
    temperature: float = 0.7
    samples: int = 4
    fraction: Share = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.samples < 1 or self.timeout_s <= 0:
            raise HsaError(
                f"transform {self.name!r}: samples must be at least 1 and timeout_s "
                f"positive, got {self.samples!r} and {self.timeout_s!r}"
            )

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = sorted(episode.harness.identifiers)
        endpoint = Endpoint(
            self.base_url,
            self.model,
            self.api_key_env,
            self.timeout_s,
            self.temperature,
            self.cache_dir,
        )
        skills = {}
        for skill in episode.harness.skills:
            if rng.random() >= self.fraction or not skill.content.strip():
                continue
            # Drawn before the endpoint is asked, so the random stream never depends on it.
            style = rng.choice(PARAPHRASE_STYLES[self.split])
            sample = rng.randrange(self.samples)
            # Drawn whatever the endpoint answers (the random stream must not depend on it);
            # made safe only when the rules are the fallback.
            plan = draw_plan(skill.content, names, rng, self.split)
            reason = None
            if not (self.base_url and self.model):
                reason = "no endpoint configured (set base_url and model)"
            else:
                try:
                    text = llm_paraphrase(skill.content, endpoint, style=style, sample=sample)
                except ParaphraseUnavailable as exc:
                    reason = exc.reason
                    _tell_unavailable(self.base_url, reason)
                else:
                    lost = lost_invariants(skill.content, text, names)
                    if lost:
                        reason = f"lost: {lost[:8]}"
                    elif text == skill.content:
                        reason = "unchanged"
                    else:
                        skills[skill.id] = {
                            "backend": "llm",
                            "text": text,
                            "style": style,
                            "sample": sample,
                        }
                        continue
            skills[skill.id] = {
                "backend": "rules",
                "fallback_reason": reason,
                "plan": safe_plan(skill.content, plan, names),
            }
        return {"skills": skills}

    def apply(self, episode: Episode, params: dict) -> Episode:
        skills = params.get("skills")
        if not isinstance(skills, dict):
            raise HsaError(f"params need 'skills' (skill id -> paraphrase), got {params!r:.200}")
        names = sorted(episode.harness.identifiers)
        bodies = {}
        for skill_id, record in skills.items():
            skill = episode.harness.skill(skill_id)
            if skill is None or not isinstance(record, dict):
                raise HsaError(f"no skill {skill_id!r} in the harness, or no record for it")
            if record.get("backend") == "llm":
                text = record.get("text")
                lost = (
                    lost_invariants(skill.content, text, names)
                    if isinstance(text, str)
                    else ["text"]
                )
                if lost:
                    raise HsaError(f"skill {skill_id!r}: the recorded paraphrase loses {lost[:5]}")
                bodies[skill_id] = text
            elif record.get("backend") == "rules":
                bodies[skill_id] = rewritten(skill, record.get("plan") or {}, names)
            else:
                raise HsaError(
                    f"skill {skill_id!r}: backend must be 'llm' or 'rules', got "
                    f"{record.get('backend')!r}"
                )
        return with_skill_bodies(episode, bodies)

    def apply_to_conversation(
        self, episode: Episode, params: dict, harness: Harness, mapping: Mapping
    ) -> Episode | None:
        return with_known_bodies(episode, params["skills"], harness)
