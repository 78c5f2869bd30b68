// Package testdata locates the repository root and the shared test models (../shared/models beside the
// repository, listed in its MANIFEST.md) for tests, and skips or fails a test whose data is absent.
//
// # Design record
//
// What. [ModuleRoot] finds the folder holding go.mod; [ModelsDir] and [Model] find the test models
// ($BANKML_TESTDATA, else ../shared/models from the module root); [Absent] skips a test whose data or reference
// is missing, naming what is missing, and fails it instead under CI (the CI environment variable set).
//
// Follows. The project's rule for test data: read in place, never copied into the repository, and every
// oracle test run in CI.
//
// Deliberate differences. $BANKML_TESTDATA is not $BANKML_MODELS (the model store of package store): the test
// data is a read-only folder of fixtures.
//
// Determinism. Paths depend only on the working directory and the environment.
package testdata

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvTestData overrides the test-data folder (../shared/models). It is not
// $BANKML_MODELS, which names bankml's model store (package store): the test
// data is a read-only folder of fixtures, the store is where pulled and
// created models live.
const EnvTestData = "BANKML_TESTDATA"

// Absent skips the test because data or the reference it needs is missing,
// saying what is missing; under CI (the CI environment variable set, as
// .ci/run runs) it fails instead, since CI must run every oracle test.
func Absent(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf(format, args...)
}

// ModuleRoot returns the folder holding go.mod, walking up from the test's
// working directory; it fails the test when there is none.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testdata: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ModelsDir returns the shared models folder ($BANKML_TESTDATA, else
// ../shared/models from the module root), skipping the test with the reason
// when it is absent.
func ModelsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvTestData)
	if dir == "" {
		dir = filepath.Join(ModuleRoot(t), "..", "shared", "models")
	}
	if _, err := os.Stat(dir); err != nil {
		Absent(t, "test models absent (%v): they live in ../shared/models or $%s", err, EnvTestData)
	}
	return dir
}

// Model returns the path of a file under the models folder, skipping the
// test when it is absent.
func Model(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(ModelsDir(t), rel)
	if _, err := os.Stat(p); err != nil {
		Absent(t, "test model %s absent (%v)", rel, err)
	}
	return p
}
