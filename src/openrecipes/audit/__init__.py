"""The audit room: every published figure re-derived from the raw evidence stored beside it, the evidence level
each recipe earns, reproductions measured against a recipe, and a measured run recorded as a new recipe.

Above measure and verify (it calls them), below launch, tune and site (tune writes its winner through `record`,
the site shows the evidence levels).
"""
