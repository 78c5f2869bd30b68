package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectStories260K: the counts ../shared/models/MANIFEST.md records (19 KV, 48 tensors, all F32, 5 layers),
// and a parameter count equal to the sum of the listed tensors' element counts.
func TestInspectStories260K(t *testing.T) {
	model := storiesPath(t)
	code, out, stderr := runCLI("inspect", model, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		KVCount       int     `json:"kv_count"`
		TensorCount   int     `json:"tensor_count"`
		Layers        int     `json:"layers"`
		Architecture  string  `json:"architecture"`
		Parameters    int64   `json:"parameters"`
		BitsPerWeight float64 `json:"bits_per_weight"`
		Types         []struct {
			Type    string `json:"type"`
			Tensors int    `json:"tensors"`
		} `json:"types"`
		Metadata []json.RawMessage `json:"metadata"`
		Tensors  []struct {
			Name     string  `json:"name"`
			Type     string  `json:"type"`
			Shape    []int64 `json:"shape"`
			Elements int64   `json:"elements"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("--json printed more than one line")
	}
	if r.KVCount != 19 || len(r.Metadata) != 19 || r.TensorCount != 48 || len(r.Tensors) != 48 || r.Layers != 5 ||
		r.Architecture != "llama" || len(r.Types) != 1 || r.Types[0].Type != "f32" || r.Types[0].Tensors != 48 || r.BitsPerWeight != 32 {
		t.Errorf("summary %+v", r)
	}
	var sum int64
	for _, ti := range r.Tensors {
		n := int64(1)
		for _, d := range ti.Shape {
			n *= d
		}
		if n != ti.Elements || ti.Type != "f32" {
			t.Errorf("%s: %d elements for shape %v, type %s", ti.Name, ti.Elements, ti.Shape, ti.Type)
		}
		sum += n
	}
	if r.Parameters != sum || sum == 0 {
		t.Errorf("parameters %d, tensors sum to %d", r.Parameters, sum)
	}

	code, text, stderr := runCLI("inspect", model)
	if code != 0 {
		t.Fatalf("text: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"metadata: 19 keys", "tensors: 48", "5 layers", "  token_embd.weight  ", "  f32 ",
		`tokenizer.ggml.tokens  `, `arr[str] × 512  ["<unk>", "<s>", "</s>", `, "parameters: 292800"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q", want)
		}
	}
}

func TestInspectExitStatus(t *testing.T) {
	src, err := os.ReadFile(storiesPath(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.gguf")
	if err := os.WriteFile(cut, src[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{filepath.Join(dir, "absent.gguf"), 1, "no such file"},
		{cut, 2, "truncated"},
	} {
		code, out, stderr := runCLI("inspect", tc.path)
		if code != tc.code || out != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d and %q", tc.path, code, out, stderr, tc.code, tc.want)
		}
	}
}
