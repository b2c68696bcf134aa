"""pinn's problem library, installed as `pinn.problems` (pyproject.toml maps problems/ there):
one module per PDE, each paired with conf/problem/<name>.yaml."""
