"""hsa: Harness-State Augmentation, a dataset factory of task-preserving harness variants.

The public surface: the harness model (:class:`Harness`, :class:`Skill`, :class:`Tool`,
:class:`Hook`), episodes and gold (:class:`Episode`, :class:`Gold`), loading (:func:`load_harness`,
:func:`read_episodes`) and the BFCL-rule scorer (:func:`judge` for the verdict with partial
credit, :func:`score_turn` for the verdict alone).
"""

# The one place the version is written: pyproject.toml reads it ([tool.hatch.version]).
__version__ = "0.1.0"

from hsa.errors import EpisodeError, HarnessError, HooksNotTrustedError, HsaError, Reject
from hsa.model.episode import Episode, read_episodes
from hsa.model.gold import Gold, GoldCall, TurnGold
from hsa.model.harness import Harness, PromptSpec, load_harness, save_harness
from hsa.model.hook import Hook
from hsa.model.scorer import Judgement, Verdict, judge, score_turn
from hsa.model.skill import Skill
from hsa.model.tool import Tool

__all__ = [
    "Episode",
    "EpisodeError",
    "Gold",
    "GoldCall",
    "Harness",
    "HarnessError",
    "Hook",
    "HooksNotTrustedError",
    "HsaError",
    "Judgement",
    "PromptSpec",
    "Reject",
    "Skill",
    "Tool",
    "TurnGold",
    "Verdict",
    "__version__",
    "judge",
    "load_harness",
    "read_episodes",
    "save_harness",
    "score_turn",
]
