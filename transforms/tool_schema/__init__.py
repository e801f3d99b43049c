"""Tool schemas: change how the tools are presented without changing what they do.

Changes: the order of the tools and of each schema's properties (:mod:`.order`); tool names
(other words from the general English lexicon, or opaque masks such as ``fn_qzkx``) and top-level
parameter names (the same, or masks such as ``arg_qzkx``), every renamed name in the harness
variant's one naming convention (:mod:`.names`, see :mod:`hsa.transforms._names`); the wording of
tool and parameter descriptions (:mod:`.descriptions`, rule-based, English and Chinese);
plausible distractor tools nobody needs (:mod:`.distractors`); equivalent schema spellings
(:mod:`.spelling`: ``required`` and ``enum`` order, an explicit ``"additionalProperties": false``
on or off); and the shape (OpenAI or MCP) in which the prompt shows the tools (:mod:`.shape`).
Every rename moves with all its mentions: tool calls and their argument keys, tool results that
echo them, other tools' descriptions, skill content, prompt texts, hook configuration and gold
(:mod:`.parameters` for parameters, the rename kernel for the rest).
Keeps: what every tool does and accepts (types, required parameters, enum values, constraints),
every call's argument values, every invariant of a description (:mod:`hsa.text.paraphrase`:
numbers, quoted strings, identifiers, negations), and what the gold expects, up to the recorded
renaming. The tools list handed to trainers stays OpenAI-shaped; only the prompt's presentation
of it changes. Every sub-schema is read through :mod:`hsa.model.schema`.

Every option space a transform draws from (synonyms, naming styles, prefixes, phrasings,
distractor tools; ``options.yaml``) is split into a ``train`` and a ``heldout`` part that never
overlap; the ``split`` option chooses the part, so held-out variants use wordings no training
variant saw.
"""

from hsa.transforms.tool_schema import descriptions, distractors, names, order, shape, spelling  # noqa: F401
