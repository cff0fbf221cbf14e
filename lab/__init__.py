"""The lab: the seed papers' experiments on real slapd, stock LMDB against our engine.

python -m lab list | run EXPERIMENT... | plot | report      (see lab/README.md)
"""
