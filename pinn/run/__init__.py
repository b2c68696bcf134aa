"""A run from a config: `train(cfg)`, validation, the run directory's outputs, plots, resume.

    train, compose_config             config -> trained model and run directory (train)
    build_model, ...                  the config's objects (build)
    Validator, evaluation_points      errors against the exact or reference solution (validation)
    write_outputs                     metrics.json, history.csv, prediction.npz, plots (outputs)
    plot_solution, plot_loss          the figures (plots)
    load_resume                       resume=: the checkpoint, the config checked (resume)
    load_run                          a finished run back: problem, model, config, metrics (load)
    write_vtk                         the prediction as VTK files for ParaView (vtk)
    provenance                        metrics.json's record of how the run was made (provenance)
    check_config                      every key known, every value of its type (schema)
    key_docs, register_help           each key's explanation from conf/'s comments; --help
                                      (config_docs)
    run_reporting, report             one-line errors of the console, rank 0 only (reporting)
    claim_run_dir                     one run per directory: refusal, overwrite, lock (rundir)
    SweepSummary                      a multirun's summary.csv and exit status (sweep)

This layer knows every other; it imports Hydra and matplotlib, so `import pinn` loads it only
on first use.
"""
