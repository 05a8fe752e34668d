"""torchtitan runs on the GPUs: the torchrun entry (train) that engines/torchtitan/runner.py's launches start, our
rows.parquet dataloader (rows) and the fused kernels it applies (kernels)."""
