package model

import (
	"math"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// TestLoadBackgroundGivesLoadsBits: a model packed in the background
// (LoadBackground) gives the logits of the model Load packed at once, bit for
// bit, for decodes started right after it returns (on these small files the
// packing may already be over by then: the test cannot force the overlap,
// -race checks the publication) and after WaitPacked, and
// WaitPacked then reports the same packed bytes; Close during the packing
// stops it without harm to the file or later decodes. At LevelGeneric
// nothing is packed and the test checks only the first part.
func TestLoadBackgroundGivesLoadsBits(t *testing.T) {
	for _, s := range []synthModel{
		{arch: "qwen3", preset: "tiny", typ: gguf.Q1_0, yarn: true, seed: 3},
		{arch: "qwen3", preset: "tiny", typ: gguf.TQ2_0, yarn: true, seed: 3},
	} {
		t.Run(s.String(), func(t *testing.T) {
			path := s.path(t)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			prompt := []int32{9707, 1879, 11, 1052, 374, 264, 1273, 13}
			decode := func(m *Model) []float32 {
				t.Helper()
				c, err := m.NewContext(64, 2)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var logits []float32
				for _, tok := range prompt {
					if logits, err = c.Decode([]int32{tok}); err != nil {
						t.Fatal(err)
					}
				}
				return append([]float32(nil), logits...)
			}
			same := func(what string, a, b []float32) {
				t.Helper()
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
						t.Fatalf("%s: logit %d is %v, Load's model gives %v", what, i, b[i], a[i])
					}
				}
			}
			sync, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			want := decode(sync)
			wantBytes, err := sync.WaitPacked()
			if err != nil {
				t.Fatal(err)
			}

			bg, err := LoadBackground(f)
			if err != nil {
				t.Fatal(err)
			}
			same("while packing", want, decode(bg))
			gotBytes, err := bg.WaitPacked()
			if err != nil {
				t.Fatal(err)
			}
			if gotBytes != wantBytes {
				t.Errorf("WaitPacked: %d bytes packed in the background, Load packed %d", gotBytes, wantBytes)
			}
			same("after packing", want, decode(bg))

			stopped, err := LoadBackground(f)
			if err != nil {
				t.Fatal(err)
			}
			stopped.Close()
			stopped.Close()
			same("after Close", want, decode(stopped))
			t.Logf("%s: level %v, %d packed bytes; logits bit-equal while packing, after it and after Close", s, sync.Level, wantBytes)
		})
	}
}
