# Hand-written stub of the Rust extension braid._native: one submodule per crate that answers
# (the attachment record of braid_cni has its own). Checked against the built module by
# mypy.stubtest (make lint).

from braid._native import cni, delegate, exec, netns, record

__all__ = ["cni", "delegate", "exec", "netns", "record"]
