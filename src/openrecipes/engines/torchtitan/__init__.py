"""torchtitan 0.2.2: recipe -> torchrun command (render), our rows.parquet dataloader (rows), torchrun entry (train)."""
