//go:build !windows

package reference

import "github.com/ebitengine/purego"

// Thin wrappers over purego's dlfcn, which does not exist on Windows.
const (
	rtldNow    = purego.RTLD_NOW
	rtldGlobal = purego.RTLD_GLOBAL
	rtldNoload = 0x4 // glibc's RTLD_NOLOAD; purego does not export it
)

func dlopen(path string, mode int) (uintptr, error) { return purego.Dlopen(path, mode) }
func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
func dlclose(h uintptr) error                       { return purego.Dlclose(h) }
