"""The public record's room: the importers that turn stored copies of others' published tables (data/public-record/,
data/record-sources/) into `published_summary` entries, and the readers that re-derive those entries from their
source excerpts."""
