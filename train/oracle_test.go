package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reftest"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/sample"
)

// greedy continues prompt by n tokens with bankml's model (argmax, as llama.cpp's greedy sampler).
func greedy(t *testing.T, m *model.Model, prompt []int32, n int) []int32 {
	t.Helper()
	c, err := m.NewContext(len(prompt)+n, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	logits, err := c.Decode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for {
		tok := sample.Greedy(logits)
		out = append(out, tok)
		if len(out) == n {
			return out
		}
		if logits, err = c.Decode([]int32{tok}); err != nil {
			t.Fatal(err)
		}
	}
}

// A student trained here and exported (TQ2_0 and Q2_0 with the trained scale in every block, F32 for a float
// student), with the teacher's tokenizer, loads in the reference and gives bankml's greedy tokens.
func TestExportedStudentRunsInTheReferenceWithTheSameGreedyTokens(t *testing.T) {
	teacher, err := gguf.Open(testdata.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	lib := reftest.Lib(t)
	prompts := [][]int32{{1}, {1, 403, 407, 261, 378}, {1, 40, 50, 60, 70, 80, 90, 100}}
	dir := t.TempDir()
	for _, mode := range []Mode{ModeTernary, ModeFloat} {
		tr := newTinyTrainer(t, mode, 2)
		if err := tr.Run(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		types := []gguf.GGMLType{gguf.TQ2_0, gguf.Q2_0}
		if mode == ModeFloat {
			types = []gguf.GGMLType{gguf.F32}
		}
		for _, typ := range types {
			path := filepath.Join(dir, fmt.Sprintf("student-%s.gguf", typ))
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := Export(f, tr.Model, TokenizerKVs(teacher), typ, "test-student"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			gf, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.Load(gf)
			if err != nil {
				t.Fatal(err)
			}
			rm, err := lib.LoadModel(path)
			if err != nil {
				t.Fatalf("%s: the reference does not load the student: %v", typ, err)
			}
			same, total := 0, 0
			for _, p := range prompts {
				want, err := rm.Greedy(p, 12, 1)
				if err != nil {
					t.Fatal(err)
				}
				got := greedy(t, m, p, 12)
				for i := range want {
					total++
					if got[i] == want[i] {
						same++
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %v: bankml %v, reference %v", typ, p, got, want)
				}
			}
			t.Logf("%s student (%s): %d of %d greedy tokens equal the reference's", mode, typ, same, total)
			rm.Close()
			m.Close()
			gf.Close()
		}
	}
}

// EnvTrainedStudent names GGUF files of a student trained with bankml train (comma-separated), for
// TestTrainedStudentMatchesTheReference; the trained student is not committed (docs/TRAINING.md).
const EnvTrainedStudent = "BANKML_TRAINED_STUDENT"

// The trained student (the hour-long run, outside CI) gives the reference's greedy tokens, 64 per prompt, from
// the oracle prompts of package model.
func TestTrainedStudentMatchesTheReference(t *testing.T) {
	paths := os.Getenv(EnvTrainedStudent)
	if paths == "" {
		t.Skipf("set %s to the student GGUF files of a bankml train run (not in CI: the run takes an hour)", EnvTrainedStudent)
	}
	lib := reftest.Lib(t)
	prompts := []string{"Once upon a time", "The little dog was sad because", "Lily and Tom went to the park. They saw a big tree!",
		"  One day, a boy named 7 found", "Mom said: \"Do not touch the hot stove.\" But Ben", "Sun"}
	for _, path := range strings.Split(paths, ",") {
		gf, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.Load(gf)
		if err != nil {
			t.Fatal(err)
		}
		rm, err := lib.LoadModel(path)
		if err != nil {
			t.Fatalf("%s: the reference does not load it: %v", path, err)
		}
		same, total := 0, 0
		for _, p := range prompts {
			toks, err := rm.Tokenize(p, true, false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := rm.Greedy(toks, 64, 1)
			if err != nil {
				t.Fatal(err)
			}
			got := greedy(t, m, toks, 64)
			for i := range want {
				total++
				if got[i] == want[i] {
					same++
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s %q: bankml %v, reference %v", filepath.Base(path), p, got, want)
			}
		}
		t.Logf("%s: %d of %d greedy tokens equal the reference's (%d prompts)", filepath.Base(path), same, total, len(prompts))
		rm.Close()
		m.Close()
		gf.Close()
	}
}
