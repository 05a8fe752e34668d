"""Fixed-length SFT rows: chat formats, loss masks, packing, manifest + hashes."""
