//go:build tools

// Package tools pins the program this module builds; it is never compiled.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
