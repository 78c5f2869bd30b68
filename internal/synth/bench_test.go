package synth

import (
	"io"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// BenchmarkFill measures one worker generating a 1 MiB chunk of each weight type (bytes/s of tensor data).
// Run: go test -run '^$' -bench Fill ./internal/synth/
func BenchmarkFill(b *testing.B) {
	for _, ty := range Types() {
		b.Run(ty.String(), func(b *testing.B) {
			var g generator
			p := make([]byte, chunkBytes/ty.TypeSize()*ty.TypeSize())
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				g.reset(1, "blk.0.ffn_up.weight", 0, ty, 4096, kindWeight)
				g.fill(p)
			}
		})
	}
}

// BenchmarkWrite measures the whole pipeline (all workers, the writer) for the bonsai-1.7b shapes in Q1_0 with a
// synthetic vocabulary, writing to io.Discard.
func BenchmarkWrite(b *testing.B) {
	s, err := Preset("bonsai-1.7b")
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Arch: ArchQwen3, Shape: s, Weight: gguf.Q1_0, Embd: gguf.Q1_0, Output: gguf.Q1_0}
	_, specs, _, err := plan(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, sp := range specs {
		size += sp.info.NElements() / int64(sp.info.Type.BlockSize()) * int64(sp.info.Type.TypeSize())
	}
	b.SetBytes(size)
	for b.Loop() {
		if err := Write(io.Discard, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
