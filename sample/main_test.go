package sample

import (
	"os"
	"testing"
)

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "bankml-sample-") }

func TestMain(m *testing.M) {
	code := m.Run()
	if tempDir != "" {
		os.RemoveAll(tempDir)
	}
	os.Exit(code)
}
