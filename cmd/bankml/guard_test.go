package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardExitStatus: bankml guard exits 0 on play, 2 on refuse, 3 on need_more and 1 on an I/O or usage error,
// printing the verdict (and the reasons) on stdout, or one JSON object with --json.
func TestGuardExitStatus(t *testing.T) {
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bonsai := write("Ternary-Bonsai-2-8B.gguf", src)
	cut := write("cut.gguf", src[:1000])
	magic := write("magic.gguf", append([]byte("GGML"), src[4:]...))
	for _, tc := range []struct {
		args []string
		code int
		out  string // a substring of stdout
	}{
		{[]string{"guard", storiesPath(t)}, 0, "play: "},
		{[]string{"guard", storiesPath(t), "--engine", "prism"}, 0, "on prism: llama, 48 tensors (F32 48)"},
		{[]string{"guard", bonsai}, 2, "refuse: " + bonsai + " on mainline:\n  - Bonsai 2 weights"},
		{[]string{"guard", bonsai, "--engine", "prism"}, 0, "play: "},
		{[]string{"guard", magic}, 2, `bad magic "GGML"`},
		{[]string{"guard", cut}, 3, "need_more: " + cut + ": the header needs at least 1176 bytes, 176 more than the 1000 available"},
		{[]string{"guard", filepath.Join(dir, "absent.gguf")}, 1, ""},
		{[]string{"guard", storiesPath(t), "--engine", "vulkan"}, 1, ""},
		{[]string{"guard"}, 1, ""},
	} {
		code, out, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("bankml %v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, stderr, tc.code, tc.out)
		}
		if code != 0 && stderr == "" {
			t.Errorf("bankml %v: exit %d with nothing on stderr", tc.args, code)
		}
	}
}

// TestGuardJSON: --json prints exactly one object with the verdict, reasons, engine, architecture, types and file
// size; need_more adds bytes_needed.
func TestGuardJSON(t *testing.T) {
	code, out, _ := runCLI("guard", "--json", storiesPath(t))
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %q", code, err, out)
	}
	if rep["verdict"] != "play" || rep["engine"] != "mainline" || rep["arch"] != "llama" || rep["file_size"] != 1185376.0 ||
		rep["tensors"] != 48.0 || rep["types"].(map[string]any)["F32"] != 48.0 || len(rep["reasons"].([]any)) != 0 {
		t.Errorf("%v", rep)
	}
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(p, src[:5000], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI("guard", p, "--json")
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&rep); code != 3 || err != nil || dec.More() {
		t.Fatalf("exit %d, %v: %q", code, err, out)
	}
	if rep["verdict"] != "need_more" || rep["bytes_needed"].(float64) <= 5000 || rep["file_size"] != 5000.0 {
		t.Errorf("%v", rep)
	}
}
