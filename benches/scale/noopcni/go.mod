// Test-only: the scale tier's delegate (main.go). The standard library alone.
module braid-cni.invalid/benches/scale/noopcni

go 1.22
