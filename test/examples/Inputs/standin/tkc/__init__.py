"""A stand-in for the tkc package on the CPU: only tkc.ops, in PyTorch."""
