"""Files in and out, below everything else: exact text and YAML (textfile), JSON Lines with
numbered reads and atomic writes (jsonl), and where shipped assets live (assets)."""
