//go:build !windows

package cshim

import "github.com/ebitengine/purego"

// dlopen and dlsym are purego's dlfcn, which does not exist on Windows.
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
