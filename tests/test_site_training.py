"""Time-to-train and cost: every board row and every Plan row shows the wall time and $ of site.yaml's token budget,
worked out by figures.py from the layout's tokens/s per GPU, its GPU count and its instance's price."""

from __future__ import annotations

import re
from html import unescape

import pytest
from site_helpers import REPO

from openrecipes import figures
from openrecipes.catalog.store import load_catalog
from openrecipes.errors import UserError
from openrecipes.site import format as fmt
from openrecipes.site.pages import site_pages
from openrecipes.site.settings import read_token_budget


def test_the_two_figures_agree_with_each_other_and_with_the_cost_per_million():
    tokens, speed, gpus, per_gpu_hour = 1e9, 10_000.0, 8, 4.0
    hours = figures.time_to_train_hours(tokens, speed, gpus)
    assert hours == pytest.approx(1e9 / 80_000 / 3600)
    # every GPU is paid for the whole wall time
    assert figures.cost_to_train_usd(tokens, speed, per_gpu_hour) == pytest.approx(hours * gpus * per_gpu_hour)
    assert figures.cost_to_train_usd(tokens, speed, per_gpu_hour) == pytest.approx(
        1000 * figures.usd_per_million_tokens(per_gpu_hour, speed))


def test_every_board_row_shows_the_budget_in_time_and_dollars(bundled_site):
    site = site_pages(load_catalog(REPO))
    assert site.token_budget == read_token_budget(REPO) == 1_000_000_000
    for section in site.sections:
        for page in section.pages:
            html = (bundled_site.out / page.path).read_text(encoding="utf-8")
            assert 'data-budget="1000000000"' in html
            assert "Time to train <span data-budget-text>1B</span> tokens" in html
            for entry in page.rows:
                row = html[html.index(f'<tr data-slug="{entry.slug}"'):]
                row = row[:row.index("</tr>")]
                hours, cost = site.training(entry)
                shown_time = re.search(r'<td class="num time[^>]*>([^<]*)</td>', row).group(1)
                shown_cost = re.search(r'<td class="num train-usd[^>]*>([^<]*)</td>', row).group(1)
                assert unescape(shown_time) == fmt.duration(hours)
                assert unescape(shown_cost) == (fmt.usd_total(cost) if cost is not None else "—")


def test_a_token_budget_that_is_not_a_count_of_tokens_is_refused(tmp_path):
    (tmp_path / "site.yaml").write_text("token_budget: lots\n")
    with pytest.raises(UserError, match="site.yaml: token_budget: 'lots' is not a whole number of tokens"):
        read_token_budget(tmp_path)
    (tmp_path / "site.yaml").write_text("token_budget: 250000000\n")
    assert read_token_budget(tmp_path) == 250_000_000
    assert fmt.tokens_count(250_000_000) == "250M" and fmt.duration(0.5) == "30 min" and fmt.duration(72) == "3.0 days"
