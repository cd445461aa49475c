"""Repository-wide pytest configuration for the project's own test suite."""

# Our tests drive real pytest sessions of the plugin through pytester.
pytest_plugins = ["pytester"]
