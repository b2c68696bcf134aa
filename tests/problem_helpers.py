"""Small problems on any domain, for the tests of what is measured and written on a domain."""

from pinn import Problem


class Bump(Problem):
    """A problem on any domain whose exact solution is u = 1 + x² (the residual is unused)."""

    def __init__(self, domain):
        self.domain = domain

    def residual(self, x, u):
        return u()

    def exact(self, x):
        return 1 + x[:, 0] ** 2
