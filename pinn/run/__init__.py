"""A run from a config: `train(cfg)`, the run directory's rules, resume, load_run, sweeps.

    train                             config -> trained model and run directory (train)
    build_model, ...                  the config's objects: the network, the estimator (build)
    claim_run_dir                     one run per directory: refusal, overwrite, lock (rundir)
    load_resume                       resume=: the checkpoint, the config checked (resume)
    load_run                          a finished run back: problem, model, config, metrics (load)
    SweepSummary                      a multirun's summary.csv and exit status (sweep)
    run_reporting, report             one-line errors of the console, rank 0 only (reporting)

The config it reads is `pinn.config`'s; what a finished run writes is `pinn.outputs`'; the
figures are `pinn.plots`'. This layer knows every other; it imports Hydra and matplotlib, so
`import pinn` loads it only on first use.
"""
