"""Rules about text that transforms and checks share: the words and conventions of names, mentions
of identifiers in free text, and the invariants a paraphrase must keep."""
