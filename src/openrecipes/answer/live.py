"""The answer to one question computed now (the terminal's face): the catalog's entries with the audit's evidence
levels, and the planner asked live under the grid's rule (answer/grid.py), as refresh asks it for the site."""

from __future__ import annotations

from openrecipes.answer.assemble import Evidence, answer
from openrecipes.answer.grid import predicted_here
from openrecipes.answer.model import Answer, Question
from openrecipes.audit.review import audit_catalog
from openrecipes.catalog.evidence import evidence_level
from openrecipes.catalog.store import Catalog, CatalogEntry


def evidence_of(catalog: Catalog) -> Evidence:
    """Each entry's evidence level as `openrecipes audit` and the site give it."""
    audits = audit_catalog(catalog)

    def level(entry: CatalogEntry) -> str:
        return audits[entry.slug].evidence if entry.slug in audits else evidence_level(entry.entry)

    return level


def live_answer(question: Question, catalog: Catalog) -> Answer:
    from openrecipes.answer.predicted import predicted_point

    why = predicted_here(catalog, question.model, question.gpu_type, question.gpus)
    point = None if why or question.precision not in (None, "BF16") else predicted_point(
        catalog, question.model, question.gpu_type, question.gpus)
    return answer(question, catalog, evidence_of(catalog), point, why)
