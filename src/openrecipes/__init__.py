"""OpenRecipes: a verified catalog of LLM training recipes and the tools that produce and check its figures."""

__version__ = "0.1.0"
