"""braid.cni: a CNI runtime library (what libcni does, for Python)."""
