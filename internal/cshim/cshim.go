// Package cshim compiles small C++ oracle shims at test time and loads them into the test process with purego
// (no cgo), for oracles that g++ compiles: libstdc++'s algorithms and llama-server code no library exports.
//
// # Design record
//
// What. [Build] writes a C++ source to a temporary folder, compiles it with
// `g++ -std=c++17 -O2 -shared -fPIC` (no -ffast-math, no -march: the
// reference's libllama is built for plain x86-64, so the shim's float
// arithmetic is rounded as the reference's is) and dlopens the result;
// [Shim.Func] binds an exported extern "C" function.
//
// Follows. The project's rule for oracles: a small C/C++ shim compiled at test
// time with g++; never a committed copy of other projects' code (the shim
// sources are written in this repository's tests).
//
// Deliberate differences. None to record: cshim only builds and loads a shim.
//
// Determinism. A shim is rebuilt per test binary run (in t.TempDir); nothing
// is cached between runs. When g++ is absent the test is skipped with
// testdata.Absent (failing under CI).
package cshim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/bankml/bankml/internal/testdata"
)

// Shim is a compiled and loaded shared object.
type Shim struct {
	handle uintptr
	path   string
}

// Build compiles src (C++17 source that exports extern "C" functions) into a
// shared object under t.TempDir and loads it with RTLD_NOW|RTLD_GLOBAL. It
// skips the test (fails under CI) when g++ is not on PATH or the platform is
// not linux; a compile error fails the test with g++'s output.
func Build(t testing.TB, name, src string, flags ...string) *Shim {
	t.Helper()
	if runtime.GOOS == "windows" {
		testdata.Absent(t, "cshim: the %s oracle loads a g++ shared object with dlopen, which Windows does not have", name)
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		testdata.Absent(t, "cshim: g++ not found (%v): the %s oracle needs it", err, name)
	}
	dir := t.TempDir()
	cpp := filepath.Join(dir, name+".cpp")
	so := filepath.Join(dir, name+".so")
	if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-std=c++17", "-O2", "-shared", "-fPIC", "-o", so, cpp}, flags...)
	out, err := exec.Command(gxx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cshim: g++ %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	h, err := dlopen(so)
	if err != nil {
		t.Fatalf("cshim: dlopen %s: %v", so, err)
	}
	return &Shim{handle: h, path: so}
}

// Func binds the exported symbol name to fptr (a pointer to a Go func
// variable, as purego.RegisterFunc takes), failing the test when the symbol
// is missing.
func (s *Shim) Func(t testing.TB, fptr any, name string) {
	t.Helper()
	sym, err := dlsym(s.handle, name)
	if err != nil {
		t.Fatalf("cshim: %s: no symbol %s: %v", s.path, name, err)
	}
	purego.RegisterFunc(fptr, sym)
}

// String names the shared object.
func (s *Shim) String() string { return fmt.Sprintf("cshim %s", s.path) }
