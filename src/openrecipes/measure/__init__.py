"""The measure room: raw training logs -> one step table -> the recipe's `result:` block."""
