"""The site room: a static website built from the catalog (leaderboards, recipe pages, compare, plots, export).

pages.py turns the catalog into page records, build.py renders them with templates/ and writes static/,
plots.py draws the SVG plots, serve.py serves a build on 127.0.0.1, cli.py adds `site build` and `serve`.
"""
