"""Component tests: one part of a training step (the optimizer, a kernel) checked against an FP64 reference at a
recipe's shape, with negative controls that must fail so a passing verdict means something."""
