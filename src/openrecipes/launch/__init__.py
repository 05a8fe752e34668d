"""The runners: a recipe rendered into its engine's command and run here (torchrun), under Slurm, or printed (slime
and Megatron); the checks before a run and the probe of a machine. Above audit: a run's result is written through
the measure and verify rooms."""
