"""PDE problems: one module per PDE, each paired with conf/problem/<name>.yaml."""
