"""The figures of a run, drawn with matplotlib's object interface (no pyplot, no GUI backend).

    plot_solution, solution_figure    predicted, true and |error| (solution)
    plot_loss, loss_figure            the loss terms over the steps, the phases marked (loss)
    reference_figure                  reference data for some outputs: profiles along lines
                                      (reference)
    PlotOptions, save_figure          the formats and error scale of a run's figures (files)

Inside: maps (colour maps and slices of a domain), parts (what the figures share: the true
values, colour scales).

This layer knows problems and evaluation; the run's outputs draw with it.
"""

from pinn.plots.files import PlotOptions, save_figure
from pinn.plots.loss import loss_figure, plot_loss
from pinn.plots.reference import reference_figure
from pinn.plots.solution import plot_solution, solution_figure

__all__ = [
    "PlotOptions",
    "loss_figure",
    "plot_loss",
    "plot_solution",
    "reference_figure",
    "save_figure",
    "solution_figure",
]
