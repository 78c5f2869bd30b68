package reference

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvDir names the environment variable that, when set, gives the folder
// holding the reference libraries (the bins/linux-x64 folder of
// @node-llama-cpp/linux-x64), overriding the search of [Dir].
const EnvDir = "BANKML_REFERENCE_DIR"

// binsSubdir is where scripts/install-reference.sh leaves the libraries,
// relative to the repository root.
var binsSubdir = filepath.Join(".reference", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")

// Library file names inside the bins folder.
const (
	libGGMLBase    = "libggml-base.so"
	libGGML        = "libggml.v0.5.0.so"
	libCPUHaswell  = "libggml-cpu-haswell.so"
	libLlama       = "libllama.v0.5.0.so"
	installCommand = "scripts/install-reference.sh"
)

// ErrNotInstalled is returned (wrapped) by [Dir] and [Load] when the
// reference libraries cannot be found. Tests use it to skip.
var ErrNotInstalled = errors.New("reference llama.cpp not installed (run " + installCommand + " or set " + EnvDir + ")")

// Dir returns the folder holding the reference's shared libraries: the value
// of $BANKML_REFERENCE_DIR if set, otherwise the first
// .reference/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 found in
// the current working directory or one of its parents. The folder must hold
// libllama.v0.5.0.so. The error wraps [ErrNotInstalled] when nothing is found.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("reference: %s=%q: %w", EnvDir, d, err)
		}
		if !isFile(filepath.Join(abs, libLlama)) {
			return "", fmt.Errorf("reference: %s=%q has no %s: %w", EnvDir, d, libLlama, ErrNotInstalled)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("reference: %w", err)
	}
	for dir := wd; ; {
		cand := filepath.Join(dir, binsSubdir)
		if isFile(filepath.Join(cand, libLlama)) {
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("reference: no %s above %s: %w", binsSubdir, wd, ErrNotInstalled)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
