//go:build !windows

package fmath

import "github.com/ebitengine/purego"

// dlopenLibm opens glibc's libm for the oracle tests (purego's dlfcn, which Windows does not have).
func dlopenLibm() (uintptr, error) {
	return purego.Dlopen("libm.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
}
