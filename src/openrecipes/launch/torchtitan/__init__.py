"""torchtitan runs: recipe -> torchrun command (render), our rows.parquet dataloader (rows), the torchrun entry
(train) and the fused kernels it applies (kernels)."""
