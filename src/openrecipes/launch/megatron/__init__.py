"""Megatron-LM and slime commands, printed with the layout read back from their flags (dry_run)."""
