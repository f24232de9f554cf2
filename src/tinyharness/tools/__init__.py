"""Tools: plain typed functions, the registry that runs them, workspace confinement and
permissions. May import ``models.base`` (for ToolSpec) and ``errors``."""
