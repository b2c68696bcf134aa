"""A run from a config: `train(cfg)`, validation, the run directory's outputs, plots, resume.

    train, compose_config             config -> trained model and run directory (train)
    build_model, ...                  the config's objects (build)
    Validator, evaluation_points      errors against the exact or reference solution (validation)
    write_outputs                     metrics.json, history.csv, prediction.npz, plots (outputs)
    plot_solution, plot_loss          the figures (plots)
    load_resume                       resume=: the checkpoint, the config checked (resume)
    claim_run_dir                     one run per directory: refusal, overwrite, lock (rundir)
    SweepSummary                      a multirun's summary.csv and exit status (sweep)

This layer knows every other; it imports Hydra and matplotlib, so `import pinn` loads it only
on first use.
"""
