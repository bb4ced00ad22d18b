"""The suite's machinery (not a paper): the registry, the papermill runner, the gallery and scoreboard, the CLI.

``lib/`` reads as the papers (``lib/<slug>/``), what they share (``lib/common/``) and this package.
``python -m lib ...`` is :func:`lib.suite.cli.main`.
"""
