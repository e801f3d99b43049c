"""Rules about text that transforms and checks share: the words and conventions of names, mentions
of identifiers in free text, the invariants a paraphrase must keep, and Markdown blocks that
render back byte for byte."""
