"""The probe room: operator timings measured on the GPU at hand (`openrecipes probe`), the probe file that holds
them raw, and the tables derived from it (GEMM efficiency by shape, attention time, HBM and collective bandwidth)
that the planner reads for that part and `audit` re-derives.

Beside the catalog (it reads a part's peaks from hardware/gpus.yaml) and below audit; it never imports the planner,
which reads it. torch is imported only inside the functions that measure. Not launch/probe.py, which checks a Slurm
allocation's rendezvous.
"""
